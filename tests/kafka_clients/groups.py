"""Consumer groups with an unmodified Kafka client (run by tests/kafka_groups_e2e.rs):

  python groups.py CLIENT HOST:PORT run TOPIC GROUP
      Two members of GROUP consume TOPIC (4 partitions, 200 records already there) with
      commits: every record exactly once, both members get partitions. Then the first
      member leaves: the survivor takes over every partition from the committed offsets
      and reads exactly the 40 records produced after that. Prints OK and the committed
      offsets as JSON.
  python groups.py CLIENT HOST:PORT committed TOPIC GROUP
      Prints the group's committed offsets as JSON (after a restart, say).
  python groups.py confluent HOST:PORT hold TOPIC GROUP
      Joins GROUP, prints JOINED once it has partitions, then waits to be killed (-9: it
      never leaves the group).
  python groups.py confluent HOST:PORT static TOPIC GROUP INSTANCE
      A static member (group.instance.id INSTANCE): prints "ASSIGNED p,q" on every
      assignment and "REVOKED" on every revocation, until killed.
  python groups.py confluent HOST:PORT takeover TOPIC GROUP
      Joins GROUP and waits until it owns all partitions (the killed member's session
      expired); prints OK and how long that took.

CLIENT is confluent, kafka-python or aiokafka.
"""
import asyncio
import json
import sys
import time

client, bootstrap, mode, topic, group = sys.argv[1:6]
PARTITIONS = 4
DEADLINE_S = 60


def produce_more(first, n):
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for i in range(first, first + n):
        p.send(topic, key=str(i).encode(), value=str(i).encode(), partition=i % PARTITIONS)
    p.flush()
    p.close()


def check_once(seen, want):
    values = sorted(int(v) for v in seen)
    assert values == list(range(want[0], want[1])), f"read {len(values)}: {values[:10]}..."


# --- confluent-kafka (librdkafka) ---------------------------------------------------------

def confluent_member():
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": 6000,
                  "heartbeat.interval.ms": 500})
    c.subscribe([topic])
    return c


def confluent_poll(members, want):
    seen, by = [], {id(m): 0 for m in members}
    end = time.time() + DEADLINE_S
    while len(seen) < want and time.time() < end:
        for m in members:
            msg = m.poll(0.05)
            if msg is not None and msg.error() is None:
                seen.append(msg.value().decode())
                by[id(m)] += 1
                m.commit(msg, asynchronous=False)
    return seen, [by[id(m)] for m in members]


def confluent_run():
    produce_more(0, 200)
    a, b = confluent_member(), confluent_member()
    seen, counts = confluent_poll([a, b], 200)
    check_once(seen, (0, 200))
    assert all(counts), f"both members consume: {counts}"
    a.close()
    produce_more(200, 40)
    seen, _ = confluent_poll([b], 40)
    check_once(seen, (200, 240))
    assert len(b.assignment()) == PARTITIONS, b.assignment()
    b.close()


def confluent_hold():
    c = confluent_member()
    end = time.time() + DEADLINE_S
    while not c.assignment() and time.time() < end:
        c.poll(0.1)
    assert c.assignment(), "no partitions"
    print("JOINED", flush=True)
    while True:
        c.poll(0.5)


def confluent_static(instance):
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.instance.id": instance,
                  "auto.offset.reset": "earliest", "session.timeout.ms": 20000,
                  "heartbeat.interval.ms": 500})

    def assigned(consumer, parts):
        print("ASSIGNED " + ",".join(str(p.partition) for p in sorted(parts, key=lambda p: p.partition)),
              flush=True)

    c.subscribe([topic], on_assign=assigned, on_revoke=lambda consumer, parts: print("REVOKED", flush=True))
    while True:
        c.poll(0.2)


def confluent_takeover():
    c = confluent_member()
    started = time.time()
    while len(c.assignment()) < PARTITIONS and time.time() < started + DEADLINE_S:
        c.poll(0.1)
    assert len(c.assignment()) == PARTITIONS, c.assignment()
    print(f"OK takeover after {time.time() - started:.1f} s", flush=True)
    c.close()


def confluent_committed():
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    got = c.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=20)
    c.close()
    return {tp.partition: tp.offset for tp in got}


# --- kafka-python ---------------------------------------------------------------------------

def kp_member():
    from kafka import KafkaConsumer
    return KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                         auto_offset_reset="earliest", enable_auto_commit=False,
                         session_timeout_ms=6000, heartbeat_interval_ms=500)


def kp_poll(members, want):
    """Each member polls in its own thread, as applications run kafka-python consumers."""
    import threading
    seen, by, lock = [], [0] * len(members), threading.Lock()
    end = time.time() + DEADLINE_S

    def loop(i, m):
        while time.time() < end:
            with lock:
                if len(seen) >= want:
                    return
            for tp, msgs in m.poll(timeout_ms=100).items():
                with lock:
                    seen.extend(msg.value.decode() for msg in msgs)
                    by[i] += len(msgs)
                if msgs:
                    m.commit()

    threads = [threading.Thread(target=loop, args=(i, m)) for i, m in enumerate(members)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return seen, by


def kp_run():
    produce_more(0, 200)
    a, b = kp_member(), kp_member()
    seen, counts = kp_poll([a, b], 200)
    check_once(seen, (0, 200))
    assert all(counts), f"both members consume: {counts}"
    a.close()
    produce_more(200, 40)
    seen, _ = kp_poll([b], 40)
    check_once(seen, (200, 240))
    assert len(b.assignment()) == PARTITIONS, b.assignment()
    b.close()


def kp_committed():
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    out = {p: c.committed(TopicPartition(topic, p)) for p in range(PARTITIONS)}
    c.close()
    return {p: (-1001 if o is None else o) for p, o in out.items()}


# --- aiokafka -------------------------------------------------------------------------------

async def aio_member():
    from aiokafka import AIOKafkaConsumer
    c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                         auto_offset_reset="earliest", enable_auto_commit=False,
                         session_timeout_ms=6000, heartbeat_interval_ms=500)
    await c.start()
    return c


async def aio_poll(members, want):
    seen, by = [], [0] * len(members)
    end = time.time() + DEADLINE_S
    while len(seen) < want and time.time() < end:
        for i, m in enumerate(members):
            batch = await m.getmany(timeout_ms=50)
            for tp, msgs in batch.items():
                for msg in msgs:
                    seen.append(msg.value.decode())
                    by[i] += 1
            if batch:
                await m.commit()
    return seen, by


async def aio_run():
    produce_more(0, 200)
    a, b = await aio_member(), await aio_member()
    seen, counts = await aio_poll([a, b], 200)
    check_once(seen, (0, 200))
    assert all(counts), f"both members consume: {counts}"
    await a.stop()
    produce_more(200, 40)
    seen, _ = await aio_poll([b], 40)
    check_once(seen, (200, 240))
    assert len(b.assignment()) == PARTITIONS, b.assignment()
    await b.stop()


async def aio_committed():
    from aiokafka import AIOKafkaConsumer, TopicPartition
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    await c.start()
    out = {p: await c.committed(TopicPartition(topic, p)) for p in range(PARTITIONS)}
    await c.stop()
    return {p: (-1001 if o is None else o) for p, o in out.items()}


runs = {"confluent": (confluent_run, confluent_committed),
        "kafka-python": (kp_run, kp_committed),
        "aiokafka": (lambda: asyncio.run(aio_run()), lambda: asyncio.run(aio_committed()))}
if mode == "hold":
    confluent_hold()
if mode == "static":
    confluent_static(sys.argv[6])
if mode == "takeover":
    confluent_takeover()
    sys.exit(0)
run, committed = runs[client]
if mode == "run":
    started = time.time()
    run()
    print(f"OK {client} in {time.time() - started:.1f} s")
print(json.dumps(committed(), sort_keys=True))
