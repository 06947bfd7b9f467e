//! The shell and `pondra sql` as a user runs them: the quickstart and the orders example.

use crate::common;

use common::{copy_dir, shell, sql, stderr, stdout};

const QUICKSTART: &str = "\
CREATE TABLE events (user VARCHAR, amount BIGINT);
CREATE MATERIALIZED VIEW totals AS SELECT user, sum(amount) AS total FROM events GROUP BY user;
INSERT INTO events VALUES ('ann', 5), ('bob', 3), ('ann', 7);
SELECT * FROM totals ORDER BY user;
INSERT INTO events VALUES ('bob', 4);
SELECT * FROM totals ORDER BY user;
";

const QUICKSTART_OUTPUT: &str = "\
+------+-------+
| user | total |
+------+-------+
| ann  | 12    |
| bob  | 3     |
+------+-------+
+------+-------+
| user | total |
+------+-------+
| ann  | 12    |
| bob  | 7     |
+------+-------+
";

const ORDERS_TOTAL: &str = "\
+--------+-------+
| orders | total |
+--------+-------+
| 3      | 15.0  |
+--------+-------+
";

#[test]
fn quickstart_prints_the_two_tables() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let output = shell(&lake, QUICKSTART);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), QUICKSTART_OUTPUT, "{}", stderr(&output));
    assert_eq!(stderr(&output), "");

    // The view survives a restart, and keeps folding in new rows.
    let again = shell(
        &lake,
        "INSERT INTO events VALUES ('cy', 1); SELECT * FROM totals ORDER BY user;",
    );
    assert_eq!(
        stdout(&again),
        "+------+-------+\n| user | total |\n+------+-------+\n| ann  | 12    |\n| bob  | 7     |\n| cy   | 1     |\n+------+-------+\n",
        "{}",
        stderr(&again)
    );
}

#[test]
fn orders_answer_the_same_before_and_after_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let output = shell(
        &lake,
        "CREATE TABLE orders (id BIGINT, item VARCHAR, qty INT, amount DOUBLE);
INSERT INTO orders VALUES (1, 'tea', 2, 7.0), (2, 'cake', 1, 4.5), (3, 'tea', 1, 3.5);
SELECT count(*) AS orders, sum(amount) AS total FROM orders;
CHECKPOINT;
SELECT count(*) AS orders, sum(amount) AS total FROM orders;
",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        format!("{ORDERS_TOTAL}{ORDERS_TOTAL}"),
        "{}",
        stderr(&output)
    );
    // After the checkpoint the rows are in Parquet, not in the log tail.
    let files: Vec<_> = std::fs::read_dir(lake.join("data/orders"))
        .unwrap()
        .collect();
    assert_eq!(files.len(), 1);

    // A fresh process with no node reads the lake.
    let count = sql(&lake, &["SELECT count(*) AS orders FROM orders"]);
    assert!(count.status.success(), "{}", stderr(&count));
    assert_eq!(
        stdout(&count),
        "+--------+\n| orders |\n+--------+\n| 3      |\n+--------+\n"
    );

    // The folder copied elsewhere opens as it was.
    let copy = dir.path().join("copy");
    copy_dir(&lake, &copy);
    let copied = sql(
        &copy,
        &["SELECT count(*) AS orders, sum(amount) AS total FROM orders"],
    );
    assert_eq!(stdout(&copied), ORDERS_TOTAL, "{}", stderr(&copied));
}

#[test]
fn sql_formats_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let created = sql(
        &lake,
        &["CREATE TABLE t (a INT, b VARCHAR); INSERT INTO t VALUES (1, 'x'), (2, NULL)"],
    );
    assert!(created.status.success(), "{}", stderr(&created));
    let csv = sql(&lake, &["--format", "csv", "SELECT a, b FROM t ORDER BY a"]);
    assert_eq!(stdout(&csv), "a,b\n1,x\n2,\n");
    let json = sql(&lake, &["--format", "json", "SELECT a FROM t ORDER BY a"]);
    assert_eq!(stdout(&json), "[{\"a\":1},{\"a\":2}]\n");

    let missing = sql(&lake, &["SELECT * FROM nowhere"]);
    assert!(!missing.status.success());
    assert_eq!(stderr(&missing), "Error: table nowhere does not exist\n");

    // In the shell an error is printed and the next statement still runs.
    let output = shell(&lake, "SELEC 1;\nSELECT count(*) AS n FROM t;\n");
    assert!(
        stderr(&output).starts_with("Error: syntax error"),
        "{}",
        stderr(&output)
    );
    assert_eq!(stdout(&output), "+---+\n| n |\n+---+\n| 2 |\n+---+\n");
}

#[test]
fn copy_writes_and_reads_files() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let parquet = dir.path().join("out.parquet");
    let csv = dir.path().join("out.csv");
    let script = format!(
        "CREATE TABLE t (a BIGINT, b VARCHAR);
INSERT INTO t VALUES (1, 'x'), (2, NULL);
COPY (SELECT a, b FROM t ORDER BY a) TO '{}';
COPY t TO '{}';
CREATE TABLE u (a BIGINT, b VARCHAR);
COPY u FROM '{}';
SELECT count(*) AS n, sum(a) AS s FROM u;
SELECT count(*) AS n FROM read_parquet('{}');
CREATE TABLE v (a BIGINT, b VARCHAR);
COPY v FROM '{}';
SELECT a, b FROM v ORDER BY a;
SELECT sum(a) AS s FROM read_csv('{}');
",
        parquet.display(),
        csv.display(),
        parquet.display(),
        dir.path().join("*.parquet").display(),
        csv.display(),
        csv.display()
    );
    let output = shell(&lake, &script);
    assert_eq!(stderr(&output), "");
    assert_eq!(
        stdout(&output),
        "+---+---+\n| n | s |\n+---+---+\n| 2 | 3 |\n+---+---+\n+---+\n| n |\n+---+\n| 2 |\n+---+\n\
+---+---+\n| a | b |\n+---+---+\n| 1 | x |\n| 2 |   |\n+---+---+\n+---+\n| s |\n+---+\n| 3 |\n+---+\n"
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(text.starts_with("a,b\n"), "{text}");
    assert_eq!(text.lines().count(), 3);
}

/// `pondra tpch run` whose reader leaves (`| head -1`) stops without a panic.
#[test]
fn tpch_run_stops_quietly_when_its_reader_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let lake_arg = lake.to_str().unwrap();
    let generated = common::pondra()
        .args(["--dir", lake_arg, "tpch", "gen", "--sf", "0.001"])
        .output()
        .unwrap();
    assert!(generated.status.success(), "{}", stderr(&generated));
    let mut child = common::pondra()
        .args(["--dir", lake_arg, "tpch", "run", "--queries", "1,6,14"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes before the first line is written.
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    assert!(!output.status.success());
    assert!(!stderr(&output).contains("panicked"), "{}", stderr(&output));
}

#[test]
fn the_shell_takes_duckdb_and_psql_commands() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let script = dir.path().join("more.sql");
    std::fs::write(
        &script,
        "INSERT INTO t VALUES (2, 'b');\nSELECT count(*) AS n FROM t;\n",
    )
    .unwrap();
    let input = format!(
        "CREATE TABLE t (id INT, name VARCHAR);\n\
         INSERT INTO t VALUES (1, 'a|z');\n\
         .tables\n\
         \\d t\n\
         .mode csv\n\
         SELECT * FROM t;\n\
         .mode markdown\n\
         SELECT * FROM t;\n\
         .read {}\n\
         .mode json\n\
         .timer on\n\
         SELECT 7 AS seven;\n\
         .timer off\n\
         .mode nonsense\n\
         .help\n\
         \\q\n\
         SELECT 'not run';\n",
        script.display()
    );
    let output = shell(&lake, &input);
    assert!(output.status.success(), "{}", stderr(&output));
    let printed = stdout(&output);
    assert!(printed.contains("| t "), "{printed}");
    assert!(
        printed.contains("| id ") && printed.contains("VARCHAR"),
        "{printed}"
    );
    assert!(printed.contains("id,name\n1,a|z\n"), "{printed}");
    assert!(
        printed.contains("| id | name |\n|---|---|\n| 1 | a\\|z |\n"),
        "{printed}"
    );
    assert!(printed.contains("| n |\n|---|\n| 2 |\n"), "{printed}");
    assert!(printed.contains("[{\"seven\":7}]"), "{printed}");
    assert!(printed.contains("Run Time: "), "{printed}");
    assert!(printed.contains(".read FILE"), "{printed}");
    assert!(!printed.contains("not run"), "{printed}");
    assert!(
        stderr(&output).contains(".mode nonsense"),
        "{}",
        stderr(&output)
    );
}
