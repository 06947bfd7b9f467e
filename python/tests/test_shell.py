"""The shell on a terminal, as a user meets it in the first five minutes: completion of table
and column names, the progress bar of a long statement and Ctrl-C stopping it, and history
kept in `~/.pondra_history`."""

import os

import pexpect
import pytest

from conftest import binary

PROMPT = "pondra> "


@pytest.fixture
def shell(tmp_path):
    env = dict(os.environ, HOME=str(tmp_path), TERM="xterm")
    child = pexpect.spawn(
        binary(), ["--dir", str(tmp_path / "lake")], env=env, encoding="utf-8", timeout=60,
        dimensions=(40, 200),
    )
    child.expect_exact(PROMPT)
    yield child, tmp_path
    if child.isalive():
        child.terminate(force=True)


def test_tab_completes_tables_columns_and_commands(shell):
    child, _ = shell
    child.sendline("CREATE TABLE shipments (quantity_shipped INT, destination VARCHAR);")
    child.expect_exact(PROMPT)
    child.send("SELECT quantity_sh\t")
    child.expect_exact("quantity_shipped")
    child.send(" FROM shipm\t")
    child.expect_exact("shipments")
    child.sendline(";")
    child.expect_exact("quantity_shipped")
    child.expect_exact(PROMPT)
    child.send(".tab\t")
    child.expect_exact(".tables")
    child.sendline("")
    child.expect_exact("shipments")
    child.expect_exact(PROMPT)


def test_a_long_statement_shows_its_progress_and_ctrl_c_stops_it(shell):
    child, _ = shell
    child.sendline(
        "CREATE TABLE wide AS SELECT i AS a FROM generate_series(1, 2000000) AS g(i);"
    )
    child.expect_exact(PROMPT)
    child.sendline("SELECT count(*) FROM wide x, wide y WHERE x.a % 1000 = y.a % 1000;")
    # After two seconds the bar shows the share of morsels read and the time taken.
    child.expect(r"\[[= ]{40}\] +\d+% +\d+\.\d s", timeout=60)
    child.sendintr()
    child.expect_exact("canceling statement due to user request", timeout=30)
    child.expect_exact(PROMPT)
    child.sendline("SELECT 'after' AS still_here;")
    child.expect_exact("after")


def test_history_is_kept_for_the_next_session(shell):
    child, home = shell
    child.sendline("SELECT 'remember me' AS note;")
    child.expect_exact("remember me")
    child.expect_exact(PROMPT)
    child.sendline(".quit")
    child.expect(pexpect.EOF)
    history = (home / ".pondra_history").read_text()
    assert "SELECT 'remember me' AS note;" in history
