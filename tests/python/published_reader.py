"""Reads a table Pondra published, as other engines do, and prints what it holds: the row
count, the sum of `id` and the total length of `name`, comma-separated.

Usage:
  published_reader.py delta FOLDER [VERSION]      deltalake's DeltaTable, at VERSION if given
  published_reader.py iceberg METADATA_JSON [N]   PyIceberg's StaticTable, at its Nth snapshot
  published_reader.py rest URI NAMESPACE TABLE    PyIceberg's RestCatalog: lists, then scans
"""

import os
import sys


def summary(table):
    ids = table.column("id").to_pylist()
    names = table.column("name").to_pylist()
    return f"{table.num_rows},{sum(i for i in ids if i is not None)},{sum(len(n) for n in names if n)}"


def delta(folder, version=None):
    from deltalake import DeltaTable

    table = DeltaTable(folder) if version is None else DeltaTable(folder, version=int(version))
    return summary(table.to_pyarrow_table())


def iceberg(metadata, nth=None):
    from pyiceberg.table import StaticTable

    table = StaticTable.from_metadata(metadata)
    if nth is None:
        return summary(table.scan().to_arrow())
    snapshot = table.metadata.snapshots[int(nth)]
    return summary(table.scan(snapshot_id=snapshot.snapshot_id).to_arrow())


def rest(uri, namespace, name):
    from pyiceberg.catalog.rest import RestCatalog

    catalog = RestCatalog("pondra", uri=uri)
    assert (namespace,) in catalog.list_namespaces(), catalog.list_namespaces()
    listed = catalog.list_tables(namespace)
    assert (namespace, name) in listed, listed
    assert catalog.table_exists((namespace, name))
    return summary(catalog.load_table((namespace, name)).scan().to_arrow())


kind, *args = sys.argv[1:]
print({"delta": delta, "iceberg": iceberg, "rest": rest}[kind](*args))
sys.stdout.flush()
# deltalake's native threads can abort the interpreter's teardown ("terminate called without
# an active exception"): the answer is printed by now, so leave without it.
os._exit(0)
