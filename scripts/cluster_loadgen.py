"""loadgen against a cluster this script starts (etcd and three `shardlog serve` nodes of
one shard each, release build, loopback), as issue 42 asks:

  python scripts/cluster_loadgen.py SHARDLOG LOADGEN [MB] [ROUNDS]

Per round, two fresh topics of 6 partitions: replication factor 1 and 3, each written with
`loadgen write --acks all` (100-byte records in 16 KiB batches, 6 connections, MB each,
default 200) through a bootstrap list of the three native listeners; A B A B rounds
(default 2). Prints loadgen's own lines (with one line per node) and a summary: records/s
and the cluster's server CPU per record, RF 3 against RF 1 in the same run. Three nodes
share this machine's cores: the ratios are the figure, not the absolute rates.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from cluster_harness import Cluster  # noqa: E402

shardlog, loadgen = sys.argv[1], sys.argv[2]
megabytes = int(sys.argv[3]) if len(sys.argv) > 3 else 200
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 2


def write(bootstrap, topic, factor, out_dir):
    doc = os.path.join(out_dir, f"{topic}.json")
    args = [loadgen, "write", "--bootstrap", bootstrap, "--topic", topic, "--create",
            "--partitions", "6", "--replication-factor", str(factor), "--acks", "all",
            "--record-size", "100", "--batch-bytes", "16KiB", "--connections", "6",
            "--total-bytes", f"{megabytes}MiB", "--json", doc]
    printed = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    print(f"--- {topic} (replication factor {factor})\n{printed}", flush=True)
    w = json.load(open(doc))["write"]
    cpu_ns = w["server"]["cpu_seconds"] * 1e9 / w["records"]
    return w["records_per_s"], cpu_ns, w["latency_us"]["p99"]


cluster = Cluster(shardlog)
out_dir = tempfile.mkdtemp(prefix="cluster-loadgen-")
try:
    for i in (1, 2, 3):
        cluster.start(i)
    bootstrap = ",".join(cluster.native(i) for i in (1, 2, 3))
    rows = {1: [], 3: []}
    for r in range(rounds):
        for factor in (1, 3):
            rows[factor].append(write(bootstrap, f"rf{factor}-round{r}", factor, out_dir))
    print("summary (per round: records/s, server CPU ns per record, p99 us)")
    for factor, runs in rows.items():
        print(f"  RF {factor}: " + "; ".join(f"{rps:,.0f}/s, {ns:.0f} ns, {p99}"
                                           for rps, ns, p99 in runs))
    for (rps1, ns1, _), (rps3, ns3, _) in zip(rows[1], rows[3]):
        print(f"  RF3/RF1: records/s {rps3 / rps1:.2f}, CPU per record {ns3 / ns1:.2f}")
finally:
    cluster.stop_all()
