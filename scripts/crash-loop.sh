#!/usr/bin/env bash
# kill -9 loop: start the real server, produce with acks=all while recording every
# acknowledged (partition, offset, checksum), kill -9 the server at a random moment, restart
# it, and verify every acknowledged record is present, byte-identical and CRC-valid, and that
# offsets have no gaps. Repeats N times (default 20).
# Usage: scripts/crash-loop.sh [N] [--keep]
set -euo pipefail
cd "$(dirname "$0")/.."

iterations="${1:-20}"
keep=false
[[ "${2:-}" == "--keep" ]] && keep=true
port=$((10000 + RANDOM % 22000))  # below the ephemeral range (32768+), so no client socket holds it
work=$(mktemp -d "${TMPDIR:-/tmp}/shardlog-crash-loop.XXXXXX")
data="$work/data"
acks="$work/acks"
bin=target/release/shardlog
cargo build --release --quiet
touch "$acks"

start_server() {
  "$bin" serve --data-dir "$data" --listen "127.0.0.1:$port" >>"$work/server.log" 2>&1 &
  server_pid=$!
}
cleanup() {
  kill -9 "${server_pid:-0}" 2>/dev/null || true
  wait "${server_pid:-0}" 2>/dev/null || true
  if $keep; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

start_server
sleep 0.3
"$bin" topics create --bootstrap "127.0.0.1:$port" --topic crash --partitions 4 \
  --config segment.bytes=1048576 >/dev/null 2>&1 || {
  sleep 1
  "$bin" topics create --bootstrap "127.0.0.1:$port" --topic crash --partitions 4 --config segment.bytes=1048576
}

for i in $(seq 1 "$iterations"); do
  "$bin" crash-check produce --bootstrap "127.0.0.1:$port" --topic crash --acks-file "$acks" \
    --seed "$i$RANDOM" 2>>"$work/producer.log" &
  producer=$!
  sleep "0.$((2 + RANDOM % 12))"
  kill -9 "$server_pid"
  wait "$server_pid" 2>/dev/null || true
  wait "$producer" || true
  start_server
  out=$("$bin" crash-check verify --bootstrap "127.0.0.1:$port" --topic crash --acks-file "$acks") || {
    echo "iteration $i: VERIFY FAILED (data kept in $work)"; keep=true; exit 1;
  }
  echo "iteration $i: $out"
done
truncations=$(grep -c "truncating log after unclean shutdown" "$work/server.log" || true)
echo "crash-loop: $iterations kill -9 iterations passed; $(wc -l <"$acks") acknowledged records verified; $truncations recovery truncations logged"
