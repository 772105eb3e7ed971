"""SASL authentication through real Kafka clients (run by tests/kafka_sasl_e2e.rs):

  python sasl.py confluent HOST:PORT MECHANISM USER PASSWORD TOPIC
      confluent-kafka over SASL_PLAINTEXT: creates TOPIC (2 partitions) if missing,
      produces 20 records, and a consumer group reads them back and commits. Prints OK.
  python sasl.py kafka-python HOST:PORT MECHANISM USER PASSWORD TOPIC
      The same with kafka-python (SaslHandshake v1, SaslAuthenticate up to v2; TOPIC exists).
  python sasl.py admin-set HOST:PORT MECHANISM USER PASSWORD -
      AdminClient (PLAINTEXT, loopback) sets USER's credential with
      alter_user_scram_credentials (KIP-554); describe_user_scram_credentials then lists the
      mechanism with 8192 iterations. Prints OK.
  python sasl.py admin-delete HOST:PORT MECHANISM USER - -
      Deletes it; describing USER then fails as not found. Prints OK.
  With PAD=N in the environment each record carries N more bytes (large requests and
  replies, many TLS records each).
  With SSL_CA=FILE in the environment every client connects over TLS trusting that CA:
  SASL_SSL, or SSL when MECHANISM is "-" (no SASL); with SSL_CERT=FILE and SSL_KEY=FILE
  they present that client certificate (ssl.client.auth).
  python sasl.py long HOST:PORT MECHANISM USER PASSWORD TOPIC
      A producer sends a record every 250 ms for 6 s to partition 0 of TOPIC (which exists);
      every one is delivered (KIP-368 re-authentication underneath). Prints OK.
  python sasl.py probe HOST:PORT MECHANISM USER PASSWORD -
      Lists topics once (5 s): prints OK if the server answers, REFUSED if not.
  python sasl.py refused HOST:PORT MECHANISM USER PASSWORD TOPIC
      confluent-kafka with these credentials must be refused: listing topics fails with an
      authentication error. Prints REFUSED.
"""
import os
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

client, bootstrap, mechanism, user, password, topic = sys.argv[1:7]
DEADLINE_S = 60


SSL_CA = os.environ.get("SSL_CA")
SSL_CERT = os.environ.get("SSL_CERT")
SSL_KEY = os.environ.get("SSL_KEY")
SASL = mechanism != "-"
PROTOCOL = {(True, True): "SASL_SSL", (True, False): "SSL",
            (False, True): "SASL_PLAINTEXT", (False, False): "PLAINTEXT"}[(bool(SSL_CA), SASL)]


def librdkafka_conf():
    conf = {"bootstrap.servers": bootstrap, "security.protocol": PROTOCOL}
    if SASL:
        conf.update({"sasl.mechanism": mechanism, "sasl.username": user,
                     "sasl.password": password})
    if SSL_CA:
        conf["ssl.ca.location"] = SSL_CA
    if SSL_CERT:
        conf.update({"ssl.certificate.location": SSL_CERT, "ssl.key.location": SSL_KEY})
    return conf


def confluent():
    admin = AdminClient(librdkafka_conf())
    if topic not in admin.list_topics(timeout=30).topics:
        admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(timeout=30)
    p = Producer(librdkafka_conf())
    pad = b"p" * int(os.environ.get("PAD", "0"))
    for i in range(20):
        p.produce(topic, value=f"{user}-{i}".encode() + pad, partition=i % 2)
    assert p.flush(30) == 0, "undelivered records"
    c = Consumer({**librdkafka_conf(), "group.id": f"g-{user}-{mechanism}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    seen = set()
    deadline = time.time() + DEADLINE_S
    while len(seen) < 20 and time.time() < deadline:
        for m in c.consume(100, 0.5):
            # A node that has not copied a topic just created elsewhere answers it unknown
            # for a heartbeat (as Kafka's brokers do until the metadata reaches them).
            if m.error() and m.error().code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                continue
            if m.error():
                raise KafkaException(m.error())
            if m.value().decode().startswith(f"{user}-"):
                seen.add(m.value())
    assert len(seen) == 20, f"read {len(seen)} of 20"
    c.commit(asynchronous=False)
    c.close()
    print("OK", flush=True)


def kafka_python():
    from kafka import KafkaConsumer, KafkaProducer
    conf = {"bootstrap_servers": bootstrap, "security_protocol": PROTOCOL}
    if SASL:
        conf.update({"sasl_mechanism": mechanism, "sasl_plain_username": user,
                     "sasl_plain_password": password})
    if SSL_CA:
        conf.update({"ssl_cafile": SSL_CA, "ssl_check_hostname": True})
    if SSL_CERT:
        conf.update({"ssl_certfile": SSL_CERT, "ssl_keyfile": SSL_KEY})
    p = KafkaProducer(**conf)
    for i in range(20):
        p.send(topic, value=f"kp-{user}-{i}".encode(), partition=i % 2)
    p.flush(30)
    p.close()
    c = KafkaConsumer(topic, group_id=f"kp-{user}", auto_offset_reset="earliest",
                      consumer_timeout_ms=10_000, **conf)
    seen = {m.value for m in c if m.value.decode().startswith(f"kp-{user}-")}
    c.close()
    assert len(seen) == 20, f"read {len(seen)} of 20"
    print("OK", flush=True)


def refused():
    admin = AdminClient({**librdkafka_conf(), "reconnect.backoff.max.ms": 200})
    try:
        admin.list_topics(timeout=5)
    except KafkaException as e:
        err = e.args[0]
        assert err.code() in (-169, -185, -195), f"not an authentication failure: {err}"
        print(f"refused: {err}", file=sys.stderr, flush=True)
        print("REFUSED", flush=True)
        return
    raise AssertionError("the server accepted these credentials")


def long_lived():
    """Produces a record every 250 ms for 6 s on one connection (KIP-368 re-authentication
    happens underneath when the server's session lifetime is shorter); all delivered."""
    errors, delivered = [], []
    p = Producer(librdkafka_conf())
    deadline = time.time() + 6
    i = 0
    while time.time() < deadline:
        p.produce(topic, value=f"long-{i}".encode(), partition=0,
                  on_delivery=lambda err, m: (errors if err else delivered).append(err or m))
        p.poll(0.25)
        i += 1
    assert p.flush(30) == 0, "undelivered records"
    assert not errors and len(delivered) == i, f"{errors} {len(delivered)}/{i}"
    print("OK", flush=True)


def probe():
    admin = AdminClient({**librdkafka_conf(), "reconnect.backoff.max.ms": 200})
    try:
        admin.list_topics(timeout=5)
        print("OK", flush=True)
    except KafkaException:
        print("REFUSED", flush=True)


def admin_set():
    from confluent_kafka.admin import (ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialUpsertion)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    m = getattr(ScramMechanism, mechanism.replace("-", "_"))
    upsert = UserScramCredentialUpsertion(user, ScramCredentialInfo(m, 8192), password.encode())
    for f in admin.alter_user_scram_credentials([upsert]).values():
        f.result(timeout=30)
    described = admin.describe_user_scram_credentials([user])[user].result(timeout=30)
    infos = [(i.mechanism, i.iterations) for i in described.scram_credential_infos]
    assert (m, 8192) in infos, infos
    print("OK", flush=True)


def admin_delete():
    from confluent_kafka.admin import ScramMechanism, UserScramCredentialDeletion
    admin = AdminClient({"bootstrap.servers": bootstrap})
    m = getattr(ScramMechanism, mechanism.replace("-", "_"))
    for f in admin.alter_user_scram_credentials([UserScramCredentialDeletion(user, m)]).values():
        f.result(timeout=30)
    try:
        admin.describe_user_scram_credentials([user])[user].result(timeout=30)
    except KafkaException as e:
        assert "does not exist" in str(e), e
        print("OK", flush=True)
        return
    raise AssertionError("the deleted user is still described")


{"confluent": confluent, "kafka-python": kafka_python, "refused": refused, "long": long_lived,
 "admin-set": admin_set, "probe": probe, "admin-delete": admin_delete}[client]()
