//! Warm Python worker processes (ADR 0081): about one per core, started on first use and
//! reused by every statement after. A statement holds a worker for one call at a time. A worker
//! that dies, or is killed because its statement was stopped, is replaced by a new one on a
//! later call.

use std::collections::{HashSet, VecDeque};
use std::io::{BufReader, BufWriter, Read};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Condvar, LazyLock, Mutex};
use std::time::{Duration, Instant};

use super::wire::{Frame, Payload, read_frame, write_frame};
use crate::control::{StatementControl, StopReason};
use crate::{ExecError, Result};

/// The worker's program, compiled into the binary.
const WORKER_SOURCE: &str = include_str!("worker.py");

/// How often a caller waiting on a worker looks at its statement's stop flag.
const POLL: Duration = Duration::from_millis(20);

/// How long a new worker may take to say it is ready (importing pyarrow on a loaded machine).
const START_LIMIT: Duration = Duration::from_secs(60);

/// The buffer between the server and a worker's pipes, each way: Arrow writes and reads many
/// small pieces.
const PIPE_BUFFER: usize = 1 << 20;

/// How much of a worker's stderr is kept, to explain its death.
const STDERR_TAIL: usize = 4096;

static POOL: LazyLock<Pool> = LazyLock::new(|| Pool {
    state: Mutex::new(PoolState::default()),
    freed: Condvar::new(),
    size: std::thread::available_parallelism().map_or(2, |n| n.get()),
});

struct Pool {
    state: Mutex<PoolState>,
    freed: Condvar,
    /// The most workers alive at once.
    size: usize,
}

#[derive(Default)]
struct PoolState {
    idle: Vec<Worker>,
    /// Workers alive: idle, lent out, or starting.
    live: usize,
}

/// Why a request to a worker got no reply.
pub(super) enum Failure {
    /// The statement was stopped while the worker ran; the worker was killed.
    Stopped(StopReason),
    /// The worker exited or broke the protocol: what is known of why.
    Died(String),
}

/// One Python process and what it has compiled.
pub(super) struct Worker {
    child: Child,
    requests: BufWriter<ChildStdin>,
    replies: Receiver<std::io::Result<Frame>>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    /// Whether the worker has pyarrow, and so takes Arrow IPC rather than JSON.
    pub pyarrow: bool,
    /// The functions compiled on it, by [`super::function_id`].
    pub defined: HashSet<u64>,
}

/// A worker lent to one call. Dropped, it goes back to the pool, unless it was discarded.
pub(super) struct Lent {
    worker: Option<Worker>,
}

impl Lent {
    pub fn worker(&mut self) -> &mut Worker {
        self.worker
            .as_mut()
            .expect("a lent worker is present until discarded")
    }

    /// Kills the worker: it is not given back.
    pub fn discard(&mut self) {
        self.worker = None;
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        let mut state = POOL.state.lock().unwrap_or_else(|e| e.into_inner());
        match self.worker.take() {
            Some(worker) => state.idle.push(worker),
            None => state.live -= 1,
        }
        POOL.freed.notify_one();
    }
}

/// A worker for one call: an idle one, a new one while fewer than one per core live, else the
/// next one given back. Waiting ends if the statement is stopped.
pub(super) fn lend(control: Option<&StatementControl>) -> Result<Lent> {
    let mut state = POOL.state.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        while let Some(mut worker) = state.idle.pop() {
            if worker.alive() {
                return Ok(Lent {
                    worker: Some(worker),
                });
            }
            state.live -= 1;
        }
        if state.live < POOL.size {
            state.live += 1;
            drop(state);
            let mut lent = Lent { worker: None };
            lent.worker = Some(Worker::start(control)?);
            return Ok(lent);
        }
        if let Some(control) = control {
            control.check()?;
        }
        state = POOL
            .freed
            .wait_timeout(state, POLL)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

impl Worker {
    /// Starts `PONDRA_PYTHON` (else `python3`) on the worker's program and waits until it is
    /// ready.
    fn start(control: Option<&StatementControl>) -> Result<Worker> {
        let python = std::env::var("PONDRA_PYTHON").unwrap_or_else(|_| "python3".into());
        let mut child = Command::new(&python)
            .arg("-c")
            .arg(WORKER_SOURCE)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                ExecError::Execution(format!(
                    "cannot start Python ({python}) for a Python function: {e}; PONDRA_PYTHON names the interpreter"
                ))
            })?;
        let requests =
            BufWriter::with_capacity(PIPE_BUFFER, child.stdin.take().expect("stdin is piped"));
        let mut stdout =
            BufReader::with_capacity(PIPE_BUFFER, child.stdout.take().expect("stdout is piped"));
        let mut stderr = child.stderr.take().expect("stderr is piped");
        let (sender, replies) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("python-replies".into())
            .spawn(move || {
                loop {
                    let frame = read_frame(&mut stdout);
                    let failed = frame.is_err();
                    if sender.send(frame).is_err() || failed {
                        return;
                    }
                }
            })
            .map_err(|e| ExecError::Execution(format!("cannot start a thread: {e}")))?;
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let kept = tail.clone();
        std::thread::Builder::new()
            .name("python-stderr".into())
            .spawn(move || {
                let mut chunk = [0u8; 1024];
                while let Ok(read) = stderr.read(&mut chunk)
                    && read > 0
                {
                    let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
                    kept.extend(&chunk[..read]);
                    let excess = kept.len().saturating_sub(STDERR_TAIL);
                    kept.drain(..excess);
                }
            })
            .map_err(|e| ExecError::Execution(format!("cannot start a thread: {e}")))?;
        let mut worker = Worker {
            child,
            requests,
            replies,
            stderr: tail,
            pyarrow: false,
            defined: HashSet::new(),
        };
        let ready = worker
            .await_reply(control, Some(Instant::now() + START_LIMIT))
            .map_err(|failure| match failure {
                Failure::Stopped(reason) => ExecError::Stopped(reason),
                Failure::Died(why) => ExecError::Execution(format!(
                    "the Python worker ({python}) did not start: {why}"
                )),
            })?;
        worker.pyarrow = ready.header["pyarrow"].as_bool().unwrap_or(false);
        Ok(worker)
    }

    fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Sends one request and waits for its reply, killing the worker if the statement is
    /// stopped meanwhile.
    pub fn request(
        &mut self,
        header: &serde_json::Value,
        payload: &Payload,
        control: Option<&StatementControl>,
    ) -> std::result::Result<Frame, Failure> {
        if let Err(e) = write_frame(&mut self.requests, header, payload) {
            return Err(self.died(&format!("it stopped reading ({e})")));
        }
        self.await_reply(control, None)
    }

    fn await_reply(
        &mut self,
        control: Option<&StatementControl>,
        limit: Option<Instant>,
    ) -> std::result::Result<Frame, Failure> {
        loop {
            match self.replies.recv_timeout(POLL) {
                Ok(Ok(frame)) => return Ok(frame),
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                    return Err(self.died("it exited"));
                }
                Ok(Err(e)) => return Err(self.died(&format!("its reply was unreadable ({e})"))),
                Err(RecvTimeoutError::Disconnected) => return Err(self.died("it exited")),
                Err(RecvTimeoutError::Timeout) => {}
            }
            if let Some(reason) = control.and_then(StatementControl::stopped) {
                self.kill();
                return Err(Failure::Stopped(reason));
            }
            if limit.is_some_and(|limit| Instant::now() >= limit) {
                return Err(self.died("it did not answer in time"));
            }
        }
    }

    /// The worker is dead or useless: killed, with what it said on stderr.
    fn died(&mut self, what: &str) -> Failure {
        self.kill();
        let status = self.child.wait().map(describe_exit).unwrap_or_default();
        // The stderr thread may still be reading what the worker said last.
        std::thread::sleep(Duration::from_millis(20));
        let tail = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        let said: Vec<u8> = tail.iter().copied().collect();
        let said = String::from_utf8_lossy(&said).into_owned();
        let said = said.trim();
        Failure::Died(match said.is_empty() {
            true => format!("{what}{status}"),
            false => format!("{what}{status}; it said: {said}"),
        })
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// How a worker's process ended, as a clause.
fn describe_exit(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!(" with exit code {code}"),
        (None, Some(signal)) => format!(" (killed by signal {signal})"),
        _ => String::new(),
    }
}
