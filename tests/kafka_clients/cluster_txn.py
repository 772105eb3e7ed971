"""Transactions on a three-node cluster with an unmodified Kafka client (confluent-kafka,
librdkafka), run by tests/slow/cluster_coordinators_e2e.rs:

  python cluster_txn.py BOOTSTRAP setup
      Creates topics `in` and `out` (3 partitions, replication factor 3) and produces 30
      records to `in`.
  python cluster_txn.py BOOTSTRAP run TAG
      With transactional id `tx`, twice: consumes 5 records of `in` (group `ctp`,
      read_committed), produces 9 records TAG-<round>-<i> to every partition of `out`, sends
      the consumer's positions to the transaction; commits the first round, aborts the
      second. Then prints one JSON line: {"committed": [values of `out` a read_committed
      reader sees], "group_offsets": the sum of `ctp`'s committed offsets on `in`}.
"""
import json
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 3
DEADLINE_S = 60

bootstrap, mode = sys.argv[1:3]

if mode == "setup":
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [NewTopic("in", PARTITIONS, 3), NewTopic("out", PARTITIONS, 3)]
    for future in admin.create_topics(topics).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(30):
        producer.produce("in", value=str(i).encode(), partition=i % PARTITIONS)
    assert producer.flush(60) == 0, "records left unacknowledged"
    print(json.dumps({"produced": 30}))
    sys.exit(0)

tag = sys.argv[3]
producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "tx",
                     "transaction.timeout.ms": 20000})
producer.init_transactions(DEADLINE_S)
consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "ctp",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False,
                     "isolation.level": "read_committed"})
consumer.subscribe(["in"])
for rnd in range(2):
    producer.begin_transaction()
    for i in range(9):
        producer.produce("out", value=f"{tag}-{rnd}-{i}".encode(), partition=i % PARTITIONS)
    read, started = 0, time.time()
    while read < 5:
        assert time.time() - started < DEADLINE_S, "the input was not read"
        m = consumer.poll(1)
        if m is not None and not m.error():
            read += 1
    positions = consumer.position(consumer.assignment())
    producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
    if rnd == 0:
        producer.commit_transaction(DEADLINE_S)
    else:
        producer.abort_transaction(DEADLINE_S)
committed = consumer.committed([TopicPartition("in", p) for p in range(PARTITIONS)], 30)
consumer.close()

reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{tag}",
                   "isolation.level": "read_committed"})
reader.assign([TopicPartition("out", p, 0) for p in range(PARTITIONS)])
values, quiet_since = [], time.time()
while time.time() - quiet_since < 5:
    m = reader.poll(0.5)
    if m is not None and not m.error():
        values.append(m.value().decode())
        quiet_since = time.time()
reader.close()
offsets = sum(max(tp.offset, 0) for tp in committed)
print(json.dumps({"committed": sorted(values), "group_offsets": offsets}))
