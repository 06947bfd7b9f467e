//! A progress bar for a statement that runs longer than two seconds, on a terminal, as
//! DuckDB's shell draws one: the share of its scans' morsels read so far (later scans add
//! theirs as they start), and the time it has taken.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pondra_cluster::Session;

/// How long a statement runs before its bar shows.
pub const SHOWN_AFTER: Duration = Duration::from_secs(2);

/// The bar's width in characters.
const WIDTH: usize = 40;

/// Draws `session`'s running statement's progress on stderr every 100 ms once it has run
/// `SHOWN_AFTER`, until dropped (which clears the line).
pub struct ProgressBar {
    task: tokio::task::JoinHandle<()>,
    drawn: Arc<std::sync::atomic::AtomicBool>,
}

impl ProgressBar {
    pub fn start(session: Arc<Session>) -> ProgressBar {
        let drawn = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = drawn.clone();
        let started = Instant::now();
        let task = tokio::spawn(async move {
            tokio::time::sleep(SHOWN_AFTER).await;
            loop {
                let line = bar(session.progress(), started.elapsed());
                eprint!("\r{line}");
                let _ = std::io::stderr().flush();
                flag.store(true, std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        ProgressBar { task, drawn }
    }
}

impl Drop for ProgressBar {
    fn drop(&mut self) {
        self.task.abort();
        if self.drawn.load(std::sync::atomic::Ordering::Relaxed) {
            eprint!("\r{}\r", " ".repeat(WIDTH + 24));
            let _ = std::io::stderr().flush();
        }
    }
}

/// The bar's text for `read` of `total` morsels after `elapsed`.
fn bar(progress: Option<(u64, u64)>, elapsed: Duration) -> String {
    let seconds = elapsed.as_secs_f64();
    match progress {
        Some((read, total)) => {
            let share = read as f64 / total.max(1) as f64;
            let filled = ((share * WIDTH as f64) as usize).min(WIDTH);
            format!(
                "[{}{}] {:>3.0}% {seconds:.1} s",
                "=".repeat(filled),
                " ".repeat(WIDTH - filled),
                share * 100.0
            )
        }
        None => format!("[{}] {seconds:.1} s", " ".repeat(WIDTH)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_fills_with_the_share_read() {
        let half = bar(Some((5, 10)), Duration::from_millis(2500));
        assert!(
            half.starts_with(&format!("[{}{}]", "=".repeat(20), " ".repeat(20))),
            "{half}"
        );
        assert!(half.ends_with(" 50% 2.5 s"), "{half}");
        assert!(bar(None, Duration::from_secs(3)).ends_with("3.0 s"));
    }
}
