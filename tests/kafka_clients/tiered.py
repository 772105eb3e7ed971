"""A tiered topic through confluent-kafka (librdkafka), for tests/tiered_e2e.rs:

  python tiered.py HOST:PORT create TOPIC k=v...      create with configs (AdminClient)
  python tiered.py HOST:PORT produce TOPIC FROM N BASE record i (FROM <= i < FROM+N): key k<i>,
                                                      value v<i> padded, timestamp BASE + i s
  python tiered.py HOST:PORT check TOPIC N BASE       consume from the beginning: offsets 0..N-1
                                                      hold records 0..N-1; offsetsForTimes(BASE
                                                      + i s) == i for a sample of i; earliest
                                                      and latest watermarks
Prints "ok ..." on success; raises on any mismatch.
"""
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

bootstrap, command, topic = sys.argv[1], sys.argv[2], sys.argv[3]


def value(i):
    return (f"v{i:06d}-" * 12).encode()


def create(configs):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = dict(kv.split("=", 1) for kv in configs)
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1, config=config)])[topic].result(20)
    print("ok created")


def produce(first, n, base):
    # Small batches: they must fit the topic's small segments.
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "batch.size": 8000})
    errors = []
    for i in range(first, first + n):
        p.produce(topic, key=f"k{i}".encode(), value=value(i), timestamp=base + i * 1000,
                  on_delivery=lambda err, msg: errors.append(err) if err else None)
    assert p.flush(60) == 0, "not every record was delivered"
    assert not errors, errors[:3]
    print(f"ok produced {n}")


def check(n, base):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{time.time()}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    tp = TopicPartition(topic, 0)
    low, high = c.get_watermark_offsets(tp, timeout=20)
    assert (low, high) == (0, n), f"watermarks {(low, high)}, want (0, {n})"
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.time() + 60
    while len(got) < n and time.time() < deadline:
        m = c.poll(1)
        if m is None:
            continue
        assert not m.error(), m.error()
        i = len(got)
        assert m.offset() == i, f"offset {m.offset()} where {i} was due"
        assert m.key() == f"k{i}".encode() and m.value() == value(i), f"record {i} differs"
        assert m.timestamp()[1] == base + i * 1000, f"timestamp of {i}"
        got.append(m.offset())
    assert len(got) == n, f"consumed {len(got)} of {n}"
    for i in sorted({0, 1, n // 7, n // 3, n // 2, n - 1}):
        found = c.offsets_for_times([TopicPartition(topic, 0, base + i * 1000)], timeout=20)[0]
        assert found.offset == i, f"offsetsForTimes(record {i}) gave {found.offset}"
    c.close()
    print(f"ok checked {n}")


if command == "create":
    create(sys.argv[4:])
elif command == "produce":
    produce(int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
elif command == "check":
    check(int(sys.argv[4]), int(sys.argv[5]))
else:
    raise SystemExit(f"unknown command {command}")
