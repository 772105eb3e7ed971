"""Transactions through real Kafka clients (run by tests/kafka_txn_e2e.rs):

  python txn.py confluent HOST:PORT basic TOPIC
      A transactional producer commits one transaction of 10 records over 3 partitions and
      aborts one of 5; a second instance of the same transactional.id fences the first
      (its next send or commit fails as fenced); a read_committed consumer sees exactly the
      10 committed records, a read_uncommitted one all 15 (and the markers are skipped).
      Prints OK.
  python txn.py confluent HOST:PORT hold TOPIC
      Commits a transaction of 6 records, then leaves a second one (3 records, 3 s timeout)
      open: prints HOLDING and waits to be killed (the server is killed -9 meanwhile).
  python txn.py confluent HOST:PORT hold-prepared TOPIC / after-prepared TOPIC
      As hold (id tx-prepared, a 10-minute timeout); after the restart the held
      transaction, logged PrepareCommit while the server was down (the test writes it),
      must be committed by the coordinator: read_committed sees all 9 records. Prints OK.
  python txn.py confluent HOST:PORT after-crash TOPIC
      After the restart: 3 records are produced after the open transaction's; a
      read_committed consumer sees exactly the 6 committed records and those 3 (so the open
      transaction was aborted: nothing holds the LSO). Prints OK.
  python txn.py confluent HOST:PORT ctp TOPIC
      Consume-transform-produce exactly once: 30 records in TOPIC are read by a group and
      written upper-cased to TOPIC-out in transactions that also send the group's offsets
      (send_offsets_to_transaction); one round is aborted and redone from the committed
      offsets. Then the output holds each record exactly once (read_committed) and the
      group's committed offsets are the input's end. Prints OK.
  python txn.py kafka-python|aiokafka HOST:PORT basic TOPIC
      The older clients' transactional producers (InitProducerId, AddPartitionsToTxn and
      EndTxn at their versions): one committed transaction of 6 records and one aborted of
      3; a confluent read_committed consumer sees exactly the 6. Prints OK.
  python txn.py confluent HOST:PORT ctp-worker TOPIC
      A consume-transform-produce worker that survives a broker restart: TOPIC holds 300
      records (the test writes them); it processes them in transactions with
      send_offsets_to_transaction, printing PROGRESS n after each commit, recovering from
      aborted or failed transactions by rewinding to the group's committed offsets, until
      the group has committed all 300; then prints OK.
  python txn.py confluent HOST:PORT check-output TOPIC
      TOPIC-out holds each of the 300 inputs upper-cased exactly once (read_committed).
      Prints OK.
  python txn.py confluent HOST:PORT fill TOPIC
      Creates TOPIC (3 partitions) and TOPIC-out and writes the 300 inputs. Prints OK.
  python txn.py confluent HOST:PORT timeout TOPIC
      A transaction left open past its transaction.timeout.ms is aborted by the
      coordinator: read_committed consumers are not held back, and the late producer's
      commit fails. Prints OK.
"""
import faulthandler
import os
import signal
import sys
import time
import uuid

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

client, bootstrap, mode, topic = sys.argv[1:5]
# `kill -USR1` prints every thread's stack (a stuck client tells where it waits).
faulthandler.register(signal.SIGUSR1, all_threads=True)
PARTITIONS = 3
DEADLINE_S = 60


# RDKAFKA_DEBUG=eos,... turns on librdkafka's debug log of the transactional producer.
RDKAFKA_DEBUG = {"debug": os.environ["RDKAFKA_DEBUG"]} if os.environ.get("RDKAFKA_DEBUG") else {}
# A worker that outlives a restart of its (single) broker: librdkafka's re-bootstrap
# (KIP-899) decommissions the broker, and send_offsets_to_transaction() then waits on the
# decommissioned group coordinator for ever (librdkafka issue #5511). Without re-bootstrap
# the client reconnects to the broker it knows.
SURVIVE_RESTART = {"metadata.recovery.strategy": "none"} if os.environ.get("SURVIVE_RESTART") else {}


def producer(txn_id, timeout_ms=60000):
    return Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id,
                     "transaction.timeout.ms": timeout_ms, "linger.ms": 0, **RDKAFKA_DEBUG,
                     **SURVIVE_RESTART})


def read_all(isolation, expect_at_least):
    return read_all_of(topic, isolation, expect_at_least)


def read_all_of(topic, isolation, expect_at_least):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4()}",
                  "auto.offset.reset": "earliest", "isolation.level": isolation,
                  "enable.auto.commit": False, "enable.partition.eof": True})
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    values, eof = [], set()
    deadline = time.time() + DEADLINE_S
    while time.time() < deadline and (len(eof) < PARTITIONS or len(values) < expect_at_least):
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191:  # _PARTITION_EOF
                eof.add(m.partition())
                continue
            raise KafkaException(m.error())
        values.append(m.value().decode())
    c.close()
    return sorted(values)


def create_topic():
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(timeout=30)


def basic():
    create_topic()
    p = producer("tx-basic")
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(10):
        p.produce(topic, value=f"c{i}".encode(), partition=i % PARTITIONS)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(5):
        p.produce(topic, value=f"a{i}".encode(), partition=i % PARTITIONS)
    p.flush(30)
    p.abort_transaction(30)
    # A new instance of the same id fences the old one.
    p.begin_transaction()
    p.produce(topic, value=b"zombie", partition=0)
    p.flush(30)
    p2 = producer("tx-basic")
    p2.init_transactions(30)
    try:
        p.commit_transaction(30)
        raise AssertionError("the fenced producer committed")
    except KafkaException as e:
        assert e.args[0].fatal() or "fenced" in str(e).lower(), e
    committed = read_all("read_committed", 10)
    assert committed == sorted(f"c{i}" for i in range(10)), committed
    everything = read_all("read_uncommitted", 16)
    assert len(everything) == 16 and "zombie" in everything, everything
    print("OK", flush=True)


def timeout():
    create_topic()
    p = producer("tx-timeout", timeout_ms=2000)
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=b"late", partition=0)
    p.flush(30)
    time.sleep(6)
    try:
        p.commit_transaction(30)
        raise AssertionError("a timed-out transaction committed")
    except KafkaException:
        pass
    committed = read_all("read_committed", 0)
    assert committed == [], committed
    print("OK", flush=True)


def ctp():
    admin = AdminClient({"bootstrap.servers": bootstrap})
    out = f"{topic}-out"
    for f in admin.create_topics([NewTopic(topic, PARTITIONS, 1), NewTopic(out, PARTITIONS, 1)]).values():
        f.result(timeout=30)
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(30):
        p.produce(topic, value=f"r{i:02}".encode(), partition=i % PARTITIONS)
    p.flush(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "ctp",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    consumer.subscribe([topic])
    tx = producer("ctp-tx")
    tx.init_transactions(30)
    done, rounds, aborted = 0, 0, False
    deadline = time.time() + DEADLINE_S
    while done < 30 and time.time() < deadline:
        msgs = consumer.consume(5, 1.0)
        msgs = [m for m in msgs if not m.error()]
        if not msgs:
            continue
        tx.begin_transaction()
        for m in msgs:
            tx.produce(out, value=m.value().upper(), partition=m.partition())
        tx.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                       consumer.consumer_group_metadata(), 30)
        rounds += 1
        if rounds == 2 and not aborted:
            aborted = True
            tx.abort_transaction(30)
            # Rewind to what the group committed: the aborted round is redone.
            committed = consumer.committed(consumer.assignment(), 30)
            for tp in committed:
                consumer.seek(TopicPartition(tp.topic, tp.partition, max(tp.offset, 0)))
            continue
        tx.commit_transaction(30)
        done += len(msgs)
    consumer.close()
    assert done == 30, done
    check = Consumer({"bootstrap.servers": bootstrap, "group.id": "ctp",
                      "isolation.level": "read_committed"})
    committed = check.committed([TopicPartition(topic, i) for i in range(PARTITIONS)], 30)
    check.close()
    assert sum(tp.offset for tp in committed) == 30, committed
    values = read_all_of(out, "read_committed", 30)
    assert values == sorted(f"R{i:02}" for i in range(30)), values
    print("OK", flush=True)


CTP_RECORDS = 300


def fill():
    admin = AdminClient({"bootstrap.servers": bootstrap})
    out = f"{topic}-out"
    for f in admin.create_topics([NewTopic(topic, PARTITIONS, 1), NewTopic(out, PARTITIONS, 1)]).values():
        f.result(timeout=30)
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(CTP_RECORDS):
        p.produce(topic, value=f"r{i:03}".encode(), partition=i % PARTITIONS)
    p.flush(30)
    print("OK", flush=True)


def committed_total(consumer):
    parts = [TopicPartition(topic, i) for i in range(PARTITIONS)]
    return sum(max(tp.offset, 0) for tp in consumer.committed(parts, 10))


def rewind(consumer):
    for tp in consumer.committed(consumer.assignment(), 10):
        consumer.seek(TopicPartition(tp.topic, tp.partition, max(tp.offset, 0)))


def ctp_worker():
    out = f"{topic}-out"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "ctp-crash",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": "read_committed", **SURVIVE_RESTART})
    consumer.subscribe([topic])
    tx = producer("ctp-crash-tx", timeout_ms=5000)
    tx.init_transactions(60)
    deadline = time.time() + 120
    while time.time() < deadline:
        msgs = [m for m in consumer.consume(10, 0.5) if not m.error()]
        if not msgs:
            try:
                total = committed_total(consumer)
                print(f"idle: committed {total}", file=sys.stderr, flush=True)
                if total >= CTP_RECORDS:
                    print("OK", flush=True)
                    return
            except KafkaException as e:
                print(f"committed() failed: {e}", file=sys.stderr, flush=True)
            continue
        try:
            tx.begin_transaction()
            for m in msgs:
                tx.produce(out, value=m.value().upper(), partition=m.partition())
            tx.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                           consumer.consumer_group_metadata(), 30)
            commit_with_retries(tx)
            print(f"PROGRESS {committed_total(consumer)}", flush=True)
        except KafkaException as e:
            err = e.args[0]
            print(f"transaction failed: {err}", file=sys.stderr, flush=True)
            if err.fatal():
                tx = producer("ctp-crash-tx", timeout_ms=5000)
                tx.init_transactions(60)
            else:
                try:
                    tx.abort_transaction(30)
                except KafkaException:
                    pass
            try:
                rewind(consumer)
            except KafkaException:
                pass
    raise AssertionError("the worker did not finish in time")


def commit_with_retries(tx):
    deadline = time.time() + 60
    while True:
        try:
            tx.commit_transaction(30)
            return
        except KafkaException as e:
            if e.args[0].retriable() and time.time() < deadline:
                continue
            raise


def check_output():
    values = read_all_of(f"{topic}-out", "read_committed", CTP_RECORDS)
    want = sorted(f"R{i:03}" for i in range(CTP_RECORDS))
    assert values == want, (len(values), len(set(values)))
    print("OK", flush=True)


def hold(txn_id="tx-hold", timeout_ms=3000):
    create_topic()
    p = producer(txn_id, timeout_ms=timeout_ms)
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(6):
        p.produce(topic, value=f"c{i}".encode(), partition=i % PARTITIONS)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(3):
        p.produce(topic, value=f"u{i}".encode(), partition=i % PARTITIONS)
    p.flush(30)
    print("HOLDING", flush=True)
    time.sleep(DEADLINE_S)


def after_prepared():
    # The held transaction was logged PrepareCommit before the kill: the restarted
    # coordinator writes its markers, so its records are committed.
    committed = read_all("read_committed", 9)
    want = sorted([f"c{i}" for i in range(6)] + [f"u{i}" for i in range(3)])
    assert committed == want, committed
    print("OK", flush=True)


def after_crash():
    # Records written after the open transaction's are readable only once it is decided.
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(PARTITIONS):
        p.produce(topic, value=f"n{i}".encode(), partition=i)
    p.flush(30)
    committed = read_all("read_committed", 6 + PARTITIONS)
    want = sorted([f"c{i}" for i in range(6)] + [f"n{i}" for i in range(PARTITIONS)])
    assert committed == want, committed
    print("OK", flush=True)


def kafka_python_basic():
    from kafka import KafkaProducer
    create_topic()
    p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="tx-kp")
    p.init_transactions()
    p.begin_transaction()
    for i in range(6):
        p.send(topic, value=f"c{i}".encode(), partition=i % PARTITIONS)
    p.commit_transaction()
    p.begin_transaction()
    for i in range(3):
        p.send(topic, value=f"a{i}".encode(), partition=i % PARTITIONS)
    p.flush()
    p.abort_transaction()
    p.close()
    check_six_committed()


def aiokafka_basic():
    import asyncio
    from aiokafka import AIOKafkaProducer

    async def run():
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="tx-aio")
        await p.start()
        try:
            async with p.transaction():
                for i in range(6):
                    await p.send(topic, value=f"c{i}".encode(), partition=i % PARTITIONS)
            await p.begin_transaction()
            for i in range(3):
                await p.send(topic, value=f"a{i}".encode(), partition=i % PARTITIONS)
            await p.abort_transaction()
        finally:
            await p.stop()

    create_topic()
    asyncio.run(run())
    check_six_committed()


def check_six_committed():
    committed = read_all("read_committed", 6)
    assert committed == sorted(f"c{i}" for i in range(6)), committed
    everything = read_all("read_uncommitted", 9)
    assert len(everything) == 9, everything
    print("OK", flush=True)


if client == "kafka-python":
    {"basic": kafka_python_basic}[mode]()
    sys.exit(0)
if client == "aiokafka":
    {"basic": aiokafka_basic}[mode]()
    sys.exit(0)
{"basic": basic, "timeout": timeout, "hold": hold, "after-crash": after_crash, "ctp": ctp,
 "hold-prepared": lambda: hold("tx-prepared", 600000), "after-prepared": after_prepared,
 "fill": fill, "ctp-worker": ctp_worker, "check-output": check_output}[mode]()
