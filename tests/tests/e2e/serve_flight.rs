//! `pondra serve`'s Arrow Flight SQL door, used with Python's ADBC Flight SQL driver.

use crate::common;

use common::{Served, python};

fn run_python(args: &[&str]) -> (String, bool) {
    // The driver warns that it cannot turn autocommit off: every statement commits at once.
    let output = python().args(["-W", "ignore"]).args(args).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (text, output.status.success())
}

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/python/adbc_client.py");

#[test]
fn adbc_queries_prepared_statements_metadata_and_ingest() {
    let dir = tempfile::tempdir().unwrap();
    let served = Served::start(dir.path(), &[]);
    let (out, ok) = run_python(&[SCRIPT, &served.doors["flight"]]);
    assert!(ok, "{out}");
    assert!(out.trim_end().ends_with("ok"), "{out}");
}

/// Tries `sql` over Flight SQL with `token` (if any); prints `ok` or the error.
const TRY: &str = r#"
import sys
import adbc_driver_flightsql.dbapi as flight_sql
address, sql = sys.argv[1], sys.argv[2]
kwargs = {}
if len(sys.argv) > 3:
    kwargs["db_kwargs"] = {"adbc.flight.sql.authorization_header": "Bearer " + sys.argv[3]}
try:
    with flight_sql.connect("grpc://" + address, **kwargs) as conn:
        cur = conn.cursor()
        cur.execute(sql)
        if cur.description:
            cur.fetchall()
    print("ok")
except flight_sql.Error as e:
    print("error:", e)
"#;

#[test]
fn tokens_guard_flight_sql() {
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
    let address = served.doors["flight"].as_str();
    let attempt = |sql: &str, token: Option<&str>| {
        let mut args = vec!["-c", TRY, address, sql];
        args.extend(token);
        let (out, ok) = run_python(&args);
        assert!(ok, "{out}");
        out
    };
    let out = attempt("SELECT 1", None);
    assert!(
        out.contains("UNAUTHENTICATED") && out.contains("a token is required"),
        "{out}"
    );
    let out = attempt("SELECT 1", Some("wrong"));
    assert!(out.contains("the token is not valid"), "{out}");
    assert!(attempt("CREATE TABLE t (a INT)", Some("w-secret")).contains("permission denied"));
    assert!(
        attempt("CREATE TABLE t (a INT)", Some("a-secret"))
            .trim_end()
            .ends_with("ok")
    );
    let out = attempt("INSERT INTO t VALUES (1)", Some("r-secret"));
    assert!(
        out.contains("a read token cannot run this statement"),
        "{out}"
    );
    assert!(
        attempt("INSERT INTO t VALUES (1)", Some("w-secret"))
            .trim_end()
            .ends_with("ok")
    );
    assert!(
        attempt("SELECT * FROM t", Some("r-secret"))
            .trim_end()
            .ends_with("ok")
    );
}
