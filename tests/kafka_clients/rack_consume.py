"""A consumer in a rack (librdkafka's client.rack, KIP-392) reading one partition from
offset 0, run by tests/slow/cluster_rack_reads_e2e.rs:

  python rack_consume.py BOOTSTRAP TOPIC RACK COUNT
      Prints one JSON line: {"values": [every value read, in offset order]} once COUNT
      records are read; exits non-zero if they are not read within 60 s.
"""
import json
import sys
import time

from confluent_kafka import Consumer, TopicPartition

bootstrap, topic, rack, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
consumer = Consumer({
    "bootstrap.servers": bootstrap,
    "group.id": "rack-reader",
    "client.rack": rack,
    "enable.auto.commit": False,
    # Asks the preferred replica again soon, as a long-running consumer would.
    "topic.metadata.refresh.interval.ms": 2000,
})
consumer.assign([TopicPartition(topic, 0, 0)])
values = []
deadline = time.monotonic() + 60
while len(values) < count and time.monotonic() < deadline:
    message = consumer.poll(0.5)
    if message is None:
        continue
    if message.error():
        raise SystemExit(f"consume: {message.error()}")
    assert message.offset() == len(values), f"offset {message.offset()} after {len(values)}"
    values.append(message.value().decode())
consumer.close()
if len(values) < count:
    raise SystemExit(f"read {len(values)} of {count} records in 60 s")
print(json.dumps({"values": values}))
