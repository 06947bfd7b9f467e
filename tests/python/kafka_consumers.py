"""Kafka consumers against `pondra serve --kafka-port` (ADR 0077): confluent-kafka and
kafka-python read tables by offset, as records of JSON values; a consumer group reads
everything, commits, and a new consumer of the group resumes where it left off; two
consumers of one group split the partitions, of two topics and of one topic's four
(ADR 0079); offsets by time; committed offsets survive a
restart of the server (phase `after`); `<table>.changes` topics carry the change feed as
Debezium envelopes.

Usage: kafka_consumers.py KAFKA_ADDRESS PG_PORT before|after. Exits non-zero on the first
mismatch.
"""

import json
import sys
import time

import psycopg
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer
from kafka import TopicPartition as PyTopicPartition

kafka, pg_port, phase = sys.argv[1], int(sys.argv[2]), sys.argv[3]
pg = psycopg.connect(host="127.0.0.1", port=pg_port, user="t", dbname="lake", autocommit=True)
PATIENCE = 60  # seconds a read may take before the test fails (not a speed bar)


def produce(topic, values, key=None):
    producer = Producer({"bootstrap.servers": kafka, "enable.idempotence": True, "linger.ms": 5})
    for value in values:
        producer.produce(topic, key=key, value=json.dumps(value).encode())
    assert producer.flush(30) == 0


def consume(group, topics, count, **config):
    """Reads `count` records as a member of `group`, commits the last, and leaves."""
    consumer = Consumer({"bootstrap.servers": kafka, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", **config})
    consumer.subscribe(topics)
    records = []
    started = time.time()
    while len(records) < count:
        assert time.time() - started < PATIENCE, f"{group}: {len(records)} of {count} records"
        for message in consumer.consume(min(500, count - len(records)), 0.5):
            assert message.error() is None, message.error()
            records.append(message)
    assert len(records) == count, f"{group}: {len(records)} records, {count} asked"
    consumer.commit(asynchronous=False)
    consumer.close()
    return records


def settle(members, partitions_each, started):
    """Waits until each member of a group holds `partitions_each` partitions, before any rows
    come: a partition read before it moves would be read again by its next owner."""
    while any(len(m.assignment()) != partitions_each for m in members):
        assert time.time() - started < PATIENCE, [m.assignment() for m in members]
        for member in members:
            assert not member.consume(10, 0.1), "the topics are empty yet"


def read_by_members(members, count, started, field):
    """What each member reads (as `field` of each message) until they have read `count`."""
    seen = [[] for _ in members]
    while sum(len(s) for s in seen) < count:
        assert time.time() - started < PATIENCE, [len(s) for s in seen]
        for member, records in zip(members, seen):
            for message in member.consume(500, 0.2):
                assert message.error() is None, message.error()
                records.append(field(message))
    return seen


def json_values_and_offsets():
    pg.execute("CREATE TABLE orders (id INT, item VARCHAR, qty INT)")
    produce("orders", [{"id": i, "item": f"item-{i % 10}", "qty": i % 7} for i in range(3000)])
    records = consume("g-orders", ["orders"], 3000)
    assert [r.offset() for r in records] == list(range(3000)), "offsets are dense, in order"
    values = [json.loads(r.value()) for r in records]
    assert values[42] == {"id": 42, "item": "item-2", "qty": 0}, values[42]
    assert all(r.key() is None for r in records), "a table without a key has null keys"
    # A new member of the group resumes after the committed offset.
    produce("orders", [{"id": i, "item": "late", "qty": 1} for i in range(3000, 3500)])
    resumed = consume("g-orders", ["orders"], 500)
    assert [r.offset() for r in resumed] == list(range(3000, 3500))
    print("JSON values by offset; a group resumes after its committed offset")


def keyed_records():
    pg.execute("CREATE TABLE profiles (id INT PRIMARY KEY, name VARCHAR)")
    pg.execute("INSERT INTO profiles VALUES (1, 'a'), (2, 'b')")
    # An upsert writes its row anew and deletes the one it replaced: as in a compacted topic,
    # the replaced record is gone and its offset left a gap.
    pg.execute("INSERT INTO profiles VALUES (1, 'c')")
    records = consume("g-profiles", ["profiles"], 2)
    got = [(r.offset(), json.loads(r.key()), json.loads(r.value())) for r in records]
    assert got == [(1, {"id": 2}, {"id": 2, "name": "b"}), (2, {"id": 1}, {"id": 1, "name": "c"})], got
    print("a keyed table's records carry its key; a replaced row leaves a gap")


def two_members_split():
    topics = ["left_events", "right_events"]
    for topic in topics:
        pg.execute(f"CREATE TABLE {topic} (n INT)")
    config = {"bootstrap.servers": kafka, "group.id": "g-split", "enable.auto.commit": False,
              "auto.offset.reset": "earliest", "partition.assignment.strategy": "roundrobin"}
    members = [Consumer(config), Consumer(config)]
    for member in members:
        member.subscribe(topics)
    # Rows come once the group is formed: a member reads from where the group stands.
    started = time.time()
    settle(members, 1, started)
    for topic in topics:
        produce(topic, [{"n": i} for i in range(1000)])
    seen = read_by_members(members, 2000, started, lambda m: (m.topic(), m.offset()))
    assignments = sorted(sorted(tp.topic for tp in m.assignment()) for m in members)
    assert assignments == [["left_events"], ["right_events"]], assignments
    assert all(len({topic for topic, _ in records}) == 1 for records in seen), "a topic each"
    everything = sorted(seen[0] + seen[1])
    expected = sorted((t, o) for t in topics for o in range(1000))
    assert everything == expected, "each record read once by one member"
    for member in members:
        member.close()
    print("two members split the group's partitions, each record read once")


def partitions_of_one_topic():
    """A table of four partitions: librdkafka's partitioner spreads keys over them, each
    partition's offsets are dense, and two members of a group take two partitions each."""
    pg.execute("CREATE TABLE clicks (user_id INT, n INT) WITH (partitions = 4)")
    config = {"bootstrap.servers": kafka, "group.id": "g-clicks", "enable.auto.commit": False,
              "auto.offset.reset": "earliest", "partition.assignment.strategy": "roundrobin"}
    members = [Consumer(config), Consumer(config)]
    for member in members:
        member.subscribe(["clicks"])
    started = time.time()
    settle(members, 2, started)
    producer = Producer({"bootstrap.servers": kafka, "enable.idempotence": True, "linger.ms": 5})
    for n in range(2000):
        user = n % 50
        producer.produce("clicks", key=str(user).encode(), value=json.dumps({"user_id": user, "n": n}).encode())
    assert producer.flush(30) == 0
    seen = read_by_members(members, 2000, started,
                           lambda m: (m.partition(), m.offset(), json.loads(m.value())))
    held = [sorted(tp.partition for tp in m.assignment()) for m in members]
    assert sorted(held[0] + held[1]) == [0, 1, 2, 3], held
    everything = seen[0] + seen[1]
    assert len(everything) == 2000, len(everything)
    by_partition = {}
    for partition, offset, value in sorted(everything, key=lambda r: (r[0], r[1])):
        by_partition.setdefault(partition, []).append((offset, value))
    assert len(by_partition) == 4, sorted(by_partition)
    for partition, records in by_partition.items():
        assert [o for o, _ in records] == list(range(len(records))), f"partition {partition} is dense"
        users = {v["user_id"] for _, v in records}
        for user in users:
            ns = [v["n"] for _, v in records if v["user_id"] == user]
            assert ns == sorted(ns), f"user {user}'s records in the order produced"
    owners = {}
    for partition, records in by_partition.items():
        for _, value in records:
            owners.setdefault(value["user_id"], set()).add(partition)
    assert all(len(p) == 1 for p in owners.values()), "a key's records are in one partition"
    counts = dict(pg.execute("SELECT _offset >> 48, count(*) FROM clicks GROUP BY 1").fetchall())
    assert counts == {p: len(r) for p, r in by_partition.items()}, counts
    for member in members:
        member.commit(asynchronous=False)
    for member in members:
        member.close()
    # kafka-python reads one partition alone, with its own end offset.
    consumer = KafkaConsumer(bootstrap_servers=kafka, consumer_timeout_ms=5000, auto_offset_reset="earliest")
    partition = PyTopicPartition("clicks", 3)
    consumer.assign([partition])
    assert consumer.end_offsets([partition])[partition] == len(by_partition[3])
    assert [m.offset for m in consumer] == list(range(len(by_partition[3])))
    consumer.close()
    # CreateTopics makes a raw table of the partitions asked.
    admin = AdminClient({"bootstrap.servers": kafka})
    admin.create_topics([NewTopic("raw_three", num_partitions=3)])["raw_three"].result(30)
    assert len(admin.list_topics("raw_three", timeout=30).topics["raw_three"].partitions) == 3
    print("four partitions: keys spread, offsets dense per partition, two members split them")


def kafka_python_and_times():
    consumer = KafkaConsumer(bootstrap_servers=kafka, group_id="g-python", auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=5000)
    consumer.subscribe(["orders"])
    offsets = [m.offset for m in consumer]
    assert offsets == list(range(3500)), (len(offsets), offsets[:3], offsets[-3:])
    consumer.commit()
    partition = PyTopicPartition("orders", 0)
    assert consumer.committed(partition) == 3500
    assert consumer.end_offsets([partition])[partition] == 3500
    assert consumer.beginning_offsets([partition])[partition] == 0
    found = consumer.offsets_for_times({partition: 0})[partition]
    assert found.offset == 0, found
    later = consumer.offsets_for_times({partition: int(time.time() * 1000) + 60_000})[partition]
    assert later is None, later
    consumer.close()
    print("kafka-python: a group's commit, end, beginning and offsets by time")


def read_topic(group, topic, count):
    """The (offset, key, value) of `count` records of `topic`, read by a member of `group`."""
    return [(r.offset(), r.key() and json.loads(r.key()), json.loads(r.value()))
            for r in consume(group, [topic], count)]


def rows(sql):
    return sorted(pg.execute(sql).fetchall())


def change_topics():
    """`<table>.changes`: the change feed as Debezium envelopes, which a Debezium table copies."""
    pg.execute("CREATE TABLE accounts (id INT PRIMARY KEY, owner VARCHAR, balance INT)")
    pg.execute("INSERT INTO accounts VALUES (1, 'ann', 10), (2, 'bob', 20), (3, 'cy', 30)")
    pg.execute("UPDATE accounts SET balance = balance + 5 WHERE id >= 2")
    pg.execute("DELETE FROM accounts WHERE id = 1")
    produce("accounts", [{"id": 4, "owner": "dee", "balance": 40}, {"id": 2, "owner": "bob", "balance": 0}])
    events = read_topic("g-changes", "accounts.changes", 8)
    offsets = [offset for offset, _, _ in events]
    assert offsets == sorted(set(offsets)), f"offsets rise: {offsets}"
    got = [(v["op"], v["before"] and v["before"]["id"], v["after"] and v["after"]["id"]) for _, _, v in events]
    assert got == [("c", None, 1), ("c", None, 2), ("c", None, 3), ("u", 2, 2), ("u", 3, 3),
                   ("d", 1, None), ("u", 2, 2), ("c", None, 4)], got
    # One commit's events stand in its change record's order: updates, then insertions.
    update = events[3][2]
    assert (update["before"]["balance"], update["after"]["balance"]) == (20, 25), update
    assert all(key == {"id": (v["after"] or v["before"])["id"]} for _, key, v in events), "keys"
    versions = [v["source"]["commit_version"] for _, _, v in events]
    assert versions == sorted(versions) and len(set(versions)) == 4, versions
    assert all(v["source"]["table"] == "accounts" and v["ts_ms"] > 0 for _, _, v in events)
    # The envelopes, produced to a Debezium table, copy the source.
    pg.execute("CREATE TABLE accounts_copy (id INT PRIMARY KEY, owner VARCHAR, balance INT) "
               "WITH (kafka_format = 'debezium')")
    producer = Producer({"bootstrap.servers": kafka, "enable.idempotence": True})
    for _, key, value in events:
        producer.produce("accounts_copy", key=json.dumps(key).encode(), value=json.dumps(value).encode())
    assert producer.flush(30) == 0
    assert rows("SELECT * FROM accounts_copy") == rows("SELECT * FROM accounts"), "the copy"
    # A table without a key: an UPDATE's old and new rows pair in order; no key.
    pg.execute("CREATE TABLE notes (n INT, body VARCHAR)")
    pg.execute("INSERT INTO notes VALUES (1, 'x'), (2, 'y'), (3, 'z')")
    pg.execute("UPDATE notes SET body = upper(body) || n WHERE n <> 2")
    notes = read_topic("g-notes", "notes.changes", 5)
    updates = sorted((v["before"]["body"], v["after"]["body"]) for _, _, v in notes if v["op"] == "u")
    assert updates == [("x", "X1"), ("z", "Z3")], updates
    assert all(key is None for _, key, _ in notes)
    # A consumer reaches the end of a change topic (its high watermark) after the last event.
    ending = Consumer({"bootstrap.servers": kafka, "group.id": "g-eof", "enable.partition.eof": True,
                       "auto.offset.reset": "earliest"})
    ending.subscribe(["notes.changes"])
    seen, started = 0, time.time()
    while True:
        assert time.time() - started < PATIENCE, f"no end after {seen} events"
        message = ending.poll(0.5)
        if message is None:
            continue
        if message.error() is not None:
            assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
            break
        seen += 1
    assert seen == 5, seen
    ending.close()
    # The group resumes after its commit; kafka-python reads the same offsets.
    pg.execute("UPDATE accounts SET owner = 'cyd' WHERE id = 3")
    [(offset, _, value)] = read_topic("g-changes", "accounts.changes", 1)
    assert offset > offsets[-1] and value["op"] == "u" and value["after"]["owner"] == "cyd", value
    python_consumer = KafkaConsumer("accounts.changes", bootstrap_servers=kafka, auto_offset_reset="earliest",
                                    consumer_timeout_ms=5000)
    assert [m.offset for m in python_consumer] == offsets + [offset]
    python_consumer.close()
    # Read-only; listed beside the tables.
    failed = []
    producer = Producer({"bootstrap.servers": kafka, "message.timeout.ms": 10000})
    producer.produce("accounts.changes", value=b"{}", on_delivery=lambda err, _: failed.append(err))
    producer.flush(30)
    assert failed and failed[0] is not None and failed[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, failed
    listed = Consumer({"bootstrap.servers": kafka, "group.id": "g-list"}).list_topics(timeout=10).topics
    assert {"accounts", "accounts.changes"} <= set(listed), sorted(listed)
    assert rows("SELECT count(*) FROM accounts") == [(3,)], "nothing written through a change topic"
    print("change topics: Debezium envelopes by offset, a Debezium table copies them, read-only")


def before_restart():
    change_topics()
    json_values_and_offsets()
    keyed_records()
    two_members_split()
    partitions_of_one_topic()
    kafka_python_and_times()
    pg.execute("CREATE TABLE ticks (n INT)")
    produce("ticks", [{"n": i} for i in range(100)])
    consume("g-restart", ["ticks"], 60)


def after_restart():
    pg.execute("UPDATE accounts SET balance = 1 WHERE id = 4")
    [(_, key, value)] = read_topic("g-changes", "accounts.changes", 1)
    assert key == {"id": 4} and value["before"]["balance"] == 40, value
    print("after a restart a group resumes on a change topic")
    produce("ticks", [{"n": i} for i in range(100, 120)])
    consumer = Consumer({"bootstrap.servers": kafka, "group.id": "g-restart", "enable.auto.commit": False})
    committed = consumer.committed([TopicPartition("ticks", 0)], timeout=30)[0].offset
    assert committed >= 60, committed
    consumer.close()
    rest = consume("g-restart", ["ticks"], 120 - committed)
    assert [r.offset() for r in rest] == list(range(committed, 120))
    print(f"after a restart the group resumes at its committed offset {committed}")
    # Each partition's offsets go on from where they were.
    before = dict(pg.execute("SELECT _offset >> 48, count(*) FROM clicks GROUP BY 1").fetchall())
    producer = Producer({"bootstrap.servers": kafka, "enable.idempotence": True})
    for partition in range(4):
        producer.produce("clicks", value=json.dumps({"user_id": -1, "n": partition}).encode(), partition=partition)
    assert producer.flush(30) == 0
    resumed = consume("g-clicks", ["clicks"], 4)
    got = sorted((r.partition(), r.offset()) for r in resumed)
    assert got == [(p, before[p]) for p in range(4)], (got, before)
    print("after a restart each partition's offsets go on, and its group resumes")


{"before": before_restart, "after": after_restart}[phase]()
print(f"kafka consumers ({phase}): ok")
