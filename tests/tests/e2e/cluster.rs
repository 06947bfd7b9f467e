//! Processes sharing one lake (ADR 0053): `pondra sql` on a lake a server leads hands its
//! commits to the server instead of fencing it.

use crate::common;

use common::{Served, curl, sql, stderr, stdout};

fn post(served: &Served, body: &str) -> String {
    let url = served.url("/sql");
    let (answer, status) = curl(&["-X", "POST", url.as_str(), "--data-binary", body]);
    assert_eq!(status, 200, "{body}: {answer}");
    answer
}

#[test]
fn pondra_sql_hands_its_commits_to_a_live_server() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let served = Served::start(&lake, &[]);
    post(&served, "CREATE TABLE t (k INT)");
    post(&served, "INSERT INTO t VALUES (1)");
    post(
        &served,
        "CREATE MATERIALIZED VIEW lowest AS SELECT min(k) AS k FROM t",
    );

    // The server leads and says so; a view's count tables are no table of its own.
    let (answer, status) = curl(&[served.url("/cluster").as_str()]);
    assert_eq!(status, 200, "{answer}");
    let cluster: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(cluster["leader"], cluster["self"], "{answer}");
    assert_eq!(cluster["nodes"][0]["role"], "leader", "{answer}");
    let (stats, _) = curl(&[served.url("/stats").as_str()]);
    let stats: serde_json::Value = serde_json::from_str(&stats).unwrap();
    assert_eq!(stats["leader"], true);
    assert_eq!(stats["term"], cluster["term"]);
    assert!(!stats.to_string().contains("$values"), "{stats}");

    let output = sql(
        &lake,
        &["INSERT INTO t VALUES (2), (3); \
             CREATE TABLE u AS SELECT k * 10 AS k FROM t; \
             UPDATE t SET k = k + 100 WHERE k = 1; \
             SELECT count(*), sum(k) FROM t"],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("3") && stdout(&output).contains("106"),
        "{}",
        stdout(&output)
    );

    // The server committed them: it sees them at once, and still takes writes.
    let answer = post(&served, "SELECT count(*), sum(k) FROM t");
    assert!(answer.ends_with(r#""rows":[[3,106]]}"#), "{answer}");
    let answer = post(&served, "SELECT sum(k) FROM u");
    assert!(answer.ends_with(r#""rows":[[60]]}"#), "{answer}");
    // The view followed the commits handed over: the least value 1 went up to 101.
    let answer = post(&served, "SELECT k FROM lowest");
    assert!(answer.ends_with(r#""rows":[[2]]}"#), "{answer}");
    post(&served, "INSERT INTO t VALUES (4)");
    let answer = post(&served, "SELECT count(*) FROM t");
    assert!(answer.ends_with(r#""rows":[[4]]}"#), "{answer}");

    // A statement that fails commits nothing, and says why.
    let output = sql(&lake, &["INSERT INTO missing VALUES (1)"]);
    assert!(!output.status.success());
    assert!(stderr(&output).contains("missing"), "{}", stderr(&output));

    // Once the server stops, its term ended, `pondra sql` leads for its own commits.
    served.stop();
    let output = sql(&lake, &["INSERT INTO t VALUES (5); SELECT count(*) FROM t"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains('5'), "{}", stdout(&output));
}

#[test]
fn pondra_sql_leads_once_a_killed_servers_beat_stands_still() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let mut served = Served::start(&lake, &["--token-admin", "secret"]);
    let url = served.url("/sql");
    let auth = "Authorization: Bearer secret";
    let (answer, status) = curl(&[
        "-X",
        "POST",
        &url,
        "-H",
        auth,
        "--data-binary",
        "CREATE TABLE t (k INT)",
    ]);
    assert_eq!(status, 200, "{answer}");

    // A server that asks for tokens takes a commit only with its admin token.
    let output = sql(&lake, &["INSERT INTO t VALUES (1)"]);
    assert!(!output.status.success());
    assert!(stderr(&output).contains("token"), "{}", stderr(&output));
    let output = common::pondra()
        .env("PONDRA_TOKEN", "secret")
        .args(["sql", "--dir"])
        .arg(&lake)
        .arg("INSERT INTO t VALUES (1)")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));

    // SIGKILL: no clean end. The beat stands still, and `pondra sql` leads after a lapse.
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(served.pid() as i32, libc::SIGKILL);
    }
    while served.running() {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let output = sql(&lake, &["INSERT INTO t VALUES (2); SELECT count(*) FROM t"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains('2'), "{}", stdout(&output));
}
