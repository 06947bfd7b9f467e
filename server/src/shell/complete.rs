//! Tab completion in the shell: the word under the cursor completed from the lake's table
//! and column names (as its snapshot holds them now), the shell's commands, and SQL's words.

use std::sync::Arc;

use pondra_cluster::Node;
use rustyline::completion::{Completer, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Helper};

/// SQL words offered for completion.
const KEYWORDS: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "GROUP BY",
    "ORDER BY",
    "HAVING",
    "LIMIT",
    "OFFSET",
    "JOIN",
    "LEFT JOIN",
    "INNER JOIN",
    "FULL JOIN",
    "CROSS JOIN",
    "LATERAL",
    "ON",
    "USING",
    "AND",
    "OR",
    "NOT",
    "NULL",
    "IS",
    "IN",
    "BETWEEN",
    "LIKE",
    "DISTINCT",
    "AS",
    "WITH",
    "UNION",
    "ALL",
    "EXCEPT",
    "INTERSECT",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "INSERT INTO",
    "VALUES",
    "UPDATE",
    "SET",
    "DELETE FROM",
    "MERGE INTO",
    "CREATE TABLE",
    "CREATE MATERIALIZED VIEW",
    "CREATE VIEW",
    "DROP TABLE",
    "ALTER TABLE",
    "DESCRIBE",
    "EXPLAIN",
    "CHECKPOINT",
    "COPY",
    "SHOW TABLES",
    "count",
    "sum",
    "avg",
    "min",
    "max",
];

/// The shell's commands, offered at the start of a line.
const COMMANDS: &[&str] = &[
    ".help", ".tables", ".schema", ".mode", ".timer", ".read", ".quit", ".exit",
];

/// The shell's line-editing helper: completion over the lake the node holds.
pub struct ShellHelper {
    node: Arc<Node>,
}

impl ShellHelper {
    pub fn new(node: Arc<Node>) -> ShellHelper {
        ShellHelper { node }
    }

    /// Every name the lake offers: its tables and views (not their hidden state) and their
    /// columns.
    fn names(&self) -> Vec<String> {
        let snapshot = self.node.snapshot();
        let mut names = Vec::new();
        for (name, table) in &snapshot.tables {
            if name.contains('$') {
                continue;
            }
            names.push(name.clone());
            names.extend(table.columns.iter().map(|c| c.name.clone()));
        }
        names.sort();
        names.dedup();
        names
    }
}

/// Where the word under the cursor starts (after a `table.` qualifier).
fn word_start(line: &str, pos: usize) -> usize {
    line[..pos]
        .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1)
}

/// Where a shell command under the cursor starts: it is the whole line so far.
fn command_start(line: &str, pos: usize) -> Option<usize> {
    let typed = &line[..pos];
    let start = typed.len() - typed.trim_start().len();
    let word = &typed[start..];
    (word.starts_with('.') && !word.contains(char::is_whitespace)).then_some(start)
}

impl Completer for ShellHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let command = command_start(line, pos);
        let start = command.unwrap_or_else(|| word_start(line, pos));
        let word = &line[start..pos];
        if word.is_empty() {
            return Ok((start, Vec::new()));
        }
        let lower = word.to_lowercase();
        let mut candidates: Vec<String> = Vec::new();
        if command.is_some() {
            candidates.extend(COMMANDS.iter().map(|c| c.to_string()));
        } else {
            candidates.extend(self.names());
            let upper = word.chars().next().is_some_and(char::is_uppercase);
            candidates.extend(KEYWORDS.iter().map(|k| match upper {
                true => k.to_string(),
                false => k.to_lowercase(),
            }));
        }
        let mut matches: Vec<Pair> = candidates
            .into_iter()
            .filter(|c| c.to_lowercase().starts_with(&lower) && c.len() > word.len())
            .map(|c| Pair {
                display: c.clone(),
                replacement: c,
            })
            .collect();
        matches.sort_by(|a, b| a.display.cmp(&b.display));
        matches.dedup_by(|a, b| a.display == b.display);
        Ok((start, matches))
    }
}

impl Hinter for ShellHelper {
    type Hint = String;
}

impl Highlighter for ShellHelper {}

impl Validator for ShellHelper {}

impl Helper for ShellHelper {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_under_the_cursor() {
        assert_eq!(word_start("SELECT l_ord", 12), 7);
        assert_eq!(word_start("sel", 3), 0);
        assert_eq!(word_start("x.co", 4), 2);
        assert_eq!(word_start("f(a, ", 5), 5);
        assert_eq!(command_start(".sch", 4), Some(0));
        assert_eq!(command_start("SELECT .5", 9), None);
    }
}
