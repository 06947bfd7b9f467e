//! The SQL shell: line editing, history (`~/.pondra_history`) and completion of table and
//! column names on a terminal; statements from stdin otherwise; the commands DuckDB's and
//! psql's users type (`commands.rs`), and a progress bar for a long statement
//! (`progress.rs`).

mod commands;
mod complete;
mod progress;

use std::io::{BufRead, IsTerminal};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use pondra_cluster::{Node, Session, StopReason, split_statements};
use rustyline::error::ReadlineError;
use rustyline::history::DefaultHistory;

use crate::output::{Format, print_result};
use commands::Command;

/// What the shell's commands set.
struct Shell {
    node: Arc<Node>,
    session: Arc<Session>,
    format: Format,
    timer: bool,
    terminal: bool,
}

/// Whether the shell goes on after a line.
#[derive(PartialEq, Eq)]
enum Next {
    Continue,
    Quit,
}

/// Runs the shell until end of input or `.quit`. Errors are printed and the shell goes on.
pub async fn run(node: &Arc<Node>) -> ExitCode {
    let terminal = std::io::stdin().is_terminal();
    let mut shell = Shell {
        node: node.clone(),
        session: Session::new(None),
        format: Format::Table,
        timer: false,
        terminal,
    };
    match terminal {
        true => shell.interactive().await,
        false => shell.piped().await,
    }
}

impl Shell {
    /// Runs the statements of `sql`, printing each result. On a terminal, Ctrl-C stops the
    /// statement running (as in psql), not the shell, and a long one shows a progress bar.
    async fn run_text(&self, sql: &str) {
        let statements = match pondra_cluster::parse_sql(sql) {
            Ok(statements) => statements,
            Err(e) => {
                eprintln!("Error: {e}");
                return;
            }
        };
        for statement in statements {
            let started = Instant::now();
            let run = self.node.execute_in(&self.session, statement);
            tokio::pin!(run);
            let bar = self
                .terminal
                .then(|| progress::ProgressBar::start(self.session.clone()));
            let outcome = loop {
                tokio::select! {
                    outcome = &mut run => break outcome,
                    Ok(()) = tokio::signal::ctrl_c(), if self.terminal => {
                        self.session.stop_running(StopReason::Cancelled);
                    }
                }
            };
            drop(bar);
            match outcome {
                Ok(result) => {
                    if let Err(e) = print_result(&result, self.format) {
                        eprintln!("Error: {e}");
                    }
                }
                Err(e) => eprintln!("Error: {e}"),
            }
            if self.timer {
                println!("Run Time: {:.3} s", started.elapsed().as_secs_f64());
            }
        }
    }

    /// Runs one of the shell's commands.
    async fn run_command(&mut self, command: Command) -> Next {
        match &command {
            Command::Quit => return Next::Quit,
            Command::Help => println!("{}", commands::HELP),
            Command::Mode(format) => self.format = *format,
            Command::Timer(on) => self.timer = *on,
            Command::Read(path) => match std::fs::read_to_string(path) {
                Ok(text) => {
                    for statement in split_statements(&text).complete {
                        self.run_text(&statement).await;
                    }
                }
                Err(e) => eprintln!("Error: cannot read {path}: {e}"),
            },
            Command::Tables | Command::Schema(_) => {
                let sql = commands::sql_of(&command).expect("a command that reads the lake");
                self.run_text(&sql).await;
            }
        }
        Next::Continue
    }

    /// A line typed or read: a command when the statement so far is empty, else more SQL,
    /// whose complete statements run.
    async fn line(&mut self, buffer: &mut String, line: &str) -> Next {
        if buffer.trim().is_empty() {
            match commands::command(line) {
                Some(Ok(command)) => return self.run_command(command).await,
                Some(Err(message)) => {
                    eprintln!("Error: {message}");
                    return Next::Continue;
                }
                None => {}
            }
        }
        buffer.push_str(line);
        buffer.push('\n');
        let split = split_statements(buffer);
        for statement in &split.complete {
            self.run_text(statement).await;
        }
        *buffer = split.rest;
        Next::Continue
    }

    /// Reads stdin line by line and runs each statement as soon as its `;` arrives.
    async fn piped(&mut self) -> ExitCode {
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
            if self.line(&mut buffer, &line).await == Next::Quit {
                return ExitCode::SUCCESS;
            }
        }
        if !buffer.trim().is_empty() {
            self.run_text(&buffer).await;
        }
        ExitCode::SUCCESS
    }

    async fn interactive(&mut self) -> ExitCode {
        let mut editor = match rustyline::Editor::<complete::ShellHelper, DefaultHistory>::new() {
            Ok(editor) => editor,
            Err(e) => {
                eprintln!("Error: cannot start line editing: {e}");
                return self.piped().await;
            }
        };
        editor.set_helper(Some(complete::ShellHelper::new(self.node.clone())));
        let history = std::env::var_os("HOME")
            .map(|home| std::path::PathBuf::from(home).join(".pondra_history"));
        if let Some(path) = &history {
            let _ = editor.load_history(path);
        }
        println!(
            "Pondra {}: enter SQL ending with ';', .help for the commands, Ctrl-D to quit.",
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
                    let _ = editor.add_history_entry(line.as_str());
                    if self.line(&mut buffer, &line).await == Next::Quit {
                        break;
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
}
