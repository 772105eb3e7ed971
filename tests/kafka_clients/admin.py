"""The admin surface through real Kafka clients (run by tests/kafka_admin_e2e.rs): a producer
to a topic that does not exist yet (created on first use), then each AdminClient call
Kafka's tools make: create_partitions, incremental_alter_configs, alter_configs,
describe_configs of a topic and of the broker, delete_records, describe_cluster and, with
kafka-python, describe_log_dirs. Every answer is checked; prints OK per client.

usage: admin.py confluent|kafka-python BOOTSTRAP
"""
import re
import sys
import time


def confluent(bootstrap):
    from confluent_kafka import KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                       ConfigResource, ConfigSource, NewPartitions,
                                       ResourceType)

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = "c-auto"
    delivered = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(5):
        producer.produce(topic, value=f"v{i}".encode(), partition=0,
                         on_delivery=lambda err, msg: delivered.append(err))
    producer.flush(30)
    assert delivered == [None] * 5, f"produce to a new topic: {delivered}"
    md = admin.list_topics(timeout=20).topics[topic]
    assert md.error is None and len(md.partitions) == 1, md

    admin.create_partitions([NewPartitions(topic, 3)])[topic].result(timeout=20)
    assert len(admin.list_topics(timeout=20).topics[topic].partitions) == 3

    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "5000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
    ])
    list(admin.incremental_alter_configs([res]).values())[0].result(timeout=20)
    configs = describe(admin, ConfigResource(ResourceType.TOPIC, topic))
    assert configs["retention.ms"].value == "5000", configs["retention.ms"]
    assert configs["cleanup.policy"].value == "compact,delete", configs["cleanup.policy"]

    whole = ConfigResource(ResourceType.TOPIC, topic, set_config={"segment.ms": "60000"})
    list(admin.alter_configs([whole]).values())[0].result(timeout=20)
    configs = describe(admin, ConfigResource(ResourceType.TOPIC, topic))
    assert configs["segment.ms"].value == "60000"
    assert configs["retention.ms"].is_default, "alter_configs replaces the whole config"

    broker = describe(admin, ConfigResource(ResourceType.BROKER, "0"))
    assert broker["num.partitions"].value == "1", broker["num.partitions"]
    assert broker["auto.create.topics.enable"].value == "true"
    assert broker["num.partitions"].is_read_only

    # kafka-configs --entity-type brokers --entity-name 0 (confluent-kafka refuses the
    # cluster default's empty name): every topic without its own value takes it.
    dflt = ConfigResource(ResourceType.BROKER, "0", incremental_configs=[
        ConfigEntry("log.retention.ms", "86400000", incremental_operation=AlterConfigOpType.SET)])
    list(admin.incremental_alter_configs([dflt]).values())[0].result(timeout=20)
    retention = describe(admin, ConfigResource(ResourceType.TOPIC, topic))["retention.ms"]
    assert retention.value == "86400000", retention
    assert retention.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value, retention
    broker = describe(admin, ConfigResource(ResourceType.BROKER, "0"))
    assert broker["log.retention.ms"].value == "86400000" and not broker["log.retention.ms"].is_read_only
    static = ConfigResource(ResourceType.BROKER, "0", incremental_configs=[
        ConfigEntry("num.partitions", "3", incremental_operation=AlterConfigOpType.SET)])
    try:
        list(admin.incremental_alter_configs([static]).values())[0].result(timeout=20)
        raise AssertionError("a static broker config was altered")
    except KafkaException as e:
        assert "cannot be updated dynamically" in str(e), e
    undo = ConfigResource(ResourceType.BROKER, "0", incremental_configs=[
        ConfigEntry("log.retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)])
    list(admin.incremental_alter_configs([undo]).values())[0].result(timeout=20)
    assert describe(admin, ConfigResource(ResourceType.TOPIC, topic))["retention.ms"].is_default

    done = admin.delete_records([TopicPartition(topic, 0, 2)])
    low = list(done.values())[0].result(timeout=20).low_watermark
    assert low == 2, low

    cluster = admin.describe_cluster().result(timeout=20)
    # The data directory's own id (32 hex digits), the same in Metadata.
    assert re.fullmatch(r"[0-9a-f]{32}", cluster.cluster_id) and len(cluster.nodes) == 1, cluster
    assert cluster.controller.id == cluster.nodes[0].id == 0
    print("OK confluent", flush=True)


def describe(admin, resource):
    return list(admin.describe_configs([resource]).values())[0].result(timeout=20)


def kafka_python(bootstrap):
    from kafka import KafkaAdminClient, KafkaProducer, TopicPartition
    from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions

    topic = "k-auto"
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for i in range(5):
        producer.send(topic, value=f"v{i}".encode(), partition=0).get(timeout=30)
    producer.close()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_partitions({topic: NewPartitions(total_count=2)})
    desc = admin.describe_topics([topic])
    assert len(desc[0]["partitions"]) == 2, desc

    admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                        configs={"retention.ms": "7000"})])
    got = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)],
                                 config_filter="all")
    assert "7000" in str(got), got
    broker = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "0")],
                                    config_filter="all")
    assert "num.partitions" in str(broker), broker
    admin.alter_configs([ConfigResource(ConfigResourceType.BROKER, "0",
                                        configs={"log.segment.bytes": "10485760"})])
    got = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)],
                                 config_filter="all")
    assert "10485760" in str(got), got
    admin.alter_configs([ConfigResource(ConfigResourceType.BROKER, "0", configs={})])

    lows = admin.delete_records({TopicPartition(topic, 0): 3})
    assert "3" in str(lows), lows
    cluster = admin.describe_cluster()
    assert re.fullmatch(r"[0-9a-f]{32}", cluster["cluster_id"]) and len(cluster["brokers"]) == 1, cluster
    dirs = admin.describe_log_dirs()
    assert topic in str(dirs), dirs
    admin.close()
    print("OK kafka-python", flush=True)


def main():
    client, bootstrap = sys.argv[1], sys.argv[2]
    started = time.time()
    {"confluent": confluent, "kafka-python": kafka_python}[client](bootstrap)
    print(f"took {time.time() - started:.2f}s", flush=True)


if __name__ == "__main__":
    main()
