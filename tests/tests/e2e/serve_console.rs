//! The console (ADR 0080) in a real browser: Playwright for Python driving Debian's Chromium
//! against two nodes of one lake and a node with tokens (`tests/python/console_browser.py`).

use crate::common::{Served, python};

#[test]
fn the_console_runs_cells_follows_views_and_keeps_notebooks() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let lake = lake.to_str().unwrap();
    // Python cells run in workers with the test's Python and the client from this repository.
    let client = format!("{}/../python", env!("CARGO_MANIFEST_DIR"));
    let worker = std::env::var("PONDRA_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let env = [("PYTHONPATH", client), ("PONDRA_PYTHON", worker)];
    let first = Served::start_at(lake, &env, &[]);
    let second = Served::start_at(lake, &env, &[]);
    let guarded_lake = dir.path().join("guarded");
    let guarded = Served::start_at(
        guarded_lake.to_str().unwrap(),
        &env,
        &["--token-read", "reader", "--token-admin", "admin"],
    );
    let script = format!("{}/python/console_browser.py", env!("CARGO_MANIFEST_DIR"));
    let output = python()
        .arg(script)
        .arg(&first.doors["http"])
        .arg(&second.doors["http"])
        .arg(&guarded.doors["http"])
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && printed.contains("console: ok"),
        "{printed}{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
