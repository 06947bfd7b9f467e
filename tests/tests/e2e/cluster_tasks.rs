//! A task on a cluster (ADR 0081): three `pondra serve` processes on one lake, a task every
//! 2 s, and the leader killed with SIGKILL twice. Only the leader runs ticks; a tick's row and
//! its claim commit together, so at the end every tick in `pondra_task_runs` ran once (no
//! scheduled time twice) and its statement's row is there once (as many rows as runs).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::cluster_nodes::{leader_among, number, post_sql, until};
use crate::common::{Served, sigkill};

const KILLS: usize = 2;

/// Kills the leader among `nodes` with SIGKILL and waits until another node leads; the killed
/// node comes back as a follower. Returns how long the cluster had no leader.
fn kill_leader(nodes: &mut Vec<Served>, lake: &Path) -> Duration {
    let leader = leader_among(nodes).expect("a leader");
    let position = nodes.iter().position(|n| n.http() == leader).unwrap();
    let mut killed = nodes.remove(position);
    let at = Instant::now();
    sigkill(&mut killed);
    until(Duration::from_secs(15), "a new leader", || {
        leader_among(nodes).filter(|l| *l != leader)
    });
    let without = at.elapsed();
    nodes.push(Served::start(lake, &[]));
    without
}

#[test]
fn a_task_ticks_once_per_schedule_while_leaders_are_killed() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let mut nodes: Vec<Served> = (0..3).map(|_| Served::start(&lake, &[])).collect();
    let first = nodes[0].http();
    for statement in [
        "CREATE TABLE ticks (at TIMESTAMPTZ)",
        "CREATE TASK every_two SCHEDULE 'EVERY 2 SECONDS' AS INSERT INTO ticks SELECT now()",
    ] {
        let (answer, status) = post_sql(&first, statement);
        assert_eq!(status, 200, "{statement}: {answer}");
    }
    let mut without_leader = Vec::new();
    for _ in 0..KILLS {
        std::thread::sleep(Duration::from_secs(5));
        without_leader.push(kill_leader(&mut nodes, &lake));
    }
    std::thread::sleep(Duration::from_secs(5));
    let any = nodes[0].http();
    let (answer, status) = post_sql(&any, "DROP TASK every_two");
    assert_eq!(status, 200, "{answer}");
    // A tick that started before the drop commits or is refused within this time.
    std::thread::sleep(Duration::from_secs(2));
    let count = |query: &str| until(Duration::from_secs(10), query, || number(&any, query));
    let runs = count("SELECT count(*) FROM pondra_task_runs WHERE task = 'every_two'");
    let distinct =
        count("SELECT count(DISTINCT scheduled_at) FROM pondra_task_runs WHERE task = 'every_two'");
    let failed = count("SELECT count(*) FROM pondra_task_runs WHERE status <> 'succeeded'");
    let rows = count("SELECT count(*) FROM ticks");
    eprintln!("{runs} ticks ran, {rows} rows; no leader for {without_leader:?}");
    assert_eq!(distinct, runs, "a scheduled time ran twice");
    assert_eq!(rows, runs, "a tick's row was written other than once");
    assert_eq!(failed, 0);
    // About 15 s of schedule at one tick per 2 s, less what the failovers cost.
    assert!(runs >= 4, "only {runs} ticks ran");
    let nodes_ran = count("SELECT count(DISTINCT node) FROM pondra_task_runs");
    assert!(
        nodes_ran >= 2,
        "the ticks ran on {nodes_ran} node(s): no leader took over"
    );
}
