"""TPC-H queries 1, 3, 5, 6, 10, 12 and 14 at scale 0.01, written once with Polars' names and
run by Pondra (`con.table(...)` frames) and by Polars on the same rows; and written with
PySpark's names and checked against DuckDB's answers to the queries' SQL."""

import datetime
import math
from pathlib import Path

import duckdb
import polars as pl
import pytest

import pondra
import pondra.spark
from pondra.spark import functions as F

QUERIES = Path(__file__).resolve().parents[2] / "tpch" / "queries"
TABLES = ["customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier"]


def revenue(ns):
    return ns.col("l_extendedprice") * (1 - ns.col("l_discount"))


def q1(ns, t):
    return (
        t["lineitem"]
        .filter(ns.col("l_shipdate") <= datetime.date(1998, 9, 2))
        .group_by("l_returnflag", "l_linestatus")
        .agg(
            ns.col("l_quantity").sum().alias("sum_qty"),
            ns.col("l_extendedprice").sum().alias("sum_base_price"),
            revenue(ns).sum().alias("sum_disc_price"),
            (revenue(ns) * (1 + ns.col("l_tax"))).sum().alias("sum_charge"),
            ns.col("l_quantity").mean().alias("avg_qty"),
            ns.col("l_extendedprice").mean().alias("avg_price"),
            ns.col("l_discount").mean().alias("avg_disc"),
            ns.len().alias("count_order"),
        )
        .sort("l_returnflag", "l_linestatus")
    )


def q3(ns, t):
    customers = t["customer"].filter(ns.col("c_mktsegment") == "BUILDING")
    orders = t["orders"].filter(ns.col("o_orderdate") < datetime.date(1995, 3, 15))
    lines = t["lineitem"].filter(ns.col("l_shipdate") > datetime.date(1995, 3, 15))
    return (
        customers.join(orders, left_on="c_custkey", right_on="o_custkey")
        .join(lines, left_on="o_orderkey", right_on="l_orderkey")
        .group_by("o_orderkey", "o_orderdate", "o_shippriority")
        .agg(revenue(ns).sum().alias("revenue"))
        .select("o_orderkey", "revenue", "o_orderdate", "o_shippriority")
        .sort(["revenue", "o_orderdate"], descending=[True, False])
        .head(10)
    )


def q5(ns, t):
    asia = t["region"].filter(ns.col("r_name") == "ASIA")
    return (
        asia.join(t["nation"], left_on="r_regionkey", right_on="n_regionkey")
        .join(t["customer"], left_on="n_nationkey", right_on="c_nationkey")
        .join(t["orders"], left_on="c_custkey", right_on="o_custkey")
        .join(t["lineitem"], left_on="o_orderkey", right_on="l_orderkey")
        .join(t["supplier"], left_on=["l_suppkey", "n_nationkey"], right_on=["s_suppkey", "s_nationkey"])
        .filter(ns.col("o_orderdate") >= datetime.date(1994, 1, 1))
        .filter(ns.col("o_orderdate") < datetime.date(1995, 1, 1))
        .group_by("n_name")
        .agg(revenue(ns).sum().alias("revenue"))
        .sort("revenue", descending=True)
    )


def q6(ns, t):
    return (
        t["lineitem"]
        .filter(ns.col("l_shipdate") >= datetime.date(1994, 1, 1))
        .filter(ns.col("l_shipdate") < datetime.date(1995, 1, 1))
        .filter(ns.col("l_discount").is_between(0.05, 0.07))
        .filter(ns.col("l_quantity") < 24)
        .select((ns.col("l_extendedprice") * ns.col("l_discount")).sum().alias("revenue"))
    )


def q10(ns, t):
    orders = t["orders"].filter(
        ns.col("o_orderdate").is_between(datetime.date(1993, 10, 1), datetime.date(1994, 1, 1), closed="left")
    )
    returned = t["lineitem"].filter(ns.col("l_returnflag") == "R")
    return (
        t["customer"]
        .join(orders, left_on="c_custkey", right_on="o_custkey")
        .join(returned, left_on="o_orderkey", right_on="l_orderkey")
        .join(t["nation"], left_on="c_nationkey", right_on="n_nationkey")
        .group_by("c_custkey", "c_name", "c_acctbal", "c_phone", "n_name", "c_address", "c_comment")
        .agg(revenue(ns).sum().alias("revenue"))
        .select("c_custkey", "c_name", "revenue", "c_acctbal", "n_name", "c_address", "c_phone", "c_comment")
        .sort(["revenue", "c_custkey"], descending=[True, False])
        .head(20)
    )


def q12(ns, t):
    urgent = ns.col("o_orderpriority").is_in(["1-URGENT", "2-HIGH"])
    return (
        t["orders"]
        .join(t["lineitem"], left_on="o_orderkey", right_on="l_orderkey")
        .filter(ns.col("l_shipmode").is_in(["MAIL", "SHIP"]))
        .filter(ns.col("l_commitdate") < ns.col("l_receiptdate"))
        .filter(ns.col("l_shipdate") < ns.col("l_commitdate"))
        .filter(ns.col("l_receiptdate") >= datetime.date(1994, 1, 1))
        .filter(ns.col("l_receiptdate") < datetime.date(1995, 1, 1))
        .group_by("l_shipmode")
        .agg(
            ns.when(urgent).then(1).otherwise(0).sum().alias("high_line_count"),
            ns.when(~urgent).then(1).otherwise(0).sum().alias("low_line_count"),
        )
        .sort("l_shipmode")
    )


def q14(ns, t):
    promo = ns.when(ns.col("p_type").str.starts_with("PROMO")).then(revenue(ns)).otherwise(0)
    return (
        t["lineitem"]
        .filter(ns.col("l_shipdate") >= datetime.date(1995, 9, 1))
        .filter(ns.col("l_shipdate") < datetime.date(1995, 10, 1))
        .join(t["part"], left_on="l_partkey", right_on="p_partkey")
        .select((100.0 * promo.sum() / revenue(ns).sum()).alias("promo_revenue"))
    )


FRAME_QUERIES = [q1, q3, q5, q6, q10, q12, q14]


@pytest.fixture(scope="session")
def polars_tables(tpch):
    """Polars' frames of the same rows, decimals as doubles (Polars' arithmetic on them)."""
    tables = {}
    for name in TABLES:
        frame = tpch.table(name).collect()
        tables[name] = frame.with_columns(pl.col(pl.Decimal).cast(pl.Float64)).lazy()
    return tables


def close(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float) or type(a).__name__ == "Decimal":
        if a is None or b is None:
            return a is b
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-6)
    return a == b


def agree(ours, theirs, query):
    """Rows equal, numbers to nine places (decimals against doubles)."""
    assert len(ours) == len(theirs), (query, len(ours), len(theirs))
    assert len(ours) > 0, query
    for left, right in zip(ours, theirs):
        assert len(left) == len(right)
        for a, b in zip(left, right):
            assert close(a, b), (query, left, right)


@pytest.mark.parametrize("query", FRAME_QUERIES, ids=lambda q: q.__name__)
def test_frames_with_polars_names_give_polars_answers(tpch, polars_tables, query):
    tables = {name: tpch.table(name) for name in TABLES}
    frame = query(pondra, tables)
    assert frame.sql().startswith("SELECT")
    ours = frame.collect()
    theirs = query(pl, polars_tables).collect()
    agree(ours.rows(), theirs.rows(), query.__name__)
    assert ours.columns == theirs.columns


def s_revenue():
    return F.col("l_extendedprice") * (1 - F.col("l_discount"))


def s1(spark):
    return (
        spark.table("lineitem")
        .filter(F.col("l_shipdate") <= datetime.date(1998, 9, 2))
        .groupBy("l_returnflag", "l_linestatus")
        .agg(
            F.sum("l_quantity").alias("sum_qty"),
            F.sum("l_extendedprice").alias("sum_base_price"),
            F.sum(s_revenue()).alias("sum_disc_price"),
            F.sum(s_revenue() * (1 + F.col("l_tax"))).alias("sum_charge"),
            F.avg("l_quantity").alias("avg_qty"),
            F.avg("l_extendedprice").alias("avg_price"),
            F.avg("l_discount").alias("avg_disc"),
            F.count("*").alias("count_order"),
        )
        .orderBy("l_returnflag", "l_linestatus")
    )


def s3(spark):
    customers = spark.table("customer").filter(F.col("c_mktsegment") == "BUILDING")
    orders = spark.table("orders").filter(F.col("o_orderdate") < datetime.date(1995, 3, 15))
    lines = spark.table("lineitem").filter(F.col("l_shipdate") > datetime.date(1995, 3, 15))
    return (
        customers.join(orders, F.col("c_custkey") == F.col("o_custkey"))
        .join(lines, F.col("l_orderkey") == F.col("o_orderkey"))
        .groupBy("l_orderkey", "o_orderdate", "o_shippriority")
        .agg(F.sum(s_revenue()).alias("revenue"))
        .select("l_orderkey", "revenue", "o_orderdate", "o_shippriority")
        .orderBy(F.col("revenue").desc(), "o_orderdate")
        .limit(10)
    )


def s5(spark):
    t = {name: spark.table(name) for name in TABLES}
    return (
        t["region"].filter(F.col("r_name") == "ASIA")
        .join(t["nation"], F.col("r_regionkey") == F.col("n_regionkey"))
        .join(t["customer"], F.col("c_nationkey") == F.col("n_nationkey"))
        .join(t["orders"], F.col("o_custkey") == F.col("c_custkey"))
        .join(t["lineitem"], F.col("l_orderkey") == F.col("o_orderkey"))
        .join(t["supplier"], (F.col("l_suppkey") == F.col("s_suppkey")) & (F.col("c_nationkey") == F.col("s_nationkey")))
        .where((F.col("o_orderdate") >= datetime.date(1994, 1, 1)) & (F.col("o_orderdate") < datetime.date(1995, 1, 1)))
        .groupBy("n_name")
        .agg(F.sum(s_revenue()).alias("revenue"))
        .orderBy(F.col("revenue").desc())
    )


def s6(spark):
    return (
        spark.table("lineitem")
        .filter("l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01'")
        .filter(F.col("l_discount").between(0.05, 0.07))
        .filter(F.col("l_quantity") < 24)
        .agg(F.sum(F.col("l_extendedprice") * F.col("l_discount")).alias("revenue"))
    )


def s10(spark):
    t = {name: spark.table(name) for name in TABLES}
    return (
        t["customer"]
        .join(t["orders"], F.col("c_custkey") == F.col("o_custkey"))
        .join(t["lineitem"], F.col("l_orderkey") == F.col("o_orderkey"))
        .join(t["nation"], F.col("c_nationkey") == F.col("n_nationkey"))
        .where((F.col("o_orderdate") >= datetime.date(1993, 10, 1)) & (F.col("o_orderdate") < datetime.date(1994, 1, 1)))
        .where(F.col("l_returnflag") == "R")
        .groupBy("c_custkey", "c_name", "c_acctbal", "c_phone", "n_name", "c_address", "c_comment")
        .agg(F.sum(s_revenue()).alias("revenue"))
        .select("c_custkey", "c_name", "revenue", "c_acctbal", "n_name", "c_address", "c_phone", "c_comment")
        .orderBy(F.col("revenue").desc(), "c_custkey")
        .limit(20)
    )


def s12(spark):
    urgent = F.col("o_orderpriority").isin("1-URGENT", "2-HIGH")
    return (
        spark.table("orders")
        .join(spark.table("lineitem"), F.col("o_orderkey") == F.col("l_orderkey"))
        .where(F.col("l_shipmode").isin(["MAIL", "SHIP"]))
        .where((F.col("l_commitdate") < F.col("l_receiptdate")) & (F.col("l_shipdate") < F.col("l_commitdate")))
        .where((F.col("l_receiptdate") >= datetime.date(1994, 1, 1)) & (F.col("l_receiptdate") < datetime.date(1995, 1, 1)))
        .groupBy("l_shipmode")
        .agg(
            F.sum(F.when(urgent, 1).otherwise(0)).alias("high_line_count"),
            F.sum(F.when(~urgent, 1).otherwise(0)).alias("low_line_count"),
        )
        .orderBy("l_shipmode")
    )


def s14(spark):
    promo = F.when(F.col("p_type").startswith("PROMO"), s_revenue()).otherwise(0)
    return (
        spark.table("lineitem")
        .join(spark.table("part"), F.col("l_partkey") == F.col("p_partkey"))
        .where((F.col("l_shipdate") >= datetime.date(1995, 9, 1)) & (F.col("l_shipdate") < datetime.date(1995, 10, 1)))
        .agg((F.lit(100.0) * F.sum(promo) / F.sum(s_revenue())).alias("promo_revenue"))
    )


SPARK_QUERIES = {1: s1, 3: s3, 5: s5, 6: s6, 10: s10, 12: s12, 14: s14}


@pytest.fixture(scope="session")
def duck(tpch):
    db = duckdb.connect()
    for name in TABLES:
        table = tpch.table(name).to_arrow()
        db.register(f"{name}_arrow", table)
        db.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_arrow")
    return db


@pytest.mark.parametrize("number", sorted(SPARK_QUERIES), ids=lambda n: f"q{n}")
def test_pyspark_names_give_duckdb_answers(tpch, duck, number):
    spark = pondra.spark.session(tpch)
    frame = SPARK_QUERIES[number](spark)
    ours = [tuple(row) for row in frame.collect()]
    theirs = duck.execute((QUERIES / f"q{number}.sql").read_text()).fetchall()
    agree(ours, theirs, f"q{number}")
    assert frame.toPandas().shape[0] == len(theirs)
