"""Issue 23's figures (tiered storage), against servers this script starts (release build)
and s3s-fs (the tests' S3 server, over loopback, writing to the same disk):

  python scripts/tiered_figures.py SHARDLOG LOADGEN S3S_FS

1. upload MB/s vs local append MB/s, same run: `loadgen write` (512 MiB, 1 KiB records,
   acks=1) to a tiered topic while the store is frozen (SIGSTOP), then the store resumed
   and the time until every sealed segment is in the bucket;
2. bytes held locally vs remotely for that topic (local.retention.bytes = one segment);
3. `loadgen lookup` p50/p99 by offset and by timestamp, cold (DropCaches before each,
   which also empties the remote chunk cache) and warm, on the tiered topic (lookups fall
   mostly below the local start: remote) and on an untiered copy of the same data (local);
4. read-replica fetch MB/s: a confluent-kafka consumer reading the whole tiered topic from
   a read replica, against the same consumer on the writer (the same remote reads) and on
   the untiered topic (local reads).
Prints one line per figure and the loadgen tables.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from confluent_kafka import Consumer, TopicPartition

shardlog, loadgen, s3s = sys.argv[1], sys.argv[2], sys.argv[3]
work = tempfile.mkdtemp(prefix="tiered-figures-")
S3_PORT, NATIVE, KAFKA = 29754, "127.0.0.1:29711", "127.0.0.1:29731"
R_NATIVE, R_KAFKA = "127.0.0.1:29721", "127.0.0.1:29741"
SEGMENT = 16 << 20
# The warm pass repeats ~300 lookups, each reading a 1 MiB chunk: with the default 256 MiB
# (128 MiB per shard) the chunks do not all fit and LRU evicts each before its second read,
# so "warm" would measure the store again. 1 GiB holds them.
REMOTE_CACHE = 1 << 30
TOTAL = "512MiB"
env = dict(os.environ, AWS_ACCESS_KEY_ID="figs", AWS_SECRET_ACCESS_KEY="figs-secret",
           AWS_REGION="us-east-1", AWS_ALLOW_HTTP="true")
procs = []


def start_s3():
    os.makedirs(os.path.join(work, "s3", "figs"))
    p = subprocess.Popen([s3s, "--host", "127.0.0.1", "--port", str(S3_PORT), "--access-key", "figs",
                          "--secret-key", "figs-secret", os.path.join(work, "s3")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(p)
    time.sleep(1)
    return p


def start_server(name, native, kafka, extra):
    config = os.path.join(work, f"{name}.properties")
    with open(config, "w") as f:
        f.write(f"remote.storage.url=s3://figs/cluster\nremote.storage.endpoint=http://127.0.0.1:{S3_PORT}\n"
                f"remote.upload.interval.ms=500\nlog.retention.check.interval.ms=500\nshards=2\n"
                f"remote.cache.bytes={REMOTE_CACHE}\n{extra}")
    log = open(os.path.join(work, f"{name}.log"), "a")
    p = subprocess.Popen([shardlog, "serve", "--data-dir", os.path.join(work, name), "--listen", native,
                          "--kafka-listen", kafka, "--config", config], stdout=log, stderr=subprocess.STDOUT,
                         env=env)
    procs.append(p)
    deadline = time.time() + 60
    while time.time() < deadline:
        if subprocess.run([shardlog, "topics", "list", "-b", native], capture_output=True).returncode == 0:
            return p
        time.sleep(0.1)
    raise SystemExit(f"{name} did not start")


def cli(*args):
    r = subprocess.run([shardlog, *args], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def run_loadgen(*args):
    out = os.path.join(work, f"lg-{time.time()}.json")
    r = subprocess.run([loadgen, *args, "--json", out], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    print(r.stdout)
    return json.load(open(out))


def partitions(native, topic):
    doc = json.loads(cli("log-dirs", "-b", native, "--topic-list", topic))
    return doc["brokers"][0]["logDirs"][0]["partitions"]


def consume_mb_s(kafka, topic, parts=2):
    c = Consumer({"bootstrap.servers": kafka, "group.id": f"f-{time.time()}", "enable.auto.commit": False,
                  "fetch.max.bytes": 52428800, "max.partition.fetch.bytes": 8388608})
    ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=20) for p in range(parts)}
    want = sum(hi - lo for lo, hi in ends.values())
    c.assign([TopicPartition(topic, p, lo) for p, (lo, _) in ends.items()])
    n = size = 0
    start = time.time()
    while n < want and time.time() - start < 300:
        for m in c.consume(10000, 1):
            if not m.error():
                n += 1
                size += len(m.value() or b"")
    took = time.time() - start
    c.close()
    assert n == want, f"consumed {n} of {want}"
    return size / took / 1e6, size


def figures():
    s3 = start_s3()
    start_server("writer", NATIVE, KAFKA, "")
    for topic, tiered in (("tiered", True), ("plain", False)):
        args = ["topics", "create", "-b", NATIVE, "--topic", topic, "--partitions", "2",
                "--config", f"segment.bytes={SEGMENT}"]
        if tiered:
            args += ["--config", "remote.storage.enable=true", "--config", f"local.retention.bytes={SEGMENT}"]
        cli(*args)

    s3.send_signal(signal.SIGSTOP)
    w = run_loadgen("write", "--bootstrap", NATIVE, "--topic", "tiered", "--total-bytes", TOTAL, "--acks", "1")
    s3.send_signal(signal.SIGCONT)
    t0 = time.time()
    while True:
        ps = partitions(NATIVE, "tiered")
        if all(p["remote"]["uploadLagBytes"] <= SEGMENT + (2 << 20) for p in ps) and time.time() - t0 > 1:
            break
        assert time.time() - t0 < 600, "uploads did not catch up"
        time.sleep(0.2)
    upload_s = time.time() - t0
    remote_bytes = sum(p["remote"]["remoteSize"] for p in ps)
    time.sleep(2)  # local retention
    ps = partitions(NATIVE, "tiered")
    local_bytes = sum(p["size"] for p in ps)
    remote_bytes = sum(p["remote"]["remoteSize"] for p in ps)
    pw = run_loadgen("write", "--bootstrap", NATIVE, "--topic", "plain", "--total-bytes", TOTAL, "--acks", "1")

    lookups = {}
    for topic in ("tiered", "plain"):
        for by in ("offset", "timestamp"):
            lookups[(topic, by)] = run_loadgen("lookup", "--bootstrap", NATIVE, "--topic", topic, "--by", by,
                                               "--count", "300")
    start_server("replica", R_NATIVE, R_KAFKA, "remote.read.replica=true\n")
    deadline = time.time() + 60
    while "tiered" not in cli("topics", "list", "-b", R_NATIVE).split():
        assert time.time() < deadline
        time.sleep(0.2)
    replica_mb_s, replica_bytes = consume_mb_s(R_KAFKA, "tiered")
    writer_mb_s, _ = consume_mb_s(KAFKA, "tiered")
    plain_mb_s, _ = consume_mb_s(KAFKA, "plain")

    print("== figures ==")
    print(f"local append (loadgen write, store frozen): {json.dumps(w['write'].get('mb_per_s', w['write']))[:200]}")
    print(f"upload: {remote_bytes / 1e6:.1f} MB in the bucket after {upload_s:.1f} s of catching up"
          f" = {remote_bytes / upload_s / 1e6:.1f} MB/s (incl. the 500 ms upload interval)")
    print(f"untiered append (same run, for reference): {json.dumps(pw['write'].get('mb_per_s', pw['write']))[:200]}")
    print(f"bytes held: local {local_bytes / 1e6:.1f} MB, remote {remote_bytes / 1e6:.1f} MB"
          f" (local.retention.bytes = one {SEGMENT >> 20} MiB segment per partition, 2 partitions)")
    for (topic, by), doc in lookups.items():
        print(f"lookup {by} on {topic}: {json.dumps(doc['lookup'])[:600]}")
    print(f"consume MB/s: read replica {replica_mb_s:.1f}, writer (same remote reads) {writer_mb_s:.1f},"
          f" untiered local {plain_mb_s:.1f} ({replica_bytes / 1e6:.0f} MB of values)")


try:
    figures()
finally:
    for p in procs:
        p.send_signal(signal.SIGCONT) if p.poll() is None else None
        p.kill()
