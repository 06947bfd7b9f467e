//! Other engines' table formats read in place (ADR 0058): a Delta Lake table written by
//! deltalake (delta-rs), read by `delta_scan` as its newest version.

mod common;

use common::{python, sql, stderr, stdout};

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
