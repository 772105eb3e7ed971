"""Shared data and checks for the real-Kafka-client tests (run by tests/kafka_clients_e2e.rs).

Every script produces the same records (keyed, explicit timestamps, headers), reads them back
and compares every field, seeks, looks up offsets by time against brute force over what it
produced, describes the topic's configs and deletes the topic. Any mismatch raises.
"""
import sys
import time

PARTITIONS = 3
RECORDS = 60
RETENTION_MS = "86400000"


def records(tag):
    """(partition, key, value, timestamp_ms, headers) in produce order."""
    base = int(time.time() * 1000) - 3_600_000
    out = []
    for i in range(RECORDS):
        # Timestamps step by 1 s, with every fifth record late by 10 s (out of order).
        ts = base + i * 1000 - (10_000 if i % 5 == 4 else 0)
        out.append((i % PARTITIONS, f"{tag}-k{i}".encode(), f"value {i} ".encode() * (1 + i % 7),
                    ts, [("n", str(i).encode()), ("tag", tag.encode())]))
    return out


def expected(produced):
    """{partition: [(offset, key, value, ts, headers)]} as the log must hold them."""
    by_partition = {p: [] for p in range(PARTITIONS)}
    for p, k, v, ts, h in produced:
        by_partition[p].append((len(by_partition[p]), k, v, ts, h))
    return by_partition


def check_consumed(produced, consumed):
    """consumed: list of (partition, offset, key, value, ts, ts_type, headers)."""
    want = expected(produced)
    got = {p: [] for p in range(PARTITIONS)}
    for p, o, k, v, ts, ts_type, h in consumed:
        assert ts_type == "create", f"timestamp type {ts_type} at {p}/{o}"
        got[p].append((o, k, v, ts, list(h)))
    for p in range(PARTITIONS):
        got[p].sort()
        assert got[p] == want[p], f"partition {p}: got {got[p][:3]}... want {want[p][:3]}..."
    return sum(len(v) for v in got.values())


def targets(produced):
    """Timestamps to look up: before everything, each produced one, between, after all."""
    ts = sorted({r[3] for r in produced})
    return [ts[0] - 5000] + ts[::7] + [t + 1 for t in ts[::11]] + [ts[-1] + 5000]


def offset_for_time(produced, partition, target):
    """offsetsForTimes by brute force: first offset with timestamp >= target, or None."""
    for o, _, _, ts, _ in expected(produced)[partition]:
        if ts >= target:
            return o, ts
    return None


def done(client, **figures):
    print(f"OK {client} " + " ".join(f"{k}={v}" for k, v in figures.items()))
    sys.stdout.flush()
