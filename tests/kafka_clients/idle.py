"""Idle consumers for tests/idle_e2e.rs: N confluent-kafka consumers assigned at the log end
of every partition of a topic, long-polling (librdkafka's fetch.wait.max.ms) until killed.
Prints READY once each has polled; a record arriving is reported (nothing is produced).

usage: idle.py BOOTSTRAP TOPIC PARTITIONS CONSUMERS
"""
import sys

from confluent_kafka import OFFSET_END, Consumer, TopicPartition


def main():
    bootstrap, topic = sys.argv[1], sys.argv[2]
    partitions, count = int(sys.argv[3]), int(sys.argv[4])
    consumers = []
    for i in range(count):
        c = Consumer({
            "bootstrap.servers": bootstrap,
            "group.id": f"idle-{i}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 500,
        })
        c.assign([TopicPartition(topic, p, OFFSET_END) for p in range(partitions)])
        consumers.append(c)
    for c in consumers:
        c.poll(1.0)
    print("READY", flush=True)
    while True:
        for c in consumers:
            m = c.poll(0.2)
            if m is not None:
                print("GOT", m.error() or m.offset(), flush=True)


if __name__ == "__main__":
    main()
