#!/usr/bin/env bash
# Start and stop with many partitions: creates TOPICS topics of 1,000 partitions each, then
# measures what idle partitions hold (RSS above the empty server, descriptors), a clean
# restart (each shard's own "partitions open ... elapsed_ms", and the time until the server
# listens), writes of 16 KiB batches into 10 partitions and across 1,000 (MB/s, produce p99),
# a restart after kill -9 during those writes, writes across 10,000, and SIGTERM (time to exit, and whether every
# partition closed).
# Usage: scripts/partitions.sh [TOPICS]   (default 4: 4,000 partitions, 2,000 per shard here)
# Environment: SHARDLOG_BIN (another server build to measure, e.g. the commit before a change).
set -euo pipefail
cd "$(dirname "$0")/.."
topics=${1:-4}
cargo build --release --quiet -p shardlog -p loadgen
bin=${SHARDLOG_BIN:-target/release/shardlog}
tool=target/release/shardlog
dir=$(mktemp -d)
port=$((20000 + RANDOM % 10000))
pid=""
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$dir"; echo "data: $dir" >&2; }
trap cleanup EXIT
printf 'max.partitions.per.topic=10000\n%s' "${EXTRA_CONFIG:-}" >"$dir/server.properties"

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

# Writes in 16 KiB batches (160 records of 100 bytes) into 10 partitions, then across the
# 1,000 of t1 and the 10,000 of another topic, WRITE_S seconds each: MB/s and produce p99 (us).
load="$(dirname "$tool")/loadgen"
write_s=${WRITE_S:-5}
"$tool" topics create -b "127.0.0.1:$port" --topic ten --partitions 10 >/dev/null
write() { # $1 topic; prints "MB/s p99"
  "$load" write --bootstrap "127.0.0.1:$port" --topic "$1" --record-size 100 --batch-records 160 --rotate-partitions \
    --duration "${write_s}s" --connections 4 2>/dev/null |
    awk '/^write/ {mb=$2} /produce latency/ {for (i=1;i<NF;i++) if ($i=="p99") p=$(i+1)} END {print mb, p}'
}
read -r ten_mb ten_p99 <<<"$(write ten)"
read -r many_mb many_p99 <<<"$(write t1)"

# Unclean: kill -9 while writing across the 1,000 partitions, then start again.
"$load" write --bootstrap "127.0.0.1:$port" --topic t1 --record-size 100 --batch-records 160 --rotate-partitions \
  --duration 30s --connections 4 >/dev/null 2>&1 &
writer=$!
sleep 3; kill -9 "$pid"; wait "$pid" 2>/dev/null || true; pid=""
kill "$writer" 2>/dev/null || true; wait "$writer" 2>/dev/null || true
start "$dir/unclean.log"; unclean_ms=$ms
# Writes across a topic of 10,000 partitions (created only now, so the start-up figures
# above are of TOPICS thousand).
"$tool" topics create -b "127.0.0.1:$port" --topic wide --partitions 10000 >/dev/null
read -r wide_mb wide_p99 <<<"$(write wide)"
stop; stop2_ms=$ms
unclean=$(cat "$dir/first.log" "$dir/restart.log" | grep -c "recovered at the next start" || true)
panics=$(cat "$dir/first.log" "$dir/restart.log" "$dir/unclean.log" | grep -c "panicked" || true)
grep -E "shutdown|timed out|panicked|drained|connections still" "$dir/first.log" | tail -5 >&2 || true
partitions=$((topics * 1000))
echo "partitions: $partitions; create: $create_ms ms ($(( partitions * 1000 / (create_ms + 1) )) /s)"
echo "idle: RSS $idle_rss KiB, $(( (idle_rss - empty_rss) * 1024 / partitions )) bytes per partition above the empty server ($empty_rss KiB); descriptors: $idle_fds"
echo "SIGTERM after create: $stop_ms ms (clean: $first_clean); restart: serving after $listen_ms ms; per shard: $opened"
echo "writes of 16 KiB batches: 10 partitions $ten_mb MB/s p99 $ten_p99 us; 1,000 partitions $many_mb MB/s p99 $many_p99 us; 10,000 partitions $wide_mb MB/s p99 $wide_p99 us"
echo "restart after kill -9 during writes across 1,000 partitions: serving after $unclean_ms ms"
echo "SIGTERM after that: $stop2_ms ms; shard closes that timed out or failed: $unclean; panics: $panics"
