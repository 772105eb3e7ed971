"""aiokafka against shardlog's Kafka listener: python aio.py HOST:PORT CODECS"""
import asyncio
import sys
import time

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

import common

bootstrap, codecs = sys.argv[1], sys.argv[2].split(",")


async def produce(topic, produced, idempotent, codec):
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=idempotent,
                         compression_type=None if codec == "none" else codec, linger_ms=5)
    await p.start()
    try:
        futures = [await p.send(topic, key=k, value=v, partition=part, timestamp_ms=ts, headers=h)
                   for part, k, v, ts, h in produced]
        await asyncio.gather(*futures)
    finally:
        await p.stop()


async def consume(c, want, deadline_s=30):
    out = []
    deadline = time.time() + deadline_s
    while len(out) < want and time.time() < deadline:
        for tp, msgs in (await c.getmany(timeout_ms=500)).items():
            for m in msgs:
                kind = {0: "create", 1: "append"}[m.timestamp_type]
                out.append((m.partition, m.offset, m.key, m.value, m.timestamp, kind,
                            [(k, v) for k, v in m.headers]))
    return out


async def scenario(admin, topic, idempotent, codec):
    produced = common.records(topic)
    await admin.create_topics([NewTopic(topic, common.PARTITIONS, 1,
                                        topic_configs={"retention.ms": common.RETENTION_MS})])
    await produce(topic, produced, idempotent, codec)
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None)
    await c.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(common.PARTITIONS)]
        c.assign(tps)
        await c.seek_to_beginning(*tps)
        common.check_consumed(produced, await consume(c, len(produced)))
        middle = len(common.expected(produced)[1]) // 2
        c.assign([tps[1]])
        c.seek(tps[1], middle)
        first = (await consume(c, 1))[0]
        assert first[1] == middle, f"seek to {middle} read offset {first[1]}"
        # Without an assignment no long-polling Fetch sits ahead of each ListOffsets on the
        # connection (a broker answers a connection's requests in order; Kafka too).
        c.assign([])
        lookups = 0
        for t in common.targets(produced):
            found = await c.offsets_for_times({tp: t for tp in tps})
            for tp in tps:
                want = common.offset_for_time(produced, tp.partition, t)
                got = found[tp]
                assert (got.offset, got.timestamp) == want if want else got is None, f"{t} {tp}: {got} want {want}"
                lookups += 1
    finally:
        await c.stop()
    described = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    entries = {e[0]: e for r in described for res in r.resources for e in res[4]}
    assert entries["retention.ms"][1] == common.RETENTION_MS, entries["retention.ms"]
    await admin.delete_topics([topic])
    assert topic not in await admin.list_topics()
    return lookups


async def main():
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        for idempotent in (False, True):
            for codec in codecs:
                name = f"aio-{codec}-{'idem' if idempotent else 'plain'}"
                lookups = await scenario(admin, name, idempotent, codec)
                common.done("aiokafka", codec=codec, idempotent=idempotent, lookups=lookups)
    finally:
        await admin.close()


asyncio.run(main())
