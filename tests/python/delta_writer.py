"""Writes a Delta Lake table with deltalake (delta-rs): a first write, an append, and an
overwrite of nothing else; prints the rows the newest version holds, for delta_scan to match.

Usage: delta_writer.py FOLDER
"""

import os
import sys

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

folder = sys.argv[1]
first = pa.table(
    {
        "id": pa.array(range(0, 1000), pa.int64()),
        "name": pa.array([f"n{i % 7}" for i in range(0, 1000)]),
        "price": pa.array([i * 0.5 for i in range(0, 1000)], pa.float64()),
    }
)
write_deltalake(folder, first)
more = pa.table(
    {
        "id": pa.array(range(1000, 1500), pa.int64()),
        "name": pa.array([f"n{i % 7}" for i in range(1000, 1500)]),
        "price": pa.array([i * 0.5 for i in range(1000, 1500)], pa.float64()),
    }
)
write_deltalake(folder, more, mode="append")
table = DeltaTable(folder)
rows = table.to_pyarrow_table()
assert table.version() == 1, table.version()
print(rows.num_rows, sum(rows.column("id").to_pylist()), len(set(rows.column("name").to_pylist())))
sys.stdout.flush()
# deltalake's native threads can abort the interpreter's teardown ("terminate called without
# an active exception"): the table is written and read by now, so leave without it.
os._exit(0)
