"""Issue 41's figures on this machine, against a cluster this script starts (etcd and three
`shardlog serve` nodes of one shard each, release build, loopback):

  python scripts/cluster_figures.py BINARY [SECONDS]

1. acks=all produce throughput and per-message latency (p50/p99), replication factor 3 vs
   1, one confluent-kafka producer (1 KiB values, linger.ms 5), A B A B rounds of SECONDS
   (default 5) each, in the same run: as fast as it goes (latency includes the client's
   queue), and paced at 500 messages/s;
2. failover: the same producer at a steady rate on an RF 3 topic while partition 0's leader
   is killed (kill -9), and again paused (SIGSTOP past the session timeout, then SIGCONT):
   the longest gap between two acknowledgements, and acknowledged vs found (read back
   from the leaders).
Prints one line per figure. Three nodes share this machine's cores: the ratio RF3/RF1 is
the figure, not the absolute rates.
"""
import os
import signal
import statistics
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, os.path.dirname(__file__))
from cluster_harness import Cluster, pct  # noqa: E402

binary = sys.argv[1]
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
cluster = Cluster(binary, prefix="cluster-figures-")
nodes, start = cluster.nodes, cluster.start
for i in (1, 2, 3):
    start(i)
bootstrap = cluster.bootstrap
admin = AdminClient({"bootstrap.servers": bootstrap})


def create(name, rf):
    for attempt in range(50):
        f = admin.create_topics([NewTopic(name, 3, rf)])[name]
        try:
            f.result(10)
            break
        except Exception as e:
            if "already exists" in str(e):
                break
            if attempt % 10 == 9:
                print(f"creating {name}: {e}", file=sys.stderr)
                for i, n in nodes.items():
                    try:
                        one = AdminClient({"bootstrap.servers": f"127.0.0.1:{n['kafka']}"})
                        md = one.list_topics(timeout=3)
                        print(f"  node {i} says controller {md.controller_id}", file=sys.stderr)
                    except Exception as e2:
                        print(f"  node {i}: {e2}", file=sys.stderr)
            time.sleep(0.2)
    # Until every replica is in sync.
    deadline = time.time() + 30
    while time.time() < deadline:
        md = admin.list_topics(name, timeout=5).topics[name]
        if md.error is None and len(md.partitions) == 3 and all(
                len(p.isrs) == rf and p.leader > 0 for p in md.partitions.values()):
            return
        time.sleep(0.2)
    stop_all()
    raise SystemExit(f"{name}: replicas never in sync")


def stop_all():
    cluster.stop_all()


def leader_of(topic, partition):
    md = admin.list_topics(topic, timeout=5).topics[topic]
    return md.partitions[partition].leader


def produce(topic, duration, rate=None):
    """Produces 1 KiB values for `duration` s: (acked, latencies, ack times, values)."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                  "message.timeout.ms": 30000, "enable.idempotence": False,
                  "retries": 0, "topic.metadata.refresh.interval.ms": 500})
    lat, times, acked = [], [], []
    sent = {}

    def done(err, msg):
        if err is None:
            now = time.time()
            lat.append(now - sent[msg.value()[:16]])
            times.append(now)
            acked.append(msg.value()[:16])

    end, n = time.time() + duration, 0
    while time.time() < end:
        key = f"{n:016d}".encode()
        sent[key] = time.time()
        try:
            p.produce(topic, key + b"x" * 1008, partition=n % 3, on_delivery=done)
            n += 1
        except BufferError:
            p.poll(0.01)
        p.poll(0)
        if rate:
            time.sleep(1.0 / rate)
    p.flush(30)
    return acked, lat, times


create("rf1", 1)
create("rf3", 3)
rounds = {"rf1": [], "rf3": []}
for _ in range(2):
    for topic in ("rf1", "rf3"):
        acked, lat, _ = produce(topic, seconds)
        rounds[topic].append((len(acked) / seconds, lat))
tput = {t: statistics.mean(r[0] for r in rs) for t, rs in rounds.items()}
lat = {t: [x for r in rs for x in r[1]] for t, rs in rounds.items()}
print(f"acks=all throughput: RF3 {tput['rf3']:.0f} msg/s vs RF1 {tput['rf1']:.0f} msg/s "
      f"(1 KiB): ratio {tput['rf3'] / tput['rf1']:.2f}")
print(f"acks=all latency under saturation p50/p99: RF3 {pct(lat['rf3'], .5) * 1000:.1f}/{pct(lat['rf3'], .99) * 1000:.1f} ms "
      f"vs RF1 {pct(lat['rf1'], .5) * 1000:.1f}/{pct(lat['rf1'], .99) * 1000:.1f} ms")
paced = {t: [] for t in ("rf1", "rf3")}
for _ in range(2):
    for t in ("rf1", "rf3"):
        paced[t] += produce(t, seconds, rate=500)[1]
print(f"acks=all latency at 500 msg/s p50/p99: RF3 {pct(paced['rf3'], .5) * 1000:.2f}/{pct(paced['rf3'], .99) * 1000:.2f} ms "
      f"vs RF1 {pct(paced['rf1'], .5) * 1000:.2f}/{pct(paced['rf1'], .99) * 1000:.2f} ms")


def read_all(topic):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g{time.time()}",
                  "enable.auto.commit": False})
    found = {}
    for part in range(3):
        c.assign([TopicPartition(topic, part, 0)])
        idle = time.time()
        while time.time() - idle < 3:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            idle = time.time()
            k = m.value()[:16]
            found[k] = found.get(k, 0) + 1
    c.close()
    return found


for fault in ("kill -9", "SIGSTOP"):
    topic = "kill" if fault == "kill -9" else "stop"
    create(topic, 3)
    import threading
    result = {}
    t = threading.Thread(target=lambda: result.update(zip(("acked", "lat", "times"), produce(topic, 12, rate=400))))
    t.start()
    time.sleep(3)
    victim = leader_of(topic, 0)
    proc = nodes[victim]["proc"]
    if fault == "kill -9":
        proc.kill()
        proc.wait()
        time.sleep(5)
        start(victim)
    else:
        proc.send_signal(signal.SIGSTOP)
        time.sleep(5)
        proc.send_signal(signal.SIGCONT)
    t.join()
    times = result["times"]
    gap = max((b - a for a, b in zip(times, times[1:])), default=0)
    found = read_all(topic)
    lost = [k for k in result["acked"] if k not in found]
    twice = [k for k, n in found.items() if n > 1]
    print(f"failover after {fault} of a leader (session timeout 3 s): longest gap between "
          f"acknowledgements {gap:.2f} s; acknowledged {len(result['acked'])}, found "
          f"{len(set(result['acked']) & set(found))}, lost {len(lost)}, stored twice {len(twice)}")

stop_all()
