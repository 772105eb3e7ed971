#!/usr/bin/env bash
# One benchmark run with its disk baseline measured in the same run:
#   1. fio: sequential O_DIRECT io_uring 1 MiB writes at iodepth 8, and random 4 KiB
#      O_DIRECT reads at iodepth 1 (installs fio if missing);
#   2. loadgen bench against a fresh server (write, then lookups by offset and timestamp,
#      cold and warm);
#   3. the ratios that matter: shardlog write MB/s / fio MB/s, and cold lookup p50/p99 /
#      fio random-read p50/p99 (fio's total latency, submission + completion: io_uring
#      issues a direct read inside io_uring_enter, which `clat` leaves out). Writes
#      results/<date>.json and results/<date>.md, and the
#      SVG plots (latency percentile curves, write throughput over time) in
#      results/<date>-plots/, linked from the markdown.
# With --engine it also runs the engine benches (cargo bench: engine, roundtrip, produce,
# recovery).
# Usage: scripts/bench.sh [--quick] [--engine]
set -euo pipefail
cd "$(dirname "$0")/.."

quick=false
engine=false
for a in "$@"; do
  case "$a" in
    --quick) quick=true ;;
    --engine) engine=true ;;
    *) echo "usage: $0 [--quick] [--engine]" >&2; exit 2 ;;
  esac
done

if ! command -v fio >/dev/null 2>&1; then
  echo "installing fio..." >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fio >/dev/null
fi

dir="${SHARDLOG_BENCH_DIR:-$PWD/target/bench-data}"
mkdir -p "$dir" results
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; rm -f "$dir/fio.dat"' EXIT
size=4G
$quick && size=1G

echo "fio: sequential write (1 MiB, iodepth 8, O_DIRECT, io_uring), $size ..." >&2
fio --name=seqwrite --filename="$dir/fio.dat" --rw=write --bs=1M --direct=1 \
  --ioengine=io_uring --iodepth=8 --size="$size" --end_fsync=1 --output-format=json >"$tmp/fio-write.json"
echo "fio: random 4 KiB reads (iodepth 1, O_DIRECT, io_uring), 10 s ..." >&2
fio --name=randread --filename="$dir/fio.dat" --rw=randread --bs=4k --direct=1 \
  --ioengine=io_uring --iodepth=1 --size="$size" --runtime=10 --time_based \
  --lat_percentiles=1 --output-format=json >"$tmp/fio-read.json"
rm -f "$dir/fio.dat"

stamp=$(date -u +%Y-%m-%dT%H-%M-%SZ)
cargo build --release -p loadgen --quiet
args=(bench --data-dir "$dir" --json "$tmp/loadgen.json" --plot "results/$stamp-plots")
$quick && args+=(--quick)
target/release/loadgen "${args[@]}"

python3 - "$tmp" "results/$stamp" <<'PY'
import json, os, sys
tmp, out = sys.argv[1], sys.argv[2]
fw = json.load(open(f"{tmp}/fio-write.json"))["jobs"][0]["write"]
fr = json.load(open(f"{tmp}/fio-read.json"))["jobs"][0]["read"]
lg = json.load(open(f"{tmp}/loadgen.json"))
fio_mb = fw["bw_bytes"] / 1e6
pct = fr["lat_ns"]["percentile"]
fio_p50, fio_p99 = pct["50.000000"] / 1000, pct["99.000000"] / 1000
w = lg["write"]
rows = [
    ("sequential write MB/s (acks=1)", w["mb_per_s"], fio_mb, w["mb_per_s"] / fio_mb, ">= 0.90"),
]
for by in ("offset", "timestamp"):
    cold = lg["lookup"][f"{by}_cold"]["latency_us"]
    rows.append((f"cold lookup by {by} p50 us", cold["p50"], fio_p50, cold["p50"] / fio_p50, ""))
    rows.append((f"cold lookup by {by} p99 us", cold["p99"], fio_p99, cold["p99"] / fio_p99, "<= 2.0"))
doc = {
    "fio": {"seq_write_mb_per_s": fio_mb, "rand_read_4k_p50_us": fio_p50, "rand_read_4k_p99_us": fio_p99},
    "loadgen": lg,
    "ratios": {r[0]: r[3] for r in rows},
}
json.dump(doc, open(f"{out}.json", "w"), indent=2)
lines = ["| figure | shardlog | fio baseline | ratio | target |", "|---|---|---|---|---|"]
lines += [f"| {a} | {b:.1f} | {c:.1f} | {d:.2f} | {e} |" for a, b, c, d, e in rows]
net = lg["lookup"].get("network_round_trip", {}).get("latency_us")
for by in ("offset", "timestamp"):
    for mode in ("cold", "warm"):
        r = lg["lookup"][f"{by}_{mode}"]
        l = r["latency_us"]
        lines.append(f"| {by} {mode}: p50/p99 us, device reads per lookup | {l['p50']}/{l['p99']} | | {r['device_reads_per_lookup_mean']:.2f} (max {r['device_reads_per_lookup_max']}) | |")
if net:
    lines.append(f"| network round trip (no storage) p50/p99 us | {net['p50']}/{net['p99']} | | | |")
mem = lg["memory"]
lines.append(f"| max RSS MiB (server + loadgen) | {mem['max_rss_bytes'] >> 20} | budget {mem['budget_bytes'] >> 20} | {mem['max_rss_bytes'] / mem['budget_bytes']:.2f} | <= 1.0 |")
plots = f"{out}-plots"
if os.path.isdir(plots):
    lines.append("")
    lines.append("Plots: " + ", ".join(
        f"[{f[:-4]}]({os.path.basename(plots)}/{f})" for f in sorted(os.listdir(plots)) if f.endswith(".svg")))
md = "\n".join(lines) + "\n"
open(f"{out}.md", "w").write(md)
print(md)
print(f"wrote {out}.json and {out}.md")
PY

if $engine; then
  eargs=()
  $quick && eargs+=(--quick)
  export SHARDLOG_BENCH_DIR="$dir"
  cargo bench --bench engine -- "${eargs[@]}"
  cargo bench --bench roundtrip -- "${eargs[@]}"
  cargo bench --bench produce -- "${eargs[@]}"
  cargo bench --bench recovery -- "${eargs[@]}"
fi
