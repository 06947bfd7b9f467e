"""SQLAlchemy 2.1 and pandas against `pondra serve`, with psycopg and with psycopg2.

Usage: sqlalchemy_client.py PORT. Exits non-zero on the first mismatch.
"""

import sys

import pandas as pd
import sqlalchemy as sa

port = int(sys.argv[1])
frame = pd.DataFrame(
    {"id": [1, 2, 3], "name": ["ann", "bob", None], "score": [1.5, 2.5, 3.5]}
)
for driver in ["psycopg", "psycopg2"]:
    engine = sa.create_engine(f"postgresql+{driver}://analyst@127.0.0.1:{port}/lake")
    table = f"frame_{driver}"
    frame.to_sql(table, engine, index=False)
    frame.to_sql(table, engine, index=False, if_exists="append")
    read = pd.read_sql(f"SELECT * FROM {table} ORDER BY id, name", engine)
    assert len(read) == 6, read
    assert list(read["id"]) == [1, 1, 2, 2, 3, 3], read
    assert read["score"].sum() == 15.0, read
    inspector = sa.inspect(engine)
    assert table in inspector.get_table_names(), inspector.get_table_names()
    columns = inspector.get_columns(table)
    assert [c["name"] for c in columns] == ["id", "name", "score"], columns
    assert isinstance(columns[0]["type"], sa.BigInteger), columns
    with engine.begin() as conn:
        conn.execute(sa.text(f"DELETE FROM {table} WHERE id = 3"))
    with engine.connect() as conn:
        count = conn.execute(sa.text(f"SELECT count(*) FROM {table}")).scalar()
        assert count == 4, count
        conn.commit()
        # A transaction SQLAlchemy rolls back leaves nothing.
        trans = conn.begin()
        conn.execute(sa.text(f"INSERT INTO {table} VALUES (9, 'gone', 0.0)"))
        trans.rollback()
        assert conn.execute(sa.text(f"SELECT count(*) FROM {table}")).scalar() == 4
    engine.dispose()
print("sqlalchemy ok")
