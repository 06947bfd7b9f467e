//! Changing rows, checked against DuckDB: a seeded random run of inserts, upserts into a keyed
//! table (a keyed INSERT, `INSERT OR REPLACE`, `ON CONFLICT DO NOTHING | DO UPDATE`), ranged
//! UPDATEs, conditional DELETEs and MERGE INTO with all three clause kinds, on an append table
//! and a keyed one. Every statement runs on a Pondra node and on DuckDB
//! (`tests/python/duckdb_oracle.py`); both must accept or refuse it, and every 50 statements
//! both tables must hold the same rows.
//!
//! At each check, each table's change feed from the first commit must rebuild it too. After
//! every statement, each materialized view over the tables must equal its defining query
//! (ADR 0049: views follow updates, deletes and upserts by retraction), and each view over
//! joins must equal what DuckDB answers to it (ADR 0054: inner, outer and three-table joins,
//! aggregated or not, follow changes to either side; views over views), and so must views over
//! TUMBLE and HOP windows of a third table whose rows arrive out of order. Each view of the
//! first two kinds is created a second time written with CTEs, and must hold the same rows.
//!
//! `cargo test -p pondra-tests --test e2e changes_oracle::` runs 400 statements;
//! `cargo test --release -p pondra-tests --test e2e changes_oracle:: -- --ignored` runs 20,000.
//! `PONDRA_ORACLE_SEED` replays a seed, `PONDRA_ORACLE_STATEMENTS` sets the length.

use crate::common::oracle::Oracle;

use std::sync::Arc;

use pondra_cluster::{Node, NodeOptions};
use pondra_tests::{map_cells, run_sql};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const CHECK_EVERY: usize = 50;
const TABLES: [&str; 2] = ["appended", "keyed"];
const SETUP: [&str; 2] = [
    "CREATE TABLE appended (k INT, v INT, s VARCHAR)",
    "CREATE TABLE keyed (k INT PRIMARY KEY, v INT, s VARCHAR)",
];

/// `events` in each engine: Pondra's with a watermark 10 seconds behind its latest time
/// (ADR 0055), which the generator follows for DuckDB.
const EVENTS: (&str, &str) = (
    "CREATE TABLE events (k INT, ts TIMESTAMP, v INT, WATERMARK FOR ts AS ts - INTERVAL '10' SECOND)",
    "CREATE TABLE events (k INT, ts TIMESTAMP, v INT)",
);
const WATERMARK_DELAY_SECONDS: i64 = 10;
/// `TIMESTAMP '2024-01-01 00:00:00'`, the generator's first event time, in seconds.
const FIRST_EVENT_SECONDS: i64 = 1_704_067_200;

/// A view that emits on window close (ADR 0055), with DuckDB's query for its windows. DuckDB
/// keeps what the view should show in `events_closed`: each window's rows as its table held
/// them in the statement whose watermark closed it.
const CLOSED_VIEW: (&str, &str, &str) = (
    "events_closed",
    "SELECT k, window_end, count(*) AS n, sum(v) AS total, min(v) AS least, max(v) AS most \
     FROM TUMBLE(events, ts, INTERVAL '10' SECOND) GROUP BY k, window_end EMIT ON WINDOW CLOSE",
    "SELECT k, make_timestamp(b * 10000000 + 10000000) AS window_end, count(*) AS n, \
     sum(v) AS total, min(v) AS least, max(v) AS most \
     FROM (SELECT *, CAST(floor(epoch_us(ts) / 10000000) AS BIGINT) AS b FROM events) \
     GROUP BY k, b",
);

/// Materialized views over the tables, by name and defining query: every kind of state
/// (counts, sums, averages, mins and maxes, count(DISTINCT) by group, a global aggregate, rows,
/// DISTINCT).
const VIEWS: [(&str, &str); 5] = [
    (
        "keyed_by_s",
        "SELECT s, count(*) AS n, count(v) AS nv, sum(v) AS total, avg(v) AS mean, \
         min(v) AS least, max(v) AS greatest, count(DISTINCT v) AS kinds FROM keyed GROUP BY s",
    ),
    (
        "appended_buckets",
        "SELECT k % 5 AS bucket, sum(v) AS total, min(s) AS least_s, max(v) AS most \
         FROM appended WHERE v IS NOT NULL OR s IS NOT NULL GROUP BY k % 5 HAVING count(*) > 1",
    ),
    (
        "keyed_totals",
        "SELECT count(*) AS n, sum(v) AS total, min(k) AS least, max(v) AS most FROM keyed",
    ),
    (
        "appended_rows",
        "SELECT k, s, v * 2 AS doubled FROM appended WHERE k < 30",
    ),
    ("keyed_texts", "SELECT DISTINCT s FROM keyed"),
];

/// Materialized views over joins of the two tables, and over other views, checked against
/// DuckDB's answers (where the views they read are plain views): a join aggregate with min and
/// max, a left join counting the rows without a match, a view of joined rows with a condition
/// across the sides, a full join on two keys (NULLs never match), a three-table join reading the
/// keyed table twice, views of rows and aggregates over aggregating views and over a view
/// of joined rows, and ASOF joins (each appended row with its key's keyed row if its value is
/// at or below the appended one: one candidate per key, so DuckDB's choice among ties never
/// arises).
const JOIN_VIEWS: [(&str, &str); 10] = [
    (
        "asof_matched",
        "SELECT a.k, a.v, a.s, b.v AS matched, b.s AS label \
         FROM appended a ASOF JOIN keyed b ON a.k = b.k AND a.v >= b.v",
    ),
    (
        "asof_by_label",
        "SELECT b.s, count(*) AS n, sum(a.v - b.v) AS ahead \
         FROM appended a ASOF JOIN keyed b ON a.k = b.k AND a.v > b.v GROUP BY b.s",
    ),
    (
        "join_by_s",
        "SELECT a.s, count(*) AS n, sum(a.v) AS total, min(k.v) AS least, \
         max(a.v + k.v) AS most, count(DISTINCT k.s) AS texts \
         FROM appended a JOIN keyed k ON a.k = k.k GROUP BY a.s",
    ),
    (
        "join_unmatched",
        "SELECT appended.s, count(*) - count(keyed.k) AS orphans, count(*) AS n \
         FROM appended LEFT JOIN keyed ON appended.k = keyed.k GROUP BY appended.s",
    ),
    (
        "join_rows",
        "SELECT a.k, a.v, k.s FROM appended a JOIN keyed k ON a.k = k.k WHERE a.v > k.v - 20",
    ),
    (
        "join_full",
        "SELECT a.v AS av, k.v AS kv FROM appended a FULL JOIN keyed k ON a.k = k.k AND a.s = k.s",
    ),
    (
        "join_three",
        "SELECT x.s, count(*) AS n, sum(z.v) AS total FROM keyed x JOIN appended y \
         ON x.k = y.k JOIN keyed z ON z.k = y.v GROUP BY x.s",
    ),
    (
        "join_by_s_busy",
        "SELECT s, n, least FROM join_by_s WHERE n > 1",
    ),
    (
        "keyed_by_s_rollup",
        "SELECT count(*) AS groups, sum(n) AS held, max(greatest) AS top FROM keyed_by_s",
    ),
    (
        "join_rows_by_s",
        "SELECT s, count(*) AS n, sum(v) AS total FROM join_rows GROUP BY s",
    ),
];

/// Materialized views over event-time windows of `events`, whose rows arrive out of order
/// (each up to 20 seconds behind the latest) and are updated and deleted, and a top-N per key:
/// by name, as Pondra spells them (RisingWave's and Flink's forms), and as DuckDB computes the
/// same windows.
const WINDOW_VIEWS: [(&str, &str, &str); 5] = [
    (
        "events_tumble",
        "SELECT k, window_start, window_end, count(*) AS n, sum(v) AS total, min(v) AS least, \
         count(DISTINCT v) AS kinds FROM TUMBLE(events, ts, INTERVAL '10' SECOND) \
         GROUP BY k, window_start, window_end",
        "SELECT k, make_timestamp(b * 10000000) AS window_start, \
         make_timestamp(b * 10000000 + 10000000) AS window_end, count(*) AS n, sum(v) AS total, \
         min(v) AS least, count(DISTINCT v) AS kinds \
         FROM (SELECT *, CAST(floor(epoch_us(ts) / 10000000) AS BIGINT) AS b \
         FROM events) GROUP BY k, b",
    ),
    (
        "events_hop",
        "SELECT window_start, count(*) AS n, max(v) AS most \
         FROM HOP(events, ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND) GROUP BY window_start",
        "SELECT make_timestamp(s) AS window_start, count(*) AS n, max(v) AS most FROM events, \
         generate_series(CAST(floor(epoch_us(ts) / 5000000) AS BIGINT) * 5000000 - 10000000, \
         CAST(floor(epoch_us(ts) / 5000000) AS BIGINT) * 5000000, 5000000) AS g(s) \
         WHERE s + 15000000 > epoch_us(ts) GROUP BY s",
    ),
    (
        "events_sessions",
        "SELECT k, window_start, window_end, count(*) AS n, sum(v) AS total, min(v) AS least \
         FROM SESSION(events, ts, INTERVAL '4' SECOND, k) GROUP BY k, window_start, window_end",
        "SELECT k, make_timestamp(min(us)) AS window_start, \
         make_timestamp(max(us) + 4000000) AS window_end, count(*) AS n, sum(v) AS total, \
         min(v) AS least FROM (SELECT *, sum(CASE WHEN prev IS NULL OR us - prev >= 4000000 \
         THEN 1 ELSE 0 END) OVER (PARTITION BY k ORDER BY us) AS sid \
         FROM (SELECT *, epoch_us(ts) AS us, \
         lag(epoch_us(ts)) OVER (PARTITION BY k ORDER BY ts) AS prev FROM events)) \
         GROUP BY k, sid",
    ),
    (
        "events_top_two",
        "SELECT k, v, ts, rn FROM (SELECT k, v, ts, row_number() OVER (PARTITION BY k \
         ORDER BY v DESC NULLS LAST, ts) AS rn FROM events) WHERE rn <= 2",
        "SELECT k, v, ts, rn FROM (SELECT k, v, ts, row_number() OVER (PARTITION BY k \
         ORDER BY v DESC NULLS LAST, ts) AS rn FROM events) WHERE rn <= 2",
    ),
    (
        "events_windowed_rows",
        "SELECT k, v, window_end FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), \
         INTERVAL '30' SECOND)) WHERE v > 0",
        "SELECT k, v, make_timestamp(CAST(floor(epoch_us(ts) / 30000000) AS BIGINT) * 30000000 \
         + 30000000) FROM events WHERE v > 0",
    ),
];

/// An ASOF join whose right rows tie on the best time (an appended table holds many rows of
/// one key and value): each keyed row keeps one match, the least of the tied rows by their
/// values, in the view as in its query.
const ASOF_TIES: (&str, &str) = (
    "asof_ties",
    "SELECT a.k, a.v, b.s, b.v AS matched FROM keyed a ASOF JOIN appended b \
     ON a.k = b.k AND a.v >= b.v",
);

/// The relations the CTE-written copies of the views read through a CTE.
const CTE_READS: [&str; 5] = ["appended", "keyed", "join_by_s", "keyed_by_s", "join_rows"];

/// `query` written with a CTE for each relation of `CTE_READS` it reads (`WITH keyed_w AS
/// (SELECT * FROM keyed) ... FROM keyed_w AS keyed`, read twice where the query reads it
/// twice): every view form checked against its query is checked so written too.
fn with_ctes(query: &str) -> String {
    let words: Vec<&str> = query.split_whitespace().collect();
    let mut read = Vec::new();
    let mut out = Vec::new();
    for (i, word) in words.iter().enumerate() {
        let after_from = i > 0 && matches!(words[i - 1], "FROM" | "JOIN");
        if !after_from || !CTE_READS.contains(word) {
            out.push(word.to_string());
            continue;
        }
        if !read.contains(word) {
            read.push(*word);
        }
        // Keywords are upper case in these queries; an alias is a lower-case word.
        let aliased = words
            .get(i + 1)
            .is_some_and(|next| next.chars().all(|c| c.is_ascii_lowercase()));
        out.push(match aliased {
            true => format!("{word}_w"),
            false => format!("{word}_w AS {word}"),
        });
    }
    let ctes: Vec<String> = read
        .iter()
        .map(|r| format!("{r}_w AS (SELECT * FROM {r})"))
        .collect();
    format!("WITH {} {}", ctes.join(", "), out.join(" "))
}

/// The count tables of the views' mins and maxes (ADR 0052), by view and position, with the
/// query over the base table that gives the same rows: per group, each value and how many rows
/// hold it.
const VALUE_COUNTS: [(&str, usize, &str); 5] = [
    (
        "keyed_by_s",
        0,
        "SELECT s, v, count(*) FROM keyed WHERE v IS NOT NULL GROUP BY s, v",
    ),
    (
        "appended_buckets",
        0,
        "SELECT k % 5, s, count(*) FROM appended WHERE (v IS NOT NULL OR s IS NOT NULL) \
         AND s IS NOT NULL GROUP BY k % 5, s",
    ),
    (
        "appended_buckets",
        1,
        "SELECT k % 5, v, count(*) FROM appended WHERE v IS NOT NULL GROUP BY k % 5, v",
    ),
    (
        "keyed_totals",
        0,
        "SELECT k, count(*) FROM keyed WHERE k IS NOT NULL GROUP BY k",
    ),
    (
        "keyed_totals",
        1,
        "SELECT v, count(*) FROM keyed WHERE v IS NOT NULL GROUP BY v",
    ),
];

/// One statement, as each engine spells it.
struct Statement {
    pondra: String,
    duckdb: String,
}

impl Statement {
    fn same(sql: String) -> Statement {
        Statement {
            duckdb: sql.clone(),
            pondra: sql,
        }
    }
}

/// The random statements: keys from a small range so that changes meet rows.
struct Generator {
    rng: StdRng,
    /// Seconds since the first event: the latest event time so far.
    clock: i64,
    /// Seconds since the first event of the greatest event time written, if any.
    greatest: Option<i64>,
    /// How many rows of `events` were late when written (ADR 0055).
    late_rows: u64,
}

impl Generator {
    fn key(&mut self) -> i32 {
        self.rng.random_range(0..40)
    }

    fn value(&mut self) -> String {
        match self.rng.random_range(0..10) {
            0 => "CAST(NULL AS INT)".into(),
            _ => self.rng.random_range(-50..50).to_string(),
        }
    }

    fn text(&mut self) -> String {
        match self.rng.random_range(0..5) {
            0 => "CAST(NULL AS VARCHAR)".into(),
            n => format!("'{}'", ["a", "b", "c", "d"][n - 1]),
        }
    }

    /// `count` distinct keys.
    fn keys(&mut self, count: usize) -> Vec<i32> {
        let mut keys = Vec::new();
        while keys.len() < count {
            let key = self.key();
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        keys
    }

    fn rows(&mut self, keys: &[i32]) -> String {
        let rows: Vec<String> = keys
            .iter()
            .map(|k| format!("({k}, {}, {})", self.value(), self.text()))
            .collect();
        rows.join(", ")
    }

    fn table(&mut self) -> &'static str {
        TABLES[self.rng.random_range(0..2)]
    }

    fn condition(&mut self) -> String {
        let (lo, width) = (self.key(), self.rng.random_range(0..10));
        match self.rng.random_range(0..4) {
            0 => format!("k BETWEEN {lo} AND {}", lo + width),
            1 => format!("v < {}", self.rng.random_range(-50..50)),
            2 => format!("k % {} = 0", width + 2),
            _ => "s IS NULL".into(),
        }
    }

    /// A change to `events`: mostly inserts of rows up to 20 seconds behind the clock, which
    /// moves on a few seconds each time; some updates and deletes.
    fn event(&mut self) -> Statement {
        match self.rng.random_range(0..6) {
            0 => Statement::same(format!(
                "UPDATE events SET v = v + {} WHERE k = {}",
                self.value(),
                self.rng.random_range(0..5)
            )),
            1 => Statement::same(format!(
                "DELETE FROM events WHERE v < {}",
                self.rng.random_range(-60..-20)
            )),
            _ => {
                self.clock += self.rng.random_range(0..4);
                let watermark = self.greatest.map(|g| g - WATERMARK_DELAY_SECONDS);
                let rows: Vec<String> = (0..self.rng.random_range(1..4))
                    .map(|_| {
                        let behind = self.rng.random_range(0..=20).min(self.clock);
                        let time = self.clock - behind;
                        self.late_rows += u64::from(watermark.is_some_and(|w| time < w));
                        self.greatest = Some(self.greatest.map_or(time, |g| g.max(time)));
                        format!(
                            "({}, TIMESTAMP '2024-01-01 00:00:00' + INTERVAL '{time}' SECOND, {})",
                            self.rng.random_range(0..5),
                            self.value()
                        )
                    })
                    .collect();
                let insert = format!("INSERT INTO events VALUES {}", rows.join(", "));
                let micros = |seconds: i64| (FIRST_EVENT_SECONDS + seconds) * 1_000_000;
                let closed_after = watermark.map_or(i64::MIN, micros);
                let closed_now =
                    micros(self.greatest.expect("rows written") - WATERMARK_DELAY_SECONDS);
                // The windows this insert closes, as the table holds them after it.
                let closing = format!(
                    "INSERT INTO {} SELECT * FROM ({}) WHERE epoch_us(window_end) > {closed_after} \
                     AND epoch_us(window_end) <= {closed_now}",
                    CLOSED_VIEW.0, CLOSED_VIEW.2
                );
                Statement {
                    duckdb: format!("{insert}; {closing}"),
                    pondra: insert,
                }
            }
        }
    }

    fn next(&mut self) -> Statement {
        let count = self.rng.random_range(1..5);
        match self.rng.random_range(0..13) {
            10..=12 => self.event(),
            0 | 1 => {
                let keys: Vec<i32> = (0..count).map(|_| self.key()).collect();
                Statement::same(format!("INSERT INTO appended VALUES {}", self.rows(&keys)))
            }
            2 | 3 => {
                let keys = self.keys(count);
                let rows = self.rows(&keys);
                let insert = format!("INSERT INTO keyed VALUES {rows}");
                match self.rng.random_range(0..4) {
                    // A keyed table's INSERT replaces the row of a key it holds.
                    0 => Statement {
                        duckdb: format!("INSERT OR REPLACE INTO keyed VALUES {rows}"),
                        pondra: insert,
                    },
                    1 => Statement::same(format!("INSERT OR REPLACE INTO keyed VALUES {rows}")),
                    2 => Statement::same(format!("{insert} ON CONFLICT (k) DO NOTHING")),
                    _ => Statement::same(format!(
                        "{insert} ON CONFLICT (k) DO UPDATE SET v = keyed.v + excluded.v"
                    )),
                }
            }
            4 | 5 => {
                let table = self.table();
                let (delta, text, condition) = (self.value(), self.text(), self.condition());
                Statement::same(format!(
                    "UPDATE {table} SET v = v + {delta}, s = {text} WHERE {condition}"
                ))
            }
            6 => {
                let table = self.table();
                let condition = self.condition();
                Statement::same(format!("DELETE FROM {table} WHERE {condition}"))
            }
            _ => self.merge(count),
        }
    }

    /// A MERGE from distinct source keys, with its clauses in a random order and some
    /// conditions.
    fn merge(&mut self, count: usize) -> Statement {
        let table = self.table();
        let keys = self.keys(count);
        let source: Vec<String> = keys
            .iter()
            .map(|k| format!("({k}, {})", self.value()))
            .collect();
        let threshold = self.rng.random_range(-50..50);
        let mut matched = [
            format!("WHEN MATCHED AND src.v < {threshold} THEN DELETE"),
            format!(
                "WHEN MATCHED THEN UPDATE SET v = src.v, s = {}",
                self.text()
            ),
        ];
        // Now and then the unconditional clause first: both engines refuse the unreachable one.
        if self.rng.random_bool(0.1) {
            matched.reverse();
        }
        let inserted = match self.rng.random_bool(0.5) {
            true => "WHEN NOT MATCHED THEN INSERT VALUES (src.k, src.v, 'new')",
            false => {
                "WHEN NOT MATCHED AND src.v IS NOT NULL THEN INSERT (k, v) VALUES (src.k, src.v)"
            }
        };
        Statement::same(format!(
            "MERGE INTO {table} USING (VALUES {}) AS src(k, v) ON {table}.k = src.k {} {inserted}",
            source.join(", "),
            matched.join(" ")
        ))
    }
}

/// The rows `sql` answers on `node`, sorted, as the oracle writes them (a timestamp as
/// Python writes it, with a space before the time).
fn sorted_rows(node: &Arc<Node>, runtime: &tokio::runtime::Runtime, sql: &str) -> Vec<String> {
    let (_, batches) = run_sql(node, runtime, sql).unwrap().expect("rows");
    let cell = |column: &dyn arrow::array::Array, _, _, text: String| match column.data_type() {
        arrow::datatypes::DataType::Timestamp(..) => text.replacen('T', " ", 1),
        _ => text,
    };
    let mut rows: Vec<String> = map_cells(&batches, cell)
        .into_iter()
        .map(|row| row.join("\t"))
        .collect();
    rows.sort();
    rows
}

/// Each table's rows on `node`, sorted, as the oracle writes them.
fn pondra_rows(node: &Arc<Node>, runtime: &tokio::runtime::Runtime) -> Vec<Vec<String>> {
    TABLES
        .iter()
        .map(|table| sorted_rows(node, runtime, &format!("SELECT * FROM {table}")))
        .collect()
}

/// Fails unless every view holds what its defining query answers, and every view over joins
/// what DuckDB answers to it.
fn check_views(
    node: &Arc<Node>,
    runtime: &tokio::runtime::Runtime,
    oracle: &mut Oracle,
    context: &str,
) {
    for (view, query) in VIEWS.iter().chain([&ASOF_TIES]) {
        let expected = sorted_rows(node, runtime, query);
        let held = sorted_rows(node, runtime, &format!("SELECT * FROM {view}"));
        assert_eq!(
            held, expected,
            "{context}: view {view} differs from its query"
        );
        let held = sorted_rows(node, runtime, &format!("SELECT * FROM {view}_cte"));
        assert_eq!(
            held, expected,
            "{context}: view {view}_cte differs from its query"
        );
    }
    for (view, query) in JOIN_VIEWS {
        let expected = oracle.query(query);
        for name in [view.to_string(), format!("{view}_cte")] {
            let held = sorted_rows(node, runtime, &format!("SELECT * FROM {name}"));
            assert_eq!(
                held, expected,
                "{context}: view {name} differs from DuckDB's answer to its query"
            );
        }
    }
    for (view, _, query) in WINDOW_VIEWS {
        let held = sorted_rows(node, runtime, &format!("SELECT * FROM {view}"));
        assert_eq!(
            held,
            oracle.query(query),
            "{context}: view {view} differs from DuckDB's windows"
        );
    }
}

/// Fails unless the view that emits on window close shows exactly the windows the watermark
/// has closed, as they stood when it closed them, and the lake counts the late rows written.
fn check_closed_windows(
    node: &Arc<Node>,
    runtime: &tokio::runtime::Runtime,
    oracle: &mut Oracle,
    context: &str,
    late_rows: u64,
) {
    let view = CLOSED_VIEW.0;
    let held = sorted_rows(node, runtime, &format!("SELECT * FROM {view}"));
    assert_eq!(
        held,
        oracle.query(&format!("SELECT * FROM {view}")),
        "{context}: view {view} differs from the windows closed in DuckDB"
    );
    let snapshot = node.snapshot();
    let events = snapshot.table("events").expect("events");
    let counted = snapshot
        .event_times
        .get(&events.id)
        .map_or(0, |e| e.late_rows);
    assert_eq!(counted, late_rows, "{context}: late rows of events");
}

/// Fails unless each count table of the views' mins and maxes holds what its query over the
/// base table answers.
fn check_value_counts(node: &Arc<Node>, runtime: &tokio::runtime::Runtime, context: &str) {
    for (view, position, query) in VALUE_COUNTS {
        let tables = runtime.block_on(node.view_value_counts(view)).unwrap();
        // A group that is not all integers is led by its hash (ADR 0054), which no query gives.
        let hashed =
            |batch: &arrow::array::RecordBatch| batch.schema().field(0).name() == "group_hash";
        let unhashed: Vec<arrow::array::RecordBatch> = tables[position]
            .iter()
            .map(|b| match hashed(b) {
                true => b
                    .project(&(1..b.num_columns()).collect::<Vec<_>>())
                    .unwrap(),
                false => b.clone(),
            })
            .collect();
        let mut held: Vec<String> = map_cells(&unhashed, |_, _, _, text| text)
            .into_iter()
            .map(|row| row.join("\t"))
            .collect();
        held.sort();
        assert_eq!(
            held,
            sorted_rows(node, runtime, query),
            "{context}: count table {position} of view {view} differs from the base table"
        );
    }
}

/// Each table's rows as its change feed from the first commit rebuilds them (ADR 0048): the
/// rows inserted and the new versions of rows updated, less the rows deleted and the old
/// versions of rows updated. Sorted as `pondra_rows` sorts them.
fn replayed_rows(node: &Arc<Node>, runtime: &tokio::runtime::Runtime) -> Vec<Vec<String>> {
    TABLES
        .iter()
        .map(|table| {
            let sql = format!("SELECT k, v, s, _change_type FROM table_changes('{table}', 0)");
            let (_, batches) = run_sql(node, runtime, &sql).unwrap().expect("rows");
            let mut counts = std::collections::BTreeMap::<String, i64>::new();
            for mut row in map_cells(&batches, |_, _, _, text| text) {
                let change = row.pop().expect("a change type");
                let weight = match change.as_str() {
                    "insert" | "update_postimage" => 1,
                    "delete" | "update_preimage" => -1,
                    other => panic!("unknown change type {other}"),
                };
                *counts.entry(row.join("\t")).or_default() += weight;
            }
            let mut rows = Vec::new();
            for (row, count) in counts {
                assert!(
                    count >= 0,
                    "the feed of {table} removes {row} more than it adds it"
                );
                rows.extend(std::iter::repeat_n(row, count as usize));
            }
            rows.sort();
            rows
        })
        .collect()
}

fn run(default_statements: usize, default_seed: u64) {
    let setting = |name: &str| std::env::var(name).ok().and_then(|s| s.parse().ok());
    let seed = setting("PONDRA_ORACLE_SEED").unwrap_or(default_seed);
    let statements = setting("PONDRA_ORACLE_STATEMENTS").unwrap_or(default_statements as u64);
    let statements = statements as usize;
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let node = runtime
        .block_on(Node::open_folder(dir.path(), NodeOptions::default()))
        .unwrap();
    let mut oracle = Oracle::start();
    for sql in SETUP {
        run_sql(&node, &runtime, sql).unwrap();
        oracle.run(sql).unwrap();
    }
    run_sql(&node, &runtime, EVENTS.0).unwrap();
    oracle.run(EVENTS.1).unwrap();
    let (closed, closed_query, closed_oracle) = CLOSED_VIEW;
    run_sql(
        &node,
        &runtime,
        &format!("CREATE MATERIALIZED VIEW {closed} AS {closed_query}"),
    )
    .unwrap();
    oracle
        .run(&format!(
            "CREATE TABLE {closed} AS SELECT * FROM ({closed_oracle}) WHERE false"
        ))
        .unwrap();
    for (view, query, _) in WINDOW_VIEWS {
        let create = format!("CREATE MATERIALIZED VIEW {view} AS {query}");
        run_sql(&node, &runtime, &create).unwrap();
    }
    for (view, query) in VIEWS.iter().chain(&JOIN_VIEWS) {
        // DuckDB keeps them as plain views, which the views over views read.
        oracle
            .run(&format!("CREATE VIEW {view} AS {query}"))
            .unwrap();
        let create = format!("CREATE MATERIALIZED VIEW {view} AS {query}");
        run_sql(&node, &runtime, &create).unwrap();
    }
    let (ties, ties_query) = ASOF_TIES;
    let create = format!("CREATE MATERIALIZED VIEW {ties} AS {ties_query}");
    run_sql(&node, &runtime, &create).unwrap();
    // The same views written with CTEs, created after the views they read.
    for (view, query) in VIEWS.iter().chain(&JOIN_VIEWS).chain([&ASOF_TIES]) {
        let create = format!(
            "CREATE MATERIALIZED VIEW {view}_cte AS {}",
            with_ctes(query)
        );
        run_sql(&node, &runtime, &create).unwrap_or_else(|e| panic!("{create}: {e:?}"));
    }
    // A keyed table joined on its whole key is its own index (ADR 0054): it keeps no state.
    let states = |view| runtime.block_on(node.view_join_states(view)).unwrap().len();
    assert_eq!(
        (
            states("join_by_s"),
            states("join_full"),
            states("join_three")
        ),
        (1, 2, 2),
        "join states of views joining keyed on its key, on more, and twice"
    );
    let mut generator = Generator {
        rng: StdRng::seed_from_u64(seed),
        clock: 0,
        greatest: None,
        late_rows: 0,
    };
    let mut history = Vec::new();
    let mut refused = 0;
    let started = std::time::Instant::now();
    for n in 1..=statements {
        if n % 1000 == 0 {
            eprintln!("{n} statements in {:?}", started.elapsed());
        }
        let statement = generator.next();
        let ours = run_sql(&node, &runtime, &statement.pondra).map(|_| ());
        let theirs = oracle.run(&statement.duckdb);
        history.push(statement.pondra.clone());
        assert_eq!(
            ours.is_ok(),
            theirs.is_ok(),
            "seed {seed}, statement {n}: {}\nPondra: {ours:?}\nDuckDB: {theirs:?}",
            statement.pondra
        );
        refused += usize::from(ours.is_err());
        let context = format!("seed {seed}, after statement {n}: {}", statement.pondra);
        check_views(&node, &runtime, &mut oracle, &context);
        check_closed_windows(&node, &runtime, &mut oracle, &context, generator.late_rows);
        if n % CHECK_EVERY == 0 || n == statements {
            if n % (CHECK_EVERY * 4) == 0 {
                // Rows in Parquet as well as in the log tail, and files merged as a server's
                // background compaction merges them, so that reads see merged runs too and
                // the count tables do not gain a run per checkpoint for ever.
                run_sql(&node, &runtime, "CHECKPOINT").unwrap();
                runtime.block_on(node.compact(None, false)).unwrap();
            }
            let recent = history[history.len().saturating_sub(CHECK_EVERY)..].join(";\n");
            check_value_counts(&node, &runtime, &format!("{context}; since:\n{recent}"));
            let rows = pondra_rows(&node, &runtime);
            assert_eq!(
                rows,
                oracle.rows(&TABLES),
                "seed {seed}, after statement {n}; the statements since the last check:\n{recent}"
            );
            assert_eq!(
                replayed_rows(&node, &runtime),
                rows,
                "seed {seed}, after statement {n}: the change feed does not rebuild the tables"
            );
        }
    }
    // Late rows and closed windows must have been met for their checks to mean anything.
    if statements >= 200 {
        assert!(generator.late_rows > 0, "no late row was written");
        let closed = sorted_rows(&node, &runtime, &format!("SELECT * FROM {}", CLOSED_VIEW.0));
        assert!(!closed.is_empty(), "no window closed");
    }
    // Most statements must change something for the comparison to mean anything.
    assert!(
        refused * 10 < statements,
        "{refused} of {statements} refused"
    );
    runtime.block_on(node.close()).unwrap();
}

#[test]
fn changes_agree_with_duckdb() {
    run(400, 1);
}

#[test]
#[ignore]
fn changes_agree_with_duckdb_at_length() {
    run(20_000, 2);
}
