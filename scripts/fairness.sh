#!/usr/bin/env bash
# What one client that never waits costs the others on its partition: one shard pinned to
# core 0, loadgen on core 1. A probe (single-record acks=1 produces, one in flight, 3 s)
# runs on a partition behind (a) an acks=1 producer pipelining 8 batches of 1000 x 1 KB,
# the same-run baseline, and (b) an acks=0 producer of the same batches, which never waits.
# Prints the probe's p50 behind each and their ratio (b / a; about 1 when the server bounds
# what a connection queues, `max.inflight.large.requests.per.connection`).
# Usage: scripts/fairness.sh [SHARDLOG_BINARY] [LOADGEN_BINARY] [SERVER_CONFIG_FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/shardlog}
lg=${2:-target/release/loadgen}
config=()
[ -n "${3:-}" ] && config=(--config "$3")
dir=$(mktemp -d "${SHARDLOG_BENCH_DIR:-$PWD/target/bench-data}/fairness.XXXXXX" 2>/dev/null || mktemp -d)
port=$((20000 + RANDOM % 10000))
taskset -c 0 "$bin" serve --data-dir "$dir/data" --listen "127.0.0.1:$port" --shards 1 \
  --kafka-listen off "${config[@]}" >"$dir/server.log" 2>&1 &
server=$!
flood=""
trap 'kill $flood $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$dir"' EXIT
sleep 1.5
run() { taskset -c 1 "$lg" write --bootstrap "127.0.0.1:$port" "$@"; }

probe_behind() { # acks of the flooding producer; prints the probe's p50 in us
  local topic="fair-$1"
  run --topic "$topic" --create --partitions 1 --record-size 100 --batch-records 1 \
    --total-bytes 1MB --acks 1 >/dev/null 2>&1
  # Bounded: the flood ends by itself after 20 s (or when 16 GB are written).
  timeout 20 taskset -c 1 "$lg" write --bootstrap "127.0.0.1:$port" --topic "$topic" \
    --record-size 1000 --batch-records 1000 --total-bytes 16GB --connections 1 \
    --pipeline 8 --acks "$1" >/dev/null 2>&1 &
  flood=$!
  sleep 1
  run --topic "$topic" --record-size 100 --batch-records 1 --duration 3s --connections 1 \
    --pipeline 1 --acks 1 --json "$dir/probe.json" >/dev/null 2>&1
  kill "$flood" 2>/dev/null; wait "$flood" 2>/dev/null || true
  flood=""
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['write']['latency_us']['p50'])" \
    "$dir/probe.json"
}

acks1=$(probe_behind 1)
acks0=$(probe_behind 0)
python3 - "$acks1" "$acks0" <<'EOF'
import sys
a1, a0 = float(sys.argv[1]), float(sys.argv[2])
print(f"probe p50 behind an acks=1 producer pipelining 8: {a1 / 1000:.1f} ms")
print(f"probe p50 behind an acks=0 producer:              {a0 / 1000:.1f} ms ({a0 / a1:.2f}x)")
EOF
