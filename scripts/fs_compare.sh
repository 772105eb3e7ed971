#!/usr/bin/env bash
# ext4 against XFS on the same disk: two loop-mounted images side by side, targets.sh --quick
# run on each in turn (ext4, xfs, ext4, xfs, ...), every figure against fio on the same
# file system in the same run. Prints one table of every round.
#
# The images are written with zeros before mkfs: a sparse backing file makes every first
# write into it allocate blocks in the host file system, and which file system rewrites its
# freed blocks (XFS here) then looks faster for a reason that has nothing to do with it.
# ext4 is made without lazy inode-table init, so no kernel thread zeroes tables during the
# runs. The loop devices use direct I/O (no second page cache).
#
# Usage: scripts/fs_compare.sh [ROUNDS] (default 3; root; about a minute per run, 10 GiB
# per image under target/fs-compare). Environment: SHARDLOG_BIN as for targets.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
command -v mkfs.xfs >/dev/null || {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq xfsprogs >/dev/null
}
work=$PWD/target/fs-compare
mkdir -p "$work"
declare -A dev mnt
cleanup() {
  for fs in ext4 xfs; do
    [ -n "${mnt[$fs]:-}" ] && umount "${mnt[$fs]}" 2>/dev/null
    [ -n "${dev[$fs]:-}" ] && losetup -d "${dev[$fs]}" 2>/dev/null
  done
  rm -rf "$work"
}
trap cleanup EXIT
for fs in ext4 xfs; do
  dd if=/dev/zero of="$work/$fs.img" bs=16M count=640 oflag=direct status=none
  dev[$fs]=$(losetup --find --show --direct-io=on "$work/$fs.img")
  case $fs in
    ext4) mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "${dev[$fs]}" ;;
    xfs) mkfs.xfs -q -f "${dev[$fs]}" ;;
  esac
  mnt[$fs]=$work/mnt-$fs
  mkdir -p "${mnt[$fs]}" && mount "${dev[$fs]}" "${mnt[$fs]}"
done
runs=()
for r in $(seq "$rounds"); do
  for fs in ext4 xfs; do
    echo "round $r: $fs" >&2
    out=$(SHARDLOG_BENCH_DIR="${mnt[$fs]}" scripts/targets.sh --quick | sed -n 's/^wrote \([^ ]*\.json\).*/\1/p')
    runs+=("$fs=$out")
  done
done
python3 - "${runs[@]}" <<'EOF'
import json, sys
rows, names = {}, []
for arg in sys.argv[1:]:
    fs, path = arg.split("=", 1)
    names.append(fs)
    doc = json.load(open(path))
    for t in doc["targets"]:
        rows.setdefault(t["name"], {}).setdefault(fs, []).append(f"{t['measured']:.0f} ({t['ratio']:.2f})")
    rows.setdefault("fio sequential write MB/s (the floor)", {}).setdefault(fs, []).append(
        f"{doc['floors']['fio_seq_write_mb_per_s']:.0f}")
print("| figure: measured (measured / floor), each round | ext4 | xfs |\n|---|---|---|")
for name, by_fs in rows.items():
    print(f"| {name} | {', '.join(by_fs.get('ext4', []))} | {', '.join(by_fs.get('xfs', []))} |")
EOF
