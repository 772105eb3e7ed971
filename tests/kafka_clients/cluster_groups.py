"""A consumer group on a three-node cluster with an unmodified Kafka client (confluent-kafka,
librdkafka), run by tests/slow/cluster_coordinators_e2e.rs:

  python cluster_groups.py BOOTSTRAP produce TOPIC N
      Creates TOPIC (3 partitions, replication factor 3) and produces N records with
      acks=all, record i to partition i % 3.
  python cluster_groups.py BOOTSTRAP consume TOPIC GROUP N
      Consumes N records as a member of GROUP, commits synchronously, leaves, and prints
      one JSON line: {"consumed": [[partition, offset], ...], "committed": {partition: offset}}.
"""
import json
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 3
DEADLINE_S = 90

bootstrap, mode, topic = sys.argv[1:4]

if mode == "produce":
    n = int(sys.argv[4])
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, 3)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(n):
        producer.produce(topic, value=str(i).encode(), partition=i % PARTITIONS)
    assert producer.flush(60) == 0, "records left unacknowledged"
    print(json.dumps({"produced": n}))
elif mode == "consume":
    group, n = sys.argv[4], int(sys.argv[5])
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    })
    consumer.subscribe([topic])
    consumed = []
    started = time.time()
    while len(consumed) < n:
        assert time.time() - started < DEADLINE_S, f"only {len(consumed)} of {n} records"
        m = consumer.poll(1)
        if m is None or m.error():
            continue
        consumed.append([m.partition(), m.offset()])
    consumer.commit(asynchronous=False)
    committed = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], 30)
    consumer.close()
    print(json.dumps({"consumed": consumed,
                      "committed": {tp.partition: tp.offset for tp in committed}}))
else:
    raise SystemExit(f"unknown mode {mode}")
