"""Kafka's ACLs through real clients (run by tests/kafka_acl_e2e.rs):

  python acls.py denied HOST:PORT MECHANISM USER PASSWORD TOPIC
      confluent-kafka as USER (MECHANISM "-": PLAINTEXT, anonymous): TOPIC is not in the
      topic list, producing to it fails with TOPIC_AUTHORIZATION_FAILED, and a consumer
      group on it fails with an authorization error. Prints DENIED. With SSL_CA=FILE in
      the environment it connects over TLS (SSL, or SASL_SSL with a mechanism).
  python acls.py visible-not-writable HOST:PORT MECHANISM USER PASSWORD TOPIC
      The same, but TOPIC must be listed (DESCRIBE allowed). Prints DENIED.
  python acls.py admin-api HOST:PORT MECHANISM USER PASSWORD TOPIC
      AdminClient as USER (a super user): create_acls gives User:bob READ on TOPIC and on
      the prefixed groups "bob-"; describe_acls finds both; delete_acls removes them and
      describe_acls then finds none. Prints OK.
  python acls.py admin-api-denied HOST:PORT MECHANISM USER PASSWORD TOPIC
      create_acls as a user without ALTER on the cluster fails with
      CLUSTER_AUTHORIZATION_FAILED. Prints DENIED.
  python acls.py admin-api-disabled HOST:PORT - - - TOPIC
      create_acls without an authorizer fails with SECURITY_DISABLED. Prints DISABLED.
"""
import os
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation,
                                   AclPermissionType, AdminClient, ResourcePatternType,
                                   ResourceType)

mode, bootstrap, mechanism, user, password, topic = sys.argv[1:7]


SSL_CA = os.environ.get("SSL_CA")


def conf():
    c = {"bootstrap.servers": bootstrap}
    if mechanism != "-":
        c.update({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
                  "sasl.username": user, "sasl.password": password})
    if SSL_CA:
        c.update({"security.protocol": "SSL" if mechanism == "-" else "SASL_SSL",
                  "ssl.ca.location": SSL_CA})
    return c


def denied(visible=False):
    admin = AdminClient(conf())
    listed = admin.list_topics(timeout=30).topics
    assert (topic in listed) == visible, f"{topic} visible is not {visible}: {sorted(listed)}"
    errors = []
    p = Producer({**conf(), "message.timeout.ms": 10_000})
    try:
        p.produce(topic, b"x", partition=0, on_delivery=lambda err, _m: errors.append(err))
    except KafkaException as e:
        # librdkafka refuses at once when its metadata already says the topic is denied.
        errors.append(e.args[0])
    p.flush(20)
    assert errors and errors[0] is not None, "produced without WRITE"
    assert errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, errors[0]
    c = Consumer({**conf(), "group.id": f"{user}-denied", "auto.offset.reset": "earliest"})
    c.assign([__import__("confluent_kafka").TopicPartition(topic, 0, 0)])
    deadline = time.time() + 20
    got = None
    while got is None and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error():
            got = m.error()
        elif m is not None:
            raise AssertionError("read a record without READ")
    c.close()
    assert got is not None and got.code() in (KafkaError.TOPIC_AUTHORIZATION_FAILED,
                                               KafkaError.GROUP_AUTHORIZATION_FAILED), got
    print("DENIED", flush=True)


def bindings():
    return [
        AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:bob", "*",
                   AclOperation.READ, AclPermissionType.ALLOW),
        AclBinding(ResourceType.GROUP, "bob-", ResourcePatternType.PREFIXED, "User:bob", "*",
                   AclOperation.READ, AclPermissionType.ALLOW),
    ]


BOB = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, "User:bob", None,
                       AclOperation.ANY, AclPermissionType.ANY)


def admin_api():
    admin = AdminClient(conf())
    for f in admin.create_acls(bindings()).values():
        f.result(timeout=30)
    found = admin.describe_acls(BOB).result(timeout=30)
    assert sorted(map(str, found)) == sorted(map(str, bindings())), found
    deleted = [b for f in admin.delete_acls([BOB]).values() for b in f.result(timeout=30)]
    assert len(deleted) == 2, deleted
    assert admin.describe_acls(BOB).result(timeout=30) == [], "deleted ACLs still described"
    print("OK", flush=True)


def admin_api_refused(expected, word):
    admin = AdminClient(conf())
    try:
        for f in admin.create_acls(bindings()).values():
            f.result(timeout=30)
    except KafkaException as e:
        assert e.args[0].code() == expected, e
        print(word, flush=True)
        return
    raise AssertionError("create_acls succeeded")


{"denied": denied, "admin-api": admin_api,
 "visible-not-writable": lambda: denied(visible=True),
 "admin-api-denied": lambda: admin_api_refused(KafkaError.CLUSTER_AUTHORIZATION_FAILED, "DENIED"),
 "admin-api-disabled": lambda: admin_api_refused(KafkaError.SECURITY_DISABLED, "DISABLED"),
 }[mode]()
