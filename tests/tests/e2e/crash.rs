//! Writers killed with SIGKILL at random moments lose nothing they acknowledged, and a
//! transaction is there whole or not at all: on a folder, and on a bucket of each store's API
//! (moto's S3, Azurite, fake-gcs-server).

use crate::common;

use std::collections::BTreeSet;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::emulators::{BucketStore, Emulator};
use common::s3::S3;
use common::{pondra, stderr, stdout};
use rand::{Rng, SeedableRng};

/// A transaction's second row is its first value plus this.
const PAIR_OFFSET: i64 = 1_000_000;

#[test]
fn acknowledged_inserts_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    writers_killed_at_random(&Lake::folder(&lake), 120);
}

/// The same on a lake in a bucket of a real S3 API, where every commit is a network round trip.
#[test]
fn acknowledged_inserts_to_a_bucket_survive_sigkill() {
    writers_killed_at_random(&Lake::bucket(S3::start()), 40);
}

/// The same on Azurite, Azure Storage's emulator.
#[test]
fn acknowledged_inserts_to_an_azure_container_survive_sigkill() {
    writers_killed_at_random(&Lake::bucket(Emulator::azure()), 40);
}

/// The same on fake-gcs-server, Google Cloud Storage's emulator.
#[test]
fn acknowledged_inserts_to_a_gcs_bucket_survive_sigkill() {
    writers_killed_at_random(&Lake::bucket(Emulator::gcs()), 40);
}

/// Where the writers write, and what they need to reach it.
struct Lake {
    location: String,
    env: Vec<(&'static str, String)>,
    cache: Option<String>,
    /// Holds the cache's folder until the test ends.
    _cache_folder: Option<tempfile::TempDir>,
}

impl Lake {
    /// A lake in a new bucket of `store`, with a cache that outlives the test's processes.
    fn bucket(store: &dyn BucketStore) -> Lake {
        let bucket = store.bucket("crash");
        let folder = tempfile::tempdir().unwrap();
        let cache = folder.path().join("cache");
        Lake {
            location: store.url(&bucket, "lake"),
            env: store.env(),
            cache: Some(cache.to_str().unwrap().to_string()),
            _cache_folder: Some(folder),
        }
    }

    fn folder(path: &std::path::Path) -> Lake {
        Lake {
            location: path.to_str().unwrap().to_string(),
            env: Vec::new(),
            cache: None,
            _cache_folder: None,
        }
    }

    /// `pondra [global args] sql --dir <lake> ...`
    fn command(&self, global: &[&str]) -> std::process::Command {
        let mut command = pondra();
        command
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .args(global);
        if let Some(cache) = &self.cache {
            command.args(["--cache-dir", cache]);
        }
        command.args(["sql", "--dir", &self.location]);
        command
    }

    fn sql(&self, args: &[&str]) -> std::process::Output {
        self.command(&[])
            .args(args)
            .output()
            .expect("run pondra sql")
    }
}

/// How a writer process ended.
enum Ended {
    /// It exited successfully on its own, after this long.
    Succeeded(Duration),
    /// It exited with an error, this one.
    Failed(String),
    /// It was killed with SIGKILL; `succeeded` if it had exited successfully just before.
    Killed { succeeded: bool },
}

/// Runs `statement` in a `pondra sql` process on `lake`, killing it with SIGKILL after
/// `kill_after` unless it ends first. A process that runs two minutes fails the test.
fn run_or_kill(lake: &Lake, statement: &str, kill_after: Option<Duration>) -> Ended {
    let mut child = lake
        .command(&["--retain-secs", "0"])
        .arg(statement)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            if status.success() {
                return Ended::Succeeded(started.elapsed());
            }
            let output = child.wait_with_output().unwrap();
            return Ended::Failed(String::from_utf8_lossy(&output.stderr).into_owned());
        }
        if kill_after.is_some_and(|k| started.elapsed() >= k) {
            // SIGKILL: no chance to flush or clean up.
            unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
            let succeeded = child.wait().unwrap().success();
            return Ended::Killed { succeeded };
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "a writer hung: {statement}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The seed CI runs: fixed, so that the statements and when each is killed are decided alike
/// on every run (the kills still land wherever the process has got to by then).
const CI_SEED: u64 = 20_261_206;

/// The test's random numbers, from `PONDRA_CRASH_SEED` (any seed, to search further) or
/// `CI_SEED`.
fn seeded_rng() -> rand::rngs::StdRng {
    let seed: u64 = std::env::var("PONDRA_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(CI_SEED);
    eprintln!("crash test seed: {seed} (rerun with PONDRA_CRASH_SEED={seed})");
    rand::rngs::StdRng::seed_from_u64(seed)
}

/// Runs up to `writers` writers one after another, killing about half of them at a random
/// moment, then checks that every acknowledged insert is there.
fn writers_killed_at_random(lake: &Lake, writers: i64) {
    let mut rng = seeded_rng();
    let created = lake.sql(
        &[
            "CREATE TABLE t (v BIGINT, pad VARCHAR); CREATE MATERIALIZED VIEW c AS SELECT count(*) AS n, sum(v) AS s FROM t",
        ],
    );
    assert!(created.status.success(), "{}", stderr(&created));

    // Measure how long one insert takes, so kills land all through a writer's life.
    let started = Instant::now();
    let first = lake.sql(&["INSERT INTO t VALUES (0, 'x')"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let mut typical = started.elapsed().max(Duration::from_millis(20));

    let mut acknowledged = BTreeSet::from([0i64]);
    // The first values of the writers that ran a transaction.
    let mut pairs = BTreeSet::new();
    let (mut killed, mut failed) = (0, 0);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut value = 1i64;
    while value <= writers && Instant::now() < deadline {
        // Some inserts are large (a log object, not inline) and some checkpoint, so kills also
        // land while objects are written and while rows are tiered.
        let pad = if rng.random_bool(0.2) { 70_000 } else { 8 };
        let mut statement = format!("INSERT INTO t VALUES ({value}, repeat_marker)");
        // Some writers run a transaction of two inserts, killed before or during COMMIT.
        let transaction = rng.random_bool(0.3);
        if transaction {
            statement = format!(
                "BEGIN; {statement}; INSERT INTO t VALUES ({}, 'pair'); COMMIT",
                value + PAIR_OFFSET
            );
            pairs.insert(value);
        }
        statement = statement.replace("repeat_marker", &format!("'{}'", "p".repeat(pad)));
        if rng.random_bool(0.15) {
            statement.push_str("; CHECKPOINT");
        }
        // Half of the writers are left alone; they keep the measure of a writer's life current.
        let kill_after = rng
            .random_bool(0.5)
            .then(|| typical.mul_f64(rng.random_range(0.0..1.2)));
        match run_or_kill(lake, &statement, kill_after) {
            Ended::Succeeded(took) => {
                acknowledged.insert(value);
                if kill_after.is_none() {
                    typical = (typical + took) / 2;
                }
            }
            Ended::Failed(error) => {
                failed += 1;
                eprintln!("insert {value} failed: {error}");
            }
            // Finished before the kill landed.
            Ended::Killed { succeeded: true } => {
                acknowledged.insert(value);
            }
            Ended::Killed { succeeded: false } => killed += 1,
        }
        value += 1;
    }
    eprintln!(
        "acknowledged {}, killed {killed}, failed {failed}",
        acknowledged.len()
    );
    assert!(killed > 0, "no writer was killed: the test proved nothing");
    assert!(acknowledged.len() > 1, "no insert was acknowledged");

    let read = lake.sql(&["--format", "csv", "SELECT v FROM t ORDER BY v"]);
    assert!(
        read.status.success(),
        "the lake no longer opens: {}",
        stderr(&read)
    );
    let present: BTreeSet<i64> = stdout(&read)
        .lines()
        .skip(1)
        .map(|l| l.parse().unwrap())
        .collect();
    for pair in &pairs {
        if acknowledged.contains(pair) {
            acknowledged.insert(pair + PAIR_OFFSET);
        }
    }
    let lost: Vec<_> = acknowledged.difference(&present).collect();
    assert!(lost.is_empty(), "acknowledged inserts lost: {lost:?}");
    // A transaction's two rows are both there or neither is.
    let halves: Vec<_> = pairs
        .iter()
        .filter(|v| present.contains(v) != present.contains(&(*v + PAIR_OFFSET)))
        .collect();
    assert!(
        halves.is_empty(),
        "transactions committed in part: {halves:?}"
    );

    // The view saw exactly the rows that committed.
    let view = lake.sql(&["--format", "csv", "SELECT n, s FROM c"]);
    let expected = format!("n,s\n{},{}\n", present.len(), present.iter().sum::<i64>());
    assert_eq!(stdout(&view), expected, "{}", stderr(&view));
}

#[test]
fn acknowledged_changes_survive_sigkill_and_none_is_half_applied() {
    let dir = tempfile::tempdir().unwrap();
    changers_killed_at_random(&Lake::folder(&dir.path().join("lake")), 80);
}

/// A keyed table as the test knows it: balance by id.
type Accounts = std::collections::BTreeMap<i64, i64>;

/// One random UPDATE, DELETE, MERGE or upsert of `accounts`, and what it makes of them.
fn random_change(rng: &mut rand::rngs::StdRng, accounts: &Accounts) -> (String, Accounts) {
    let mut after = accounts.clone();
    let id = |rng: &mut rand::rngs::StdRng| rng.random_range(1..=400i64);
    let statement = match rng.random_range(0..4) {
        0 => {
            let (a, b, amount) = (id(rng), id(rng), rng.random_range(1..50i64));
            if a == b || !accounts.contains_key(&a) || !accounts.contains_key(&b) {
                return random_change(rng, accounts);
            }
            *after.get_mut(&a).unwrap() -= amount;
            *after.get_mut(&b).unwrap() += amount;
            format!(
                "UPDATE acct SET balance = balance + CASE WHEN id = {a} THEN -{amount} \
                 ELSE {amount} END WHERE id IN ({a}, {b})"
            )
        }
        1 => {
            let low = id(rng);
            let high = low + rng.random_range(0..6);
            after.retain(|id, _| !(low..=high).contains(id));
            format!("DELETE FROM acct WHERE id BETWEEN {low} AND {high}")
        }
        2 => {
            let mut source = Accounts::new();
            for _ in 0..rng.random_range(1..5) {
                source.insert(id(rng), rng.random_range(-20..50i64));
            }
            for (id, amount) in &source {
                match after.get(id) {
                    Some(_) if *amount < 0 => {
                        after.remove(id);
                    }
                    Some(balance) => {
                        after.insert(*id, balance + amount);
                    }
                    None => {
                        after.insert(*id, *amount);
                    }
                }
            }
            let rows: Vec<String> = source.iter().map(|(i, a)| format!("({i}, {a})")).collect();
            format!(
                "MERGE INTO acct USING (VALUES {}) AS s(id, amount) ON acct.id = s.id \
                 WHEN MATCHED AND s.amount < 0 THEN DELETE \
                 WHEN MATCHED THEN UPDATE SET balance = balance + s.amount \
                 WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.amount)",
                rows.join(", ")
            )
        }
        _ => {
            let (a, balance) = (id(rng), rng.random_range(0..1000i64));
            after.insert(a, balance);
            format!("INSERT INTO acct VALUES ({a}, {balance})")
        }
    };
    (statement, after)
}

/// Runs up to `changers` statements that change rows, one after another, killing about half of
/// them at a random moment. After each, the table must hold what the test expects: the
/// statement's result if it was acknowledged, and the result or the state before (never a
/// part of it) if it was killed.
fn changers_killed_at_random(lake: &Lake, changers: usize) {
    let mut rng = seeded_rng();
    let created = lake.sql(&[
        "CREATE TABLE acct (id BIGINT PRIMARY KEY, balance BIGINT); \
         INSERT INTO acct SELECT i, 100 FROM generate_series(1, 300) g(i); CHECKPOINT",
    ]);
    assert!(created.status.success(), "{}", stderr(&created));
    let mut accounts: Accounts = (1..=300).map(|id| (id, 100)).collect();
    let read = |lake: &Lake| -> Accounts {
        let output = lake.sql(&["--format", "csv", "SELECT id, balance FROM acct"]);
        assert!(output.status.success(), "{}", stderr(&output));
        stdout(&output)
            .lines()
            .skip(1)
            .map(|line| {
                let (id, balance) = line.split_once(',').unwrap();
                (id.parse().unwrap(), balance.parse().unwrap())
            })
            .collect()
    };
    let started = Instant::now();
    let typical = {
        let probe = lake.sql(&["SELECT count(*) FROM acct"]);
        assert!(probe.status.success(), "{}", stderr(&probe));
        started.elapsed().max(Duration::from_millis(20))
    };
    let (mut killed, mut landed) = (0, 0);
    let deadline = Instant::now() + Duration::from_secs(60);
    for _ in 0..changers {
        if Instant::now() >= deadline {
            break;
        }
        let (mut statement, after) = random_change(&mut rng, &accounts);
        if rng.random_bool(0.15) {
            statement.push_str("; CHECKPOINT");
        }
        let kill_after = rng
            .random_bool(0.5)
            .then(|| typical.mul_f64(rng.random_range(0.0..1.5)));
        let acknowledged = match run_or_kill(lake, &statement, kill_after) {
            Ended::Succeeded(_) => true,
            Ended::Failed(error) => panic!("{statement}: {error}"),
            Ended::Killed { succeeded } => succeeded,
        };
        let present = read(lake);
        if acknowledged {
            assert_eq!(present, after, "acknowledged change lost: {statement}");
        } else {
            killed += 1;
            assert!(
                present == accounts || present == after,
                "a killed statement is half applied: {statement}"
            );
            landed += usize::from(present == after && present != accounts);
        }
        accounts = present;
    }
    eprintln!("killed {killed}, of which {landed} had committed");
    assert!(
        killed > 0,
        "no statement was killed: the test proved nothing"
    );
}
