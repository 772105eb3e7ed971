#!/usr/bin/env bash
# CPU profile of the server under a sequential acks=1 write: one shard pinned to core 0,
# loadgen on core 1 (2 GiB, 1000 x 1 KiB records per batch, 2 connections, pipeline 4),
# `perf record -g` on the server for the run. Prints the top symbols and the copy, zeroing
# and CRC rows (memmove, memset, the kernel's socket copy, page clearing, CRC-32C).
# Usage: scripts/profile-write.sh [SHARDLOG_BINARY] [LOADGEN_BINARY]
# Environment: RECORD_SIZE, BATCH_RECORDS (the batch shape: small records, e.g. 100 x 160 for
# 16 KiB batches as Kafka producers send them), TOTAL (bytes written, default 2GiB).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/shardlog}
lg=${2:-target/release/loadgen}
command -v perf >/dev/null || { apt-get update -qq && apt-get install -y -qq linux-perf >/dev/null; }
dir=$(mktemp -d "${SHARDLOG_BENCH_DIR:-$PWD/target/bench-data}/profile.XXXXXX" 2>/dev/null || mktemp -d)
port=$((20000 + RANDOM % 10000))
taskset -c 0 "$bin" serve --data-dir "$dir/data" --listen "127.0.0.1:$port" --shards 1 \
  --kafka-listen off >"$dir/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; [ -n "${KEEP:-}" ] && cp "$dir/perf.data" "$KEEP"; rm -rf "$dir"' EXIT
sleep 1.5
perf record -F 2000 ${PERF_CALL_GRAPH:--g} -p "$server" -o "$dir/perf.data" >/dev/null 2>&1 &
recorder=$!
sleep 0.3
taskset -c 1 "$lg" write --bootstrap "127.0.0.1:$port" --topic w --create --partitions 1 \
  --total-bytes "${TOTAL:-2GiB}" --record-size "${RECORD_SIZE:-1KiB}" \
  --batch-records "${BATCH_RECORDS:-1000}" --connections 2 --pipeline 4 2>/dev/null | head -12
kill -INT $recorder; wait $recorder 2>/dev/null || true
perf report -i "$dir/perf.data" --no-children --sort sym --stdio -g none 2>/dev/null \
  | grep "%" >"$dir/report.txt" || true
head -15 "$dir/report.txt"
echo "copies, zeroing and CRC:"
grep -E "memmove|memset|memcpy|copy_to_iter|clear_page|page_fault|crc32c" "$dir/report.txt" || true
