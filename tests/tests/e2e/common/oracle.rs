//! DuckDB as an oracle (`tests/python/duckdb_oracle.py`), answering statement by statement.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

/// DuckDB, answering statement by statement.
pub struct Oracle {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Oracle {
    pub fn start() -> Oracle {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/python/duckdb_oracle.py");
        let mut child = super::python()
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python runs the oracle");
        let input = child.stdin.take().expect("stdin");
        let output = BufReader::new(child.stdout.take().expect("stdout"));
        Oracle {
            child,
            input,
            output,
        }
    }

    fn line(&mut self) -> String {
        let mut line = String::new();
        self.output
            .read_line(&mut line)
            .expect("the oracle answers");
        assert!(
            !line.is_empty(),
            "the oracle stopped (is duckdb installed?)"
        );
        line.trim_end_matches('\n').to_string()
    }

    /// Runs `sql`: `Err` with DuckDB's message when it refuses it.
    pub fn run(&mut self, sql: &str) -> Result<(), String> {
        writeln!(self.input, "{sql}").expect("the oracle reads");
        let answer = self.line();
        match answer.strip_prefix("error ") {
            Some(message) => Err(message.to_string()),
            None => Ok(()),
        }
    }

    /// The rows `sql` answers, sorted; `Err` with DuckDB's message when it refuses it.
    pub fn try_query(&mut self, sql: &str) -> Result<Vec<String>, String> {
        writeln!(self.input, "query {sql}").expect("the oracle reads");
        let line = self.line();
        let count: usize = match line.strip_prefix("rows ") {
            Some(count) => count.parse().unwrap(),
            None => return Err(line),
        };
        Ok((0..count).map(|_| self.line()).collect())
    }

    /// The rows `sql` answers, sorted.
    pub fn query(&mut self, sql: &str) -> Vec<String> {
        writeln!(self.input, "query {sql}").expect("the oracle reads");
        let line = self.line();
        let count: usize = match line.strip_prefix("rows ") {
            Some(count) => count.parse().unwrap(),
            None => panic!("DuckDB cannot answer {sql}: {line}"),
        };
        (0..count).map(|_| self.line()).collect()
    }

    /// Each table's rows, sorted.
    pub fn rows(&mut self, tables: &[&str]) -> Vec<Vec<String>> {
        writeln!(self.input, "check {}", tables.join(" ")).expect("the oracle reads");
        let mut tables = Vec::new();
        loop {
            let line = self.line();
            if line == "end" {
                return tables;
            }
            let count: usize = line.rsplit(' ').next().unwrap().parse().unwrap();
            tables.push((0..count).map(|_| self.line()).collect());
        }
    }
}

impl Drop for Oracle {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
