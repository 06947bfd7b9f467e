//! Other engines' table formats read in place (ADR 0058): a Delta Lake table written by
//! deltalake (delta-rs), read by `delta_scan` as its newest version.

use crate::common;

use std::path::Path;

use common::{Served, python, sql, stderr, stdout};

#[test]
fn delta_scan_reads_the_newest_version_of_a_table_deltalake_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/python/delta_writer.py");
    // deltalake 1.6's native threads now and then abort its process ("terminate called
    // without an active exception"); the fixture is written again in a fresh folder then.
    let mut attempt = 0;
    let (table, output) = loop {
        let table = dir.path().join(format!("sales_{attempt}"));
        let output = python().arg(script).arg(&table).output().unwrap();
        attempt += 1;
        if output.status.success() || attempt == 5 {
            break (table, output);
        }
    };
    assert!(output.status.success(), "{}", stderr(&output));
    let expected = stdout(&output).trim().replace(' ', ",");
    let lake = dir.path().join("lake");
    let query = format!(
        "SELECT count(*), sum(id), count(DISTINCT name) FROM delta_scan('{}')",
        table.display()
    );
    let output = sql(&lake, &["--format", "csv", &query]);
    assert!(output.status.success(), "{}", stderr(&output));
    let answered = stdout(&output);
    assert_eq!(answered.lines().last().unwrap(), expected, "{answered}");
    // A folder that holds no Delta table is refused by name.
    let missing = format!("SELECT * FROM delta_scan('{}')", dir.path().display());
    let output = sql(&lake, &[&missing]);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("not a Delta table"),
        "{}",
        stderr(&output)
    );
}

/// Runs `published_reader.py` with `args`; deltalake's native threads now and then abort a
/// process, so a reader that fails is run again, up to five times.
fn read_published(args: &[&str]) -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/python/published_reader.py");
    let mut attempt = 0;
    loop {
        let output = python().arg(script).args(args).output().unwrap();
        attempt += 1;
        if output.status.success() {
            return stdout(&output).trim().to_string();
        }
        assert!(attempt < 5, "{args:?}: {}", stderr(&output));
    }
}

/// What Pondra answers for what the reader script prints: rows, sum of ids, length of names.
fn pondra_summary(lake: &Path, table: &str) -> String {
    let query = format!("SELECT count(*), sum(id), sum(length(name)) FROM {table}");
    let output = sql(lake, &["--format", "csv", &query]);
    assert!(output.status.success(), "{}", stderr(&output));
    stdout(&output).lines().last().unwrap().to_string()
}

fn run(lake: &Path, statements: &str) {
    let output = sql(lake, &[statements]);
    assert!(output.status.success(), "{statements}: {}", stderr(&output));
}

/// The newest `vN.metadata.json` of a published table's Iceberg metadata.
fn newest_iceberg_metadata(table: &Path) -> String {
    let newest = std::fs::read_dir(table.join("metadata"))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            let n = name.strip_prefix('v')?.strip_suffix(".metadata.json")?;
            Some((n.parse::<u64>().ok()?, name))
        })
        .max()
        .expect("a metadata file");
    table.join("metadata").join(newest.1).display().to_string()
}

#[test]
fn a_published_table_reads_the_same_in_deltalake_and_pyiceberg() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    run(
        &lake,
        "CREATE TABLE t (id BIGINT, name VARCHAR, d DATE, price DECIMAL(12,2), at TIMESTAMP) \
         WITH (publish = 'delta,iceberg'); \
         INSERT INTO t SELECT i, 'name ' || i, \
           CASE WHEN i % 2 = 0 THEN DATE '2024-01-01' ELSE DATE '2024-02-29' END, \
           i * 1.25, TIMESTAMP '2024-03-01 12:00:00' FROM generate_series(1, 5000) AS g(i); \
         CHECKPOINT;",
    );
    let folder = lake.join("data/t");
    let first = pondra_summary(&lake, "t");
    assert_eq!(first, "5000,12502500,43893");
    let delta = folder.display().to_string();
    assert_eq!(read_published(&["delta", &delta]), first);
    let metadata = newest_iceberg_metadata(&folder);
    assert_eq!(read_published(&["iceberg", &metadata]), first);

    run(
        &lake,
        "DELETE FROM t WHERE id <= 100; UPDATE t SET name = 'renamed' WHERE id = 200; \
         INSERT INTO t VALUES (9999, 'late', DATE '2025-01-01', 1.00, NULL); CHECKPOINT;",
    );
    let changed = pondra_summary(&lake, "t");
    assert_ne!(changed, first);
    assert_eq!(read_published(&["delta", &delta]), changed);
    let metadata = newest_iceberg_metadata(&folder);
    assert_eq!(read_published(&["iceberg", &metadata]), changed);
    // Each format's first version still holds the 5,000 rows.
    assert_eq!(read_published(&["delta", &delta, "0"]), first);
    assert_eq!(read_published(&["iceberg", &metadata, "0"]), first);

    // A rename is published as a schema change; the files written before it are read right.
    run(
        &lake,
        "ALTER TABLE t RENAME COLUMN price TO cost; CHECKPOINT;",
    );
    assert_eq!(read_published(&["delta", &delta]), changed);
    let metadata = newest_iceberg_metadata(&folder);
    assert_eq!(read_published(&["iceberg", &metadata]), changed);

    // Added and dropped columns are published as schema changes too.
    run(
        &lake,
        "ALTER TABLE t ADD COLUMN extra INT; INSERT INTO t VALUES (10000, 'added', NULL, 2.00, NULL, 7); \
         ALTER TABLE t DROP COLUMN d; CHECKPOINT;",
    );
    let altered = pondra_summary(&lake, "t");
    assert_ne!(altered, changed);
    assert_eq!(read_published(&["delta", &delta]), altered);
    let metadata = newest_iceberg_metadata(&folder);
    assert_eq!(read_published(&["iceberg", &metadata]), altered);

    // An existing table is published once it asks to be.
    run(
        &lake,
        "CREATE TABLE u (id INT, name VARCHAR); \
         INSERT INTO u SELECT i, 'u' || i FROM generate_series(1, 300) AS g(i); CHECKPOINT; \
         ALTER TABLE u SET (publish = 'delta'); CHECKPOINT;",
    );
    let u = lake.join("data/u").display().to_string();
    assert_eq!(read_published(&["delta", &u]), pondra_summary(&lake, "u"));
    assert!(!lake.join("data/u/metadata").exists());

    // The REST catalog on the HTTP door lists the tables published as Iceberg, and loads them.
    let served = Served::start(&lake, &[]);
    let uri = format!("http://{}/iceberg", served.http());
    assert_eq!(read_published(&["rest", &uri, "public", "t"]), altered);
}

#[test]
fn iceberg_scan_reads_the_current_snapshot_of_a_table_pyiceberg_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/python/iceberg_writer.py");
    let output = python()
        .arg(script)
        .arg(dir.path().join("warehouse"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let printed = stdout(&output);
    let mut lines = printed.lines();
    let metadata = lines.next().unwrap().to_string();
    let expected = lines.next().unwrap().trim().replace(' ', ",");
    let lake = dir.path().join("lake");
    let table_folder = dir.path().join("warehouse/shop/sales");
    // By its metadata file, and by its folder (the newest metadata file in it).
    for location in [metadata, table_folder.display().to_string()] {
        let query = format!(
            "SELECT count(*), sum(id), count(DISTINCT name) FROM iceberg_scan('{location}')"
        );
        let output = sql(&lake, &["--format", "csv", &query]);
        assert!(output.status.success(), "{location}: {}", stderr(&output));
        let answered = stdout(&output);
        assert_eq!(answered.lines().last().unwrap(), expected, "{answered}");
    }
    let missing = format!("SELECT * FROM iceberg_scan('{}')", dir.path().display());
    let output = sql(&lake, &[&missing]);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("not an Iceberg table"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_published_delta_log_is_checkpointed_every_tenth_version() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let mut statements =
        String::from("CREATE TABLE t (id BIGINT, name VARCHAR) WITH (publish = 'delta');");
    for i in 0..12 {
        statements.push_str(&format!(
            "INSERT INTO t SELECT i, 'n' || i FROM generate_series({}, {}) AS g(i); CHECKPOINT;",
            i * 100,
            i * 100 + 99
        ));
        if i == 5 {
            statements.push_str("DELETE FROM t WHERE id % 10 = 0; CHECKPOINT;");
        }
    }
    run(&lake, &statements);
    let log = lake.join("data/t/_delta_log");
    assert!(log.join(format!("{:020}.checkpoint.parquet", 10)).exists());
    let last = std::fs::read_to_string(log.join("_last_checkpoint")).unwrap();
    assert!(last.contains("\"version\":10"), "{last}");
    let table = lake.join("data/t").display().to_string();
    assert_eq!(
        read_published(&["delta", &table]),
        pondra_summary(&lake, "t")
    );
    // A reader that starts at the checkpoint: the versions before it removed.
    for version in 0..10 {
        std::fs::remove_file(log.join(format!("{version:020}.json"))).unwrap();
    }
    assert_eq!(
        read_published(&["delta", &table]),
        pondra_summary(&lake, "t")
    );
}
