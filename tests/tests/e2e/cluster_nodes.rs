//! Several `pondra serve` processes on one lake form a cluster (ADR 0053): one leads, the
//! others follow its stream of commits and hand it their writes, a read-only node refuses
//! writes, and a leader killed with SIGKILL is replaced by a follower. Writers append
//! exactly-once batches through every node while the leader is killed three times; at the
//! end every acknowledged batch is there once, and every node returns the same rows. The same
//! runs on a folder and on a bucket of each store: moto (S3), Azurite and fake-gcs-server.

use crate::common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Served, curl};

const WRITERS: usize = 4;
const KILLS: usize = 3;

/// The addresses of the writable nodes, which change as nodes are killed and restarted.
pub(crate) type Doors = Arc<Mutex<Vec<String>>>;

pub(crate) fn post_sql(addr: &str, body: &str) -> (String, u16) {
    let url = format!("http://{addr}/sql");
    curl(&["-m", "20", "-X", "POST", &url, "--data-binary", body])
}

pub(crate) fn cluster_of(addr: &str) -> Option<serde_json::Value> {
    let url = format!("http://{addr}/cluster");
    let (answer, status) = curl(&["-m", "5", &url]);
    (status == 200).then(|| serde_json::from_str(&answer).ok())?
}

/// One number from `SELECT ...` on `addr`.
pub(crate) fn number(addr: &str, query: &str) -> Option<i64> {
    let (answer, status) = post_sql(addr, query);
    if status != 200 {
        return None;
    }
    let json: serde_json::Value = serde_json::from_str(&answer).ok()?;
    json["rows"][0][0].as_i64()
}

pub(crate) fn until<T>(patience: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            started.elapsed() < patience,
            "{what}: not within {patience:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A writer: appends batch after batch of its own, each once (producer, seq), through the
/// nodes in turn; a batch that fails is sent again, to the next node, until one acknowledges
/// it. Returns the sequence numbers acknowledged.
pub(crate) fn write(writer: usize, doors: Doors, stop: Arc<AtomicBool>) -> Vec<u64> {
    let mut acknowledged = Vec::new();
    let mut turn = writer;
    for seq in 1.. {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let body = format!("writer,seq\n{writer},{seq}\n{writer},{seq}\n");
        let started = Instant::now();
        loop {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "writer {writer}: batch {seq} not acknowledged in a minute"
            );
            let addr = {
                let doors = doors.lock().unwrap();
                turn += 1;
                doors[turn % doors.len()].clone()
            };
            let url = format!("http://{addr}/tables/events/append?producer=w{writer}&seq={seq}");
            let (_, status) = curl(&[
                "-m",
                "20",
                "-X",
                "POST",
                &url,
                "-H",
                "Content-Type: text/csv",
                "--data-binary",
                &body,
            ]);
            if status == 200 {
                acknowledged.push(seq);
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    acknowledged
}

pub(crate) fn leader_among(nodes: &[Served]) -> Option<String> {
    nodes.iter().find_map(|node| {
        let cluster = cluster_of(&node.http())?;
        cluster["leader"].as_str().map(String::from)
    })
}

fn run(start: impl Fn(&[&str]) -> Served) {
    let mut nodes: Vec<Served> = (0..3).map(|_| start(&[])).collect();
    let reader = start(&["--read-only"]);
    let first = nodes[0].http();
    let (answer, status) = post_sql(&first, "CREATE TABLE events (writer INT, seq BIGINT)");
    assert_eq!(status, 200, "{answer}");

    // The first node leads; the others follow it, and it knows them.
    let cluster = until(Duration::from_secs(10), "the leader knows 3 others", || {
        let cluster = cluster_of(&first)?;
        (cluster["nodes"].as_array()?.len() == 4).then_some(cluster)
    });
    assert_eq!(cluster["leader"], first.as_str(), "{cluster}");
    let roles: Vec<&str> = cluster["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles.iter().filter(|r| **r == "follower").count(),
        2,
        "{cluster}"
    );
    assert_eq!(
        roles.iter().filter(|r| **r == "reader").count(),
        1,
        "{cluster}"
    );
    let follower = cluster_of(&nodes[1].http()).unwrap();
    assert_eq!(follower["leader"], first.as_str(), "{follower}");

    // A write through a follower is seen on every node.
    let (answer, status) = post_sql(&nodes[1].http(), "INSERT INTO events VALUES (-1, 0)");
    assert_eq!(status, 200, "{answer}");
    let written = Instant::now();
    for node in nodes.iter().map(Served::http).chain([reader.http()]) {
        until(Duration::from_secs(5), "the row everywhere", || {
            (number(&node, "SELECT count(*) FROM events")? == 1).then_some(())
        });
    }
    eprintln!(
        "a row written through a follower was on all 4 nodes after {:?}",
        written.elapsed()
    );

    // The read-only node refuses writes, with a clear error.
    let (answer, status) = post_sql(&reader.http(), "INSERT INTO events VALUES (-2, 0)");
    assert_ne!(status, 200, "{answer}");
    assert!(answer.contains("read-only"), "{answer}");

    let doors: Doors = Arc::new(Mutex::new(nodes.iter().map(Served::http).collect()));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (doors, stop) = (doors.clone(), stop.clone());
            std::thread::spawn(move || write(w, doors, stop))
        })
        .collect();

    let mut failovers = Vec::new();
    for _ in 0..KILLS {
        std::thread::sleep(Duration::from_secs(2));
        let leader = leader_among(&nodes).expect("a leader");
        let position = nodes
            .iter()
            .position(|n| n.http() == leader)
            .expect("the leader is one of the nodes");
        let mut killed = nodes.remove(position);
        let at = Instant::now();
        common::sigkill(&mut killed);
        // A new leader shows, and takes a write.
        let new_leader = until(Duration::from_secs(15), "a new leader", || {
            leader_among(&nodes).filter(|l| *l != leader)
        });
        let elected = at.elapsed();
        // A row written through a node that did not lead (writer -3: not a batch).
        until(Duration::from_secs(15), "a write after the kill", || {
            let tried = Instant::now();
            let (answer, written) = post_sql(&nodes[0].http(), "INSERT INTO events VALUES (-3, 0)");
            if written != 200 || tried.elapsed() > Duration::from_secs(1) {
                eprintln!(
                    "a write after {:?} took {:?}: {written} {answer}",
                    at.elapsed(),
                    tried.elapsed()
                );
            }
            (written == 200).then_some(())
        });
        let writable = at.elapsed();
        eprintln!(
            "killed the leader {leader}: {new_leader} led after {elected:?}, took writes after {writable:?}"
        );
        failovers.push(writable);
        // The killed node comes back, as a follower.
        let restarted = start(&[]);
        nodes.push(restarted);
        *doors.lock().unwrap() = nodes.iter().map(Served::http).collect();
    }
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::SeqCst);
    let acknowledged: Vec<Vec<u64>> = writers.into_iter().map(|w| w.join().unwrap()).collect();

    // Every acknowledged batch is there once (two rows each), and nothing else.
    let expected: usize = acknowledged.iter().map(|a| a.len() * 2).sum();
    let leader = leader_among(&nodes).expect("a leader at the end");
    let query = "SELECT count(*) FROM (SELECT writer, seq, count(*) AS n FROM events \
                 WHERE writer >= 0 GROUP BY writer, seq) g WHERE n <> 2";
    assert_eq!(
        number(&leader, query),
        Some(0),
        "a batch appended twice or half"
    );
    for (writer, seqs) in acknowledged.iter().enumerate() {
        let count = format!("SELECT count(*) FROM events WHERE writer = {writer}");
        assert_eq!(
            number(&leader, &count),
            Some(seqs.len() as i64 * 2),
            "writer {writer}'s batches"
        );
    }
    assert!(expected > 0);
    // Every node, the read-only one too, returns the same rows.
    let digest = "SELECT count(*) * 1000003 + sum(writer * 7919 + seq) FROM events";
    let want = number(&leader, digest).expect("the leader's rows");
    for node in nodes.iter().map(Served::http).chain([reader.http()]) {
        until(
            Duration::from_secs(5),
            "the same rows on every node",
            || (number(&node, digest)? == want).then_some(()),
        );
    }
    let (answer, status) = post_sql(&reader.http(), "INSERT INTO events VALUES (-2, 0)");
    assert_ne!(status, 200, "{answer}");
    eprintln!(
        "{expected} rows of {} batches; writes taken again after each kill: {failovers:?}",
        expected / 2
    );
}

fn start_on_folder(lake: &Path) -> impl Fn(&[&str]) -> Served + '_ {
    move |args| Served::start(lake, args)
}

#[test]
fn three_nodes_and_a_reader_on_a_folder_survive_three_killed_leaders() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    run(start_on_folder(&lake));
}

#[test]
fn three_nodes_and_a_reader_on_moto_survive_three_killed_leaders() {
    run_on_store(common::s3::S3::start());
}

#[test]
fn three_nodes_and_a_reader_on_azurite_survive_three_killed_leaders() {
    run_on_store(common::emulators::Emulator::azure());
}

#[test]
fn three_nodes_and_a_reader_on_fake_gcs_survive_three_killed_leaders() {
    run_on_store(common::emulators::Emulator::gcs());
}

/// `run` with every process on a lake in a bucket of `store`.
fn run_on_store(store: &dyn common::emulators::BucketStore) {
    let lake = store.url(&store.bucket("cluster"), "lake");
    let env = store.env();
    let caches = tempfile::tempdir().unwrap();
    let started = std::sync::atomic::AtomicUsize::new(0);
    run(|args| {
        // A cache of its own for each process, as on separate machines.
        let n = started.fetch_add(1, Ordering::SeqCst);
        let cache = caches.path().join(n.to_string());
        let mut all = vec!["--cache-dir", cache.to_str().unwrap()];
        all.extend_from_slice(args);
        Served::start_at(&lake, &env, &all)
    });
}
