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

/// A `pondra serve` process on loopback ports it picked; stopped with SIGTERM when dropped.
pub struct Served {
    child: std::process::Child,
    /// Door name (`http`, `pg`, `flight`) to the address it listens on.
    pub doors: std::collections::HashMap<String, String>,
}

impl Served {
    /// Starts `pondra serve` on `lake` with extra arguments, and waits until it is ready.
    pub fn start(lake: &Path, args: &[&str]) -> Served {
        use std::io::BufRead;
        let mut child = pondra()
            .arg("--dir")
            .arg(lake)
            .args([
                "serve",
                "--http-port",
                "0",
                "--pg-port",
                "0",
                "--flight-port",
                "0",
            ])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start pondra serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = std::io::BufReader::new(stdout).lines();
        let mut doors = std::collections::HashMap::new();
        loop {
            let line = lines
                .next()
                .expect("pondra serve stopped before it was ready")
                .expect("read stdout");
            if line == "ready" {
                break;
            }
            if let Some((door, address)) = line.split_once(" listening on ") {
                doors.insert(door.to_string(), address.to_string());
            }
        }
        Served { child, doors }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.doors["http"])
    }

    /// Sends SIGTERM and waits for a clean exit.
    pub fn stop(mut self) -> std::process::ExitStatus {
        self.terminate()
    }

    fn terminate(&mut self) -> std::process::ExitStatus {
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        self.child.wait().expect("wait for pondra serve")
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.terminate();
        }
    }
}

/// Runs curl with `args`; returns the body and the HTTP status.
pub fn curl(args: &[&str]) -> (String, u16) {
    let output = Command::new("curl")
        .args(["-s", "-w", "\n%{http_code}"])
        .args(args)
        .output()
        .expect("run curl");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').expect("curl prints the status");
    (body.to_string(), status.trim().parse().expect("a status"))
}

/// The Python that has the client libraries the tests use (psycopg, adbc_driver_flightsql,
/// pyarrow): `PONDRA_TEST_PYTHON`, which `.ci/run` sets to its virtualenv, else `python3`.
pub fn python() -> Command {
    let python = std::env::var("PONDRA_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    Command::new(python)
}
