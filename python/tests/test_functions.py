"""Python functions and procedures (ADR 0081) from the Python client: the node's workers run
this interpreter (with pyarrow), and a procedure's `con` is this source tree's client."""

import sys
import time

import pytest

import pondra
from conftest import ROOT


@pytest.fixture
def con(tmp_path, monkeypatch):
    """A node on a new lake whose Python workers run this interpreter."""
    monkeypatch.setenv("PONDRA_PYTHON", sys.executable)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    connection = pondra.connect(str(tmp_path / "lake"))
    yield connection
    connection.close()


def test_scalar_and_vectorized_functions(con):
    con.sql("CREATE TABLE t AS SELECT range::DOUBLE AS x FROM range(10000)")
    con.sql("CREATE FUNCTION plus_one(x DOUBLE) RETURNS DOUBLE LANGUAGE python AS $$\nreturn x + 1\n$$")
    con.sql(
        "CREATE FUNCTION doubled(x DOUBLE) RETURNS DOUBLE LANGUAGE python AS $$\n"
        "import pyarrow.compute as pc\nreturn pc.multiply(x, 2)\n$$ OPTIONS (vectorized = true)"
    )
    assert con.sql("SELECT sum(plus_one(x)), sum(doubled(x)) FROM t").fetchall() == [(50005000.0, 99990000.0)]


def test_an_exception_fails_the_statement_with_pythons_message(con):
    con.sql("CREATE FUNCTION picky(x INT) RETURNS INT LANGUAGE python AS $$\nraise ValueError(f'not {x}')\n$$")
    with pytest.raises(pondra.Error, match=r"ValueError: not 7 \(line 1 of its body\)"):
        con.sql("SELECT picky(7)")


def test_a_crashed_worker_costs_its_statement_only(con):
    con.sql("CREATE FUNCTION die(x INT) RETURNS INT LANGUAGE python AS $$\nimport os\nos.abort()\n$$")
    con.sql("CREATE FUNCTION same(x INT) RETURNS INT LANGUAGE python AS $$\nreturn x\n$$")
    with pytest.raises(pondra.Error, match="the Python worker running die died"):
        con.sql("SELECT die(1)")
    assert con.sql("SELECT same(5)").fetchall() == [(5,)]


def test_an_endless_loop_ends_with_the_statement_timeout(con):
    con.sql("CREATE FUNCTION spin(x INT) RETURNS INT LANGUAGE python AS $$\nwhile True:\n    pass\n$$")
    started = time.monotonic()
    with pytest.raises(pondra.Error, match="statement timeout"):
        con.sql("SET statement_timeout = '500ms'; SELECT spin(1)")
    assert time.monotonic() - started < 30
    con.sql("CREATE FUNCTION same(x INT) RETURNS INT LANGUAGE python AS $$\nreturn x\n$$")
    assert con.sql("SELECT same(3)").fetchall() == [(3,)]


def test_procedures_in_sql_and_python(con):
    con.sql("CREATE TABLE log (n INT, source VARCHAR)")
    con.sql("CREATE PROCEDURE from_sql(n INT) AS $$ INSERT INTO log VALUES (n, 'sql'); $$")
    con.sql(
        "CREATE PROCEDURE from_python(n INT) LANGUAGE python AS $$\n"
        "for k in range(n):\n    con.sql(f\"INSERT INTO log VALUES ({k}, 'python')\")\n$$"
    )
    con.sql("CALL from_sql(10)")
    con.sql("CALL from_python(2)")
    assert con.sql("SELECT source, count(*) FROM log GROUP BY source ORDER BY source").fetchall() == [
        ("python", 2),
        ("sql", 1),
    ]
    con.sql("CREATE PROCEDURE broken() LANGUAGE python AS $$\n1 / 0\n$$")
    with pytest.raises(pondra.Error, match="ZeroDivisionError"):
        con.sql("CALL broken()")
