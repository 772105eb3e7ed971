"""Issue 42's reassignment figures on this machine, against clusters this script starts
(etcd and three `shardlog serve` nodes of one shard each, release build, loopback):

  python scripts/reassign_figures.py BINARY [GB] [THROTTLE_MB_S]

A partition holding GB (default 1) of 100 KB records, written acks=1 to one replica, is
moved to another node with `shardlog topics reassign` (execute, then verify every 0.2 s)
while a live producer writes 1 KiB records acks=all at 500 messages/s to a topic of
replication factor 3 on the same nodes. Once without a throttle, once on a new cluster
with both replication.throttled.rate keys at THROTTLE_MB_S (default 100) and the moving
partition listed as throttled. Printed per run: the move's time and throughput, the live
producer's p50/p99 before and during the move; first, fio's 1 MiB direct sequential
write on this disk in the same run, the baseline the move's throughput is a ratio of.
"""
import json
import os
import subprocess
import sys
import threading
import time

from confluent_kafka import Producer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                  NewTopic)

sys.path.insert(0, os.path.dirname(__file__))
from cluster_harness import Cluster, pct  # noqa: E402
from perf_figures import fio  # noqa: E402

binary = sys.argv[1]
gigabytes = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
throttle = int(float(sys.argv[3]) * 1e6) if len(sys.argv) > 3 else 100_000_000


def create(admin, name, partitions, rf):
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            admin.create_topics([NewTopic(name, partitions, rf)])[name].result(10)
        except Exception as e:
            if "already exists" not in str(e):
                time.sleep(0.3)
                continue
        md = admin.list_topics(name, timeout=5).topics[name]
        if md.error is None and len(md.partitions) == partitions and all(
                len(p.isrs) == rf and p.leader > 0 for p in md.partitions.values()):
            return md
        time.sleep(0.2)
    raise SystemExit(f"{name}: never in sync")


def fill(bootstrap, topic, total):
    p = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5,
                  "batch.size": 1 << 20, "message.max.bytes": 2 << 20})
    value, sent, started = b"x" * 100_000, 0, time.time()
    while sent < total:
        try:
            p.produce(topic, value)
            sent += len(value)
        except BufferError:
            p.poll(0.05)
        p.poll(0)
    p.flush(120)
    return total / (time.time() - started) / 1e6


def live(bootstrap, stop, out):
    """acks=all at 500 msg/s until `stop`: (ack time, latency) pairs into `out`."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    n = 0

    def done(err, msg, sent):
        if err is None:
            now = time.time()
            out.append((now, now - sent))

    while not stop.is_set():
        sent = time.time()
        p.produce("live", b"y" * 1024, partition=n % 3,
                  on_delivery=lambda e, m, s=sent: done(e, m, s))
        n += 1
        p.poll(0)
        time.sleep(0.002)
    p.flush(30)


def tool(cluster, *args):
    return subprocess.run([binary, "topics", "reassign", "-b", cluster.native(1), *args],
                          check=True, capture_output=True, text=True).stdout


def run(label, extra, throttled):
    c = Cluster(binary, extra=extra, prefix="reassign-figures-")
    try:
        for i in (1, 2, 3):
            c.start(i)
        admin = AdminClient({"bootstrap.servers": c.bootstrap})
        md = create(admin, "big", 1, 1)
        create(admin, "live", 3, 3)
        source = md.partitions[0].leader
        rate = fill(c.bootstrap, "big", int(gigabytes * 1e9))
        if throttled:
            entry = ConfigEntry("follower.replication.throttled.replicas", "*",
                                incremental_operation=AlterConfigOpType.SET)
            res = ConfigResource("topic", "big", incremental_configs=[entry])
            admin.incremental_alter_configs([res])[res].result(10)
        target = next(i for i in (1, 2, 3) if i != source)
        plan = os.path.join(c.data, "plan.json")
        with open(plan, "w") as f:
            json.dump({"version": 1, "partitions": [
                {"topic": "big", "partition": 0, "replicas": [target]}]}, f)
        stop, acks = threading.Event(), []
        producer = threading.Thread(target=live, args=(c.bootstrap, stop, acks))
        producer.start()
        time.sleep(5)
        started = time.time()
        tool(c, "--reassign", "execute", "--reassignment-json-file", plan)
        while "is completed." not in tool(c, "--reassign", "verify",
                                          "--reassignment-json-file", plan):
            time.sleep(0.2)
            if time.time() - started > 900:
                raise SystemExit("the move did not complete in 15 minutes")
        took = time.time() - started
        time.sleep(1)
        stop.set()
        producer.join()
        before = [lat for t, lat in acks if t < started]
        during = [lat for t, lat in acks if started <= t <= started + took]
        mb_s = gigabytes * 1e9 / took / 1e6
        print(f"{label}: moved {gigabytes:g} GB from node {source} to node {target} in "
              f"{took:.1f} s ({mb_s:.0f} MB/s, {mb_s / disk:.2f} of fio's write); "
              f"filled at {rate:.0f} MB/s; live acks=all p50/p99 before "
              f"{pct(before, .5) * 1000:.2f}/{pct(before, .99) * 1000:.2f} ms, during "
              f"{pct(during, .5) * 1000:.2f}/{pct(during, .99) * 1000:.2f} ms "
              f"({len(during)} acks)", flush=True)
    finally:
        c.stop_all()


work = "/var/tmp/reassign-figures-fio"
os.makedirs(work, exist_ok=True)
disk = fio(work, "seqwrite", "write", 4)
os.remove(os.path.join(work, "fio.dat"))
print(f"fio 1 MiB direct sequential write: {disk:.0f} MB/s", flush=True)
run("unthrottled", "", False)
run(f"throttled at {throttle / 1e6:g} MB/s", f"leader.replication.throttled.rate={throttle}\n"
    f"follower.replication.throttled.rate={throttle}\n", True)
