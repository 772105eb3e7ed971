"""Issue 21's figures, against a running server started by this script (release build):

  python scripts/txn_figures.py BINARY [OPEN_TXNS]

1. produce throughput, idempotent vs transactional (100 records per transaction), 100-byte
   records, one confluent-kafka producer, same run;
2. EndTxn latency: commit_transaction() of one-record transactions, p50/p99 (the client's
   round trips: EndTxn plus its retries while markers are written);
3. fetch MB/s of one consumer reading the same topic read_committed vs read_uncommitted;
4. recovery: OPEN_TXNS (default 10000) transactional ids each left with an open transaction
   (all timing out at one moment just after the kill), kill -9, restart: time until the
   server serves again, and once the transactions are due, until a read_committed consumer
   sees records written after them (the coordinators aborted every one).
Prints one line per figure.
"""
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

binary = sys.argv[1]
# loadgen is built beside the server binary (cargo build --release --workspace).
LOADGEN = os.path.join(os.path.dirname(os.path.abspath(binary)), "loadgen")
open_txns = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
data = tempfile.mkdtemp(prefix="txn-figures-")
KAFKA, NATIVE = "127.0.0.1:29392", "127.0.0.1:29311"
config = os.path.join(data, "server.properties")
with open(config, "w") as f:
    f.write("transaction.abort.timed.out.transaction.cleanup.interval.ms=100\n")


def start():
    log = open(os.path.join(data, "server.log"), "a")
    p = subprocess.Popen([binary, "serve", "--data-dir", os.path.join(data, "d"),
                          "--listen", NATIVE, "--kafka-listen", KAFKA, "--config", config],
                         stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            AdminClient({"bootstrap.servers": KAFKA}).list_topics(timeout=1)
            return p
        except Exception:
            time.sleep(0.05)
    raise SystemExit("server did not start")


def create(name, partitions=1):
    admin = AdminClient({"bootstrap.servers": KAFKA})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=30)


def produce_rate(topic, transactional, n=20000, per_txn=100):
    conf = {"bootstrap.servers": KAFKA, "linger.ms": 5, "enable.idempotence": True}
    if transactional:
        conf["transactional.id"] = f"fig-{topic}"
    p = Producer(conf)
    value = b"x" * 100
    started = time.perf_counter()
    if transactional:
        p.init_transactions(30)
        for t in range(n // per_txn):
            p.begin_transaction()
            for _ in range(per_txn):
                p.produce(topic, value=value, partition=0)
            p.commit_transaction(30)
    else:
        for _ in range(n):
            p.produce(topic, value=value, partition=0)
            p.poll(0)
        p.flush(30)
    return n / (time.perf_counter() - started)


def round_trip_us(n=300):
    """The same-run floor: a Kafka ApiVersions v0 round trip on loopback, median."""
    import socket
    import struct
    host, port = KAFKA.split(":")
    s = socket.create_connection((host, int(port)))
    client = b"fig"
    body = struct.pack(">hhih", 18, 0, 1, len(client)) + client
    frame = struct.pack(">i", len(body)) + body
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        s.sendall(frame)
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        s.recv(size, socket.MSG_WAITALL)
        samples.append((time.perf_counter() - started) * 1e6)
    s.close()
    return statistics.median(samples)


def end_txn_latency(topic, n=300):
    p = Producer({"bootstrap.servers": KAFKA, "transactional.id": "fig-endtxn", "linger.ms": 0})
    p.init_transactions(30)
    samples = []
    for _ in range(n):
        p.begin_transaction()
        p.produce(topic, value=b"v", partition=0)
        p.flush(30)
        started = time.perf_counter()
        p.commit_transaction(30)
        samples.append((time.perf_counter() - started) * 1e6)
    samples.sort()
    return samples[len(samples) // 2], samples[int(len(samples) * 0.99) - 1]


def fetch_rate(topic, isolation, expect):
    c = Consumer({"bootstrap.servers": KAFKA, "group.id": f"fig-{isolation}-{time.time()}",
                  "isolation.level": isolation, "enable.auto.commit": False,
                  "fetch.max.bytes": 52428800})
    c.assign([TopicPartition(topic, 0, 0)])
    got, size = 0, 0
    started = time.perf_counter()
    while got < expect:
        for m in c.consume(10000, 1.0):
            if not m.error():
                got += 1
                size += len(m.value())
    took = time.perf_counter() - started
    c.close()
    return size / took / 1e6


def recovery(server):
    """Opens `open_txns` transactions due (timed out) at one moment after the kill, so the
    restart finds them all open and then aborts them all at once. They are opened by
    `loadgen open-txns` (raw Kafka requests, as crashed producers leave them): a live
    librdkafka producer per transaction runs out of thread-local storage near a thousand."""
    create("fig-open", 8)
    due_at = time.time() + open_txns * 0.01 + 60
    subprocess.run([LOADGEN, "open-txns", "--kafka", KAFKA, "--topic", "fig-open",
                    "--partitions", "8", "--count", str(open_txns),
                    "--due-unix-ms", str(int(due_at * 1000))], check=True)
    assert time.time() < due_at - 5, "raise the setup margin: transactions timed out before the kill"
    server.send_signal(signal.SIGKILL)
    server.wait()
    started = time.perf_counter()
    server = start()
    up = time.perf_counter() - started
    time.sleep(max(0.0, due_at - time.time()))
    started = time.perf_counter()
    # Records written now lie after every open transaction's: a read_committed consumer
    # sees them only once every one of those is aborted.
    p = Producer({"bootstrap.servers": KAFKA})
    for part in range(8):
        p.produce("fig-open", value=b"after", partition=part)
    p.flush(30)
    c = Consumer({"bootstrap.servers": KAFKA, "group.id": "fig-recover",
                  "isolation.level": "read_committed"})
    c.assign([TopicPartition("fig-open", part, 0) for part in range(8)])
    seen = 0
    while seen < 8:
        for m in c.consume(1000, 0.2):
            if not m.error() and m.value() == b"after":
                seen += 1
    settled = time.perf_counter() - started
    c.close()
    return server, up, settled


server = start()
try:
    create("fig-idem")
    create("fig-txn")
    idem = produce_rate("fig-idem", False)
    txn = produce_rate("fig-txn", True)
    print(f"produce 100-byte records: idempotent {idem:,.0f} rec/s, transactional (100 per "
          f"transaction) {txn:,.0f} rec/s, ratio {txn / idem:.2f}", flush=True)
    create("fig-end")
    p50, p99 = end_txn_latency("fig-end")
    rtt = round_trip_us()
    print(f"commit_transaction (EndTxn) latency: p50 {p50:.0f} us, p99 {p99:.0f} us; "
          f"loopback round trip (ApiVersions) {rtt:.0f} us: p50 {p50 / rtt:.1f}x", flush=True)
    committed = fetch_rate("fig-txn", "read_committed", 20000)
    uncommitted = fetch_rate("fig-txn", "read_uncommitted", 20000)
    print(f"fetch of the transactional topic: read_committed {committed:.1f} MB/s, "
          f"read_uncommitted {uncommitted:.1f} MB/s (record bytes), ratio {committed / uncommitted:.2f}",
          flush=True)
    server, up, settled = recovery(server)
    print(f"{open_txns} open transactions, kill -9, restart: serving after {up:.2f} s; once "
          f"their timeout passed, all aborted (a read_committed consumer at the log end) in "
          f"{settled:.2f} s ({open_txns / settled:,.0f} aborts/s)", flush=True)
finally:
    server.send_signal(signal.SIGTERM)
    server.wait()
    shutil.rmtree(data, ignore_errors=True)
