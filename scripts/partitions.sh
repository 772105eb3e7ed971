#!/usr/bin/env bash
# Start and stop with many partitions: creates TOPICS topics of 1,000 partitions each, then
# measures what idle partitions hold (RSS above the empty server, descriptors), a clean
# restart (each shard's own "partitions open ... elapsed_ms", and the time until the server
# listens) and SIGTERM (time to exit, and whether every partition closed).
# Usage: scripts/partitions.sh [TOPICS]   (default 4: 4,000 partitions, 2,000 per shard here)
# Environment: SHARDLOG_BIN (another server build to measure, e.g. the commit before a change).
set -euo pipefail
cd "$(dirname "$0")/.."
topics=${1:-4}
cargo build --release --quiet -p shardlog
bin=${SHARDLOG_BIN:-target/release/shardlog}
tool=target/release/shardlog
dir=$(mktemp -d)
port=$((20000 + RANDOM % 10000))
pid=""
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$dir"; echo "data: $dir" >&2; }
trap cleanup EXIT
printf 'max.partitions.per.topic=1000\n%s' "${EXTRA_CONFIG:-}" >"$dir/server.properties"

ms=0
start() { # $1: log file; sets ms: until the server says it serves (every shard opened)
  local t0=$(date +%s%N)
  "$bin" serve --data-dir "$dir/data" --listen "127.0.0.1:$port" --kafka-listen off \
    --config "$dir/server.properties" >/dev/null 2>"$1" &
  pid=$!
  for _ in $(seq 1 6000); do
    if grep -q "shardlog serving" "$1"; then
      ms=$(( ($(date +%s%N) - t0) / 1000000 )); return
    fi
    sleep 0.01
  done
  echo "server did not start" >&2; exit 1
}

stop() { # sets ms: until the process exits after SIGTERM
  local t0=$(date +%s%N)
  kill -TERM "$pid"; wait "$pid" || true; pid=""
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
}

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$pid/status"; }
fds() { ls "/proc/$pid/fd" | wc -l; }

start "$dir/first.log"
sleep 2; empty_rss=$(rss_kb)
t0=$(date +%s%N)
for i in $(seq 1 "$topics"); do
  "$tool" topics create -b "127.0.0.1:$port" --topic "t$i" --partitions 1000 >/dev/null
done
create_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
sleep "${IDLE_S:-3}" # past the partitions' idle release (0.5 s)
idle_rss=$(rss_kb); idle_fds=$(fds)
stop; stop_ms=$ms
first_clean=$(grep -c "clean shutdown complete" "$dir/first.log" || true)
start "$dir/restart.log"; listen_ms=$ms
opened=$(grep -o 'partitions=[0-9]* elapsed_ms=[0-9]*' "$dir/restart.log" | tr '\n' ' ')
stop; stop2_ms=$ms
unclean=$(cat "$dir/first.log" "$dir/restart.log" | grep -c "recovered at the next start" || true)
panics=$(cat "$dir/first.log" "$dir/restart.log" | grep -c "panicked" || true)
grep -E "shutdown|timed out|panicked|drained|connections still" "$dir/first.log" | tail -5 >&2 || true
partitions=$((topics * 1000))
echo "partitions: $partitions; create: $create_ms ms ($(( partitions * 1000 / (create_ms + 1) )) /s)"
echo "idle: RSS $idle_rss KiB, $(( (idle_rss - empty_rss) * 1024 / partitions )) bytes per partition above the empty server ($empty_rss KiB); descriptors: $idle_fds"
echo "SIGTERM after create: $stop_ms ms (clean: $first_clean); restart: serving after $listen_ms ms; per shard: $opened"
echo "SIGTERM after restart: $stop2_ms ms; shard closes that timed out or failed: $unclean; panics: $panics"
