"""Python functions and procedures (ADR 0081) through `pondra serve`'s Postgres door, with
psycopg: scalar and vectorized functions, Python's errors in the statement's error, a worker
that crashes or loops forever costing only its statement, SQL procedures and CALL, and a
materialized view over a Python function.

Usage: python_functions.py PORT [--without-pyarrow]. With --without-pyarrow the server's
workers run a Python that cannot import pyarrow: a vectorized function gets lists.
Exits non-zero on the first mismatch.
"""

import sys
import time

import psycopg

port = int(sys.argv[1])
without_pyarrow = "--without-pyarrow" in sys.argv[2:]


def connect():
    return psycopg.connect(host="127.0.0.1", port=port, user="tester", dbname="lake", autocommit=True)


def fails(cur, sql, *expected):
    try:
        cur.execute(sql)
    except psycopg.Error as error:
        message = str(error)
        for part in expected:
            assert part in message, (sql, message)
        return message
    raise AssertionError(f"{sql} did not fail")


with connect() as conn:
    cur = conn.cursor()
    cur.execute("CREATE TABLE readings (id INT, celsius DOUBLE, place VARCHAR)")
    cur.execute("INSERT INTO readings SELECT range::INT, range / 10.0, 'p' || (range % 3) FROM range(5000)")

    # A scalar function: one call per row, on Python values; NULL comes as None.
    cur.execute("""CREATE FUNCTION fahrenheit(c DOUBLE) RETURNS DOUBLE LANGUAGE python AS $$
if c is None:
    return None
return c * 9 / 5 + 32
$$""")
    cur.execute("SELECT fahrenheit(100.0), fahrenheit(NULL), fahrenheit(-40)")
    assert cur.fetchone() == (212.0, None, -40.0)
    cur.execute("SELECT sum(fahrenheit(celsius)) = sum(celsius * 9 / 5 + 32) FROM readings")
    assert cur.fetchone() == (True,)

    # Several parameters and types; a result cast to the declared type.
    cur.execute("""CREATE FUNCTION label(place VARCHAR, n INT) RETURNS VARCHAR LANGUAGE python AS $$
return f"{place}#{n}"
$$""")
    cur.execute("SELECT label(place, id) FROM readings WHERE id < 3 ORDER BY id")
    assert [r[0] for r in cur.fetchall()] == ["p0#0", "p1#1", "p2#2"]
    cur.execute("CREATE FUNCTION halves(n INT) RETURNS INT LANGUAGE python AS $$\nreturn n / 2\n$$")
    cur.execute("SELECT halves(7)")
    assert cur.fetchone() == (4,), "3.5 is cast to INT as SQL casts it"

    # A vectorized function: one call per batch, on pyarrow arrays (lists without pyarrow).
    cur.execute("""CREATE FUNCTION kind_of(c DOUBLE) RETURNS VARCHAR LANGUAGE python AS $$
return [type(c).__module__.split('.')[0]] * len(c)
$$ OPTIONS (vectorized = true)""")
    cur.execute("SELECT DISTINCT kind_of(celsius) FROM readings")
    assert cur.fetchall() == [("builtins" if without_pyarrow else "pyarrow",)]
    cur.execute("""CREATE FUNCTION scaled(c DOUBLE, by DOUBLE) RETURNS DOUBLE LANGUAGE python AS $$
values = c.to_pylist() if hasattr(c, 'to_pylist') else c
factors = by.to_pylist() if hasattr(by, 'to_pylist') else by
return [None if v is None else v * f for v, f in zip(values, factors)]
$$ OPTIONS (vectorized = true)""")
    cur.execute("SELECT sum(scaled(celsius, 2.0)) = 2 * sum(celsius), count(scaled(celsius, 2)) FROM readings")
    assert cur.fetchone() == (True, 5000)

    # Listed for clients.
    cur.execute("SELECT routine_name, routine_body, external_language FROM information_schema.routines "
                "WHERE routine_name = 'fahrenheit'")
    assert cur.fetchall() == [("fahrenheit", "EXTERNAL", "PYTHON")]

    # Python's exception fails the statement with Python's message and the line of the body.
    cur.execute("CREATE FUNCTION ratio(a INT, b INT) RETURNS DOUBLE LANGUAGE python AS $$\nx = a\nreturn x / b\n$$")
    fails(cur, "SELECT ratio(1, 0)", "Python function ratio failed", "ZeroDivisionError", "line 2 of its body")
    cur.execute("CREATE FUNCTION broken(a INT) RETURNS INT LANGUAGE python AS $$\nreturn (\n$$")
    fails(cur, "SELECT broken(1)", "does not compile", "SyntaxError")
    cur.execute("CREATE FUNCTION wordy(a INT) RETURNS INT LANGUAGE python AS $$\nreturn 'many words'\n$$")
    fails(cur, "SELECT wordy(1)", "returned values that are not")
    cur.execute("CREATE FUNCTION short(a INT) RETURNS INT LANGUAGE python AS $$\nreturn [1]\n$$ "
                "OPTIONS (vectorized = true)")
    fails(cur, "SELECT short(id) FROM readings", "returned 1 values for")
    fails(cur, "CREATE FUNCTION odd(a INT) RETURNS INT LANGUAGE sql AS $$ SELECT a $$ OPTIONS (vectorized = true)",
          "only a Python function can be vectorized")

    # A crash costs the worker, never the server; the next call gets a new worker.
    cur.execute("CREATE FUNCTION crash(a INT) RETURNS INT LANGUAGE python AS $$\nimport os\nos._exit(3)\n$$")
    fails(cur, "SELECT crash(1)", "the Python worker running crash died", "exit code 3")
    cur.execute("SELECT fahrenheit(0.0)")
    assert cur.fetchone() == (32.0,)

    # An endless loop ends with the statement's timeout, which kills its worker.
    cur.execute("CREATE FUNCTION spin(a INT) RETURNS INT LANGUAGE python AS $$\nwhile True:\n    pass\n$$")
    cur.execute("SET statement_timeout = '1s'")
    started = time.monotonic()
    fails(cur, "SELECT spin(1)", "statement timeout")
    assert time.monotonic() - started < 30
    cur.execute("SET statement_timeout = 0")
    cur.execute("SELECT fahrenheit(10.0)")
    assert cur.fetchone() == (50.0,)

    # A replaced function is compiled again on workers that knew the old one.
    cur.execute("CREATE OR REPLACE FUNCTION halves(n INT) RETURNS INT LANGUAGE python AS $$\nreturn n // 2 + 100\n$$")
    cur.execute("SELECT halves(7)")
    assert cur.fetchone() == (103,)

    # A materialized view over a Python function follows its table.
    cur.execute("CREATE MATERIALIZED VIEW hot AS SELECT place, max(fahrenheit(celsius)) AS hottest FROM readings "
                "GROUP BY place")
    cur.execute("INSERT INTO readings VALUES (9999, 1000.0, 'p1')")
    cur.execute("SELECT hottest FROM hot WHERE place = 'p1'")
    assert cur.fetchone() == (1832.0,)
    fails(cur, "DROP FUNCTION fahrenheit", "materialized view")

    # SQL procedures: CALL runs the body's statements in the caller's session.
    cur.execute("CREATE TABLE audit (n INT, note VARCHAR)")
    cur.execute("""CREATE PROCEDURE record(n INT, note VARCHAR) LANGUAGE sql AS $$
INSERT INTO audit VALUES (n, note);
INSERT INTO audit VALUES (n + 1, note || '; and after');
$$""")
    cur.execute("CALL record(1, 'it''s')")
    assert cur.statusmessage == "CALL", cur.statusmessage
    cur.execute("SELECT n, note FROM audit ORDER BY n")
    assert cur.fetchall() == [(1, "it's"), (2, "it's; and after")]
    fails(cur, "CALL record('x')", "does not exist")
    cur.execute("SELECT proname, prokind FROM pg_proc WHERE proname = 'record'")
    assert cur.fetchall() == [("record", "p")]

    # Python procedures run in a worker with `con`, a client connected to the node.
    if not without_pyarrow:
        cur.execute("""CREATE PROCEDURE py_record(n INT, note VARCHAR) LANGUAGE python AS $$
for k in range(n):
    con.sql(f"INSERT INTO audit VALUES ({100 + k}, '{note}')")
$$""")
        cur.execute("CALL py_record(3, 'from python')")
        cur.execute("SELECT count(*) FROM audit WHERE note = 'from python'")
        assert cur.fetchone() == (3,)
        cur.execute("CREATE PROCEDURE py_fail() LANGUAGE python AS $$\nraise RuntimeError('stop here')\n$$")
        fails(cur, "CALL py_fail()", "Python procedure py_fail failed", "RuntimeError: stop here")

print("python functions: ok")
