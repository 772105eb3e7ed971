#!/usr/bin/env bash
# Engine benchmarks with the disk baseline measured in the same run.
# Usage: scripts/bench.sh [--quick]
# Installs fio if missing, then runs `cargo bench --bench engine`, which measures fio's
# sequential O_DIRECT io_uring write (bs=1M, iodepth=8) on the bench directory and prints
# shardlog's single-partition append throughput as a ratio of it, and
# `cargo bench --bench roundtrip` (produce round trips over loopback, direct and forwarded),
# `cargo bench --bench produce` (acks=1 vs acks=all throughput and latency, group commit) and
# `cargo bench --bench recovery` (rescan of a 1 GiB active segment after kill -9).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v fio >/dev/null 2>&1; then
  echo "installing fio..." >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fio >/dev/null
fi

args=()
[[ "${1:-}" == "--quick" ]] && args+=(--quick)
export SHARDLOG_BENCH_DIR="${SHARDLOG_BENCH_DIR:-$PWD/target/bench-data}"
cargo bench --bench engine -- "${args[@]}"
cargo bench --bench roundtrip -- "${args[@]}"
cargo bench --bench produce -- "${args[@]}"
cargo bench --bench recovery -- "${args[@]}"
