"""DuckDB as the oracle of a differential test: runs statements read from stdin, one per line,
and answers each with `ok` or `error <message>`; a line `check <table> ...` answers with the
rows of each table, sorted, one per line (tab-separated, NULL as `NULL`), then `end`; a line
`query <sql>` answers with `rows <n>` and the query's rows, sorted, in the same form (or
`error <message>`)."""

import sys

import duckdb


def cell(value):
    return "NULL" if value is None else str(value)


def main():
    db = duckdb.connect()
    out = sys.stdout
    for line in sys.stdin:
        line = line.rstrip("\n")
        if line.startswith("query "):
            try:
                rows = db.execute(line[len("query ") :]).fetchall()
            except duckdb.Error as error:
                message = str(error).replace("\n", " ")
                out.write(f"error {message}\n")
                out.flush()
                continue
            lines = sorted("\t".join(cell(v) for v in row) for row in rows)
            out.write(f"rows {len(lines)}\n")
            out.writelines(row + "\n" for row in lines)
        elif line.startswith("check "):
            for table in line.split()[1:]:
                rows = db.execute(f"SELECT * FROM {table}").fetchall()
                lines = sorted("\t".join(cell(v) for v in row) for row in rows)
                out.write(f"table {table} {len(lines)}\n")
                out.writelines(row + "\n" for row in lines)
            out.write("end\n")
        else:
            try:
                db.execute(line)
                out.write("ok\n")
            except duckdb.Error as error:
                message = str(error).replace("\n", " ")
                out.write(f"error {message}\n")
        out.flush()


if __name__ == "__main__":
    main()
