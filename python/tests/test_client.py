"""`pondra.connect`, `con.sql` and its results, `con.append`, and the binary's entry points."""

import datetime
import decimal
import os
import subprocess
import sys

import pandas
import polars
import pyarrow
import pytest

import pondra
from pondra import _node, client


def test_a_temporary_lake_answers_at_once():
    with pondra.connect() as con:
        result = con.sql("select 1 as one, 'a' as letter")
        assert result.columns == ["one", "letter"]
        assert result.fetchall() == [(1, "a")]


def test_results_read_as_a_cursor_and_whole(con):
    con.sql("CREATE TABLE t (id INT, name VARCHAR, price DECIMAL(10, 2), day DATE, ratio DOUBLE)")
    inserted = con.sql(
        "INSERT INTO t VALUES (1, 'a', 1.50, DATE '2024-01-02', 0.5), (2, 'b', NULL, NULL, 2.25), (3, 'c', 3.00, DATE '2024-03-04', NULL)"
    )
    assert inserted.columns == ["Count"] and inserted.fetchall() == [(3,)]
    result = con.sql("SELECT * FROM t ORDER BY id")
    assert result.fetchone() == (1, "a", decimal.Decimal("1.50"), datetime.date(2024, 1, 2), 0.5)
    assert result.fetchmany(1) == [(2, "b", None, None, 2.25)]
    assert result.fetchall() == [(3, "c", decimal.Decimal("3.00"), datetime.date(2024, 3, 4), None)]
    assert result.fetchone() is None
    frame = con.sql("SELECT * FROM t ORDER BY id").df()
    assert isinstance(frame, pandas.DataFrame) and list(frame["name"]) == ["a", "b", "c"]
    pl = con.sql("SELECT * FROM t ORDER BY id").pl()
    assert isinstance(pl, polars.DataFrame) and pl["id"].to_list() == [1, 2, 3]
    table = con.sql("SELECT * FROM t ORDER BY id").arrow()
    assert isinstance(table, pyarrow.Table) and table.num_rows == 3
    assert table.schema.field("day").type == pyarrow.date32()
    updated = con.sql("UPDATE t SET name = 'z' WHERE id > 1")
    assert updated.fetchall() == [(2,)]
    created = con.sql("CREATE TABLE u (x INT)")
    assert created.fetchall() == []


def test_show_prints_a_table(con, capsys):
    con.sql("SELECT 1 AS a, NULL AS b").show()
    printed = capsys.readouterr().out
    assert "| a | b    |" in printed and "| 1 | NULL |" in printed


def test_parameters_by_number_and_by_place(con):
    con.sql("CREATE TABLE p (id INT, name VARCHAR, day DATE, amount DECIMAL(10, 2))")
    con.sql("INSERT INTO p VALUES ($1, $2, $3, $4)", [1, "o'brien", datetime.date(2024, 5, 6), decimal.Decimal("9.99")])
    con.sql("INSERT INTO p VALUES (?, ?, ?, ?)", (2, None, None, None))
    rows = con.sql("SELECT * FROM p WHERE id >= $1 ORDER BY id", [1]).fetchall()
    assert rows == [
        (1, "o'brien", datetime.date(2024, 5, 6), decimal.Decimal("9.99")),
        (2, None, None, None),
    ]
    assert con.sql("SELECT $1 + $2, $3", [1.5, 2, [1, 2]]).fetchall() == [(3.5, [1, 2])]
    with pytest.raises(TypeError):
        con.sql("SELECT $1", "not a list")


def test_errors_carry_the_engine_message(con):
    with pytest.raises(pondra.Error) as refused:
        con.sql("SELECT no_such_column FROM (SELECT 1 AS a)")
    assert 'column "no_such_column" does not exist' in str(refused.value)
    with pytest.raises(pondra.Error) as refused:
        con.sql("SELECT 1 + 'x'")
    assert refused.value.message
    with pytest.raises(pondra.Error, match="does not exist"):
        con.append("no_such_table", [{"a": 1}])


def test_append_takes_frames_tables_batches_and_dicts_exactly_once(con):
    con.sql("CREATE TABLE e (user VARCHAR, amount BIGINT)")
    assert con.append("e", pandas.DataFrame({"user": ["a", "b"], "amount": [1, 2]})) == 2
    assert con.append("e", polars.DataFrame({"user": ["c"], "amount": [3]})) == 1
    table = pyarrow.table({"user": ["d"], "amount": pyarrow.array([4], pyarrow.int64())})
    assert con.append("e", table) == 1
    assert con.append("e", table.to_batches()[0]) == 1
    assert con.append("e", [{"user": "f", "amount": 6}]) == 1
    assert con.append("e", [{"user": "g", "amount": 7}], producer="loader", seq=1) == 1
    assert con.append("e", [{"user": "g", "amount": 7}], producer="loader", seq=1) == 0
    assert con.append("e", [{"user": "h", "amount": 8}], producer="loader", seq=2) == 1
    assert con.sql("SELECT count(*), sum(amount) FROM e").fetchall() == [(8, 35)]
    with pytest.raises(ValueError):
        con.append("e", [{"user": "x", "amount": 1}], producer="loader")
    with pytest.raises(TypeError):
        con.append("e", 42)


def test_appends_in_flight_together_commit_in_line(con):
    con.sql("CREATE TABLE lined (n BIGINT)")
    # Sent at once on a connection each, the later ones first: each commits after the one it
    # follows.
    import concurrent.futures

    def send(seq):
        with pondra.connect(con.address) as own:
            return own.append("lined", [{"n": seq}], producer="q", seq=seq, follows=seq - 1)

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        assert list(pool.map(send, (4, 3, 2, 1))) == [1, 1, 1, 1]
    order = con.sql("SELECT string_agg(n::VARCHAR, ',' ORDER BY _offset) FROM lined").fetchall()
    assert order == [("1,2,3,4",)]
    assert con.append("lined", [{"n": 4}], producer="q", seq=4, follows=3) == 0
    with pytest.raises(ValueError):
        con.append("lined", [{"n": 5}], producer="q", seq=5, follows=5)


def test_without_pyarrow_rows_still_come_as_python_values(con, monkeypatch):
    con.sql("CREATE TABLE n (id INT, price DECIMAL(10, 2), day DATE, note VARCHAR)")
    monkeypatch.setattr(client, "_pyarrow", lambda: None)
    assert con.append("n", [{"id": 1, "price": "2.50", "day": "2024-01-01", "note": "x"}]) == 1
    assert con.sql("SELECT * FROM n").fetchall() == [
        (1, decimal.Decimal("2.50"), datetime.date(2024, 1, 1), "x")
    ]
    assert con.sql("INSERT INTO n VALUES (2, NULL, NULL, NULL)").fetchall() == [(1,)]
    with pytest.raises(TypeError):
        con.append("n", pandas.DataFrame({"id": [3]}))


def test_one_node_per_lake_shared_and_stopped_with_its_last_connection(tmp_path):
    lake = str(tmp_path / "shared")
    first = pondra.connect(lake)
    second = pondra.connect(lake)
    assert first.address == second.address
    node = first._local
    first.sql("CREATE TABLE s (x INT)")
    first.close()
    assert second.sql("SELECT count(*) FROM s").fetchall() == [(0,)]
    second.close()
    assert not node.running()
    with pytest.raises(pondra.Error):
        second.sql("SELECT 1")
    with pondra.connect(lake) as again:
        assert again.sql("SELECT count(*) FROM s").fetchall() == [(0,)]


def test_a_running_server_by_its_url_with_tokens(served):
    server = served("--token-read", "r", "--token-admin", "a")
    admin = pondra.connect(server.url, token="a")
    admin.sql("CREATE TABLE k (x INT)")
    admin.sql("INSERT INTO k VALUES (1)")
    reader = pondra.connect(server.url, token="r")
    assert reader.sql("SELECT x FROM k").fetchall() == [(1,)]
    with pytest.raises(pondra.Error, match="permission denied"):
        reader.sql("CREATE TABLE nope (x INT)")
    with pytest.raises(pondra.Error):
        pondra.connect(server.url).sql("SELECT 1")


def test_python_dash_m_runs_the_binary(tmp_path):
    lake = tmp_path / "m"
    done = subprocess.run(
        [sys.executable, "-m", "pondra", "sql", "--dir", str(lake), "SELECT 40 + 2 AS answer"],
        capture_output=True,
        text=True,
        cwd=os.path.dirname(os.path.dirname(pondra.__file__)),
        check=True,
    )
    assert "42" in done.stdout


def test_nodes_stop_at_interpreter_exit(tmp_path):
    script = (
        "import pondra, sys; con = pondra.connect(sys.argv[1]); "
        "print(con._local._process.pid, flush=True)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "exit")],
        capture_output=True,
        text=True,
        cwd=os.path.dirname(os.path.dirname(pondra.__file__)),
        check=True,
    )
    pid = int(done.stdout.split()[0])
    with pytest.raises(OSError):
        os.kill(pid, 0)
