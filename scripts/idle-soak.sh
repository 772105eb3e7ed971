#!/usr/bin/env bash
# An idle server's cost over time: starts `shardlog serve` (2 shards, Kafka and metrics
# listeners on free loopback ports, a temp data dir), creates a 4-partition topic (partitions
# on both shards), starts CONSUMERS idle confluent-kafka consumers at its end, then samples
# the server's RSS, CPU time and (where the binary reports it) live heap every INTERVAL s
# for SECONDS s. Needs the test venv (scripts/install-test-deps.sh).
#
#   scripts/idle-soak.sh [BINARY] [SECONDS] [CONSUMERS] [INTERVAL]
#   (defaults: target/release/shardlog 600 10 60)
# A server whose RSS passes RSS_LIMIT bytes (default 8 GiB) is stopped there: a leaking
# build must not take the machine down with it.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/shardlog}
seconds=${2:-600}
consumers=${3:-10}
interval=${4:-60}
rss_limit=${RSS_LIMIT:-8589934592}
py=target/kafka-venv/bin/python

data=$(mktemp -d)
base=$((20000 + RANDOM % 10000))
native=127.0.0.1:$base
kafka=127.0.0.1:$((base + 10))
metrics=127.0.0.1:$((base + 11))
printf 'shards=2\nkafka.listen=%s\nmetrics.listen=%s\n' "$kafka" "$metrics" > "$data.properties"
"$bin" serve --data-dir "$data" --listen "$native" --config "$data.properties" 2> "$data.log" &
server=$!
trap 'kill $server $consumer 2>/dev/null; wait 2>/dev/null; rm -rf "$data" "$data.properties" "$data.log"' EXIT
for _ in $(seq 100); do curl -s "http://$metrics/metrics" > /dev/null && break; sleep 0.1; done
"$bin" topics create --topic idle --partitions 4 -b "$native" > /dev/null
"$py" tests/kafka_clients/idle.py "$kafka" idle 4 "$consumers" > /dev/null &
consumer=$!
sleep 5

ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$server/stat"; }
rss() { awk '/VmRSS/ {printf "%.0f\n", $2 * 1024}' "/proc/$server/status"; }
heap() { curl -s "http://$metrics/metrics" | awk '/^shardlog_heap_live_bytes/ {s += $2} END {print (NR && s != "") ? s : "-"}'; }
start_cpu=$(cpu)
echo "binary=$bin consumers=$consumers"
echo "seconds rss_bytes heap_live_bytes cpu_seconds cpu_share"
for t in $(seq "$interval" "$interval" "$seconds"); do
  sleep "$interval"
  used=$(( $(cpu) - start_cpu ))
  awk -v t="$t" -v r="$(rss)" -v h="$(heap)" -v u="$used" -v k="$ticks" \
    'BEGIN {printf "%d %.0f %s %.2f %.3f\n", t, r, h, u / k, u / k / t}'
  if (( $(rss) > rss_limit )); then
    echo "stopped: RSS over $rss_limit bytes"
    break
  fi
done
