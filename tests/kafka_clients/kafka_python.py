"""kafka-python against shardlog's Kafka listener: python kafka_python.py HOST:PORT CODECS"""
import sys
import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
from kafka.errors import TopicAlreadyExistsError

import common

bootstrap, codecs = sys.argv[1], sys.argv[2].split(",")
admin = KafkaAdminClient(bootstrap_servers=bootstrap)


def create(topic):
    admin.create_topics([NewTopic(topic, common.PARTITIONS, 1,
                                  topic_configs={"retention.ms": common.RETENTION_MS})])
    try:
        admin.create_topics([NewTopic(topic, 1, 1)])
        raise AssertionError("second create succeeded")
    except TopicAlreadyExistsError:
        pass


def produce(topic, produced, idempotent, codec):
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=idempotent,
                      compression_type=None if codec == "none" else codec, linger_ms=5)
    futures = [p.send(topic, key=k, value=v, partition=part, timestamp_ms=ts, headers=h)
               for part, k, v, ts, h in produced]
    p.flush(30)
    for f in futures:
        f.get(timeout=10)
    p.close()


def consume(c, want, deadline_s=30):
    out = []
    deadline = time.time() + deadline_s
    while len(out) < want and time.time() < deadline:
        for tp, msgs in c.poll(timeout_ms=500).items():
            for m in msgs:
                kind = {0: "create", 1: "append"}[m.timestamp_type]
                out.append((m.partition, m.offset, m.key, m.value, m.timestamp, kind,
                            [(k, v) for k, v in m.headers]))
    return out


def scenario(topic, idempotent, codec):
    produced = common.records(topic)
    create(topic)
    produce(topic, produced, idempotent, codec)
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None)
    tps = [TopicPartition(topic, p) for p in range(common.PARTITIONS)]
    c.assign(tps)
    c.seek_to_beginning()
    common.check_consumed(produced, consume(c, len(produced)))
    middle = len(common.expected(produced)[1]) // 2
    c.assign([tps[1]])
    c.seek(tps[1], middle)
    first = consume(c, 1)[0]
    assert first[1] == middle, f"seek to {middle} read offset {first[1]}"
    lookups = 0
    for t in common.targets(produced):
        found = c.offsets_for_times({tp: t for tp in tps})
        for tp in tps:
            want = common.offset_for_time(produced, tp.partition, t)
            got = found[tp]
            assert (got.offset, got.timestamp) == want if want else got is None, f"{t} {tp}: {got} want {want}"
            lookups += 1
    c.close()
    described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)],
                                       config_filter="all")["topic"][topic]
    assert described["retention.ms"]["value"] == common.RETENTION_MS, described["retention.ms"]
    assert described["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert described["segment.bytes"]["config_source"] == "DEFAULT_CONFIG"
    admin.delete_topics([topic])
    assert topic not in admin.list_topics()
    return lookups


for idempotent in (False, True):
    for codec in codecs:
        lookups = scenario(f"kp-{codec}-{'idem' if idempotent else 'plain'}", idempotent, codec)
        common.done("kafka-python", codec=codec, idempotent=idempotent, lookups=lookups)
