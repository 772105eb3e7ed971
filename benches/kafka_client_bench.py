"""librdkafka (confluent-kafka) against shardlog's Kafka listener, for benches/kafka.rs:
python kafka_client_bench.py HOST:PORT TOPIC TOTAL_BYTES RECORD_SIZE

Produces TOTAL_BYTES in RECORD_SIZE records (acks=all, 1 MiB batches, linger 5 ms), then
consumes them all back. Prints one JSON line: produce MB/s, per-record produce latency
(librdkafka's enqueue-to-acknowledgement time) p50/p99 in ms, consume MB/s.
"""
import json
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition

bootstrap, topic, total, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
count = total // size
value = b"k" * size
latencies = []

p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
              "batch.size": 1 << 20, "message.max.bytes": 1 << 21,
              "queue.buffering.max.kbytes": 1 << 20, "enable.idempotence": False})


def delivered(err, msg):
    if err:
        raise RuntimeError(err)
    latencies.append(msg.latency())


start = time.perf_counter()
for i in range(count):
    while True:
        try:
            p.produce(topic, value, partition=0, on_delivery=delivered)
            break
        except BufferError:
            p.poll(0.005)
    if i % 512 == 0:
        p.poll(0)
assert p.flush(120) == 0
produce_s = time.perf_counter() - start
latencies.sort()

c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
              "fetch.max.bytes": 50 << 20, "max.partition.fetch.bytes": 8 << 20})
c.assign([TopicPartition(topic, 0, 0)])
start = time.perf_counter()
got = read = 0
deadline = time.time() + 120
while got < count and time.time() < deadline:
    for m in c.consume(num_messages=10_000, timeout=1.0):
        if m.error() is None:
            got += 1
            read += len(m.value())
consume_s = time.perf_counter() - start
c.close()
assert got == count, f"consumed {got} of {count}"
print(json.dumps({
    "produce_mb_s": count * size / produce_s / 1e6,
    "produce_p50_ms": latencies[len(latencies) // 2] * 1000,
    "produce_p99_ms": latencies[int(len(latencies) * 0.99)] * 1000,
    "consume_mb_s": read / consume_s / 1e6,
}))
