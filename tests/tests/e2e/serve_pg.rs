//! `pondra serve`'s Postgres door, used with psql and Python's psycopg.

use crate::common;

use std::process::Command;

use common::{Served, python};

/// Runs psql against the served lake with `args`; returns stdout, stderr and success.
fn psql(served: &Served, password: Option<&str>, args: &[&str]) -> (String, String, bool) {
    let (host, port) = served.doors["pg"].rsplit_once(':').unwrap();
    let mut command = Command::new("psql");
    command
        .args([
            "-h",
            host,
            "-p",
            port,
            "-U",
            "analyst",
            "-d",
            "lake",
            "-X",
            "-v",
            "ON_ERROR_STOP=1",
        ])
        .args(args)
        .env("PGCONNECT_TIMEOUT", "10")
        .env_remove("PGPASSWORD");
    if let Some(password) = password {
        command.env("PGPASSWORD", password);
    }
    let output = command.output().expect("run psql (postgresql-client)");
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        output.status.success(),
    )
}

#[test]
fn psql_runs_statements_and_copy() {
    let dir = tempfile::tempdir().unwrap();
    let served = Served::start(dir.path(), &[]);
    let (out, err, ok) = psql(
        &served,
        None,
        &[
            "-c",
            "CREATE TABLE t (id INT, name VARCHAR, amount DECIMAL(10,2), d DATE, b BOOLEAN)",
            "-c",
            "INSERT INTO t VALUES (1, 'a', 1.50, '2024-01-02', true), (2, NULL, NULL, NULL, NULL)",
            "-c",
            "SELECT * FROM t ORDER BY id",
        ],
    );
    assert!(ok, "{err}");
    assert!(out.contains("CREATE TABLE\nINSERT 0 2\n"), "{out}");
    assert!(
        out.contains("  1 | a    |   1.50 | 2024-01-02 | t\n"),
        "{out}"
    );
    assert!(out.contains("(2 rows)"), "{out}");

    let copy = served.doors["pg"].clone();
    let (host, port) = copy.rsplit_once(':').unwrap();
    let mut child = Command::new("psql")
        .args([
            "-h",
            host,
            "-p",
            port,
            "-U",
            "analyst",
            "-d",
            "lake",
            "-X",
            "-c",
            "COPY t FROM STDIN",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"3\tc\t3.25\t2024-03-04\tf\n4\td\\te\t\\N\t\\N\tt\n")
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout), "COPY 2\n");

    let (out, _, ok) = psql(
        &served,
        None,
        &[
            "-A",
            "-t",
            "-c",
            "SELECT id, name, b FROM t WHERE id > 2 ORDER BY id",
        ],
    );
    assert!(ok);
    assert_eq!(out, "3|c|f\n4|d\te|t\n");
    // What psql's \dt and a client browsing information_schema read.
    let (out, err, ok) = psql(
        &served,
        None,
        &["-c", "CREATE VIEW v AS SELECT id FROM t", "-c", "\\dt"],
    );
    assert!(ok, "{err}");
    assert!(
        out.contains(" public | t    | table | pondra\n(1 row)"),
        "{out}"
    );
    // psql's \d of a table and of a view: eight catalog queries, arrays among them.
    let (out, err, ok) = psql(&served, None, &["-c", "\\d t", "-c", "\\d v"]);
    assert!(ok && err.is_empty(), "{err}");
    assert!(out.contains("Table \"public.t\""), "{out}");
    assert!(out.contains(" amount | numeric "), "{out}");
    assert!(out.contains("View \"public.v\""), "{out}");
    // \d+ reads a table's options through a correlated unnest, and the columns' storage.
    let (out, err, ok) = psql(&served, None, &["-c", "\\d+ t"]);
    assert!(ok && err.is_empty(), "{err}");
    assert!(out.contains("Table \"public.t\""), "{out}");
    assert!(out.contains("| Storage "), "{out}");
    assert!(out.contains("Access method: heap"), "{out}");
    // \d of a table with a key and an index reads pg_index and pg_constraint too.
    let (out, err, ok) = psql(
        &served,
        None,
        &[
            "-c",
            "CREATE TABLE keyed (id INT PRIMARY KEY, v TEXT)",
            "-c",
            "CREATE INDEX keyed_v ON keyed (v)",
            "-c",
            "\\d keyed",
            "-c",
            "DROP TABLE keyed",
        ],
    );
    assert!(ok && err.is_empty(), "{err}");
    assert!(out.contains("Table \"public.keyed\""), "{out}");
    assert!(
        out.contains("\"keyed_pkey\" PRIMARY KEY, btree (id)"),
        "{out}"
    );
    assert!(out.contains("\"keyed_v\" btree (v)"), "{out}");
    // \l (E'' strings), \du (a correlated ARRAY(subquery)), \df, \dn.
    let (out, err, ok) = psql(
        &served,
        None,
        &["-c", "\\l", "-c", "\\du", "-c", "\\df", "-c", "\\dn"],
    );
    assert!(ok && err.is_empty(), "{err}");
    assert!(out.contains(" pondra | pondra | UTF8 "), "{out}");
    assert!(
        out.contains(" pondra    | Superuser, Create role, Create DB | {}"),
        "{out}"
    );
    assert!(out.contains("List of functions"), "{out}");
    assert!(out.contains(" public | pondra"), "{out}");
    // Schemas: \dn lists them, \dt and \d show a schema's tables under it.
    let (out, err, ok) = psql(
        &served,
        None,
        &[
            "-c",
            "CREATE SCHEMA sales",
            "-c",
            "CREATE TABLE sales.orders (id INT PRIMARY KEY, amount BIGINT)",
            "-c",
            "\\dn",
            "-c",
            "\\dt sales.*",
            "-c",
            "\\d sales.orders",
            "-c",
            "DROP SCHEMA sales CASCADE",
        ],
    );
    assert!(ok && err.is_empty(), "{err}");
    assert!(out.contains(" sales  | pondra"), "{out}");
    assert!(out.contains(" sales  | orders | table | pondra"), "{out}");
    assert!(out.contains("Table \"sales.orders\""), "{out}");
    assert!(
        out.contains("\"orders_pkey\" PRIMARY KEY, btree (id)"),
        "{out}"
    );
    let (out, _, ok) = psql(
        &served,
        None,
        &[
            "-A",
            "-t",
            "-c",
            "SELECT table_name, table_type FROM information_schema.tables ORDER BY 1",
        ],
    );
    assert!(ok);
    assert_eq!(out, "t|BASE TABLE\nv|VIEW\n");
    let (out, _, ok) = psql(
        &served,
        None,
        &[
            "-A",
            "-t",
            "-c",
            "SELECT column_name, data_type, ordinal_position FROM information_schema.columns WHERE table_name = 't' ORDER BY 3",
        ],
    );
    assert!(ok);
    assert_eq!(
        out,
        "id|integer|1\nname|character varying|2\namount|numeric|3\nd|date|4\nb|boolean|5\n"
    );

    // A struct is a record in Postgres's text form, a NULL field empty (ADR 0063); a map is
    // its text in DuckDB's form (ADR 0064).
    let (out, err, ok) = psql(
        &served,
        None,
        &[
            "-A",
            "-t",
            "-c",
            "SELECT {'a': 1, 'b': 'x y'}, row(2, NULL), MAP {'k': [1]}",
        ],
    );
    assert!(ok, "{err}");
    assert_eq!(out, "(1,\"x y\")|(2,)|{k=[1]}\n");

    let (_, err, ok) = psql(&served, None, &["-c", "SELECT nope FROM t"]);
    assert!(!ok);
    assert!(err.contains("column \"nope\" does not exist"), "{err}");
}

#[test]
fn psycopg_parameters_copy_and_binary_results() {
    let dir = tempfile::tempdir().unwrap();
    let served = Served::start(dir.path(), &[]);
    let port = served.doors["pg"].rsplit_once(':').unwrap().1.to_string();
    common::python_script_passes("psycopg_client.py", &[&port]);
}

/// A live query's every change reaches psycopg (COPY (SUBSCRIBE TO view) TO STDOUT) and an
/// HTTP client (`GET /views/<name>/changes`, server-sent events) (ADR 0054).
#[test]
fn subscriptions_stream_each_change() {
    let dir = tempfile::tempdir().unwrap();
    let served = Served::start(dir.path(), &[]);
    let port = served.doors["pg"].rsplit_once(':').unwrap().1.to_string();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/python/subscribe_client.py");
    let output = python()
        .arg(script)
        .arg(&port)
        .arg(served.http())
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(printed.ends_with("ok\n"), "{printed}");
    println!("{printed}");
}

#[test]
fn tokens_are_postgres_passwords() {
    let dir = tempfile::tempdir().unwrap();
    let served = Served::start(
        dir.path(),
        &[
            "--token-read",
            "r-secret",
            "--token-write",
            "w-secret",
            "--token-admin",
            "a-secret",
        ],
    );
    let (_, err, ok) = psql(&served, None, &["-w", "-c", "SELECT 1"]);
    assert!(!ok, "no password must be refused");
    assert!(err.contains("password"), "{err}");
    let (_, err, ok) = psql(&served, Some("wrong"), &["-c", "SELECT 1"]);
    assert!(!ok);
    assert!(err.contains("password authentication failed"), "{err}");
    let (_, err, ok) = psql(&served, Some("w-secret"), &["-c", "CREATE TABLE t (a INT)"]);
    assert!(!ok);
    assert!(
        err.contains("a write token cannot run this statement"),
        "{err}"
    );
    let (_, err, ok) = psql(&served, Some("a-secret"), &["-c", "CREATE TABLE t (a INT)"]);
    assert!(ok, "{err}");
    let (_, err, ok) = psql(
        &served,
        Some("r-secret"),
        &["-c", "INSERT INTO t VALUES (1)"],
    );
    assert!(!ok);
    assert!(
        err.contains("a read token cannot run this statement"),
        "{err}"
    );
    let (_, err, ok) = psql(
        &served,
        Some("w-secret"),
        &["-c", "INSERT INTO t VALUES (1)"],
    );
    assert!(ok, "{err}");
    let (out, err, ok) = psql(
        &served,
        Some("r-secret"),
        &["-A", "-t", "-c", "SELECT count(*) FROM t"],
    );
    assert!(ok, "{err}");
    assert_eq!(out, "1\n");
}

#[test]
fn each_database_name_is_a_lake_with_lakes() {
    let dir = tempfile::tempdir().unwrap();
    let lakes = dir.path().join("lakes");
    let lakes_arg = lakes.to_string_lossy().into_owned();
    let served = Served::start(dir.path(), &["--lakes", &lakes_arg]);
    let (host, port) = served.doors["pg"].rsplit_once(':').unwrap();
    let run = |database: &str, sql: &str| {
        let output = Command::new("psql")
            .args([
                "-h", host, "-p", port, "-U", "analyst", "-d", database, "-X", "-A", "-t", "-c",
                sql,
            ])
            .output()
            .unwrap();
        (
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    run("alpha", "CREATE TABLE t (a INT)");
    run("alpha", "INSERT INTO t VALUES (1), (2)");
    assert_eq!(run("alpha", "SELECT count(*) FROM t").0, "2\n");
    let (_, err) = run("beta", "SELECT count(*) FROM t");
    assert!(err.contains("table t does not exist"), "{err}");
    // Each lake is the database it was named by.
    let query = "SELECT current_database(), current_catalog, (SELECT datname FROM pg_database)";
    assert_eq!(run("beta", query).0, "beta|beta|beta\n");
    assert!(lakes.join("alpha").join("catalog").exists());
    assert!(lakes.join("beta").exists());
    let (_, err) = run("../x", "SELECT 1");
    assert!(err.contains("invalid database name"), "{err}");
}
