//! The shell's own commands, as DuckDB's and psql's users type them: `.help`, `.tables` /
//! `\dt`, `.schema [name]` / `\d [name]`, `.mode`, `.timer`, `.read FILE`, `.quit` / `\q` /
//! `exit`.

use crate::output::Format;

/// What the shell prints for `.help`.
pub const HELP: &str = "\
Statements end with ';'. Commands (at the start of a line):
  .help                      this text
  .tables   \\dt              the tables and views
  .schema [NAME]   \\d [NAME] a table's columns (every table's, without a name)
  .mode table|csv|json|markdown
                             how rows are printed
  .timer on|off              print each statement's time
  .read FILE                 run the statements of a file
  .quit   .exit   \\q   exit  leave the shell
Tab completes table and column names and SQL words; Ctrl-C stops a running statement.";

/// One of the shell's commands.
#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    Help,
    Tables,
    Schema(Option<String>),
    Mode(Format),
    Timer(bool),
    Read(String),
    Quit,
}

/// The command a line holds, if it holds one: `Err` with what is wrong for a line that looks
/// like a command but is not one.
pub fn command(line: &str) -> Option<Result<Command, String>> {
    let line = line.trim().trim_end_matches(';').trim();
    let mut words = line.split_whitespace();
    let first = words.next()?;
    let rest: Vec<&str> = words.collect();
    let argument = |name: &str| -> Result<String, String> {
        match rest.as_slice() {
            [one] => Ok(one.to_string()),
            _ => Err(format!("{name} takes one argument")),
        }
    };
    let parsed = match first.to_ascii_lowercase().as_str() {
        "exit" | "quit" if rest.is_empty() => Ok(Command::Quit),
        ".quit" | ".exit" | "\\q" => Ok(Command::Quit),
        ".help" | "\\?" => Ok(Command::Help),
        ".tables" | "\\dt" => Ok(Command::Tables),
        ".schema" | "\\d" => match rest.as_slice() {
            [] => Ok(Command::Schema(None)),
            [name] => Ok(Command::Schema(Some(name.to_string()))),
            _ => Err(format!("{first} takes at most one table")),
        },
        ".mode" => argument(".mode").and_then(|mode| match mode.to_ascii_lowercase().as_str() {
            "table" | "box" | "duckbox" => Ok(Command::Mode(Format::Table)),
            "csv" => Ok(Command::Mode(Format::Csv)),
            "json" => Ok(Command::Mode(Format::Json)),
            "markdown" => Ok(Command::Mode(Format::Markdown)),
            other => Err(format!(
                ".mode {other}: the modes are table, csv, json and markdown"
            )),
        }),
        ".timer" => argument(".timer").and_then(|on| match on.to_ascii_lowercase().as_str() {
            "on" => Ok(Command::Timer(true)),
            "off" => Ok(Command::Timer(false)),
            other => Err(format!(".timer {other}: on or off")),
        }),
        ".read" => argument(".read").map(Command::Read),
        other if other.starts_with('.') || other.starts_with('\\') => {
            Err(format!("unknown command {other} (.help lists them)"))
        }
        _ => return None,
    };
    Some(parsed)
}

/// The SQL a command that reads the lake runs.
pub fn sql_of(command: &Command) -> Option<String> {
    match command {
        Command::Tables => Some("SHOW TABLES".into()),
        Command::Schema(Some(name)) => Some(format!("DESCRIBE {name}")),
        Command::Schema(None) => Some(
            "SELECT table_name, column_name, data_type FROM information_schema.columns \
             WHERE table_schema NOT IN ('pg_catalog', 'information_schema') \
             ORDER BY table_name, ordinal_position"
                .into(),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_as_duckdb_and_psql_users_type_them() {
        assert_eq!(command(".tables"), Some(Ok(Command::Tables)));
        assert_eq!(command("\\dt"), Some(Ok(Command::Tables)));
        assert_eq!(
            command("\\d orders"),
            Some(Ok(Command::Schema(Some("orders".into()))))
        );
        assert_eq!(command(".schema"), Some(Ok(Command::Schema(None))));
        assert_eq!(
            command(".mode markdown"),
            Some(Ok(Command::Mode(Format::Markdown)))
        );
        assert_eq!(command(".timer on"), Some(Ok(Command::Timer(true))));
        assert_eq!(command("exit"), Some(Ok(Command::Quit)));
        assert_eq!(command("\\q"), Some(Ok(Command::Quit)));
        assert_eq!(
            command(".read a.sql"),
            Some(Ok(Command::Read("a.sql".into())))
        );
        assert!(matches!(command(".mode yaml"), Some(Err(_))));
        assert!(matches!(command(".nope"), Some(Err(_))));
        assert_eq!(command("SELECT 1;"), None);
        assert_eq!(command("exit_code"), None);
    }
}
