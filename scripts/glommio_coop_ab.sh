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
# with COOP_TASKRUN, through a [patch.crates-io]. Then `perf_figures.py --small` measures
# both in alternated rounds (100-byte records in 16 KiB batches, at 2 connections x 4 in
# flight and at 64 x 1, one shard on core 0, loadgen on core 1, fio beside each round):
# records/s and server CPU ns per record. A is built from the working tree and B from HEAD,
# so the tree must be clean.
# Usage: scripts/glommio_coop_ab.sh [ROUNDS]   (default 4; two release builds, ~12 min)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-4}
work=$(mktemp -d "${TMPDIR:-/tmp}/coop-ab.XXXXXX")
trap 'git worktree remove --force "$work/tree" 2>/dev/null || true; rm -rf "$work"' EXIT

git diff --quiet HEAD || { echo "commit or stash first: B is built from HEAD" >&2; exit 1; }
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

python3 scripts/perf_figures.py "$work/shardlog-A" "$work/shardlog-B" target/release/loadgen \
  "$rounds" --small
