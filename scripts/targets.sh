#!/usr/bin/env bash
# The performance targets of the latency work, each as measured / floor, with every floor
# measured in the same run: one shard pinned to core 0, the load generator on core 1.
#   floors: loopback round trip (ApiVersions, same connection as the lookups), fio QD1
#           random 4 KiB and 32 KiB reads, fio QD1 4 KiB writes, fio sequential 1 MiB
#           writes at iodepth 8. An I/O's floor is fio's total latency (submission +
#           completion, `lat`): io_uring issues a direct I/O inside the submitting
#           io_uring_enter, so fio's completion latency (`clat`) leaves out 15-25 us of it.
#           The ratios against the floors of earlier stops (clat; lookups by time against
#           a 4 KiB read) are printed too, for comparison across stops;
#   runs:   lookups by offset and by timestamp (FetchAtTime, one round trip), cold and
#           warm; produce of 1, 10 and 100 records per batch (acks=1, one request in
#           flight); sequential writes in 1 MiB and 16 KiB batches.
# Writes results/<date>-targets.{json,md} and SVG plots in results/<date>-targets-plots/.
# Each loadgen run prints the server's own breakdown (stage histograms) under its figures.
# Usage: scripts/targets.sh [--quick]
# Environment: SHARDLOG_BIN (another server build to measure, e.g. the commit before a change),
# SHARDLOG_SERVER_CONFIG (a properties file for the server, e.g. spin.before.park.us=200).
set -euo pipefail
cd "$(dirname "$0")/.."

quick=false
for a in "$@"; do
  case "$a" in
    --quick) quick=true ;;
    *) echo "usage: $0 [--quick]" >&2; exit 2 ;;
  esac
done
if ! command -v fio >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fio >/dev/null
fi

dir="${SHARDLOG_BENCH_DIR:-$PWD/target/bench-data}/targets"
rm -rf "$dir" && mkdir -p "$dir" results
tmp=$(mktemp -d)
port=$((20000 + RANDOM % 10000))
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$tmp" "$dir"
}
trap cleanup EXIT
stamp=$(date -u +%Y-%m-%dT%H-%M-%SZ)
out="results/$stamp-targets"
lookups=1000; seconds=8; size=2G
$quick && { lookups=300; seconds=3; size=512M; }

fio_run() { # name, then fio arguments; writes $tmp/fio-<name>.json
  local name=$1; shift
  fio --name="$name" --filename="$dir/fio.dat" --direct=1 --ioengine=io_uring \
    --lat_percentiles=1 --output-format=json "$@" >"$tmp/fio-$name.json"
}
echo "fio baselines ($size file) ..." >&2
fio_run seqwrite --rw=write --bs=1M --iodepth=8 --size="$size" --end_fsync=1
fio_run read4k --rw=randread --bs=4k --iodepth=1 --size="$size" --runtime=$seconds --time_based
fio_run read32k --rw=randread --bs=32k --iodepth=1 --size="$size" --runtime=$seconds --time_based
fio_run write4k --rw=randwrite --bs=4k --iodepth=1 --size="$size" --runtime=$seconds --time_based
rm -f "$dir/fio.dat"

cargo build --release --quiet -p shardlog -p loadgen
server_config=()
[ -n "${SHARDLOG_SERVER_CONFIG:-}" ] && server_config=(--config "$SHARDLOG_SERVER_CONFIG")
taskset -c 0 "${SHARDLOG_BIN:-target/release/shardlog}" serve --data-dir "$dir/data" \
  --listen "127.0.0.1:$port" --shards 1 --kafka-listen off "${server_config[@]}" \
  >"$tmp/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
lg() { taskset -c 1 target/release/loadgen "$@" --bootstrap "127.0.0.1:$port"; }

echo "lookups ..." >&2
lg write --topic lookups --partitions 1 --create --record-size 1KiB --batch-records 16 \
  --total-bytes 512MiB --connections 1 >/dev/null
for by in offset timestamp; do
  lg lookup --topic lookups --by $by --cache both --count $lookups \
    --json "$tmp/lookup-$by.json" --plot "$out-plots"
done
echo "small produces ..." >&2
for n in 1 10 100; do
  lg write --topic small$n --partitions 1 --create --record-size 100 --batch-records $n \
    --duration ${seconds}s --connections 1 --pipeline 1 --acks 1 --json "$tmp/produce-$n.json"
done
echo "sequential writes ..." >&2
lg write --topic seq1m --partitions 1 --create --record-size 1KiB --batch-records 1024 \
  --total-bytes $size --connections 2 --pipeline 4 --acks 1 --json "$tmp/seq-1m.json" \
  --plot "$out-plots"
lg write --topic seq16k --partitions 1 --create --record-size 1KiB --batch-records 16 \
  --total-bytes 512MiB --connections 2 --pipeline 8 --acks 1 --json "$tmp/seq-16k.json"

python3 - "$tmp" "$out" <<'PY'
import json, os, sys
tmp, out = sys.argv[1], sys.argv[2]
def fio(name, kind, latency="lat_ns"):
    j = json.load(open(f"{tmp}/fio-{name}.json"))["jobs"][0][kind]
    p = j[latency]["percentile"]
    return j["bw_bytes"] / 1e6, p["50.000000"] / 1000, p["99.000000"] / 1000
seq_mb, _, _ = fio("seqwrite", "write")
_, r4_50, r4_99 = fio("read4k", "read")
_, r32_50, r32_99 = fio("read32k", "read")
_, w4_50, _ = fio("write4k", "write")
# The floors of earlier stops: fio's completion latency only.
_, r4c_50, _ = fio("read4k", "read", "clat_ns")
_, r32c_50, _ = fio("read32k", "read", "clat_ns")
_, w4c_50, _ = fio("write4k", "write", "clat_ns")
look = {by: json.load(open(f"{tmp}/lookup-{by}.json"))["lookup"] for by in ("offset", "timestamp")}
rt = look["offset"]["network_round_trip"]["latency_us"]
rt50, rt99 = rt["p50"], rt["p99"]
def lat(by, mode): return look[by][f"{by}_{mode}"]
prod = {n: json.load(open(f"{tmp}/produce-{n}.json"))["write"] for n in (1, 10, 100)}
seq = {k: json.load(open(f"{tmp}/seq-{k}.json"))["write"] for k in ("1m", "16k")}
rows = []
def target(name, measured, floor, note=""):
    rows.append((name, measured, floor, measured / floor if floor else float("nan"), note))
# Cold lookups by offset read one batch (~16 KiB): its floor is fio's QD1 read of the same
# size class (32 KiB), the target's "fio QD1 p50 of the reads it does".
# Warm lookups against the round trip timed just before each of them (same conditions).
def warm_rt(by): return lat(by, "warm")["round_trip_us"]
co = lat("offset", "cold")
reads = co["device_reads_per_lookup_mean"]
target("warm lookup by offset p50 us", lat("offset", "warm")["latency_us"]["p50"], warm_rt("offset")["p50"] + 15, "interleaved round trip + 15")
target("warm lookup by offset p99 us", lat("offset", "warm")["latency_us"]["p99"], warm_rt("offset")["p99"] + 30, "interleaved round trip p99 + 30")
target("warm lookup by timestamp p50 us", lat("timestamp", "warm")["latency_us"]["p50"], warm_rt("timestamp")["p50"] + 25, "interleaved round trip + 25")
target("cold lookup by offset p50 us", co["latency_us"]["p50"], rt50 + reads * r32_50 + 25, f"rt + {reads:.2f} x fio 32k p50 + 25")
target("cold lookup by offset p99 us", co["latency_us"]["p99"], rt99 + 2 * reads * r32_99, "rt p99 + 2 x fio 32k p99")
ct = lat("timestamp", "cold")
treads = ct["device_reads_per_lookup_mean"]
# A lookup by time reads one batch, as one by offset does (the next time-index entry bounds
# it), so its read is of the same size class.
target("cold lookup by timestamp p50 us", ct["latency_us"]["p50"], rt50 + treads * r32_50 + 25, f"rt + {treads:.2f} x fio 32k p50 + 25")
target("single-record produce acks=1 p50 us", prod[1]["latency_us"]["p50"], rt50 + w4_50 + 20, "rt + fio 4k write p50 + 20")
earlier = {
    "cold lookup by offset p50": co["latency_us"]["p50"] / (rt50 + reads * r32c_50 + 25),
    "cold lookup by timestamp p50": ct["latency_us"]["p50"] / (rt50 + treads * r4c_50 + 25),
    "single-record produce acks=1 p50": prod[1]["latency_us"]["p50"] / (rt50 + w4c_50 + 20),
}
target("sequential write 1 MiB batches MB/s (higher is better)", seq["1m"]["mb_per_s"], 0.9 * seq_mb, ">= 0.9 x fio")
target("sequential write 16 KiB batches MB/s (higher is better)", seq["16k"]["mb_per_s"], 0.5 * seq_mb, ">= 0.5 x fio")
floor_rps = 1e6 / (rt50 + w4_50)
for n in (1, 10, 100):
    rps = prod[n]["records_per_s"] / n
    target(f"produce {n} records/batch, 1 in flight: requests/s (higher is better)", rps, floor_rps, "1 / (rt + fio 4k write)")
doc = {
    "floors": {"round_trip_p50_us": rt50, "round_trip_p99_us": rt99, "fio_seq_write_mb_per_s": seq_mb,
               "fio_read_4k_p50_us": r4_50, "fio_read_4k_p99_us": r4_99, "fio_read_32k_p50_us": r32_50,
               "fio_read_32k_p99_us": r32_99, "fio_write_4k_p50_us": w4_50,
               "fio_clat_read_4k_p50_us": r4c_50, "fio_clat_read_32k_p50_us": r32c_50,
               "fio_clat_write_4k_p50_us": w4c_50},
    "ratios_against_earlier_floors": earlier,
    "targets": [{"name": r[0], "measured": r[1], "floor": r[2], "ratio": r[3], "floor_is": r[4]} for r in rows],
    "lookup": look, "produce": prod, "sequential": seq,
}
json.dump(doc, open(f"{out}.json", "w"), indent=2)
lines = ["| target | measured | floor (same run) | measured / floor | floor is |", "|---|---|---|---|---|"]
lines += [f"| {a} | {b:.1f} | {c:.1f} | {d:.2f} | {e} |" for a, b, c, d, e in rows]
lines.append("")
lines.append(f"Floors: round trip p50/p99 {rt50}/{rt99} us; fio QD1 read 4k p50/p99 {r4_50:.1f}/{r4_99:.1f} us, "
             f"32k {r32_50:.1f}/{r32_99:.1f} us; fio QD1 write 4k p50 {w4_50:.1f} us (total latency; completion "
             f"only: read 4k {r4c_50:.1f}, 32k {r32c_50:.1f}, write 4k {w4c_50:.1f}); fio seq write {seq_mb:.0f} MB/s.")
lines.append("Against the floors of earlier stops (fio completion latency; by time against a 4 KiB read): "
             + ", ".join(f"{k} {v:.2f}" for k, v in earlier.items()) + ".")
plots = f"{out}-plots"
if os.path.isdir(plots):
    lines.append("Plots: " + ", ".join(f"[{f[:-4]}]({os.path.basename(plots)}/{f})"
                                       for f in sorted(os.listdir(plots)) if f.endswith(".svg")))
md = "\n".join(lines) + "\n"
open(f"{out}.md", "w").write(md)
print(md)
print(f"wrote {out}.json and {out}.md")
PY
