"""Transactions through psycopg's default (non-autocommit) connections against `pondra serve`.

Usage: transactions_client.py PORT. Exits non-zero on the first mismatch.
"""

import sys
import threading

import psycopg
from psycopg import errors

port = int(sys.argv[1])
dsn = f"host=127.0.0.1 port={port} user=analyst dbname=lake"

a = psycopg.connect(dsn)
b = psycopg.connect(dsn, autocommit=True)
a.execute("CREATE TABLE tx (id BIGINT, note VARCHAR)")
a.execute("CREATE TABLE keyed (id BIGINT PRIMARY KEY, v BIGINT)")
a.commit()

# An uncommitted insert is seen by its own transaction only.
a.execute("INSERT INTO tx VALUES (1, 'pending')")
assert a.execute("SELECT count(*) FROM tx").fetchone() == (1,)
assert b.execute("SELECT count(*) FROM tx").fetchone() == (0,)

# ROLLBACK removes it.
a.rollback()
assert a.execute("SELECT count(*) FROM tx").fetchone() == (0,)
a.commit()

# COMMIT makes it visible, whole.
a.execute("INSERT INTO tx VALUES (1, 'one'), (2, 'two')")
a.execute("UPDATE tx SET note = 'uno' WHERE id = 1")
assert b.execute("SELECT count(*) FROM tx").fetchone() == (0,)
a.commit()
assert b.execute("SELECT id, note FROM tx ORDER BY id").fetchall() == [(1, "uno"), (2, "two")]

# A failed statement aborts the transaction: nothing runs until ROLLBACK, and its earlier
# inserts go.
a.execute("INSERT INTO tx VALUES (3, 'three')")
try:
    a.execute("SELECT 1 / 0")
    raise AssertionError("division by zero succeeded")
except errors.DivisionByZero:
    pass
assert a.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
try:
    a.execute("SELECT 1")
    raise AssertionError("a statement ran in an aborted transaction")
except errors.InFailedSqlTransaction:
    pass
a.rollback()
assert a.execute("SELECT count(*) FROM tx").fetchone() == (2,)
a.commit()

# A savepoint rolls back only its part.
with a.transaction():
    a.execute("INSERT INTO tx VALUES (4, 'kept')")
    try:
        with a.transaction():
            a.execute("INSERT INTO tx VALUES (5, 'dropped')")
            a.execute("SELECT 1 / 0")
    except errors.DivisionByZero:
        pass
    assert a.execute("SELECT id FROM tx ORDER BY id").fetchall() == [(1,), (2,), (4,)]
assert b.execute("SELECT id FROM tx ORDER BY id").fetchall() == [(1,), (2,), (4,)]

# Explicit SAVEPOINT, RELEASE and ROLLBACK TO.
a.execute("SAVEPOINT s1")
a.execute("INSERT INTO tx VALUES (6, 'six')")
a.execute("SAVEPOINT s2")
a.execute("INSERT INTO tx VALUES (7, 'seven')")
a.execute("ROLLBACK TO SAVEPOINT s2")
a.execute("RELEASE SAVEPOINT s1")
a.commit()
assert b.execute("SELECT max(id), count(*) FROM tx").fetchone() == (6, 4)

# Two sessions upsert the same key: the first to commit wins, the other gets 40001.
c = psycopg.connect(dsn)
a.execute("INSERT INTO keyed VALUES (1, 10)")
c.execute("INSERT INTO keyed VALUES (1, 20)")
a.commit()
try:
    c.commit()
    raise AssertionError("both upserts committed")
except errors.SerializationFailure:
    pass
assert b.execute("SELECT id, v FROM keyed").fetchall() == [(1, 10)]

# UPDATE and DELETE mark rows deleted (ADR 0048): two sessions changing the same row conflict,
# the first to commit wins; two changing different rows of one table both commit.
a.execute("CREATE TABLE shared (id BIGINT, v BIGINT)")
a.execute("INSERT INTO shared SELECT i, 0 FROM generate_series(1, 10) g(i)")
a.commit()
a.execute("UPDATE shared SET v = 1 WHERE id = 3")
c.execute("DELETE FROM shared WHERE id = 3")
a.commit()
try:
    c.commit()
    raise AssertionError("two changes of one row committed")
except errors.SerializationFailure:
    pass
a.execute("UPDATE shared SET v = 2 WHERE id = 4")
c.execute("DELETE FROM shared WHERE id = 5")
a.commit()
c.commit()
assert b.execute("SELECT id, v FROM shared WHERE id BETWEEN 3 AND 5 ORDER BY id").fetchall() == [
    (3, 1),
    (4, 2),
], "changes of different rows both apply"

# A transaction changes rows it inserted itself, while others commit in between.
a.execute("INSERT INTO shared VALUES (11, 0), (12, 0)")
b.execute("INSERT INTO shared VALUES (13, 0)")
a.execute("UPDATE shared SET v = 11 WHERE id = 11")
b.execute("INSERT INTO shared VALUES (14, 0)")
a.execute("DELETE FROM shared WHERE id = 12")
a.execute("INSERT INTO shared VALUES (15, 0)")
a.execute("DELETE FROM shared WHERE id = 15")
a.commit()
assert b.execute("SELECT id, v FROM shared WHERE id > 10 ORDER BY id").fetchall() == [
    (11, 11),
    (13, 0),
    (14, 0),
]

# DDL commits with its transaction, or not at all.
a.execute("CREATE TABLE made_inside (x BIGINT)")
a.execute("INSERT INTO made_inside VALUES (1)")
assert b.execute(
    "SELECT count(*) FROM information_schema.tables WHERE table_name = 'made_inside'"
).fetchone() == (0,)
a.rollback()
a.execute("CREATE TABLE made_inside (x BIGINT)")
a.execute("INSERT INTO made_inside VALUES (1), (2)")
a.commit()
assert b.execute("SELECT sum(x) FROM made_inside").fetchone() == (3,)

# COPY FROM STDIN inside a transaction is part of it; COPY TO STDOUT reads.
with a.cursor() as cur:
    with cur.copy("COPY tx (id, note) FROM STDIN") as copy:
        copy.write_row((8, "copied"))
    assert b.execute("SELECT count(*) FROM tx WHERE id = 8").fetchone() == (0,)
a.commit()
with b.cursor() as cur:
    with cur.copy("COPY (SELECT id, note FROM tx WHERE id >= 6 ORDER BY id) TO STDOUT (FORMAT csv)") as copy:
        lines = [bytes(line) for line in copy]
assert lines == [b"6,six\n", b"8,copied\n"], lines

print("transactions ok")
