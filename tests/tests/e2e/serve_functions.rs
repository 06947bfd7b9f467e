//! Python functions and procedures (ADR 0081) through `pondra serve`, run by psycopg: the
//! workers use the tests' Python (with pyarrow and the `pondra` client, for procedures), then a
//! Python that cannot import pyarrow.

use crate::common::{Served, python_script_passes};

/// The Python the tests run, which the server's workers run too.
fn test_python() -> String {
    std::env::var("PONDRA_TEST_PYTHON").unwrap_or_else(|_| "python3".into())
}

fn run_script(served: &Served, extra: &[&str]) {
    let port = served.doors["pg"].rsplit_once(':').unwrap().1.to_string();
    let args: Vec<&str> = [port.as_str()]
        .into_iter()
        .chain(extra.iter().copied())
        .collect();
    python_script_passes("python_functions.py", &args);
}

#[test]
fn python_functions_and_procedures_run_in_workers() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    // Python procedures' `con` is the client from this repository.
    let client = format!("{}/../python", env!("CARGO_MANIFEST_DIR"));
    let env = [("PONDRA_PYTHON", test_python()), ("PYTHONPATH", client)];
    let served = Served::start_at(lake.to_str().unwrap(), &env, &[]);
    run_script(&served, &[]);
}

#[test]
fn python_functions_take_lists_without_pyarrow() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    // `-S` leaves site-packages, and with them pyarrow, out of the workers' Python.
    let wrapper = dir.path().join("python-without-pyarrow");
    let script = format!("#!/bin/sh\nexec {} -S \"$@\"\n", test_python());
    std::fs::write(&wrapper, script).unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let lake = dir.path().join("lake");
    let env = [("PONDRA_PYTHON", wrapper.to_str().unwrap().to_string())];
    let served = Served::start_at(lake.to_str().unwrap(), &env, &[]);
    run_script(&served, &["--without-pyarrow"]);
}
