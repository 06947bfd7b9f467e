"""jupysql's %sql and %%sql magics in IPython, without a browser, against `pondra serve`.

Usage: jupysql_client.py PORT. Exits non-zero on the first mismatch.
"""

import sys

from IPython.core.interactiveshell import InteractiveShell

port = int(sys.argv[1])
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "sql")
shell.run_line_magic("config", "SqlMagic.displaylimit = 0")
shell.run_line_magic("sql", f"postgresql+psycopg://analyst@127.0.0.1:{port}/lake")
shell.run_cell_magic("sql", "", "CREATE TABLE notebook (k VARCHAR, v BIGINT)")
shell.run_cell_magic("sql", "", "INSERT INTO notebook VALUES ('a', 1), ('b', 2), ('a', 3)")
result = shell.run_line_magic("sql", "SELECT count(*) AS n FROM notebook")
assert list(result) == [(3,)], list(result)
result = shell.run_cell_magic(
    "sql", "", "SELECT k, sum(v) AS total FROM notebook GROUP BY k ORDER BY k"
)
rows = [tuple(r) for r in result.DataFrame().itertuples(index=False)]
assert rows == [("a", 4), ("b", 2)], rows
print("jupysql ok")
