//! Helpers for tests that run `pondra` as a separate process.

#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// The `pondra` command line built for these tests.
pub fn pondra() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pondra-e2e"))
}

/// Runs the shell on `lake` with `input` as stdin; returns its output.
pub fn shell(lake: &Path, input: &str) -> Output {
    let mut child = pondra()
        .arg("--dir")
        .arg(lake)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start pondra");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("wait for pondra")
}

/// Runs `pondra sql` on `lake`; returns its output.
pub fn sql(lake: &Path, args: &[&str]) -> Output {
    pondra()
        .arg("sql")
        .arg("--dir")
        .arg(lake)
        .args(args)
        .output()
        .expect("run pondra sql")
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Copies a folder tree.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
