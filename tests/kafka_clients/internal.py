"""Internal topics refuse Kafka clients' changes (run by tests/offsets_integrity_e2e.rs):
confluent-kafka's AdminClient deleting or creating __consumer_offsets, and its Producer
producing to it, each get INVALID_TOPIC_EXCEPTION (17) and change nothing. Prints OK.

usage: internal.py BOOTSTRAP
"""
import sys

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

TOPIC = "__consumer_offsets"


def refused(future, what):
    try:
        future.result(timeout=20)
    except KafkaException as e:
        code = e.args[0].code()
        assert code == KafkaError.TOPIC_EXCEPTION, f"{what}: {e.args[0]}"
        return
    raise AssertionError(f"{what} was accepted")


def main():
    bootstrap = sys.argv[1]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    refused(admin.delete_topics([TOPIC])[TOPIC], "DeleteTopics")
    refused(admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC], "CreateTopics")
    refused(admin.create_topics([NewTopic(TOPIC, 1, 1)], validate_only=True)[TOPIC],
            "CreateTopics validate_only")
    md = admin.list_topics(timeout=20)
    assert TOPIC in md.topics and md.topics[TOPIC].error is None, "not described"

    outcome = []
    producer = Producer({"bootstrap.servers": bootstrap, "retries": 0})
    producer.produce(TOPIC, key=b"forged", value=b"offset 7", partition=0,
                     on_delivery=lambda err, msg: outcome.append(err))
    producer.flush(20)
    assert len(outcome) == 1, "no delivery report"
    assert outcome[0] is not None, "a produce to the offsets topic was accepted"
    assert outcome[0].code() == KafkaError.TOPIC_EXCEPTION, f"Produce: {outcome[0]}"
    print("OK", flush=True)


if __name__ == "__main__":
    main()
