//! The SQL shell: line editing and history on a terminal; statements from stdin otherwise.

use std::io::{BufRead, IsTerminal};
use std::process::ExitCode;
use std::sync::Arc;

use pondra_cluster::{Node, Session, StopReason, split_statements};
use rustyline::error::ReadlineError;

use crate::output::{Format, print_result};

/// Runs the shell until end of input. Errors are printed and the shell goes on.
pub async fn run(node: &Arc<Node>) -> ExitCode {
    let session = Session::new(None);
    if std::io::stdin().is_terminal() {
        interactive(node, &session).await
    } else {
        piped(node, &session).await
    }
}

/// Runs the statements of `sql` in the shell's session, printing each result. On a terminal,
/// Ctrl-C stops the statement running (as in psql), not the shell.
async fn run_text(node: &Arc<Node>, session: &Arc<Session>, sql: &str) {
    let statements = match pondra_cluster::parse_sql(sql) {
        Ok(statements) => statements,
        Err(e) => {
            eprintln!("Error: {e}");
            return;
        }
    };
    let terminal = std::io::stdin().is_terminal();
    for statement in statements {
        let run = node.execute_in(session, statement);
        tokio::pin!(run);
        let outcome = loop {
            tokio::select! {
                outcome = &mut run => break outcome,
                Ok(()) = tokio::signal::ctrl_c(), if terminal => {
                    session.stop_running(StopReason::Cancelled);
                }
            }
        };
        match outcome {
            Ok(result) => {
                if let Err(e) = print_result(&result, Format::Table) {
                    eprintln!("Error: {e}");
                }
            }
            Err(e) => eprintln!("Error: {e}"),
        }
    }
}

/// Reads stdin line by line and runs each statement as soon as its `;` arrives.
async fn piped(node: &Arc<Node>, session: &Arc<Session>) -> ExitCode {
    let (lines_tx, mut lines_rx) = tokio::sync::mpsc::channel::<String>(16);
    // stdin blocks, so it is read on a thread of its own.
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if lines_tx.blocking_send(line).is_err() {
                break;
            }
        }
    });
    let mut buffer = String::new();
    while let Some(line) = lines_rx.recv().await {
        buffer.push_str(&line);
        buffer.push('\n');
        let split = split_statements(&buffer);
        for statement in &split.complete {
            run_text(node, session, statement).await;
        }
        buffer = split.rest;
    }
    if !buffer.trim().is_empty() {
        run_text(node, session, &buffer).await;
    }
    ExitCode::SUCCESS
}

async fn interactive(node: &Arc<Node>, session: &Arc<Session>) -> ExitCode {
    let mut editor = match rustyline::DefaultEditor::new() {
        Ok(editor) => editor,
        Err(e) => {
            eprintln!("Error: cannot start line editing: {e}");
            return piped(node, session).await;
        }
    };
    let history =
        std::env::var_os("HOME").map(|home| std::path::PathBuf::from(home).join(".pondra_history"));
    if let Some(path) = &history {
        let _ = editor.load_history(path);
    }
    println!(
        "Pondra {}: enter SQL ending with ';', Ctrl-D to quit.",
        env!("CARGO_PKG_VERSION")
    );
    let mut buffer = String::new();
    loop {
        let prompt = if buffer.trim().is_empty() {
            "pondra> "
        } else {
            "    ..> "
        };
        match editor.readline(prompt) {
            Ok(line) => {
                buffer.push_str(&line);
                buffer.push('\n');
                let split = split_statements(&buffer);
                if !split.complete.is_empty() {
                    let _ = editor.add_history_entry(buffer.trim());
                    for statement in &split.complete {
                        run_text(node, session, statement).await;
                    }
                    buffer = split.rest;
                }
            }
            Err(ReadlineError::Interrupted) => buffer.clear(),
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                eprintln!("Error: {e}");
                break;
            }
        }
    }
    if let Some(path) = &history {
        let _ = editor.save_history(path);
    }
    ExitCode::SUCCESS
}
