"""Kafka's kafka-leader-election as librdkafka's AdminClient runs it (confluent-kafka),
against a cluster, run by tests/slow/cluster_operations_e2e.rs:

  python elect.py BOOTSTRAP preferred|unclean all|TOPIC:P[,TOPIC:P...]
      Prints one JSON line: {"TOPIC-P": null (elected) or the error's name, ...}.
"""
import json
import sys

from confluent_kafka import ElectionType, TopicPartition
from confluent_kafka.admin import AdminClient

bootstrap, kind, asked = sys.argv[1:4]
election = {"preferred": ElectionType.PREFERRED, "unclean": ElectionType.UNCLEAN}[kind]
partitions = None
if asked != "all":
    partitions = [TopicPartition(t, int(p)) for t, p in (a.rsplit(":", 1) for a in asked.split(","))]
admin = AdminClient({"bootstrap.servers": bootstrap})
result = admin.elect_leaders(election, partitions).result(30)
print(json.dumps({f"{tp.topic}-{tp.partition}": (e.name() if e else None)
                  for tp, e in result.items()}))
