//! Console Python cells (ADR 0080): each runs in a new worker process, never in the server,
//! with the `pondra` client connected to this node as `con`. A worker that runs past its time
//! is killed; one that dies says so.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncWriteExt;

/// The worker's program: reads the cell from stdin, writes its outcome as JSON to a file.
const WORKER: &str = include_str!("assets/worker.py");

/// The longest a cell runs without a statement timeout.
pub(super) const DEFAULT_PATIENCE: Duration = Duration::from_secs(60);

/// Bytes of a worker's stderr kept for its error.
const STDERR_KEPT: usize = 4096;

/// Runs `code` in a worker connected to `url` (with `token`); answers the worker's JSON
/// outcome (`stdout`, `error`, `frame`), or what went wrong with the worker itself.
pub(super) async fn run_cell(
    code: &str,
    url: &str,
    token: Option<&str>,
    patience: Duration,
) -> Result<String, String> {
    let python = std::env::var("PONDRA_PYTHON").unwrap_or_else(|_| "python3".into());
    let outcome = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    let mut command = tokio::process::Command::new(&python);
    command
        .arg("-c")
        .arg(WORKER)
        .env("PONDRA_URL", url)
        .env("PONDRA_CELL_RESULT", outcome.path())
        .env("PONDRA_TOKEN", token.unwrap_or(""))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut worker = command
        .spawn()
        .map_err(|e| format!("cannot start the Python worker {python}: {e}"))?;
    let mut stdin = worker.stdin.take().expect("piped");
    stdin
        .write_all(code.as_bytes())
        .await
        .map_err(|e| format!("cannot hand the cell to the Python worker: {e}"))?;
    drop(stdin);
    let finished = tokio::time::timeout(patience, worker.wait_with_output()).await;
    let output = match finished {
        Ok(output) => output.map_err(|e| format!("the Python worker failed: {e}"))?,
        // Dropping the worker's future kills it (`kill_on_drop`).
        Err(_) => {
            return Err(format!(
                "the cell ran past {} s and its worker was stopped",
                patience.as_secs()
            ));
        }
    };
    let written = std::fs::read_to_string(outcome.path()).unwrap_or_default();
    if written.is_empty() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail = &stderr[stderr.len().saturating_sub(STDERR_KEPT)..];
        return Err(format!(
            "the Python worker ended ({}) without an answer: {}",
            output.status,
            tail.trim()
        ));
    }
    Ok(written)
}

/// Runs Python procedures (ADR 0081) as cells are run: in a worker of their own, with `con`
/// connected to this node's HTTP door, with the server's admin token when tokens are set.
pub(crate) struct CellRunner {
    pub url: String,
    pub token: Option<String>,
}

impl pondra_cluster::PythonRunner for CellRunner {
    fn run(
        &self,
        code: String,
        patience: Duration,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<String, String>> + Send>> {
        let url = self.url.clone();
        let token = self.token.clone();
        Box::pin(async move { run_cell(&code, &url, token.as_deref(), patience).await })
    }
}
