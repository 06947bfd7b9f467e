"""The ADBC Flight SQL driver against `pondra serve`: queries, prepared statements with
parameters, catalog metadata and adbc_ingest.

Usage: adbc_client.py ADDRESS [TOKEN]. Exits non-zero on the first mismatch.
"""

import sys

import adbc_driver_flightsql.dbapi as flight_sql
import pyarrow as pa

address = sys.argv[1]
kwargs = {}
if len(sys.argv) > 2:
    kwargs["db_kwargs"] = {"adbc.flight.sql.authorization_header": f"Bearer {sys.argv[2]}"}

with flight_sql.connect(f"grpc://{address}", **kwargs) as conn:
    cur = conn.cursor()
    cur.execute("CREATE TABLE readings (sensor VARCHAR, at BIGINT, value DOUBLE)")
    cur.execute("INSERT INTO readings VALUES ('a', 1, 0.5), ('b', 2, 1.5), ('a', 3, 2.5)")

    cur.execute("SELECT sensor, count(*) AS n, sum(value) AS total FROM readings GROUP BY sensor ORDER BY sensor")
    table = cur.fetch_arrow_table()
    assert table.column_names == ["sensor", "n", "total"], table.column_names
    assert table.to_pylist() == [
        {"sensor": "a", "n": 2, "total": 3.0},
        {"sensor": "b", "n": 1, "total": 1.5},
    ], table.to_pylist()

    # A prepared statement with parameters, run twice with different values.
    cur.execute("SELECT at FROM readings WHERE sensor = $1 AND value > $2 ORDER BY at", ("a", 1.0))
    assert cur.fetchall() == [(3,)]
    cur.execute("SELECT at FROM readings WHERE sensor = $1 AND value > $2 ORDER BY at", ("a", 0.0))
    assert cur.fetchall() == [(1,), (3,)]

    # Bulk ingest into a new table and into an existing one.
    rows = pa.table({"sensor": ["c", "d"], "at": pa.array([4, 5], pa.int64()), "value": [3.5, 4.5]})
    assert cur.adbc_ingest("readings", rows, mode="append") == 2
    fresh = pa.table({"id": pa.array([1, 2, 3], pa.int32()), "label": ["x", "y", None]})
    assert cur.adbc_ingest("labels", fresh, mode="create") == 3
    cur.execute("SELECT count(*) FROM readings")
    assert cur.fetchone() == (5,)
    cur.execute("SELECT id, label FROM labels ORDER BY id")
    assert cur.fetchall() == [(1, "x"), (2, "y"), (3, None)]

    # Catalog metadata.
    objects = conn.adbc_get_objects(depth="tables").read_all().to_pylist()
    tables = sorted(
        t["table_name"]
        for catalog in objects
        for schema in catalog["catalog_db_schemas"]
        for t in schema["db_schema_tables"]
    )
    assert tables == ["labels", "readings"], tables
    schema = conn.adbc_get_table_schema("readings")
    assert schema.names == ["sensor", "at", "value"], schema
    info = conn.adbc_get_info()
    assert info["vendor_name"] == "Pondra", info

    try:
        cur.execute("SELECT * FROM missing")
        raise AssertionError("a missing table must fail")
    except flight_sql.Error as e:
        assert "table missing does not exist" in str(e), e

print("ok")
