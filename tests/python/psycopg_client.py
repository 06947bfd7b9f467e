"""psycopg against `pondra serve`: parameters, executemany, COPY, binary results, errors.

Usage: psycopg_client.py PORT. Exits non-zero on the first mismatch.
"""

import datetime
import decimal
import sys

import psycopg

port = int(sys.argv[1])
connect = dict(host="127.0.0.1", port=port, user="analyst", dbname="lake")

with psycopg.connect(**connect, autocommit=True) as conn:
    cur = conn.cursor()
    cur.execute("CREATE TABLE people (id INT, name VARCHAR, score DECIMAL(10,2), born DATE)")
    cur.execute(
        "INSERT INTO people VALUES (%s, %s, %s, %s)",
        (1, "ann's", decimal.Decimal("9.50"), datetime.date(1990, 5, 17)),
    )
    cur.executemany(
        "INSERT INTO people VALUES (%s, %s, %s, %s)",
        [(2, "bob", None, None), (3, "cy", decimal.Decimal("7.25"), datetime.date(2000, 1, 1))],
    )
    cur.execute("SELECT id, name, score, born FROM people WHERE id >= %s ORDER BY id", (2,))
    rows = cur.fetchall()
    assert rows == [
        (2, "bob", None, None),
        (3, "cy", decimal.Decimal("7.25"), datetime.date(2000, 1, 1)),
    ], rows
    assert [d.name for d in cur.description] == ["id", "name", "score", "born"]

    with cur.copy("COPY people (id, name) FROM STDIN") as copy:
        copy.write_row((4, "dee"))
        copy.write_row((5, None))
    cur.execute("SELECT count(*), max(id), count(name) FROM people")
    assert cur.fetchone() == (5, 5, 4)

    # A parameter is a value, never SQL.
    cur.execute("SELECT id FROM people WHERE name = %s", ("ann's",))
    assert cur.fetchall() == [(1,)]
    cur.execute("SELECT count(*) FROM people WHERE name = %s", ("x' OR '1'='1",))
    assert cur.fetchone() == (0,)

    # RETURNING gives the rows a write wrote (ADR 0072), with parameters too.
    cur.execute("INSERT INTO people (id, name) VALUES (%s, %s) RETURNING id, upper(name)", (6, "eve"))
    assert cur.fetchall() == [(6, "EVE")]
    assert [d.name for d in cur.description] == ["id", "upper(name)"]
    cur.execute("DELETE FROM people WHERE id = %s RETURNING name", (6,))
    assert cur.fetchall() == [("eve",)]
    # A write inside WITH (ADR 0074), its rows read by the query.
    cur.execute("WITH added AS (INSERT INTO people (id, name) VALUES (%s, %s) RETURNING id) SELECT id * 10 FROM added", (7, "fay"))
    assert cur.fetchall() == [(70,)]
    cur.execute("DELETE FROM people WHERE id = 7")

    try:
        cur.execute("SELECT * FROM missing")
        raise AssertionError("a missing table must fail")
    except psycopg.errors.UndefinedTable as e:
        assert "table missing does not exist" in str(e), e

with psycopg.connect(**connect) as conn:
    cur = conn.cursor(binary=True)
    cur.execute(
        "SELECT id, name, score, born, CAST(1.5 AS DOUBLE), true, TIMESTAMP '2024-01-02 03:04:05.25' "
        "FROM people WHERE id = 1"
    )
    row = cur.fetchone()
    assert row == (
        1,
        "ann's",
        decimal.Decimal("9.50"),
        datetime.date(1990, 5, 17),
        1.5,
        True,
        datetime.datetime(2024, 1, 2, 3, 4, 5, 250000),
    ), row
    conn.commit()

# Arrays arrive typed (int4[], varchar[]), in text and in binary.
arrays = "SELECT ARRAY[1, NULL, 3], ARRAY['a b', 'c'], '{}'::INT[], array_agg(id ORDER BY id) FROM people WHERE id <= 2"
with psycopg.connect(**connect) as conn:
    for binary in (False, True):
        cur = conn.cursor(binary=binary)
        cur.execute(arrays)
        row = cur.fetchone()
        assert row == ([1, None, 3], ["a b", "c"], [], [1, 2]), (binary, row)

# Bytes arrive as bytea (ADR 0066), in text (Postgres's hex form) and in binary.
with psycopg.connect(**connect) as conn:
    for binary in (False, True):
        cur = conn.cursor(binary=binary)
        cur.execute("SELECT 'a\\xFF\\x00b'::BLOB, NULL::BYTEA")
        row = cur.fetchone()
        assert row == (b"a\xff\x00b", None), (binary, row)
        cur.execute("SELECT %s::BLOB, octet_length(%s)", (b"\x00'\\", b"xyz"))
        row = cur.fetchone()
        assert row == (b"\x00'\\", 3), (binary, row)

# Instants arrive as timestamptz (ADR 0067), in text and in binary, and go as parameters.
utc = datetime.timezone.utc
with psycopg.connect(**connect) as conn:
    for binary in (False, True):
        cur = conn.cursor(binary=binary)
        at = datetime.datetime(2024, 1, 2, 5, 4, 5, 250000, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
        cur.execute("SELECT TIMESTAMPTZ '2024-01-02 03:04:05.25+02', %s::TIMESTAMPTZ = TIMESTAMPTZ '2024-01-02 03:04:05.25Z'", (at,))
        row = cur.fetchone()
        assert row == (datetime.datetime(2024, 1, 2, 1, 4, 5, 250000, tzinfo=utc), True), (binary, row)
        # In another zone the text carries its offset, and the instant stays the same.
        cur.execute("SET TimeZone = 'Asia/Kolkata'")
        cur.execute("SELECT TIMESTAMPTZ '2024-01-02 01:04:05.25Z', TIMESTAMPTZ '2024-01-02 01:04:05.25Z'::VARCHAR")
        row = cur.fetchone()
        assert row[0] == datetime.datetime(2024, 1, 2, 1, 4, 5, 250000, tzinfo=utc), (binary, row)
        assert row[1] == "2024-01-02 06:34:05.25+05:30", (binary, row)
        cur.execute("SET TimeZone = 'UTC'")

print("ok")
