//! The size-tiered compactor (ADR 0048) on a real lake: the files it merges, what it drops
//! (deleted and expired rows), and that every live row, its commit columns and the change feed
//! come through unchanged.

use std::sync::Arc;

use pondra_cluster::{Node, NodeOptions};
use pondra_tests::{map_cells, run_sql};

struct Lake {
    _dir: tempfile::TempDir,
    node: Arc<Node>,
    runtime: tokio::runtime::Runtime,
}

impl Lake {
    fn open() -> Lake {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let node = runtime
            .block_on(Node::open_folder(dir.path(), NodeOptions::default()))
            .unwrap();
        Lake {
            _dir: dir,
            node,
            runtime,
        }
    }

    fn sql(&self, sql: &str) {
        run_sql(&self.node, &self.runtime, sql).unwrap();
    }

    fn rows(&self, sql: &str) -> Vec<String> {
        let (_, batches) = run_sql(&self.node, &self.runtime, sql).unwrap().unwrap();
        map_cells(&batches, |_, _, _, text| text)
            .into_iter()
            .map(|row| row.join(" "))
            .collect()
    }

    fn table_id(&self, name: &str) -> u64 {
        self.node.snapshot().table(name).unwrap().id
    }

    fn files(&self, name: &str) -> usize {
        self.node.snapshot().files(self.table_id(name)).len()
    }

    fn deletion_vectors(&self, name: &str) -> usize {
        let snapshot = self.node.snapshot();
        snapshot
            .deletions
            .get(&self.table_id(name))
            .map_or(0, |d| d.len())
    }

    fn compact(&self) -> usize {
        self.runtime
            .block_on(self.node.compact(None, false))
            .unwrap()
    }
}

const EVERYTHING: &str = "SELECT k, v, _commit_version FROM kv ORDER BY k";

#[test]
fn a_tier_of_sorted_runs_becomes_one_run_with_every_row_and_commit() {
    let lake = Lake::open();
    lake.sql("CREATE TABLE kv (k INT PRIMARY KEY, v VARCHAR)");
    for round in 0..3 {
        // Keys interleave across runs, so the merged run must sort them.
        lake.sql(&format!(
            "INSERT INTO kv SELECT i * 4 + {round}, 'r{round}' FROM generate_series(0, 99) g(i); \
             CHECKPOINT"
        ));
    }
    assert_eq!(lake.files("kv"), 3);
    assert_eq!(lake.compact(), 0, "three files are no tier to merge yet");
    lake.sql("INSERT INTO kv VALUES (1000, 'last'); CHECKPOINT");
    let before = lake.rows(EVERYTHING);
    assert_eq!(lake.compact(), 4);
    assert_eq!(lake.files("kv"), 1);
    assert_eq!(lake.rows(EVERYTHING), before);
    assert_eq!(lake.rows("SELECT v FROM kv WHERE k = 201"), vec!["r1"]);
    // An upsert after the merge still finds the merged row.
    lake.sql("INSERT INTO kv VALUES (201, 'new')");
    assert_eq!(lake.rows("SELECT v FROM kv WHERE k = 201"), vec!["new"]);
    assert_eq!(lake.rows("SELECT count(*) FROM kv"), vec!["301"]);
}

#[test]
fn deleted_rows_and_their_vectors_go_and_the_feed_stays() {
    let lake = Lake::open();
    lake.sql("CREATE TABLE kv (k INT PRIMARY KEY, v VARCHAR)");
    lake.sql("INSERT INTO kv SELECT i, 'v' || i FROM generate_series(1, 100) g(i); CHECKPOINT");
    lake.sql("DELETE FROM kv WHERE k % 10 = 0");
    assert_eq!(lake.compact(), 0, "a tenth deleted is kept in place");
    lake.sql("UPDATE kv SET v = 'changed' WHERE k % 10 = 1");
    lake.sql("CHECKPOINT");
    let before = lake.rows(EVERYTHING);
    // A fifth of the first file's rows are deleted now: it is rewritten without them.
    assert_eq!(lake.deletion_vectors("kv"), 1);
    assert!(lake.compact() >= 1);
    assert_eq!(lake.deletion_vectors("kv"), 0);
    assert_eq!(lake.rows(EVERYTHING), before);
    let feed = "SELECT _change_type, count(*) FROM table_changes('kv', 0) GROUP BY 1 ORDER BY 1";
    assert_eq!(
        lake.rows(feed),
        vec![
            "delete 10",
            "insert 100",
            "update_postimage 10",
            "update_preimage 10"
        ]
    );
}

#[test]
fn expired_rows_leave_the_files_once_the_ttl_has_passed() {
    let lake = Lake::open();
    lake.sql("CREATE TABLE events (id INT, at TIMESTAMP) WITH (ttl = '1 second', ttl_column = at)");
    // Row 1 expires within 2 s from now: after tiering wrote it, before compaction runs.
    let soon = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 1;
    lake.sql(&format!(
        "INSERT INTO events VALUES \
         (1, TIMESTAMP '1970-01-01 00:00:00' + INTERVAL '{soon} seconds'), \
         (2, TIMESTAMP '2999-01-01 00:00:00'), (3, NULL); CHECKPOINT"
    ));
    let snapshot = lake.node.snapshot();
    let files = snapshot.files(lake.table_id("events"));
    assert_eq!(files.iter().map(|f| f.rows).sum::<u64>(), 3);
    // Rows stay in place until the file is older than the TTL.
    assert_eq!(lake.compact(), 0);
    std::thread::sleep(std::time::Duration::from_millis(2300));
    assert_eq!(lake.compact(), 1);
    assert_eq!(
        lake.rows("SELECT id FROM events ORDER BY id"),
        vec!["2", "3"]
    );
    let snapshot = lake.node.snapshot();
    let files = snapshot.files(lake.table_id("events"));
    assert_eq!(files.iter().map(|f| f.rows).sum::<u64>(), 2);
}

#[test]
fn files_of_older_columns_are_rewritten_in_the_tables() {
    let lake = Lake::open();
    lake.sql("CREATE TABLE t (a INT, b VARCHAR, c INT)");
    lake.sql("INSERT INTO t VALUES (1, 'x', 10), (2, 'y', 20); CHECKPOINT");
    lake.sql("ALTER TABLE t DROP COLUMN b");
    lake.sql("ALTER TABLE t ADD COLUMN d DOUBLE");
    let before = lake.rows("SELECT *, _commit_version FROM t ORDER BY a");
    assert_eq!(lake.compact(), 1);
    let snapshot = lake.node.snapshot();
    let table = snapshot.table("t").unwrap();
    let file = &snapshot.files(table.id)[0];
    assert_eq!(table.layout_of(&file.column_ids), None);
    assert_eq!(
        lake.rows("SELECT *, _commit_version FROM t ORDER BY a"),
        before
    );
}

#[test]
fn vacuum_full_merges_every_file_of_a_table() {
    let lake = Lake::open();
    lake.sql("CREATE TABLE t (a INT)");
    lake.sql("INSERT INTO t VALUES (1); CHECKPOINT; INSERT INTO t VALUES (2); CHECKPOINT");
    assert_eq!(lake.files("t"), 2);
    lake.sql("VACUUM t");
    assert_eq!(lake.files("t"), 2, "two files are no tier to merge");
    lake.sql("VACUUM FULL t");
    assert_eq!(lake.files("t"), 1);
    assert_eq!(lake.rows("SELECT a FROM t ORDER BY a"), vec!["1", "2"]);
    let refused = run_sql(&lake.node, &lake.runtime, "VACUUM nothere").unwrap_err();
    assert!(refused.0.contains("does not exist"), "{refused}");
}
