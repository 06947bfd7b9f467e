"""Writes an Iceberg table with PyIceberg's SqlCatalog (SQLite): a first append and a second;
prints the newest metadata file's location, then the rows the table holds (count, sum of id,
distinct names), for iceberg_scan to match.

Usage: iceberg_writer.py FOLDER
"""

import os
import sys

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog

folder = os.path.abspath(sys.argv[1])
os.makedirs(folder, exist_ok=True)
catalog = SqlCatalog(
    "writer", uri=f"sqlite:///{folder}/catalog.db", warehouse=f"file://{folder}"
)
catalog.create_namespace("shop")


def rows(start, stop):
    return pa.table(
        {
            "id": pa.array(range(start, stop), pa.int64()),
            "name": pa.array([f"n{i % 7}" for i in range(start, stop)]),
            "price": pa.array([i * 0.5 for i in range(start, stop)], pa.float64()),
        }
    )


table = catalog.create_table("shop.sales", schema=rows(0, 1).schema)
table.append(rows(0, 1000))
table.append(rows(1000, 1500))
table = catalog.load_table("shop.sales")
held = table.scan().to_arrow()
print(table.metadata_location)
print(held.num_rows, sum(held.column("id").to_pylist()), len(set(held.column("name").to_pylist())))
