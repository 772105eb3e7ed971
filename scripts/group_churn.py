"""Issue 20's "one of 8 members gets everything" hunt, against a running server:

  python scripts/group_churn.py KAFKA_ADDR [ROUNDS] [subscriptions|members] [ASSIGNOR]

8 confluent-kafka consumers in one group; each round gives every member a random
subscription among [a], [b], [a, b] (the changes land within ~1 s of each other, so
rebalances overlap); in `members` mode a member may instead restart (close, and a new
consumer takes its place) or unsubscribe and subscribe again. Each round then waits until every member's latest assignment callback came after its
last change and the group is quiet, then checks the range assignor's promise: with 8
partitions per topic and at most 8 subscribers, every member subscribed to a topic owns at
least one of its partitions and no other member owns any. Prints each round and a summary;
exits 1 on a violation.
"""
import random
import sys
import time

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

kafka = sys.argv[1]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 20
mode = sys.argv[3] if len(sys.argv) > 3 else "subscriptions"
# librdkafka's partition.assignment.strategy: range,roundrobin (its default), roundrobin,
# cooperative-sticky.
assignor = sys.argv[4] if len(sys.argv) > 4 else "range,roundrobin"
TOPICS = {"a": 8, "b": 8}
MEMBERS = 8
SETTLE_S = 4
ROUND_DEADLINE_S = 90

admin = AdminClient({"bootstrap.servers": kafka})
for name, f in admin.create_topics([NewTopic(t, n, 1) for t, n in TOPICS.items()]).items():
    try:
        f.result(timeout=30)
    except Exception as e:  # already there from an earlier run
        print(f"create {name}: {e}")

owned = [set() for _ in range(MEMBERS)]
last_assign = [0.0] * MEMBERS


def incremental(consumer):
    return assignor.startswith("cooperative")


def on_assign(i):
    def cb(consumer, parts):
        got = {(p.topic, p.partition) for p in parts}
        owned[i] = owned[i] | got if incremental(consumer) else got
        last_assign[i] = time.monotonic()
    return cb


def on_revoke(i):
    def cb(consumer, parts):
        lost = {(p.topic, p.partition) for p in parts}
        owned[i] = owned[i] - lost if incremental(consumer) else set()
    return cb


def consumer(i):
    return Consumer({"bootstrap.servers": kafka, "group.id": f"churn-{mode}-{assignor}",
                     "client.id": f"m{i}", "session.timeout.ms": 10000,
                     "auto.offset.reset": "latest", "enable.auto.commit": False,
                     "partition.assignment.strategy": assignor})


consumers = [consumer(i) for i in range(MEMBERS)]
subs = [None] * MEMBERS
changed = [0.0] * MEMBERS
violations = 0
for r in range(rounds):
    order = list(range(MEMBERS))
    random.shuffle(order)
    for i in order:
        action = random.choice(["resubscribe", "restart", "unsubscribe"])
        if mode != "members" or subs[i] is None:
            action = "resubscribe"
        if action == "restart":
            consumers[i].close()
            owned[i] = set()
            consumers[i] = consumer(i)
        elif action == "unsubscribe":
            consumers[i].unsubscribe()
            owned[i] = set()
        subs[i] = random.choice([["a"], ["b"], ["a", "b"]])
        consumers[i].subscribe(subs[i], on_assign=on_assign(i), on_revoke=on_revoke(i))
        changed[i] = time.monotonic()
        end = time.monotonic() + random.uniform(0, 0.15)
        while time.monotonic() < end:
            for c in consumers:
                c.poll(0.005)
    started = time.monotonic()
    quiet_since = None
    while time.monotonic() - started < ROUND_DEADLINE_S:
        for c in consumers:
            c.poll(0.01)
        settled = all(last_assign[i] > changed[i] for i in range(MEMBERS))
        newest = max(last_assign)
        if settled and time.monotonic() - newest > SETTLE_S:
            break
    took = time.monotonic() - started
    problems = []
    for t, n in TOPICS.items():
        subscribed = [i for i in range(MEMBERS) if t in subs[i]]
        holders = {i: sum(1 for (tt, _) in owned[i] if tt == t) for i in range(MEMBERS)}
        total = sum(holders.values())
        # Range and roundrobin give every subscriber of a topic one of its 8 partitions;
        # a sticky assignor balances totals across topics instead, so there only a member
        # holding the whole topic while another subscriber holds nothing at all counts.
        if assignor.startswith("cooperative"):
            takes_all = [i for i in subscribed if holders[i] == n]
            starved = [i for i in subscribed if takes_all and not owned[i]]
        else:
            starved = [i for i in subscribed if holders[i] == 0]
        strays = [i for i in range(MEMBERS) if i not in subscribed and holders[i] > 0]
        if total != n or starved or strays:
            problems.append(f"topic {t}: {total}/{n} assigned, subscribers {subscribed}, "
                            f"per member {holders}, starved {starved}, strays {strays}")
    status = "ok" if not problems else "VIOLATION"
    print(f"round {r}: settled in {took:.1f} s, {status}", flush=True)
    for p in problems:
        print("   ", p, flush=True)
    violations += bool(problems)
for c in consumers:
    c.close()
print(f"{rounds} rounds, {violations} with a violation", flush=True)
sys.exit(1 if violations else 0)
