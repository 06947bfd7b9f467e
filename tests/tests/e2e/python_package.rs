//! The Python package (`python/`): its pytest suite against this build's `pondra` binary —
//! `pondra.connect` and its results, `append`, frames with Polars' names checked against
//! Polars, PySpark's names against DuckDB, `python -m pondra`, and Python functions and
//! procedures run by the node's workers (ADR 0081).

use crate::common;

#[test]
fn the_python_package_passes_its_tests() {
    let tests = concat!(env!("CARGO_MANIFEST_DIR"), "/../python/tests");
    let done = common::python()
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", tests])
        .env("PONDRA_BINARY", env!("CARGO_BIN_EXE_pondra-e2e"))
        .output()
        .expect("python runs pytest");
    assert!(
        done.status.success(),
        "{}\n{}",
        common::stdout(&done),
        common::stderr(&done)
    );
}
