"""Issue 20's figures, against a running server (release build recommended):

1. CreatePartitions of a topic from 1 to N partitions: the call's wall time, and the
   produce latency (acks=all, one record per request, one in flight, to partition 0 of
   another topic on the same shards) before and while it runs, as p50/p99.
2. A group of 8 confluent-kafka consumers formed from empty: time until every member has
   its partitions; then one member leaves and the time until the others own everything.
3. The tools' protocol probe: `shardlog topics list` against the native and the Kafka port.

usage: admin_figures.py KAFKA_ADDR NATIVE_ADDR SHARDLOG_BIN [N]
Prints one line per figure.
"""
import statistics
import subprocess
import sys
import threading
import time

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic


def percentiles(samples):
    s = sorted(samples)
    return s[len(s) // 2], s[min(len(s) - 1, int(len(s) * 0.99))]


def produce_latencies(producer, topic, seconds, out):
    end = time.time() + seconds
    while time.time() < end:
        done = threading.Event()
        started = time.perf_counter()
        producer.produce(topic, b"x" * 100, partition=0, on_delivery=lambda e, m: done.set())
        while not done.is_set():
            producer.poll(0.001)
        out.append((time.perf_counter() - started) * 1e6)


def create_partitions_figure(admin, kafka, n):
    for t in ("grow", "steady"):
        admin.create_topics([NewTopic(t, 1, 1)])[t].result(timeout=30)
    producer = Producer({"bootstrap.servers": kafka, "acks": "all", "linger.ms": 0})
    before = []
    produce_latencies(producer, "steady", 3, before)
    during = []
    stop = threading.Event()

    def produce_until_stopped():
        while not stop.is_set():
            produce_latencies(producer, "steady", 0.2, during)

    runner = threading.Thread(target=produce_until_stopped)
    runner.start()
    started = time.perf_counter()
    admin.create_partitions([NewPartitions("grow", n)])["grow"].result(timeout=600)
    took = time.perf_counter() - started
    stop.set()
    runner.join()
    b50, b99 = percentiles(before)
    d50, d99 = percentiles(during)
    print(f"create_partitions 1->{n}: {took:.2f} s; produce p50/p99 before {b50:.0f}/{b99:.0f} us "
          f"({len(before)} samples), during {d50:.0f}/{d99:.0f} us ({len(during)} samples)", flush=True)


def group_figure(admin, kafka, members=8):
    admin.create_topics([NewTopic("grouped", 16, 1)])["grouped"].result(timeout=30)
    assigned = {}
    consumers = []
    for i in range(members):
        c = Consumer({"bootstrap.servers": kafka, "group.id": "eight", "client.id": f"m{i}",
                      "session.timeout.ms": 10000, "auto.offset.reset": "earliest"})
        consumers.append(c)

    def on_assign(i):
        return lambda consumer, parts: assigned.__setitem__(i, len(parts))

    started = time.perf_counter()
    for i, c in enumerate(consumers):
        c.subscribe(["grouped"], on_assign=on_assign(i))
    while sum(assigned.values()) < 16 or len(assigned) < members:
        for c in consumers:
            c.poll(0.01)
    formed = time.perf_counter() - started
    leaver = consumers.pop()
    assigned.clear()
    started = time.perf_counter()
    leaver.close()
    while sum(assigned.values()) < 16 or len(assigned) < members - 1:
        for c in consumers:
            c.poll(0.01)
    rebalanced = time.perf_counter() - started
    for c in consumers:
        c.close()
    print(f"group of {members} from empty: {formed:.2f} s (includes group.initial.rebalance.delay.ms); "
          f"rebalance after one leaves: {rebalanced:.2f} s", flush=True)


def probe_figure(native, kafka, binary):
    for name, addr in (("native", native), ("kafka", kafka)):
        runs = []
        for _ in range(20):
            started = time.perf_counter()
            subprocess.run([binary, "topics", "list", "-b", addr], check=True,
                           capture_output=True)
            runs.append((time.perf_counter() - started) * 1000)
        print(f"`topics list` on the {name} port: median {statistics.median(runs):.1f} ms "
              f"(the Kafka port adds the probe and one DescribeConfigs)", flush=True)


def main():
    kafka, native, binary = sys.argv[1], sys.argv[2], sys.argv[3]
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
    admin = AdminClient({"bootstrap.servers": kafka})
    create_partitions_figure(admin, kafka, n)
    group_figure(admin, kafka)
    probe_figure(native, kafka, binary)


if __name__ == "__main__":
    main()
