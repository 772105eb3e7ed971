"""Issue 24's before/after figures: two server builds measured in the same window, runs
alternated (A B A B ...), each against fio on the same disk in the same round:

  python3 scripts/perf_figures.py BASE_SHARDLOG NEW_SHARDLOG LOADGEN [ROUNDS] [--json OUT]

Per round, for each build: one shard pinned to core 0, loadgen on core 1 (as targets.sh);
  - fio O_DIRECT on the data disk: sequential 1 MiB writes at QD4, sequential 1 MiB reads
    at QD1 and QD4;
  - `loadgen write` 1 GiB, 1 KiB records, 1000 per batch, 2 connections, pipeline 4, with
    acks=1 and with acks=all (each to its own topic);
  - `loadgen consume` of the acks=1 topic (1 GiB, 1 MiB fetches), cold (caches dropped);
  - the server's CPU-seconds per GB for each, from /proc/<pid>/stat around the run (so
    the older build, without the Metrics API's process_cpu_ms, is measured the same way).
Prints one table per round and the medians; ratios are against the same round's fio.

--small is issue 43's workload instead of the writes and the consume: 100-byte records in
16 KiB batches over 2 partitions, 5 s at 2 connections x 4 in flight and 5 s at 64 x 1,
reported as records/s and the server's CPU ns per record (from /proc, as above).
"""
import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

TICKS = os.sysconf("SC_CLK_TCK")


def bench_root():
    root = os.environ.get("SHARDLOG_BENCH_DIR", os.path.join(os.getcwd(), "target", "bench-data"))
    os.makedirs(root, exist_ok=True)
    return root


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime, every thread


def ensure_fio():
    """Installs fio from the Debian packages when missing (as targets.sh and bench.sh do)."""
    if shutil.which("fio") is None:
        subprocess.run(["sh", "-c", "apt-get update -qq && DEBIAN_FRONTEND=noninteractive "
                        "apt-get install -y -qq fio >/dev/null"], check=True)


def fio(work, name, rw, depth):
    ensure_fio()
    out = subprocess.run(
        ["fio", f"--name={name}", f"--filename={work}/fio.dat", "--direct=1", "--ioengine=io_uring",
         f"--rw={rw}", "--bs=1M", f"--iodepth={depth}", "--size=1G", "--output-format=json"]
        + (["--end_fsync=1"] if rw == "write" else []),
        check=True, capture_output=True, text=True).stdout
    job = json.loads(out)["jobs"][0]
    return job["write" if rw == "write" else "read"]["bw_bytes"] / 1e6


def lg(loadgen, port, *a):
    cmd = ["taskset", "-c", "1", loadgen, *a, "--bootstrap", f"127.0.0.1:{port}"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def lg_json(loadgen, port, out, *a):
    """Runs a loadgen workload with `--json out` and returns the document it wrote."""
    lg(loadgen, port, *a, "--json", out)
    return json.load(open(out))


def measured(pid, run):
    """Runs `run`, returning (its result, server CPU seconds during it)."""
    c0 = cpu_seconds(pid)
    doc = run()
    return doc, cpu_seconds(pid) - c0


@contextlib.contextmanager
def shardlog_server(binary, work, port):
    """One shard pinned to core 0, serving a data dir under `work` (native listener only)."""
    log = open(os.path.join(work, "server.log"), "w")
    server = subprocess.Popen(["taskset", "-c", "0", binary, "serve", "--data-dir",
                               os.path.join(work, "data"), "--listen", f"127.0.0.1:{port}",
                               "--shards", "1", "--kafka-listen", "off"],
                              stdout=log, stderr=subprocess.STDOUT)
    try:
        time.sleep(1.5)
        yield server
    finally:
        server.terminate()
        server.wait()


def one_build(binary, loadgen, work, port):
    with shardlog_server(binary, work, port) as server:
        row = {}
        for acks in ("1", "all"):
            out = os.path.join(work, f"write-{acks}.json")
            doc, cpu = measured(server.pid, lambda: lg_json(
                loadgen, port, out, "write", "--topic", f"w{acks}", "--create", "--partitions", "1",
                "--record-size", "1KiB", "--batch-records", "1000", "--total-bytes", "1GiB",
                "--connections", "2", "--pipeline", "4", "--acks", acks))
            w = doc["write"]
            row[f"write acks={acks} MB/s"] = w["mb_per_s"]
            row[f"write acks={acks} CPU-s/GB"] = cpu / (w["bytes"] / 1e9)
        out = os.path.join(work, "consume.json")
        doc, cpu = measured(server.pid, lambda: lg_json(
            loadgen, port, out, "consume", "--topic", "w1", "--cache", "cold"))
        r = doc["consume"]["cold"]
        row["consume cold MB/s"] = r["mb_per_s"]
        row["consume fetch p50 us"] = r["fetch_latency_us"]["p50"]
        row["consume fetch p99 us"] = r["fetch_latency_us"]["p99"]
        row["consume CPU-s/GB"] = cpu / (r["bytes"] / 1e9)
        return row


SMALL_SHAPES = (("2x4", "2", "4"), ("64x1", "64", "1"))


def small_records(binary, loadgen, work, port):
    """Issue 43's workload, each shape to its own topic of one server."""
    with shardlog_server(binary, work, port) as server:
        row = {}
        for shape, connections, pipeline in SMALL_SHAPES:
            out = os.path.join(work, f"small-{shape}.json")
            doc, cpu = measured(server.pid, lambda: lg_json(
                loadgen, port, out, "write", "--topic", f"s{shape}", "--create", "--partitions", "2",
                "--record-size", "100", "--batch-bytes", "16KiB", "--connections", connections,
                "--pipeline", pipeline, "--duration", "5s"))
            w = doc["write"]
            row[f"small C={shape} records/s"] = w["records_per_s"]
            row[f"small C={shape} CPU ns/record"] = cpu * 1e9 / w["records"]
        return row


def ratios_to_fio(row, disk):
    """The large-record workload's figures against the same round's fio."""
    row["write acks=1 / fio write"] = row["write acks=1 MB/s"] / disk["fio write QD4 MB/s"]
    row["write acks=all / fio write"] = row["write acks=all MB/s"] / disk["fio write QD4 MB/s"]
    row["consume / fio read QD1"] = row["consume cold MB/s"] / disk["fio read QD1 MB/s"]
    row["consume / fio read QD4"] = row["consume cold MB/s"] / disk["fio read QD4 MB/s"]


def main():
    parser = argparse.ArgumentParser(description="Issue 24's before/after figures.")
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("loadgen")
    parser.add_argument("rounds", nargs="?", type=int, default=2)
    parser.add_argument("--json", dest="json_out", metavar="OUT")
    parser.add_argument("--small", action="store_true", help="issue 43's small-record writes")
    opts = parser.parse_args()
    base, new, loadgen, rounds, json_out = (
        opts.base, opts.new, opts.loadgen, opts.rounds, opts.json_out)
    root = bench_root()
    results = {"base": [], "new": []}
    port = 21000 + os.getpid() % 5000
    for rnd in range(rounds):
        for name, binary in (("base", base), ("new", new)):
            work = tempfile.mkdtemp(prefix=f"perf-{name}-", dir=root)
            disk = {"fio write QD4 MB/s": fio(work, "w", "write", 4),
                    "fio read QD1 MB/s": fio(work, "r1", "read", 1),
                    "fio read QD4 MB/s": fio(work, "r4", "read", 4)}
            os.remove(os.path.join(work, "fio.dat"))
            workload = small_records if opts.small else one_build
            row = {**disk, **workload(binary, loadgen, work, port)}
            port += 1
            if not opts.small:
                ratios_to_fio(row, disk)
            results[name].append(row)
            subprocess.run(["rm", "-rf", work])
            print(f"round {rnd + 1} {name}: " + ", ".join(f"{k} {v:.2f}" for k, v in row.items()), flush=True)
    print()
    print(f"| figure (median of {rounds} rounds) | base | new | new / base |")
    print("|---|---|---|---|")
    for key in results["new"][0]:
        b = statistics.median(r[key] for r in results["base"])
        n = statistics.median(r[key] for r in results["new"])
        print(f"| {key} | {b:.2f} | {n:.2f} | {n / b if b else float('nan'):.2f} |")
    if json_out:
        json.dump(results, open(json_out, "w"), indent=2)


if __name__ == "__main__":
    main()
