//! Helpers for tests that run `pondra` as a separate process.

#![allow(dead_code)]

pub mod emulators;
pub mod oracle;
pub mod proxy;
pub mod s3;

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
        Served::start_logging(lake, args, Stdio::inherit())
    }

    /// As `start`, with the server's stderr (its log) going to `log`, and the folder around
    /// the lake as its working folder (where relative paths in statements lead).
    pub fn start_logging(lake: &Path, args: &[&str], log: Stdio) -> Served {
        let mut command = pondra();
        command
            .current_dir(lake.parent().expect("a lake in a folder"))
            .arg("--dir")
            .arg(lake);
        Served::launch(command, args, log)
    }

    /// Starts `pondra serve` on the lake at a URL, with the variables `env` (a bucket's
    /// endpoint and keys).
    pub fn start_at(location: &str, env: &[(&str, String)], args: &[&str]) -> Served {
        let mut command = pondra();
        command
            .envs(env.iter().map(|(k, v)| (k, v)))
            .arg("--dir")
            .arg(location);
        Served::launch(command, args, Stdio::inherit())
    }

    fn launch(mut command: Command, args: &[&str], log: Stdio) -> Served {
        use std::io::BufRead;
        let mut child = command
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
            .stderr(log)
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

    /// The HOST:PORT of the HTTP door, which the server advertises to its cluster.
    pub fn http(&self) -> String {
        self.doors["http"].clone()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.doors["http"])
    }

    /// Sends SIGTERM and waits for a clean exit.
    pub fn stop(mut self) -> std::process::ExitStatus {
        self.terminate()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The address of the Postgres door, as `host=... port=...` for a client.
    pub fn pg_config(&self) -> String {
        let (host, port) = self.doors["pg"].rsplit_once(':').expect("host:port");
        format!("host={host} port={port} user=pondra dbname=pondra")
    }

    /// The process's resident memory in bytes, from `/proc`.
    pub fn resident_bytes(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    }

    /// Sends SIGTERM and returns how long the process took to exit, if it did within
    /// `patience`.
    pub fn terminate_within(
        &mut self,
        patience: std::time::Duration,
    ) -> Option<std::time::Duration> {
        let started = std::time::Instant::now();
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        while started.elapsed() < patience {
            if let Ok(Some(_)) = self.child.try_wait() {
                return Some(started.elapsed());
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        None
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

/// Sends an HTTP/1.1 POST of `body` to `address` (host:port) and returns the status and the
/// body of the answer.
pub fn http_post(address: &str, path: &str, content_type: &str, body: &[u8]) -> (u16, String) {
    try_http_post(address, path, content_type, body)
        .unwrap_or_else(|answer| panic!("no HTTP status in {answer:?}"))
}

/// As [`http_post`], or the answer when it holds no HTTP status (the connection closed
/// without one).
pub fn try_http_post(
    address: &str,
    path: &str,
    content_type: &str,
    body: &[u8],
) -> Result<(u16, String), String> {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect(address).expect("connect to the HTTP door");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: {content_type}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream
        .write_all(head.as_bytes())
        .expect("send the request head");
    stream.write_all(body).expect("send the request body");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("read the answer");
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let Some(status) = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
    else {
        return Err(answer);
    };
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string());
    Ok((status, body.unwrap_or_default()))
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
/// Runs one of `tests/python/`'s scripts with `args`, failing with its output unless it passes.
pub fn python_script_passes(script: &str, args: &[&str]) {
    let script = format!("{}/python/{script}", env!("CARGO_MANIFEST_DIR"));
    let output = python().arg(script).args(args).output().unwrap();
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Kills `served` with SIGKILL, as a crash would, and waits until it is gone.
pub fn sigkill(served: &mut Served) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(served.pid() as i32, libc::SIGKILL);
    }
    while served.running() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

pub fn python() -> Command {
    let python = std::env::var("PONDRA_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    Command::new(python)
}
