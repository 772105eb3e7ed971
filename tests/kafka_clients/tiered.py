"""A tiered topic through confluent-kafka (librdkafka), for tests/tiered_e2e.rs:

  python tiered.py HOST:PORT create TOPIC k=v...      create with configs (AdminClient)
  python tiered.py HOST:PORT produce TOPIC FROM N BASE record i (FROM <= i < FROM+N): key k<i>,
                                                      value v<i> padded, timestamp BASE + i s
  python tiered.py HOST:PORT check TOPIC N BASE       consume from the beginning: offsets 0..N-1
                                                      hold records 0..N-1; offsetsForTimes(BASE
                                                      + i s) == i for a sample of i; earliest
                                                      and latest watermarks
  python tiered.py HOST:PORT txn TOPIC ROUNDS          ROUNDS transactions of 20 records
                                                      (t<round>-<j>), every third aborted
  python tiered.py HOST:PORT committed TOPIC ROUNDS    read_committed from the beginning:
                                                      exactly the committed records, in order;
                                                      read_uncommitted: every record
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


def txn(rounds):
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tiered-{topic}",
                  "linger.ms": 5, "batch.size": 8000})
    p.init_transactions(30)
    for r in range(rounds):
        p.begin_transaction()
        for j in range(20):
            p.produce(topic, key=f"k{j}".encode(), value=f"t{r}-{j}".encode() * 6)
        if r % 3 == 0:
            # Sent first: an abort purges what is still queued, and the log must hold
            # aborted records for the test to mean anything.
            assert p.flush(30) == 0
            p.abort_transaction(30)
        else:
            p.commit_transaction(30)
    print(f"ok {rounds} transactions")


def read_all(isolation, want):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"txn-{time.time()}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "isolation.level": isolation})
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.time() + 60
    while len(got) < want and time.time() < deadline:
        m = c.poll(1)
        if m is None:
            continue
        assert not m.error(), m.error()
        got.append(m.value())
    # Nothing more arrives: an aborted record would come after the expected ones.
    extra = c.poll(2)
    assert extra is None or extra.error(), f"unexpected record {extra.value()!r}"
    c.close()
    return got


def committed(rounds):
    want = [f"t{r}-{j}".encode() * 6 for r in range(rounds) if r % 3 != 0 for j in range(20)]
    got = read_all("read_committed", len(want))
    assert got == want, f"read_committed got {len(got)} records, want {len(want)}"
    everything = read_all("read_uncommitted", rounds * 20)
    assert len(everything) == rounds * 20, len(everything)
    print(f"ok committed {len(want)} of {rounds * 20}")


if command == "create":
    create(sys.argv[4:])
elif command == "produce":
    produce(int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
elif command == "txn":
    txn(int(sys.argv[4]))
elif command == "committed":
    committed(int(sys.argv[4]))
elif command == "check":
    check(int(sys.argv[4]), int(sys.argv[5]))
else:
    raise SystemExit(f"unknown command {command}")
