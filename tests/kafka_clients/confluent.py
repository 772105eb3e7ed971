"""confluent-kafka (librdkafka) against shardlog's Kafka listener: python confluent.py HOST:PORT CODECS"""
import sys
import time

from confluent_kafka import (Consumer, KafkaException, Producer, TopicPartition,
                             TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME)
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

import common

bootstrap, codecs = sys.argv[1], sys.argv[2].split(",")
admin = AdminClient({"bootstrap.servers": bootstrap})


def create(topic):
    fs = admin.create_topics([NewTopic(topic, num_partitions=common.PARTITIONS, replication_factor=1,
                                       config={"retention.ms": common.RETENTION_MS})])
    fs[topic].result(20)
    # Creating it again is refused with Kafka's TOPIC_ALREADY_EXISTS.
    try:
        admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(20)
        raise AssertionError("second create succeeded")
    except KafkaException as e:
        assert e.args[0].name() == "TOPIC_ALREADY_EXISTS", e


def produce(topic, produced, idempotent, codec):
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": idempotent,
                  "compression.type": codec, "linger.ms": 5})
    errors = []
    for part, k, v, ts, h in produced:
        p.produce(topic, key=k, value=v, partition=part, timestamp=ts, headers=h,
                  on_delivery=lambda err, msg: err and errors.append(err))
    left = p.flush(30)
    assert left == 0 and not errors, f"{left} undelivered, errors {errors[:3]}"


def consumer():
    return Consumer({"bootstrap.servers": bootstrap, "group.id": "shardlog-test",
                     "enable.auto.commit": False, "enable.partition.eof": False})


def consume(c, want, deadline_s=30):
    out = []
    deadline = time.time() + deadline_s
    while len(out) < want and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            raise KafkaException(m.error())
        kind, ts = m.timestamp()
        kind = {TIMESTAMP_CREATE_TIME: "create", TIMESTAMP_LOG_APPEND_TIME: "append"}[kind]
        out.append((m.partition(), m.offset(), m.key(), m.value(), ts, kind, m.headers() or []))
    return out


def scenario(topic, idempotent, codec):
    produced = common.records(topic)
    create(topic)
    produce(topic, produced, idempotent, codec)
    c = consumer()
    c.assign([TopicPartition(topic, p, 0) for p in range(common.PARTITIONS)])
    common.check_consumed(produced, consume(c, len(produced)))
    # Seek to the middle of partition 1.
    middle = len(common.expected(produced)[1]) // 2
    c.assign([TopicPartition(topic, 1, middle)])
    first = consume(c, 1)[0]
    assert first[1] == middle, f"seek to {middle} read offset {first[1]}"
    # An assigned consumer keeps a long-polling Fetch in flight on the connection, and a
    # broker answers a connection's requests in order (Kafka too): look up without one.
    c.unassign()
    lookups = 0
    for t in common.targets(produced):
        asked = [TopicPartition(topic, p, t) for p in range(common.PARTITIONS)]
        for tp in c.offsets_for_times(asked, timeout=10):
            want = common.offset_for_time(produced, tp.partition, t)
            assert tp.error is None, tp.error
            assert tp.offset == (want[0] if want else -1), f"{t} p{tp.partition}: {tp.offset} want {want}"
            lookups += 1
    c.close()
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    configs = admin.describe_configs([res])[res].result(20)
    assert configs["retention.ms"].value == common.RETENTION_MS, configs["retention.ms"]
    assert not configs["retention.ms"].is_default
    assert configs["segment.bytes"].is_default
    admin.delete_topics([topic])[topic].result(20)
    assert topic not in admin.list_topics(timeout=10).topics
    return lookups


for idempotent in (False, True):
    for codec in codecs:
        lookups = scenario(f"cf-{codec}-{'idem' if idempotent else 'plain'}", idempotent, codec)
        common.done("confluent-kafka", codec=codec, idempotent=idempotent, lookups=lookups)
