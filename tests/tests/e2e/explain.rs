//! EXPLAIN ANALYZE runs the query and reports each operator's rows (times vary, rows do not).

use std::sync::Arc;

use pondra_cluster::{Node, NodeOptions};
use pondra_tests::{map_cells, run_sql};

/// How EXPLAIN ANALYZE shows a scan's filter `b % 2 = 0` (b is column 1, a BIGINT).
const EVEN_B: &str = "filter=((b#1 % CAST(2 AS Int64)) = CAST(0 AS Int64))";

fn plan_lines(node: &Arc<Node>, runtime: &tokio::runtime::Runtime, sql: &str) -> Vec<String> {
    let (_, batches) = run_sql(node, runtime, sql).unwrap().expect("a plan");
    let cells = map_cells(&batches, |_, _, _, text| text);
    cells[0][0].lines().map(str::to_string).collect()
}

/// The line of the operator that starts with `operator`, without its indent and time.
fn line<'a>(lines: &'a [String], operator: &str) -> &'a str {
    let line = lines
        .iter()
        .find(|l| l.trim_start().starts_with(operator))
        .unwrap_or_else(|| panic!("no {operator} in:\n{}", lines.join("\n")));
    line.trim_start().split(" time=").next().unwrap()
}

/// The same rows twice, with how EXPLAIN ANALYZE names their scans: Parquet file `file` read
/// in place, and lake table `table`.
fn file_and_lake_table(file: &std::path::Path, table: &str) -> [(String, String); 2] {
    [
        (
            format!("read_parquet('{}')", file.display()),
            "ParquetScan: read_parquet (1 files)".to_string(),
        ),
        (table.to_string(), format!("TableScan: {table}")),
    ]
}

/// Runs `test` on a node of a new lake in which `setup` ran.
fn with_lake(setup: &str, test: impl FnOnce(&Arc<Node>, &tokio::runtime::Runtime)) {
    let runtime = Arc::new(tokio::runtime::Runtime::new().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let node = runtime
        .block_on(Node::open_folder(dir.path(), NodeOptions::default()))
        .unwrap();
    run_sql(&node, &runtime, setup).unwrap();
    test(&node, &runtime);
    runtime.block_on(node.close()).unwrap();
}

#[test]
fn explain_analyze_counts_rows_per_operator() {
    let setup = "CREATE TABLE a (k INT, v VARCHAR);
        INSERT INTO a VALUES (1, 'x'), (2, 'y'), (3, 'z');
        CREATE TABLE b (k INT, n INT);
        INSERT INTO b VALUES (1, 10), (1, 11), (3, 30), (3, 1);
        CHECKPOINT;
        INSERT INTO b VALUES (2, 20)";
    with_lake(setup, |node, runtime| {
        let lines = plan_lines(
            node,
            runtime,
            "EXPLAIN ANALYZE SELECT a.v, sum(b.n) FROM a JOIN b ON a.k = b.k WHERE b.n > 5 \
             GROUP BY a.v ORDER BY 2 DESC LIMIT 2",
        );
        assert!(lines[0].starts_with("Total: 2 rows in "), "{}", lines[0]);
        assert_eq!(line(&lines, "TableScan: a"), "TableScan: a  [rows=3");
        // Physical planning gave the scan the filter right above it: applied as it reads.
        assert_eq!(
            line(&lines, "TableScan: b"),
            "TableScan: b filter=(n#1 > 5)  [rows=4"
        );
        assert!(!lines.iter().any(|l| l.trim_start().starts_with("Filter")));
        assert_eq!(
            line(&lines, "HashJoin Inner"),
            "HashJoin Inner: on=[k#0 = k#0] estimated=[probe=4 build=3 rows=4]  [rows=4"
        );
        assert!(line(&lines, "HashAggregate").ends_with("[rows=3"));
        assert!(line(&lines, "TopN 2").ends_with("[rows=2"));
        assert!(lines.iter().all(|l| l.contains(" ms")), "{lines:?}");

        // A plain EXPLAIN does not run the query.
        let lines = plan_lines(node, runtime, "EXPLAIN SELECT * FROM a WHERE k / 0 = 1");
        assert!(lines.iter().any(|l| l.contains("Scan: a")), "{lines:?}");
    });
}

/// Runs `query` with EXPLAIN ANALYZE and checks its semi join's line, then runs it and checks
/// its one value.
fn check_semi_join(
    node: &Arc<Node>,
    runtime: &tokio::runtime::Runtime,
    query: &str,
    semi: &str,
    value: &str,
) {
    let lines = plan_lines(node, runtime, &format!("EXPLAIN ANALYZE {query}"));
    assert_eq!(line(&lines, "HashJoin Semi"), semi);
    let (_, batches) = run_sql(node, runtime, query).unwrap().expect("rows");
    assert_eq!(
        map_cells(&batches, |_, _, _, text| text),
        vec![vec![value.to_string()]]
    );
}

/// A correlated scalar subquery aggregates only the keys its outer rows hold when those come
/// from a filtered table: its input is semi-joined to that table's keys first.
#[test]
fn correlated_aggregate_reads_only_the_outer_keys() {
    let setup = "CREATE TABLE part (p INT, kind VARCHAR);
        INSERT INTO part SELECT range, 'kind' || (range % 100) FROM range(1000);
        CREATE TABLE sale (p INT, qty INT);
        INSERT INTO sale SELECT range % 1000, range % 7 FROM range(20000);
        CHECKPOINT";
    with_lake(setup, |node, runtime| {
        let query = "SELECT count(*) FROM part, sale WHERE part.p = sale.p AND kind = 'kind0' \
             AND qty < (SELECT avg(qty) FROM sale s WHERE s.p = part.p)";
        // 10 parts of 1,000 are of one of 100 kinds: the average is computed for their 200
        // sales, not all 20,000.
        check_semi_join(
            node,
            runtime,
            query,
            "HashJoin Semi: on=[p#0 = p#0]  [rows=200",
            "98",
        );
    });
}

/// A semi join whose subquery is much smaller than a table of the joins below it is placed
/// right above that table's scan, even when the joins keep fewer rows than the table has: a
/// Parquet scan then drops the rows as it reads them.
#[test]
fn selective_semi_join_sits_on_the_table_it_filters() {
    let setup = "CREATE TABLE part (p INT, kind VARCHAR);
        INSERT INTO part SELECT range, CASE WHEN range % 100 = 0 THEN 'rare' ELSE 'common' END FROM range(1000);
        CREATE TABLE supp (s INT, region VARCHAR);
        INSERT INTO supp SELECT range, CASE WHEN range % 5 = 0 THEN 'eu' ELSE 'us' END FROM range(100);
        CREATE TABLE ps (p INT, s INT, cost INT);
        INSERT INTO ps SELECT range % 1000, (range / 7) % 100, range FROM range(20000);
        CHECKPOINT";
    with_lake(setup, |node, runtime| {
        let query = "SELECT count(*) FROM ps, supp WHERE ps.s = supp.s AND region = 'eu' \
             AND ps.p IN (SELECT p FROM part WHERE kind = 'rare')";
        // The 10 rare parts' 200 rows of ps, before the join to supp keeps those of eu.
        check_semi_join(
            node,
            runtime,
            query,
            "HashJoin Semi: on=[p#0 = p#0]  [rows=200",
            "57",
        );
    });
}

/// Lake tables estimate from the statistics their files were written with: a join on a key of
/// 10 distinct values among 1,000 rows gives 100 rows per row, a range filter keeps its share
/// of the column's range (0.25025 of 0 to 999), and IS NULL the share of NULLs.
#[test]
fn lake_tables_estimate_from_file_statistics() {
    let setup = "CREATE TABLE t (k INT, x INT, note VARCHAR);
        INSERT INTO t SELECT range % 10, range, CASE WHEN range < 100 THEN NULL ELSE 'n' END FROM range(1000);
        CHECKPOINT";
    with_lake(setup, |node, runtime| {
        let lines = plan_lines(
            node,
            runtime,
            "EXPLAIN SELECT count(*) FROM t a JOIN t b ON a.k = b.k WHERE b.x < 250",
        );
        assert!(
            lines
                .iter()
                .any(|l| l.contains("estimated=[probe=1000 build=250 rows=25025]")),
            "{}",
            lines.join("\n")
        );
        let lines = plan_lines(
            node,
            runtime,
            "EXPLAIN SELECT count(*) FROM t a JOIN t b ON a.x = b.x WHERE b.note IS NULL",
        );
        assert!(
            lines
                .iter()
                .any(|l| l.contains("estimated=[probe=1000 build=100 rows=100]")),
            "{}",
            lines.join("\n")
        );
    });
}

/// A scan skips the files of a lake table and the row groups of a Parquet file whose
/// statistics show that the filter above it, or the keys of a join it probes, keep none of
/// their rows.
#[test]
fn scans_skip_files_and_row_groups_their_filter_rules_out() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.parquet");
    // Three files of 1,000 rows each: x from 0 to 2,999, day from 2024-01-01 on; then a row
    // in the log tail, whose segment keeps the ranges of its integer and date columns too.
    let setup = format!(
        "CREATE TABLE t (x BIGINT, day DATE, note VARCHAR);
        INSERT INTO t SELECT range, DATE '2024-01-01' + CAST(range || ' days' AS INTERVAL), NULL FROM range(0, 1000);
        CHECKPOINT;
        INSERT INTO t SELECT range, DATE '2024-01-01' + CAST(range || ' days' AS INTERVAL), NULL FROM range(1000, 2000);
        CHECKPOINT;
        INSERT INTO t SELECT range, DATE '2024-01-01' + CAST(range || ' days' AS INTERVAL), NULL FROM range(2000, 3000);
        CHECKPOINT;
        CREATE TABLE big (x BIGINT);
        INSERT INTO big SELECT range FROM range(300000);
        COPY big TO '{}';
        CHECKPOINT;
        INSERT INTO t VALUES (5000, DATE '2030-01-01', 'tail');
        CREATE TABLE keys (k BIGINT);
        INSERT INTO keys SELECT range FROM range(250000, 250010)",
        file.display()
    );
    with_lake(&setup, |node, runtime| {
        let scan = |query: &str, operator: &str| -> (String, String) {
            let lines = plan_lines(node, runtime, &format!("EXPLAIN ANALYZE {query}"));
            let line = lines
                .iter()
                .find(|l| l.trim_start().starts_with(operator))
                .unwrap_or_else(|| panic!("no {operator} in {lines:?}"))
                .clone();
            let (_, batches) = run_sql(node, runtime, query).unwrap().expect("rows");
            (
                line,
                map_cells(&batches, |_, _, _, text| text)[0][0].clone(),
            )
        };
        for (query, skipped, count) in [
            (
                "SELECT count(*) FROM t WHERE x >= 2500",
                " skipped=2]",
                "501",
            ),
            (
                "SELECT count(*) FROM t WHERE x < 10 OR x > 4000",
                " skipped=2]",
                "11",
            ),
            (
                "SELECT count(*) FROM t WHERE x IN (5, 1500)",
                " skipped=2]",
                "2",
            ),
            (
                "SELECT count(*) FROM t WHERE day BETWEEN DATE '2025-01-01' AND DATE '2025-12-31'",
                " skipped=3]",
                "365",
            ),
            ("SELECT count(*) FROM t WHERE x > 9000", " skipped=4]", "0"),
            ("SELECT count(*) FROM t WHERE x = 5000", " skipped=3]", "1"),
            ("SELECT count(*) FROM t WHERE x % 2 = 0", " ms]", "1501"),
        ] {
            let (line, value) = scan(query, "TableScan: t");
            assert!(line.ends_with(skipped), "{query}: {line}");
            assert_eq!(value, count, "{query}");
        }
        // 300,000 rows are three row groups of 122,880 rows or fewer, in the file read in
        // place and in the lake table's one data file alike.
        let sources = [
            (
                format!("read_parquet('{}')", file.display()),
                "ParquetScan",
                3,
            ),
            // The lake's catalog rules out the whole file first.
            ("big".to_string(), "TableScan: big", 1),
        ];
        for (source, operator, all_skipped) in &sources {
            let all = format!("SELECT count(*) FROM {source} b");
            let (line, value) = scan(&format!("{all} WHERE x >= 250000"), operator);
            assert!(line.ends_with(" skipped=2]"), "{line}");
            assert_eq!(value, "50000");
            let (line, value) = scan(&format!("{all} WHERE x < 0"), operator);
            assert!(
                line.ends_with(&format!(" skipped={all_skipped}]")),
                "{line}"
            );
            assert_eq!(value, "0");
            // The keys a join's build side holds rule out row groups of the scan it probes with.
            let joined = format!("{all} JOIN keys ON b.x = keys.k");
            let (line, value) = scan(&joined, operator);
            // ... and, in the row group left, the pages whose ranges in the page index miss them.
            assert!(line.ends_with(" skipped=2 skipped_pages=2]"), "{line}");
            assert_eq!(value, "10");
            // Pages of 20,000 rows: the first row group's rows but one page's are skipped.
            let (line, value) = scan(
                &format!("{all} WHERE x BETWEEN 100 AND 200 OR x = 20050"),
                operator,
            );
            assert!(line.ends_with(" skipped=2 skipped_pages=5]"), "{line}");
            assert_eq!(value, "102");
            let (line, value) = scan(&format!("{all} WHERE x % 7 = 3"), operator);
            assert!(line.ends_with("ms]"), "{line}");
            assert_eq!(value, "42857");
        }
    });
}

/// When one join's keys keep few of a scan's rows, the scan checks only those keys as it
/// reads, leaving another join's keys on a column it would read first to that join.
#[test]
fn scans_check_the_keys_of_the_narrowest_join_first() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.parquet");
    let setup = format!(
        "CREATE TABLE big (a BIGINT, b BIGINT, c BIGINT);
        INSERT INTO big SELECT range, range % 1000, range FROM range(300000);
        COPY big TO '{}';
        CREATE TABLE ka (k BIGINT);
        INSERT INTO ka SELECT range FROM range(250000, 250010);
        CREATE TABLE kb (k BIGINT);
        INSERT INTO kb SELECT range FROM range(0, 5)",
        file.display()
    );
    with_lake(&setup, |node, runtime| {
        run_sql(node, runtime, "CHECKPOINT").unwrap();
        let sources = file_and_lake_table(&file, "big");
        for (source, operator) in &sources {
            let query = format!(
                "SELECT count(*) FROM {source} t JOIN ka ON t.a = ka.k JOIN kb ON t.b = kb.k"
            );
            let lines = plan_lines(node, runtime, &format!("EXPLAIN ANALYZE {query}"));
            // Ten rows have a key of ka (b from 0 to 9); five of them a key of kb too.
            assert_eq!(line(&lines, operator), format!("{operator}  [rows=10"));
            let (_, batches) = run_sql(node, runtime, &query).unwrap().expect("rows");
            assert_eq!(map_cells(&batches, |_, _, _, text| text)[0][0], "5");
            // A filter on another column waits for the rows the narrow keys keep, and still
            // drops its rows at the scan.
            let query = format!("{query} WHERE t.b % 2 = 0");
            let lines = plan_lines(node, runtime, &format!("EXPLAIN ANALYZE {query}"));
            assert_eq!(
                line(&lines, operator),
                format!("{operator} {EVEN_B}  [rows=5")
            );
            let (_, batches) = run_sql(node, runtime, &query).unwrap().expect("rows");
            assert_eq!(map_cells(&batches, |_, _, _, text| text)[0][0], "3");
        }
    });
}

/// A table a query scans twice with the same filter is read once when the second scan's join
/// keys are all among those the first scan kept rows for; otherwise it is read again.
#[test]
fn a_repeated_scan_takes_the_rows_an_earlier_scan_kept() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.parquet");
    let setup = format!(
        "CREATE TABLE big (a BIGINT, b BIGINT, c BIGINT);
        INSERT INTO big SELECT range, range % 1000, range * 2 FROM range(300000);
        COPY big TO '{}';
        CREATE TABLE wide (k BIGINT);
        INSERT INTO wide SELECT range FROM range(250000, 250010);
        CREATE TABLE within (k BIGINT);
        INSERT INTO within SELECT range FROM range(250002, 250007);
        CREATE TABLE beyond (k BIGINT);
        INSERT INTO beyond SELECT range FROM range(250005, 250020);
        CREATE TABLE early (k BIGINT);
        INSERT INTO early VALUES (5), (250003);
        CREATE TABLE late (k BIGINT);
        INSERT INTO late VALUES (250003);",
        file.display()
    );
    with_lake(&setup, |node, runtime| {
        run_sql(node, runtime, "CHECKPOINT").unwrap();
        let sources = file_and_lake_table(&file, "big");
        for (source, operator) in &sources {
            check_repeated_scans(node, runtime, source, operator);
        }
    });
}

/// The checks of `a_repeated_scan_takes_the_rows_an_earlier_scan_kept` over one source of the
/// same rows, whose scans EXPLAIN names `operator`.
fn check_repeated_scans(
    node: &Arc<Node>,
    runtime: &tokio::runtime::Runtime,
    source: &str,
    operator: &str,
) {
    let first = format!("SELECT count(*), sum(t.c) FROM {source} t JOIN wide ON t.a = wide.k");
    // The second scan reads a column the first does not: the first reads it too.
    let second = |keys: &str| {
        format!("SELECT count(*), sum(t.b) FROM {source} t JOIN {keys} ON t.a = {keys}.k")
    };
    let scans = |query: &str| -> Vec<String> {
        plan_lines(node, runtime, &format!("EXPLAIN ANALYZE {query}"))
            .iter()
            .filter(|l| l.contains(operator))
            .map(|l| {
                let (scan, stats) = l.trim_start().split_once(" time=").unwrap();
                let reused = if stats.contains("reused") {
                    " reused"
                } else {
                    ""
                };
                format!("{scan}{reused}")
            })
            .collect()
    };
    let rows = |query: &str| {
        let (_, batches) = run_sql(node, runtime, query).unwrap().expect("rows");
        map_cells(&batches, |_, _, _, text| text)
    };

    let query = format!("{first} UNION ALL {}", second("within"));
    assert_eq!(
        scans(&query),
        [
            format!("{operator} scan_group=0  [rows=10"),
            format!("{operator} scan_group=0  [rows=10 reused"),
        ]
    );
    assert_eq!(rows(&query), [["10", "5000090"], ["5", "20"]]);

    // Keys the first scan did not keep rows for: read again.
    let query = format!("{first} UNION ALL {}", second("beyond"));
    assert_eq!(
        scans(&query),
        [
            format!("{operator} scan_group=0  [rows=10"),
            format!("{operator} scan_group=0  [rows=15"),
        ]
    );
    assert_eq!(rows(&query), [["10", "5000090"], ["15", "180"]]);

    // A filtered scan takes an unfiltered scan's rows and applies its predicate to them.
    let filtered = |keys: &str| {
        format!(
            "SELECT count(*), sum(t.c) FROM {source} t JOIN {keys} ON t.a = {keys}.k
                WHERE t.b % 2 = 0",
        )
    };
    let query = format!("{first} UNION ALL {}", filtered("within"));
    assert_eq!(
        scans(&query),
        [
            format!("{operator} scan_group=0  [rows=10"),
            format!("{operator} {EVEN_B} refilters=0  [rows=5 reused"),
        ]
    );
    assert_eq!(rows(&query), [["10", "5000090"], ["3", "1500024"]]);
    // Not the other way round: an unfiltered scan reads again.
    let query = format!("{} UNION ALL {}", filtered("wide"), second("within"));
    assert_eq!(rows(&query), [["5", "2500040"], ["5", "20"]]);

    // A scan a LIMIT stops after its first row group (of three) keeps nothing.
    let query = format!(
        "(SELECT t.a FROM {source} t JOIN early ON t.a = early.k LIMIT 1)
            UNION ALL (SELECT count(*) FROM {source} t JOIN late ON t.a = late.k)",
    );
    assert_eq!(rows(&query), [["5"], ["1"]]);

    // Kept rows count against the memory limit: past it (though within it for the joins'
    // build sides), the later scan reads again.
    run_sql(node, runtime, "SET memory_limit = '1000 bytes'").unwrap();
    let query = format!("{first} UNION ALL {}", second("within"));
    assert_eq!(
        scans(&query),
        [
            format!("{operator} scan_group=0  [rows=10"),
            format!("{operator} scan_group=0  [rows=5"),
        ]
    );
    assert_eq!(rows(&query), [["10", "5000090"], ["5", "20"]]);
    run_sql(node, runtime, "SET memory_limit = DEFAULT").unwrap();
}

/// An outer join builds the input it keeps whole when the other is much larger (a right
/// join), and stays a left join otherwise. tests/slt/joins.slt checks the rows.
#[test]
fn outer_join_builds_the_smaller_input() {
    let setup = "CREATE TABLE few (k INT, name VARCHAR);
        INSERT INTO few VALUES (1, 'one'), (2, 'two'), (NULL, 'no key');
        CREATE TABLE many (k INT, v INT);
        INSERT INTO many SELECT range % 5, range FROM range(1000)";
    with_lake(setup, |node, runtime| {
        for (query, join) in [
            (
                "SELECT * FROM few LEFT JOIN many ON few.k = many.k",
                "Join Right",
            ),
            (
                "SELECT * FROM many RIGHT JOIN few ON few.k = many.k",
                "Join Right",
            ),
            (
                "SELECT * FROM many LEFT JOIN few ON few.k = many.k",
                "Join Left",
            ),
            (
                "SELECT * FROM few RIGHT JOIN many ON few.k = many.k",
                "Join Left",
            ),
        ] {
            let lines = plan_lines(node, runtime, &format!("EXPLAIN {query}"));
            let joined = lines.iter().find(|l| l.contains("Join")).expect("a join");
            assert!(joined.trim_start().starts_with(join), "{query}: {lines:?}");
            // The build side (the join's second input) is `few` every time.
            let position = lines.iter().position(|l| l == joined).unwrap();
            assert!(
                lines[position + 2].contains("Scan: few"),
                "{query}: {lines:?}"
            );
        }
    });
}

/// An aggregation by one key of a Parquet file whose row groups hold non-overlapping key
/// ranges finishes the groups inside each row group as runs (ADR 0029), and answers as the
/// hash table does: with HAVING, with runs crossing row groups, and when a row group's keys
/// turn out not to be in order or to hold a NULL.
#[test]
fn aggregation_by_clustered_keys_finishes_runs() {
    let dir = tempfile::tempdir().unwrap();
    let sorted = dir.path().join("sorted.parquet");
    let late = dir.path().join("late.parquet");
    let nulls = dir.path().join("nulls.parquet");
    // 400,000 rows are four row groups; runs of 7 rows cross their boundaries. In the second
    // file each row group also holds a row whose key is that of a run 1,000 rows earlier.
    let setup = format!(
        "CREATE TABLE sorted AS SELECT range AS r, range / 7 AS k, range % 5 AS v FROM range(400000);
        CREATE TABLE late AS SELECT range AS r, CASE WHEN range % 50000 = 49999 THEN (range - 1000) / 7 ELSE range / 7 END AS k, range % 5 AS v FROM range(400000);
        COPY (SELECT * FROM sorted ORDER BY r) TO '{}';
        COPY (SELECT * FROM late ORDER BY r) TO '{}';
        CREATE TABLE nulls AS SELECT range AS r, CASE WHEN range % 150000 = 777 THEN NULL ELSE range / 7 END AS k, range % 5 AS v FROM range(400000);
        COPY (SELECT * FROM nulls ORDER BY r) TO '{}'",
        sorted.display(),
        late.display(),
        nulls.display()
    );
    with_lake(&setup, |node, runtime| {
        let rows = |query: &str| {
            let (_, batches) = run_sql(node, runtime, query).unwrap().expect("rows");
            map_cells(&batches, |_, _, _, text| text)
        };
        let aggregate = |from: &str| {
            format!(
                "SELECT k, count(*), sum(v), min(v), max(v) FROM {from} GROUP BY k \
                 HAVING sum(v) <> 14 ORDER BY k"
            )
        };
        let file = |path: &std::path::Path| format!("read_parquet('{}')", path.display());
        let same = |actual: Vec<Vec<String>>, expected: Vec<Vec<String>>, what: &str| {
            let differs = actual.iter().zip(&expected).position(|(a, e)| a != e);
            assert!(
                actual.len() == expected.len() && differs.is_none(),
                "{what}: {} rows against {}, first difference at {differs:?}",
                actual.len(),
                expected.len()
            );
        };
        let runs = |query: &str| -> usize {
            let lines = plan_lines(node, runtime, &format!("EXPLAIN ANALYZE {query}"));
            let grouped = lines
                .iter()
                .find(|l| l.trim_start().starts_with("HashAggregate: group=[k"))
                .expect("the aggregation");
            grouped
                .split(" runs=")
                .nth(1)
                .and_then(|n| n.trim_end_matches(']').parse().ok())
                .unwrap_or_else(|| panic!("no runs in {grouped}"))
        };
        // The lake tables' rows are in their log tails, aggregated by hashing alone.
        let expected = |table: &str| rows(&aggregate(table));
        let (in_order, out_of_order, with_nulls) =
            (expected("sorted"), expected("late"), expected("nulls"));
        assert!(in_order.len() > 40_000, "{}", in_order.len());
        same(
            rows(&aggregate(&file(&sorted))),
            in_order.clone(),
            "in order",
        );
        assert!(runs(&aggregate(&file(&sorted))) > 55_000);
        same(
            rows(&aggregate(&file(&late))),
            out_of_order.clone(),
            "out of order",
        );
        same(
            rows(&aggregate(&file(&nulls))),
            with_nulls.clone(),
            "with NULL keys",
        );
        // Tiered into data files of four row groups, the tables are aggregated as the files.
        run_sql(node, runtime, "CHECKPOINT").unwrap();
        same(
            rows(&aggregate("sorted")),
            in_order,
            "a lake table in order",
        );
        assert!(runs(&aggregate("sorted")) > 55_000);
        same(
            rows(&aggregate("late")),
            out_of_order,
            "a lake table out of order",
        );
        same(
            rows(&aggregate("nulls")),
            with_nulls,
            "a lake table with NULL keys",
        );
    });
}

/// `EXPLAIN (VERBOSE)` prints the plan as bound, then after each optimizer pass that changed
/// it, named by the pass; plain EXPLAIN prints the plan after them all.
#[test]
fn explain_verbose_prints_the_plan_after_each_pass_that_changed_it() {
    let setup = "CREATE TABLE few (k INT, name VARCHAR);
        INSERT INTO few VALUES (1, 'one'), (2, 'two');
        CREATE TABLE many (k INT, v INT);
        INSERT INTO many SELECT range % 5, range FROM range(1000)";
    with_lake(setup, |node, runtime| {
        let query = "SELECT few.name, many.v FROM few LEFT JOIN many ON few.k = many.k \
                     ORDER BY many.v DESC LIMIT 3";
        let text = plan_lines(node, runtime, &format!("EXPLAIN (VERBOSE) {query}")).join("\n");
        let sections: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with(' ') && l.ends_with(':'))
            .collect();
        let expected = ["bound:", "outer_join_sides:", "top_n:", "physical:"];
        assert_eq!(sections, expected, "{text}");
        let (bound, optimized) = text.split_once("outer_join_sides:").unwrap();
        assert!(
            bound.contains("Join Left") && bound.contains("Sort: "),
            "{text}"
        );
        let (turned, optimized) = optimized.split_once("top_n:").unwrap();
        assert!(
            turned.contains("Join Right") && turned.contains("Sort: "),
            "{text}"
        );
        let (last, physical) = optimized.split_once("physical:").unwrap();
        assert!(
            last.contains("Join Right") && last.contains("TopN 3: "),
            "{text}"
        );
        let plain = plan_lines(node, runtime, &format!("EXPLAIN {query}")).join("\n");
        assert_eq!(format!("\n{plain}"), last.trim_end_matches('\n'), "{text}");
        assert!(physical.contains("HashJoin Right") && physical.contains("TopN 3: "));
        // WHERE binds into a join block, which join ordering plans (here as a filter of its
        // one relation); the physical plan shows the scan's filter.
        let query = "EXPLAIN VERBOSE SELECT k FROM few WHERE k > 1";
        let text = plan_lines(node, runtime, query).join("\n");
        let expected = "bound:\nProject: k#0\n  JoinBlock: where=[(k#0 > 1)]\n    Scan: few\n\n\
                        join_order:\nProject: k#0\n  Filter: (k#0 > 1)\n    Scan: few\n\n\
                        physical:\nProjection: k#0\n  TableScan: few filter=(k#0 > 1)";
        assert_eq!(text, expected, "{text}");
        // A plan no pass changes is printed once.
        let text = plan_lines(node, runtime, "EXPLAIN VERBOSE SELECT k FROM few").join("\n");
        let expected = "bound:\nProject: k#0\n  Scan: few\n\n\
                        physical:\nProjection: k#0\n  TableScan: few";
        assert_eq!(text, expected, "{text}");
    });
}

/// The binder leaves EXISTS, IN and correlated scalar subqueries as subqueries asked of each
/// row; the decorrelate pass makes each a join, the filters below the values, and leaves an
/// uncorrelated scalar subquery as a value computed once.
#[test]
fn decorrelation_turns_each_subquery_into_a_join() {
    let setup = "CREATE TABLE few (k INT, name VARCHAR);
        INSERT INTO few VALUES (1, 'one'), (2, 'two'), (3, 'three');
        CREATE TABLE many (k INT, v INT);
        INSERT INTO many SELECT range % 5, range FROM range(1000)";
    with_lake(setup, |node, runtime| {
        let query = "SELECT name, (SELECT max(v) FROM many WHERE many.k = few.k) FROM few \
                     WHERE EXISTS (SELECT 1 FROM many WHERE many.k = few.k AND v > 990) \
                     AND k NOT IN (SELECT v FROM many WHERE v < 2) \
                     AND k < (SELECT count(*) FROM many)";
        let text = plan_lines(node, runtime, &format!("EXPLAIN (VERBOSE) {query}")).join("\n");
        let (bound, rest) = text.split_once("join_order:").unwrap();
        let subqueries: Vec<&str> = bound
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("Subquery"))
            .collect();
        assert_eq!(
            subqueries,
            [
                "Subquery Scalar",
                "Subquery NullAwareAnti: k#0 IN",
                "Subquery Semi"
            ],
            "{text}"
        );
        assert!(!bound.contains("Join "), "{text}");
        let (_, decorrelated) = rest.split_once("decorrelate:").unwrap();
        let decorrelated = decorrelated.split("physical:").next().unwrap();
        assert!(!decorrelated.contains("Subquery"), "{text}");
        for join in ["Join Left", "Join NullAwareAnti", "Join Semi"] {
            assert!(decorrelated.contains(join), "{join} in {text}");
        }
        // The uncorrelated count stays a value computed once, not a join.
        assert!(decorrelated.contains("< (subquery)"), "{text}");
        let sql = format!("{query} ORDER BY name");
        let (_, batches) = run_sql(node, runtime, &sql).unwrap().expect("rows");
        let rows = map_cells(&batches, |_, _, _, text| text);
        assert_eq!(rows, [["three", "998"], ["two", "997"]]);
    });
}

/// An aggregation a query computes twice (a view read in the query and in its subquery, as
/// TPC-H q15 does) is numbered by physical planning and runs once: the second occurrence takes
/// the first one's rows and reads nothing.
#[test]
fn an_aggregation_computed_twice_runs_once() {
    let setup = "CREATE TABLE t (k INT, v INT);
        INSERT INTO t SELECT range % 4, range FROM range(100);
        CREATE VIEW totals AS SELECT k, sum(v) AS total FROM t GROUP BY k";
    with_lake(setup, |node, runtime| {
        let query = "SELECT k, total FROM totals WHERE total = (SELECT max(total) FROM totals)";
        let lines = plan_lines(node, runtime, &format!("EXPLAIN ANALYZE {query}"));
        let aggregate = line(&lines, "HashAggregate: group=[k");
        assert!(aggregate.ends_with("shared=0  [rows=4"), "{lines:?}");
        // The subquery ran the aggregation first; the outer query's scan under it read nothing.
        // (Both scans of t are one group: had the aggregation run twice, the second would
        // have taken the first's rows.)
        assert_eq!(
            line(&lines, "TableScan: t"),
            "TableScan: t scan_group=0  [rows=0"
        );
        let (_, batches) = run_sql(node, runtime, query).unwrap().expect("rows");
        assert_eq!(map_cells(&batches, |_, _, _, text| text), [["3", "1275"]]);
        // Aggregations that differ are not shared.
        let query = "SELECT k, total FROM totals WHERE total > (SELECT max(v) FROM t)";
        let lines = plan_lines(node, runtime, &format!("EXPLAIN ANALYZE {query}"));
        assert!(!lines.iter().any(|l| l.contains("shared=")), "{lines:?}");
    });
}

/// DuckDB's `disabled_optimizers`: `join_order` joins a block's relations in the order
/// written, `build_side_probe_side` builds each join's right input, `top_n` sorts every row.
#[test]
fn disabled_optimizers_change_plans() {
    let setup = "CREATE TABLE big AS SELECT range AS i FROM range(10000);
        CREATE TABLE small AS SELECT range AS i FROM range(10);
        CREATE TABLE mid AS SELECT range AS i FROM range(100)";
    let joins =
        "EXPLAIN SELECT count(*) FROM small, big, mid WHERE big.i = small.i AND small.i = mid.i";
    let top = "EXPLAIN SELECT * FROM big ORDER BY i DESC LIMIT 3";
    with_lake(setup, |node, runtime| {
        let trimmed = |sql: &str| -> Vec<String> {
            let lines = plan_lines(node, runtime, sql);
            lines.iter().map(|l| l.trim().to_string()).collect()
        };
        // Searched: the small relation joins first, and each join builds its smaller input.
        let searched = trimmed(joins);
        assert!(
            searched
                .iter()
                .any(|l| l.ends_with("estimated=[probe=100 build=10 rows=10]")),
            "{searched:?}"
        );
        let as_written = trimmed(&format!(
            "SET disabled_optimizers = 'join_order,build_side_probe_side'; {joins}"
        ));
        let joins_and_scans: Vec<&str> = as_written
            .iter()
            .map(String::as_str)
            .filter(|l| l.starts_with("Join") || l.starts_with("Scan"))
            .collect();
        assert_eq!(
            joins_and_scans,
            [
                "Join Inner: on=[i#0 = i#0] estimated=[probe=10 build=100 rows=10]",
                "Join Inner: on=[i#0 = i#0] estimated=[probe=10 build=10000 rows=10]",
                "Scan: small",
                "Scan: big",
                "Scan: mid",
            ]
        );
        assert!(trimmed(top).iter().any(|l| l.starts_with("TopN 3")));
        let sorted = trimmed(&format!("SET disabled_optimizers = 'top_n'; {top}"));
        assert!(sorted.iter().any(|l| l == "Sort: i#0 DESC"), "{sorted:?}");
        assert!(!sorted.iter().any(|l| l.starts_with("TopN")), "{sorted:?}");
    });
}
