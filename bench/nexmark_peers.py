"""Runs one Nexmark query over the events of `pondra nexmark gen --parquet` on a peer engine.

Usage: nexmark_peers.py ENGINE DATA_DIR QUERY WORK_DIR
  duckdb:  appends each commit's rows to tables of a database file in WORK_DIR (durable on
           commit), then computes the query's result table again from all rows, as a store
           without incremental views keeps a result current.
  pathway: reads the three tables as CSV (written to WORK_DIR before the clock starts) in
           Pathway's static mode, all events as one input, and writes the query's changes to
           a CSV file.
Prints `seconds\t<s>`, `events\t<n>` and `rows\t<rows of the result>`.
"""

import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

engine, data, query, work = sys.argv[1], Path(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
TABLES = ["person", "auction", "bid"]
ROWS_PER_COMMIT = b"pondra.nexmark.rows_per_commit"


def read(table):
    file = pq.ParquetFile(data / f"{table}.parquet")
    counts = file.metadata.metadata[ROWS_PER_COMMIT].decode()
    return file.read(), [int(n) for n in counts.split(",")] if counts else []


def events():
    return sum(pq.ParquetFile(data / f"{t}.parquet").metadata.num_rows for t in TABLES)


def run_duckdb():
    import duckdb

    sql = (Path(__file__).parent / "nexmark" / "duckdb" / f"{query}.sql").read_text()
    tables = {t: read(t) for t in TABLES}
    conn = duckdb.connect(str(work / "duckdb.db"))
    for t, (rows, _) in tables.items():
        conn.register("empty_rows", rows.slice(0, 0))
        conn.execute(f"CREATE TABLE {t} AS SELECT * FROM empty_rows")
        conn.unregister("empty_rows")
    commits = len(tables["bid"][1])
    offsets = {t: 0 for t in TABLES}
    started = time.perf_counter()
    for commit in range(commits):
        for t, (rows, per_commit) in tables.items():
            part = rows.slice(offsets[t], per_commit[commit])
            offsets[t] += per_commit[commit]
            conn.register("arrived", part)
            conn.execute(f"INSERT INTO {t} SELECT * FROM arrived")
            conn.unregister("arrived")
        conn.execute(f"CREATE OR REPLACE TABLE result AS {sql}")
    seconds = time.perf_counter() - started
    rows = conn.execute("SELECT count(*) FROM result").fetchone()[0]
    return seconds, rows


def write_csv(table):
    """The table as CSV with times as integer microseconds, which Pathway's windows take."""
    rows, _ = read(table)
    # `id` names Pathway's row pointers: the tables' ids are `pid` and `aid` here.
    if "id" in rows.column_names:
        names = [{"person": "pid", "auction": "aid"}[table] if n == "id" else n for n in rows.column_names]
        rows = rows.rename_columns(names)
    for name in ("date_time", "expires"):
        if name in rows.column_names:
            i = rows.schema.get_field_index(name)
            rows = rows.set_column(i, name, pc.cast(rows[name], pa.int64()))
    path = work / f"{table}.csv"
    pcsv.write_csv(rows, path)
    return str(path)


def run_pathway():
    import pathway as pw

    class Person(pw.Schema):
        pid: int
        name: str
        email_address: str
        credit_card: str
        city: str
        state: str
        date_time: int
        extra: str

    class Auction(pw.Schema):
        aid: int
        item_name: str
        description: str
        initial_bid: int
        reserve: int
        date_time: int
        expires: int
        seller: int
        category: int
        extra: str

    class Bid(pw.Schema):
        auction: int
        bidder: int
        price: int
        channel: str
        url: str
        date_time: int
        extra: str

    schemas = {"person": Person, "auction": Auction, "bid": Bid}
    needs = {
        "q3": ["auction", "person"],
        "q4": ["auction", "bid"],
        "q8": ["person", "auction"],
        "q9": ["auction", "bid"],
    }.get(query, ["bid"])
    paths = {t: write_csv(t) for t in TABLES}
    started = time.perf_counter()
    inputs = {t: pw.io.csv.read(paths[t], schema=schemas[t], mode="static") for t in TABLES}
    result = PATHWAY_QUERIES[query](pw, **{t: inputs[t] for t in needs})
    # Every event is taken in, as by the other engines, whether the query reads its stream.
    for t in TABLES:
        if t not in needs:
            pw.io.null.write(inputs[t])
    out = work / "pathway_out.csv"
    pw.io.csv.write(result, str(out))
    pw.run(monitoring_level=pw.MonitoringLevel.NONE)
    seconds = time.perf_counter() - started
    diffs = pcsv.read_csv(out)["diff"]
    return seconds, pc.sum(diffs).as_py() or 0


SECOND = 1_000_000  # times are microseconds


def q0(pw, bid):
    return bid.select(pw.this.auction, pw.this.bidder, pw.this.price, pw.this.date_time)


def q1(pw, bid):
    return bid.select(
        pw.this.auction, pw.this.bidder, price=pw.this.price * 0.908, date_time=pw.this.date_time
    )


def q2(pw, bid):
    return bid.filter(pw.this.auction % 123 == 0).select(pw.this.auction, pw.this.price)


def q3(pw, auction, person):
    sellers = auction.filter(pw.this.category == 10)
    local = person.filter((pw.this.state == "or") | (pw.this.state == "id") | (pw.this.state == "ca"))
    joined = sellers.join(local, sellers.seller == local.pid)
    return joined.select(local.name, local.city, local.state, sellers.aid)


def in_lifetime(pw, auction, bid):
    joined = auction.join(bid, auction.aid == bid.auction).select(
        auction.aid,
        item_name=auction.item_name,
        seller=auction.seller,
        category=auction.category,
        opened=auction.date_time,
        expires=auction.expires,
        bidder=bid.bidder,
        price=bid.price,
        bid_date_time=bid.date_time,
    )
    return joined.filter(
        (pw.this.bid_date_time >= pw.this.opened) & (pw.this.bid_date_time <= pw.this.expires)
    )


def q4(pw, auction, bid):
    winning = in_lifetime(pw, auction, bid).groupby(pw.this.aid, pw.this.category).reduce(
        pw.this.category, final=pw.reducers.max(pw.this.price)
    )
    return winning.groupby(pw.this.category).reduce(
        pw.this.category, avg=pw.reducers.avg(pw.this.final)
    )


def q5(pw, bid):
    counts = bid.windowby(
        bid.date_time,
        window=pw.temporal.sliding(hop=2 * SECOND, duration=10 * SECOND),
        instance=bid.auction,
    ).reduce(
        auction=pw.this._pw_instance,
        starttime=pw.this._pw_window_start,
        num=pw.reducers.count(),
    )
    most = counts.groupby(pw.this.starttime).reduce(pw.this.starttime, maxn=pw.reducers.max(pw.this.num))
    joined = counts.join(most, counts.starttime == most.starttime).select(
        counts.auction, counts.num, counts.starttime, most.maxn
    )
    return joined.filter(pw.this.num >= pw.this.maxn).select(pw.this.auction, pw.this.num, pw.this.starttime)


def q7(pw, bid):
    windowed = bid.select(
        pw.this.auction,
        pw.this.price,
        pw.this.bidder,
        pw.this.date_time,
        window=pw.this.date_time // (10 * SECOND),
    )
    most = windowed.groupby(pw.this.window).reduce(pw.this.window, maxprice=pw.reducers.max(pw.this.price))
    joined = windowed.join(
        most, windowed.window == most.window, windowed.price == most.maxprice
    )
    return joined.select(windowed.auction, windowed.price, windowed.bidder, windowed.date_time)


def q8(pw, person, auction):
    window = 10 * SECOND
    people = person.select(pw.this.pid, pw.this.name, start=pw.this.date_time // window).groupby(
        pw.this.pid, pw.this.name, pw.this.start
    ).reduce(pw.this.pid, pw.this.name, pw.this.start)
    sellers = auction.select(pw.this.seller, start=pw.this.date_time // window).groupby(
        pw.this.seller, pw.this.start
    ).reduce(pw.this.seller, pw.this.start)
    joined = people.join(sellers, people.pid == sellers.seller, people.start == sellers.start)
    return joined.select(people.pid, people.name, starttime=people.start * window)


def q9(pw, auction, bid):
    bids = in_lifetime(pw, auction, bid)
    best = bids.groupby(pw.this.aid).reduce(row=pw.reducers.argmax(pw.this.price))
    winners = bids.ix(best.row)
    return winners.select(
        winners.aid, winners.item_name, winners.seller, winners.category,
        winners.bidder, winners.price, winners.bid_date_time,
    )


PATHWAY_QUERIES = {"q0": q0, "q1": q1, "q2": q2, "q3": q3, "q4": q4, "q5": q5, "q7": q7, "q8": q8, "q9": q9}

if engine == "duckdb":
    seconds, rows = run_duckdb()
elif engine == "pathway":
    seconds, rows = run_pathway()
else:
    sys.exit(f"unknown engine {engine}")
print(f"seconds\t{seconds:.3f}")
print(f"events\t{events()}")
print(f"rows\t{rows}")
