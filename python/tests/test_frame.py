"""`pondra.Frame`: Polars' names, each frame one SQL statement, checked against Polars itself
on the same rows."""

import datetime

import polars as pl
import pytest

import pondra
from pondra import col, lit, when


@pytest.fixture
def sales(con):
    con.sql("CREATE TABLE sales (id INT, shop VARCHAR, amount DOUBLE, qty INT, day DATE)")
    con.sql(
        "INSERT INTO sales VALUES "
        "(1, 'north', 10.0, 1, DATE '2024-01-05'), (2, 'north', 20.0, 2, DATE '2024-02-05'), "
        "(3, 'south', 5.0, NULL, DATE '2023-12-31'), (4, 'east', NULL, 4, DATE '2024-03-01'), "
        "(5, 'south', 7.5, 3, DATE '2024-02-29'), (6, NULL, 1.0, 1, NULL)"
    )
    return con.table("sales")


@pytest.fixture
def native(sales):
    """The same rows as a Polars frame."""
    return pl.from_arrow(sales.to_arrow())


def same(ours, theirs, sort_by=None):
    ours = ours.collect() if isinstance(ours, pondra.Frame) else ours
    theirs = theirs.collect() if isinstance(theirs, pl.LazyFrame) else theirs
    assert ours.columns == theirs.columns, (ours.columns, theirs.columns)
    if sort_by:
        ours, theirs = ours.sort(sort_by, nulls_last=True), theirs.sort(sort_by, nulls_last=True)
    assert ours.to_dicts() == theirs.to_dicts()


def test_each_frame_is_one_statement(sales):
    frame = sales.filter(col("amount") > 5).select("id", (col("amount") * 2).alias("double"))
    sql = frame.sql()
    assert sql.count("SELECT") == 1 and sql.startswith("SELECT")
    assert "WHERE" in sql
    assert frame.columns == ["id", "double"]


def test_verbs_agree_with_polars(sales, native):
    def both(build, sort_by=None):
        same(build(sales, pondra), build(native.lazy(), pl), sort_by)

    both(lambda f, ns: f.filter(ns.col("amount") > 6).select("id", "shop"), "id")
    both(lambda f, ns: f.with_columns((ns.col("amount") * ns.col("qty")).alias("total")), "id")
    both(lambda f, ns: f.with_columns(ns.col("amount").fill_null(0).alias("amount")), "id")
    both(lambda f, ns: f.sort("amount", descending=True, nulls_last=True).head(3))
    both(lambda f, ns: f.sort(["shop", "id"], descending=[True, False]).select("id"))
    both(lambda f, ns: f.select(ns.col("amount").sum(), ns.col("qty").mean(), ns.col("shop").n_unique()))
    both(
        lambda f, ns: f.group_by("shop").agg(
            ns.col("amount").sum().alias("total"), ns.len().alias("rows"), ns.col("qty").max()
        ),
        "shop",
    )
    both(lambda f, ns: f.filter(ns.col("shop").is_in(["north", "east"])).select("id"), "id")
    both(lambda f, ns: f.filter(ns.col("day").is_between(datetime.date(2024, 1, 1), datetime.date(2024, 2, 29))).select("id"), "id")
    both(lambda f, ns: f.filter(ns.col("shop").str.contains("^no")).select("id"), "id")
    both(lambda f, ns: f.filter(ns.col("shop").str.starts_with("so")).select("id"), "id")
    both(lambda f, ns: f.select("id", ns.col("day").dt.year().alias("y"), ns.col("day").dt.month().alias("m")), "id")
    both(lambda f, ns: f.select("id", ns.col("qty").cast(pl.Float64).alias("q")), "id")
    both(
        lambda f, ns: f.select(
            "id",
            ns.when(ns.col("amount") > 9).then(ns.lit("big")).when(ns.col("amount") > 2).then(ns.lit("mid")).otherwise(ns.lit("small")).alias("size"),
        ),
        "id",
    )
    both(lambda f, ns: f.select("shop").unique(), "shop")
    both(lambda f, ns: f.rename({"amount": "price"}).drop("day").filter(ns.col("price") < 8), "id")
    both(lambda f, ns: f.filter(~(ns.col("amount") > 6) | ns.col("qty").is_null()).select("id"), "id")


def test_joins_agree_with_polars(con, sales, native):
    con.sql("CREATE TABLE shops (shop VARCHAR, region VARCHAR, id INT)")
    con.sql("INSERT INTO shops VALUES ('north', 'n', 100), ('south', 's', 200), ('west', 'w', 300)")
    shops = con.table("shops")
    native_shops = pl.from_arrow(shops.to_arrow())
    for how in ["inner", "left", "semi", "anti"]:
        ours = sales.join(shops, on="shop", how=how)
        theirs = native.join(native_shops, on="shop", how=how)
        same(ours, theirs, "id")
    ours = sales.join(shops, left_on="shop", right_on="shop", how="inner").select("id", "region", "id_right")
    theirs = native.join(native_shops, left_on="shop", right_on="shop", how="inner").select("id", "region", "id_right")
    same(ours, theirs, "id")


def test_results_as_pandas_arrow_and_rows(sales):
    frame = sales.filter(col("id") < 3).sort("id")
    assert list(frame.to_pandas()["id"]) == [1, 2]
    assert frame.to_arrow().num_rows == 2
    assert [r[0] for r in frame.fetchall()] == [1, 2]
    assert isinstance(frame.collect(), pl.DataFrame)


def test_bad_calls_raise_with_the_engine_message(sales):
    with pytest.raises(pondra.Error, match="no_such"):
        sales.select("no_such").collect()
    with pytest.raises(pondra.Error):
        sales.filter(col("shop") > 3).collect()
    with pytest.raises(ValueError, match="not an aggregate"):
        sales.group_by("shop").agg(col("amount"))
    with pytest.raises(TypeError, match="truth value"):
        sales.filter((col("id") > 1) and (col("id") < 3))
    with pytest.raises(ValueError):
        sales.join(sales, how="sideways", on="id")
    assert isinstance(lit(1) + 1, pondra.Expr) and isinstance(when(col("id") > 1).then(1).otherwise(0), pondra.Expr)
