"""Kafka producers against `pondra serve --kafka-port` (ADR 0077): confluent-kafka (librdkafka,
idempotent) and kafka-python write JSON into a typed table with a view over it, into a raw
topic the door creates, upserts and tombstones into a keyed table, and Debezium change events
that must leave a keyed table equal to the source DuckDB kept; a record that does not fit its
table refuses its batch whole. Checked through the Postgres door.

Usage: kafka_producers.py KAFKA_ADDRESS PG_PORT. Exits non-zero on the first mismatch.
"""

import json
import random
import sys

import duckdb
import psycopg
from confluent_kafka import KafkaError, Producer
from kafka import KafkaProducer

kafka = sys.argv[1]
pg = psycopg.connect(host="127.0.0.1", port=int(sys.argv[2]), user="t", dbname="lake", autocommit=True)
random.seed(58)


def rows(sql):
    return pg.execute(sql).fetchall()


def produce_all(records, topic, **config):
    """Produces (key, value) pairs with librdkafka; returns the delivery errors."""
    producer = Producer({"bootstrap.servers": kafka, "enable.idempotence": True, "acks": "all",
                         "linger.ms": 5, **config})
    errors = []

    def delivered(error, message):
        if error is not None:
            errors.append(error)

    for key, value in records:
        producer.produce(topic, key=key, value=value, on_delivery=delivered)
        producer.poll(0)
    left = producer.flush(30)
    assert left == 0, f"{left} records not delivered in 30 s"
    return errors


def typed_table_and_view():
    pg.execute("CREATE TABLE readings (sensor INT, temp DOUBLE, note VARCHAR, at TIMESTAMP)")
    pg.execute("CREATE MATERIALIZED VIEW per_sensor AS "
               "SELECT sensor, count(*) AS n, sum(temp) AS total FROM readings GROUP BY sensor")
    expected = {}
    records = []
    for i in range(5000):
        sensor = i % 7
        temp = round(random.uniform(-10, 40), 2)
        # A number in a text column is taken as its text; a missing column is NULL.
        value = {"sensor": sensor, "temp": temp, "note": i, "at": "2026-12-06T10:00:00"}
        if i % 5 == 0:
            del value["note"]
        records.append((str(sensor).encode(), json.dumps(value).encode()))
        n, total = expected.get(sensor, (0, 0.0))
        expected[sensor] = (n + 1, total + temp)
    errors = produce_all(records, "readings")
    assert not errors, errors[:3]
    got = {s: (n, t) for s, n, t in rows("SELECT sensor, n, total FROM per_sensor")}
    assert got.keys() == expected.keys(), got
    for sensor, (n, total) in expected.items():
        assert got[sensor][0] == n and abs(got[sensor][1] - total) < 1e-6, (sensor, got[sensor], n, total)
    assert rows("SELECT count(*) FROM readings WHERE note IS NULL") == [(1000,)]
    assert rows("SELECT note FROM readings WHERE note = '7'") == [("7",)]
    print("typed table and its view: 5000 records")


def bad_records_refuse_their_batch():
    before = rows("SELECT count(*) FROM readings")[0][0]
    for bad in [b'{"sensor": 1, "no_such_column": 2}', b'not json', b'[1, 2]', b'{"sensor": "x"}']:
        errors = produce_all([(b"1", b'{"sensor": 1, "temp": 1.5}'), (b"1", bad)], "readings",
                             **{"linger.ms": 200})
        assert errors and all(e.code() == KafkaError.INVALID_RECORD for e in errors), (bad, errors)
    assert rows("SELECT count(*) FROM readings")[0][0] == before, "a refused batch wrote nothing"
    print("records that do not fit refuse their batch")


def raw_topics():
    records = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(3000)]
    errors = produce_all(records, "clicks")
    assert not errors, errors[:3]
    assert rows("SELECT count(*), count(DISTINCT key), min(timestamp) IS NOT NULL FROM clicks") == [(3000, 3000, True)]
    # kafka-python, idempotent as well, into the same raw topic and a new one.
    producer = KafkaProducer(bootstrap_servers=kafka, enable_idempotence=True, acks="all")
    futures = [producer.send("clicks", key=b"py", value=f"p{i}".encode()) for i in range(500)]
    futures += [producer.send("views", value=b"null-keyed") for _ in range(10)]
    for future in futures:
        future.get(timeout=30)
    producer.close()
    assert rows("SELECT count(*) FROM clicks WHERE key = 'py'") == [(500,)]
    assert rows("SELECT count(*), count(key) FROM views") == [(10, 0)]
    print("raw topics created on first produce, from both clients")


def keyed_upserts_and_tombstones():
    pg.execute("CREATE TABLE users (id INT PRIMARY KEY, name VARCHAR, visits INT)")
    state = {}
    records = []
    for step in range(4000):
        user = random.randrange(300)
        if random.random() < 0.2:
            records.append((str(user).encode(), None))
            state.pop(user, None)
        else:
            value = {"name": f"u{user}-{step}", "visits": step}
            # Half carry the key in the value, half only in the record key.
            if step % 2:
                value["id"] = user
            records.append((str(user).encode(), json.dumps(value).encode()))
            state[user] = (f"u{user}-{step}", step)
    errors = produce_all(records, "users")
    assert not errors, errors[:3]
    got = {i: (n, v) for i, n, v in rows("SELECT id, name, visits FROM users")}
    assert got == state, (len(got), len(state))
    print(f"keyed table: {len(records)} upserts and tombstones, {len(state)} rows left")


def debezium_source_and_copy():
    source = duckdb.connect()
    source.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, email VARCHAR, score DOUBLE)")
    pg.execute("CREATE TABLE customers (id INT PRIMARY KEY, email VARCHAR, score DOUBLE) "
               "WITH (kafka_format = 'debezium')")
    events = []
    present = {}
    for step in range(3000):
        customer = random.randrange(200)
        old = present.get(customer)
        if old is None or random.random() < 0.5:
            row = {"id": customer, "email": f"c{customer}.{step}@x", "score": step / 10}
            op = "c" if old is None else "u"
            source.execute("INSERT OR REPLACE INTO customers VALUES (?, ?, ?)",
                           [row["id"], row["email"], row["score"]])
            event = {"op": op, "before": old, "after": row, "ts_ms": step, "source": {"db": "shop"}}
            present[customer] = row
        else:
            source.execute("DELETE FROM customers WHERE id = ?", [customer])
            event = {"op": "d", "before": old, "after": None, "ts_ms": step}
            del present[customer]
        key = json.dumps({"id": customer}).encode()
        # Half with Kafka Connect's schema envelope, as the JSON converter writes by default.
        value = {"schema": {"type": "struct"}, "payload": event} if step % 2 else event
        events.append((key, json.dumps(value).encode()))
        if event["op"] == "d":
            events.append((key, None))  # Debezium's tombstone after a delete
    errors = produce_all(events, "customers")
    assert not errors, errors[:3]
    want = sorted(source.execute("SELECT id, email, score FROM customers").fetchall())
    got = sorted(rows("SELECT id, email, score FROM customers"))
    assert got == want, (len(got), len(want), [r for r in got if r not in want][:3])
    print(f"Debezium: {len(events)} events leave the table equal to DuckDB's source ({len(want)} rows)")


typed_table_and_view()
bad_records_refuse_their_batch()
raw_topics()
keyed_upserts_and_tombstones()
debezium_source_and_copy()
print("kafka producers: ok")
