#!/usr/bin/env bash
# What IORING_SETUP_COOP_TASKRUN would buy the server, measured A against B (issue 43).
#
# glommio 0.9.0 (pinned) sets up its rings with no flags a caller can choose. Without
# COOP_TASKRUN, every completion posted from another CPU (a disk interrupt, a socket made
# readable by the client's send) interrupts the running shard with a reschedule IPI so it
# runs io_uring's task work at once; with it, the work waits for the shard's next system
# call, which a busy shard makes within microseconds. On a VM each IPI is a VM exit.
#
# This builds the current checkout twice, in a temporary worktree and target directory
# (nothing in the repository changes): A with glommio as pinned, B with a copy of the same
# glommio 0.9.0 whose two sleepable rings (main and latency; not the IOPOLL ring) are set up
# with COOP_TASKRUN, through a [patch.crates-io]. Then it alternates rounds of 100-byte
# records in 16 KiB batches, at 2 connections x 4 in flight and at 64 x 1 (one shard on
# core 0, loadgen on core 1), and prints records/s and server CPU ns per record.
# Usage: scripts/glommio_coop_ab.sh [ROUNDS]   (default 4; two release builds, ~10 min)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-4}
work=$(mktemp -d "${TMPDIR:-/tmp}/coop-ab.XXXXXX")
trap 'git worktree remove --force "$work/tree" 2>/dev/null || true; rm -rf "$work"' EXIT

cargo fetch -q
registry_copy=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/glommio-0.9.0 | head -1)
cp -r "$registry_copy" "$work/glommio"
# The experiment's whole change to glommio: the flag's bit (include/uapi/linux/io_uring.h)
# and the sleepable rings set up with it.
sed -i 's|^        const ATTACH_WQ = 1 << 5;|&\n        const COOP_TASKRUN = 1 << 8;|' "$work/glommio/src/iou/mod.rs"
sed -i 's|ring: iou::IoUring::new(size as _)?,|ring: iou::IoUring::new_with_flags(size as _, iou::SetupFlags::COOP_TASKRUN, iou::SetupFeatures::empty())?,|' \
  "$work/glommio/src/sys/uring.rs"
grep -q "COOP_TASKRUN = 1 << 8" "$work/glommio/src/iou/mod.rs"
grep -q "SetupFlags::COOP_TASKRUN" "$work/glommio/src/sys/uring.rs"

git worktree add -q --detach "$work/tree" HEAD
printf '\n[patch.crates-io]\nglommio = { path = "%s" }\n' "$work/glommio" >>"$work/tree/Cargo.toml"
cargo build -q --release --bin shardlog
cargo build -q --release -p loadgen
cp target/release/shardlog "$work/shardlog-A"
(cd "$work/tree" && CARGO_TARGET_DIR="$work/target" cargo build -q --release --bin shardlog)
cp "$work/target/release/shardlog" "$work/shardlog-B"

run() { # build connections pipeline
  local dir port server
  dir=$(mktemp -d "$work/data.XXXXXX")
  port=$((20000 + RANDOM % 10000))
  taskset -c 0 "$work/shardlog-$1" serve --data-dir "$dir" --listen "127.0.0.1:$port" \
    --shards 1 --kafka-listen off >"$dir.log" 2>&1 &
  server=$!
  sleep 1.2
  taskset -c 1 target/release/loadgen write --bootstrap "127.0.0.1:$port" --topic s --create \
    --partitions 2 --record-size 100 --batch-bytes 16KiB --connections "$2" --pipeline "$3" \
    --duration 5s 2>/dev/null |
    awk -v b="$1" -v c="$2x$3" '/records\/s/ {rps=$4} /ns per record/ {
      for (i = 1; i <= NF; i++) if ($i == "ns") ns = $(i-1)
      printf "%-3s C=%-5s %10s records/s %6s ns per record\n", b, c, rps, ns }'
  kill "$server"
  wait "$server" 2>/dev/null || true
  rm -rf "$dir"
}

for round in $(seq 1 "$rounds"); do
  order="A B"
  [ $((round % 2)) = 0 ] && order="B A"
  echo "round $round"
  for build in $order; do
    run "$build" 2 4
    run "$build" 64 1
  done
done
