"""shardlog side by side with Apache Iggy, as issue 24 measured them: same machine, same
window, runs alternated (shardlog first in odd rounds, Iggy first in even ones), each round
against fio on the same disk:

  python3 scripts/iggy_compare.py SHARDLOG LOADGEN IGGY_RELEASE_DIR [ROUNDS] [--json=OUT] [--small]

IGGY_RELEASE_DIR holds `iggy-server` and `iggy-bench`, built from source:
  git clone https://github.com/apache/iggy && cd iggy
  apt-get install -y libhwloc-dev libudev-dev
  cargo +nightly build --release -p server -p iggy-bench   # its toolchain file asks 1.97

Both servers get the same envelope: one shard pinned to core 0, the client on core 1.
The workload is the issue's: 2 producers (one partition each), 1000-byte records, 1000 per
batch, 1 GB; then a cold sequential consume of it (2 consumers, ~1 MB per fetch).
  - shardlog: `loadgen write` acks=1 and acks=all (pipeline 4 per connection), then
    `loadgen consume --cache cold` (the server's caches dropped) of the acks=1 topic;
  - Iggy: `iggy-bench pinned-producer` buffered (its default: the ack comes before the data
    is on disk) and with `--enforce-fsync` (fsync per batch), then `pinned-consumer` of the
    buffered streams after the kernel page cache is dropped (Iggy reads through it).
Throughput is payload MB/s (records x 1000 bytes), as iggy-bench reports it. CPU-s/GB is
the server's utime + stime over the run. Prints each round and the medians.

--small is issue 43's workload instead: 100-byte messages in batches of 160 (16 KiB, a Kafka
producer's batch.size), 2 producers, 1 GB, writes only (acks=1 against Iggy buffered,
acks=all against --enforce-fsync), reported as messages/s and server CPU ns per message.
shardlog runs it twice: with one request in flight per connection (as iggy-bench's
producers send) and with loadgen's default pipeline of 4.

iggy-bench gets --nodelay (TCP_NODELAY, which loadgen always sets): without it, 16 KiB
batches meet Nagle's algorithm and the delayed ACK, and Iggy stalls ~40 ms per batch
(7,200 messages/s instead of ~2.4 M at cc269ef70).
"""
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from perf_figures import bench_root, fio, lg_json, measured, shardlog_server

RECORD = 1000
GB = "1GB"  # iggy-bench and loadgen both read it as 10^9 bytes
GB_BYTES = 1e9
SMALL_RECORD, SMALL_BATCH = 100, 160


def shardlog_round(binary, loadgen, work, port):
    with shardlog_server(binary, work, port) as server:
        row = {}
        for acks, topic in (("1", "w1"), ("all", "wall")):
            out = os.path.join(work, f"write-{acks}.json")
            doc, cpu = measured(server.pid, lambda: lg_json(
                loadgen, port, out, "write", "--topic", topic, "--create", "--partitions", "2",
                "--record-size", str(RECORD), "--batch-records", "1000", "--total-bytes", GB,
                "--connections", "2", "--pipeline", "4", "--acks", acks))
            w = doc["write"]
            row[f"write acks={acks} MB/s"] = w["records_per_s"] * RECORD / 1e6
            row[f"write acks={acks} CPU-s/GB"] = cpu / (w["records"] * RECORD / 1e9)
        out = os.path.join(work, "consume.json")
        doc, cpu = measured(server.pid, lambda: lg_json(
            loadgen, port, out, "consume", "--topic", "w1", "--cache", "cold"))
        r = doc["consume"]["cold"]
        row["consume MB/s"] = r["mb_per_s"]
        row["consume CPU-s/GB"] = cpu / (r["bytes"] / 1e9)
        return row


def iggy_bench(release, options, kind, *args):
    """Runs one iggy-bench workload on core 1; returns its total MB/s."""
    cmd = ["taskset", "-c", "1", os.path.join(release, "iggy-bench"), "-T", GB, *options, kind,
           *args, "--nodelay"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    m = re.search(r"Results: Total throughput: ([0-9.]+) MB/s", out)
    if not m:
        sys.exit(f"iggy-bench {kind}: no throughput in its output:\n{out[-2000:]}")
    return float(m.group(1))


@contextlib.contextmanager
def iggy_server(release, work):
    """Iggy with one shard pinned to core 0, its data under `work`."""
    env = {**os.environ, "IGGY_ROOT_USERNAME": "iggy", "IGGY_ROOT_PASSWORD": "iggy",
           "IGGY_SYSTEM_PATH": os.path.join(work, "iggy"),
           "IGGY_SYSTEM_SHARDING_CPU_ALLOCATION": "1"}
    log = open(os.path.join(work, "iggy.log"), "w")
    server = subprocess.Popen(["taskset", "-c", "0", os.path.join(release, "iggy-server")],
                              env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        time.sleep(3)
        yield server
    finally:
        server.terminate()
        server.wait()
        subprocess.run(["rm", "-rf", os.path.join(work, "iggy")])


def iggy_round(release, work):
    with iggy_server(release, work) as server:
        row = {}
        runs = (("write buffered", [], "pinned-producer", ["-p", "2", "tcp"]),
                ("consume", [], "pinned-consumer", ["-c", "2", "tcp"]),
                ("write fsync", ["--enforce-fsync"], "pinned-producer", ["-p", "2", "tcp"]))
        for name, options, kind, args in runs:
            if kind == "pinned-consumer":
                subprocess.run(["sh", "-c", "sync; echo 3 > /proc/sys/vm/drop_caches"], check=True)
            mb_per_s, cpu = measured(server.pid, lambda: iggy_bench(release, options, kind, *args))
            row[f"{name} MB/s"] = mb_per_s
            row[f"{name} CPU-s/GB"] = cpu / (GB_BYTES / 1e9)
        return row


def small_shape():
    return ["-m", str(SMALL_RECORD), "-P", str(SMALL_BATCH)]


def iggy_small_round(release, work):
    """Issue 43's small messages on Iggy: messages/s and server CPU ns per message."""
    row = {}
    for name, options in (("buffered", []), ("fsync", ["--enforce-fsync"])):
        with iggy_server(release, work) as server:
            mb_per_s, cpu = measured(server.pid, lambda: iggy_bench(
                release, small_shape() + options, "pinned-producer", "-p", "2", "tcp"))
        messages = GB_BYTES / SMALL_RECORD
        row[f"write {name} messages/s"] = mb_per_s * 1e6 / SMALL_RECORD
        row[f"write {name} CPU ns/message"] = cpu * 1e9 / messages
    return row


def shardlog_small_round(binary, loadgen, work, port):
    """Issue 43's small records on shardlog, one and four requests in flight per connection."""
    row = {}
    with shardlog_server(binary, work, port) as server:
        for acks, pipeline in (("1", "1"), ("1", "4"), ("all", "1"), ("all", "4")):
            out = os.path.join(work, f"small-{acks}-{pipeline}.json")
            doc, cpu = measured(server.pid, lambda: lg_json(
                loadgen, port, out, "write", "--topic", f"s{acks}p{pipeline}", "--create",
                "--partitions", "2", "--record-size", str(SMALL_RECORD), "--batch-records",
                str(SMALL_BATCH), "--total-bytes", GB, "--connections", "2", "--pipeline",
                pipeline, "--acks", acks))
            w = doc["write"]
            name = f"write acks={acks} pipeline {pipeline}"
            row[f"{name} messages/s"] = w["records_per_s"]
            row[f"{name} CPU ns/message"] = cpu * 1e9 / w["records"]
    return row


RATIOS = (("shardlog acks=1 / Iggy buffered", "write acks=1 MB/s", "write buffered MB/s"),
          ("shardlog acks=all / Iggy fsync", "write acks=all MB/s", "write fsync MB/s"),
          ("shardlog consume / Iggy consume", "consume MB/s", "consume MB/s"))

SMALL_RATIOS = tuple(
    (f"{what}: shardlog acks={acks} pipeline {p} / Iggy {mode}",
     f"write acks={acks} pipeline {p} {what}", f"write {mode} {what}")
    for acks, mode in (("1", "buffered"), ("all", "fsync"))
    for p in ("1", "4")
    for what in ("messages/s", "CPU ns/message"))


def disk_ratios(rows, disk):
    return {
        "shardlog acks=1 / fio write": rows["shardlog"]["write acks=1 MB/s"] / disk["fio write QD4 MB/s"],
        "shardlog acks=all / fio write": rows["shardlog"]["write acks=all MB/s"] / disk["fio write QD4 MB/s"],
        "shardlog consume / fio read QD1": rows["shardlog"]["consume MB/s"] / disk["fio read QD1 MB/s"],
    }


def main():
    small = "--small" in sys.argv[1:]
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    json_out = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--json=")), None)
    shardlog, loadgen, release = args[0], args[1], args[2]
    rounds = int(args[3]) if len(args) > 3 else 3
    root, port = bench_root(), 22000 + os.getpid() % 5000
    results = {"fio": [], "shardlog": [], "iggy": [], "ratios": []}
    for rnd in range(rounds):
        work = tempfile.mkdtemp(prefix="iggy-compare-", dir=root)
        disk = {"fio write QD4 MB/s": fio(work, "w", "write", 4),
                "fio read QD1 MB/s": fio(work, "r1", "read", 1),
                "fio read QD4 MB/s": fio(work, "r4", "read", 4)}
        os.remove(os.path.join(work, "fio.dat"))
        order = ["shardlog", "iggy"] if rnd % 2 == 0 else ["iggy", "shardlog"]
        rows = {}
        for who in order:
            if who == "shardlog":
                measure = shardlog_small_round if small else shardlog_round
                rows[who] = measure(shardlog, loadgen, work, port)
                port += 1
            else:
                rows[who] = (iggy_small_round if small else iggy_round)(release, work)
        pairs = SMALL_RATIOS if small else RATIOS
        ratios = {name: rows["shardlog"][a] / rows["iggy"][b] for name, a, b in pairs}
        if not small:
            ratios.update(disk_ratios(rows, disk))
        for k, v in (("fio", disk), ("shardlog", rows["shardlog"]), ("iggy", rows["iggy"]), ("ratios", ratios)):
            results[k].append(v)
            print(f"round {rnd + 1} ({'/'.join(order)}) {k}: "
                  + ", ".join(f"{a} {b:.2f}" for a, b in v.items()), flush=True)
        subprocess.run(["rm", "-rf", work])
    print()
    print(f"| figure (median of {rounds} rounds; range) | value |")
    print("|---|---|")
    for k in ("fio", "shardlog", "iggy", "ratios"):
        for key in results[k][0]:
            vals = [r[key] for r in results[k]]
            print(f"| {k}: {key} | {statistics.median(vals):.2f} ({min(vals):.2f}-{max(vals):.2f}) |")
    if json_out:
        json.dump(results, open(json_out, "w"), indent=2)


if __name__ == "__main__":
    main()
