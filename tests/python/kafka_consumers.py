"""Kafka consumers against `pondra serve --kafka-port` (ADR 0077): confluent-kafka and
kafka-python read tables by offset, as records of JSON values; a consumer group reads
everything, commits, and a new consumer of the group resumes where it left off; two
consumers of one group split the partitions; offsets by time; committed offsets survive a
restart of the server (phase `after`).

Usage: kafka_consumers.py KAFKA_ADDRESS PG_PORT before|after. Exits non-zero on the first
mismatch.
"""

import json
import sys
import time

import psycopg
from confluent_kafka import Consumer, Producer, TopicPartition
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
    while any(len(m.assignment()) != 1 for m in members):
        assert time.time() - started < PATIENCE, [m.assignment() for m in members]
        for member in members:
            assert not member.consume(10, 0.1), "the topics are empty yet"
    for topic in topics:
        produce(topic, [{"n": i} for i in range(1000)])
    seen = [[], []]
    while sum(len(s) for s in seen) < 2000:
        assert time.time() - started < PATIENCE, [len(s) for s in seen]
        for member, records in zip(members, seen):
            for message in member.consume(500, 0.2):
                assert message.error() is None, message.error()
                records.append((message.topic(), message.offset()))
    assignments = sorted(sorted(tp.topic for tp in m.assignment()) for m in members)
    assert assignments == [["left_events"], ["right_events"]], assignments
    assert all(len({topic for topic, _ in records}) == 1 for records in seen), "a topic each"
    everything = sorted(seen[0] + seen[1])
    expected = sorted((t, o) for t in topics for o in range(1000))
    assert everything == expected, "each record read once by one member"
    for member in members:
        member.close()
    print("two members split the group's partitions, each record read once")


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


def before_restart():
    json_values_and_offsets()
    keyed_records()
    two_members_split()
    kafka_python_and_times()
    pg.execute("CREATE TABLE ticks (n INT)")
    produce("ticks", [{"n": i} for i in range(100)])
    consume("g-restart", ["ticks"], 60)


def after_restart():
    produce("ticks", [{"n": i} for i in range(100, 120)])
    consumer = Consumer({"bootstrap.servers": kafka, "group.id": "g-restart", "enable.auto.commit": False})
    committed = consumer.committed([TopicPartition("ticks", 0)], timeout=30)[0].offset
    assert committed >= 60, committed
    consumer.close()
    rest = consume("g-restart", ["ticks"], 120 - committed)
    assert [r.offset() for r in rest] == list(range(committed, 120))
    print(f"after a restart the group resumes at its committed offset {committed}")


{"before": before_restart, "after": after_restart}[phase]()
print(f"kafka consumers ({phase}): ok")
