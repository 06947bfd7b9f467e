//! `pondra serve`'s Postgres door with the tools analysts put on it: transactions through
//! psycopg, SQLAlchemy 2.1 and pandas (psycopg and psycopg2), jupysql's magics in IPython, and a
//! dbt 1.9 project (seed, two runs, tests). `.ci/run` installs them into the test virtualenv.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{Served, python};

/// Runs one of `python/`'s clients against the served lake; fails the test with its output.
fn run_client(served: &Served, script: &str) {
    let port = served.doors["pg"].rsplit_once(':').unwrap().1.to_string();
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("python")
        .join(script);
    let output = python()
        .arg(&path)
        .arg(&port)
        .output()
        .expect("run the Python client");
    assert!(
        output.status.success(),
        "{script} failed:\n{}\n{}",
        common::stdout(&output),
        common::stderr(&output)
    );
}

#[test]
fn psycopg_transactions_are_isolated_atomic_and_first_committer_wins() {
    let dir = tempfile::tempdir().unwrap();
    let served = Served::start(dir.path(), &[]);
    run_client(&served, "transactions_client.py");
}

#[test]
fn sqlalchemy_and_pandas_write_read_and_inspect_tables() {
    let dir = tempfile::tempdir().unwrap();
    let served = Served::start(dir.path(), &[]);
    run_client(&served, "sqlalchemy_client.py");
}

#[test]
fn jupysql_magics_return_rows() {
    let dir = tempfile::tempdir().unwrap();
    let served = Served::start(dir.path(), &[]);
    run_client(&served, "jupysql_client.py");
}

/// The `dbt` command of the test virtualenv, beside its Python.
fn dbt() -> Command {
    let python = std::env::var("PONDRA_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let bin = Path::new(&python)
        .parent()
        .expect("the virtualenv's bin folder");
    Command::new(bin.join("dbt"))
}

/// Runs a dbt command on the project in `project` against the served lake.
fn run_dbt(served: &Served, project: &Path, command: &str) {
    let (host, port) = served.doors["pg"].rsplit_once(':').unwrap();
    let output = dbt()
        .arg(command)
        .args(["--profiles-dir", ".", "--no-use-colors"])
        .current_dir(project)
        .env("PONDRA_PG_HOST", host)
        .env("PONDRA_PG_PORT", port)
        .env("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
        .output()
        .expect("run dbt");
    let out = common::stdout(&output);
    assert!(
        output.status.success() && out.contains("ERROR=0"),
        "dbt {command} failed:\n{out}\n{}",
        common::stderr(&output)
    );
}

#[test]
fn a_dbt_project_seeds_runs_twice_and_passes_its_tests() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    common::copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("dbt"), &project);
    let lake = dir.path().join("lake");
    let served = Served::start(&lake, &[]);
    run_dbt(&served, &project, "seed");
    run_dbt(&served, &project, "run");
    // The second run swaps the table model and merges into the incremental one. The seed's
    // amounts are float8, as dbt types a CSV column of decimals.
    run_dbt(&served, &project, "run");
    run_dbt(&served, &project, "test");
    let (host, port) = served.doors["pg"].rsplit_once(':').unwrap();
    let output = Command::new("psql")
        .args([
            "-h", host, "-p", port, "-U", "dbt", "-d", "lake", "-X", "-A", "-t",
        ])
        .args([
            "-c",
            "SELECT customer, orders, total FROM customer_totals ORDER BY customer",
        ])
        .args([
            "-c",
            "SELECT ordered_on, orders FROM daily_orders ORDER BY ordered_on",
        ])
        .args(["-c", "SELECT count(*), sum(order_id) FROM big_orders"])
        .args([
            "-c",
            "SELECT count(*) FROM pg_tables WHERE tablename LIKE '%dbt%'",
        ])
        .output()
        .expect("run psql");
    assert_eq!(
        common::stdout(&output),
        "ann|2|19.75\nbob|2|7.75\ncid|1|20\n\
         2026-01-03|1\n2026-01-04|1\n2026-01-05|2\n2026-01-06|1\n\
         3|8\n\
         0\n",
        "{}",
        common::stderr(&output)
    );
}
