//! Reads a DuckDB test file into the steps to run: loops expanded, variables substituted,
//! records that only other engines or DuckDB's own settings concern dropped.

/// What a `statement` record expects.
#[derive(Clone, Debug, PartialEq)]
pub enum Expect {
    Ok,
    /// An error, and the text after `----` DuckDB's message must contain (or match, when it
    /// starts with `<REGEX>:`), if the file names one.
    Error(Option<String>),
}

/// How a query's rows are ordered before they are compared.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SortMode {
    /// As the query returns them.
    None,
    /// Rows sorted as text.
    Rows,
    /// Every value sorted as text, rows forgotten.
    Values,
}

/// A `query` record.
#[derive(Clone, Debug)]
pub struct Query {
    pub sql: String,
    /// How many columns the record's type letters (`query IIT`) declare.
    pub columns: usize,
    pub sort: SortMode,
    /// A query with a label answers as every other query with that label in the file.
    pub label: Option<String>,
    /// The lines after `----`: rows of tab-separated values, one value per line, a
    /// `N values hashing to MD5` line or a `<FILE>:path` line.
    pub expected: Vec<String>,
}

#[derive(Clone, Debug)]
pub enum Step {
    Statement {
        sql: String,
        expect: Expect,
    },
    Query(Query),
    /// `restart`: the database is closed and opened again.
    Restart,
    /// A `PRAGMA` that changes what later queries answer (`default_null_order`), run as
    /// Pondra's `SET`; like every `PRAGMA`, not counted.
    Setting(String),
}

/// A step and the line of the file its record starts on.
#[derive(Clone, Debug)]
pub struct Located {
    pub line: usize,
    pub step: Step,
}

/// A file as this harness runs it.
#[derive(Debug)]
pub enum Parsed {
    Run {
        steps: Vec<Located>,
        /// Records of DuckDB's own settings (`PRAGMA`), which are neither run nor counted.
        pragmas: usize,
    },
    /// The file needs what Pondra has no equivalent of: an extension or build setting
    /// (`require`), a template outside the copied folders (`include`) or a DuckDB database
    /// file (`unzip`).
    Skip(String),
}

/// The lines that make a file skipped, whichever record they sit in.
const UNMET: &[&str] = &["require", "require-env", "include", "unzip"];

/// Reads `text`; `builtins` are the variables every file may name, such as `TEST_DIR`.
pub fn parse_file(text: &str, builtins: &[(String, String)]) -> Parsed {
    let lines: Vec<&str> = text.lines().map(|l| l.trim_end_matches('\r')).collect();
    if let Some(line) = lines
        .iter()
        .find(|l| UNMET.contains(&l.split_whitespace().next().unwrap_or("")))
    {
        return Parsed::Skip(line.trim().to_string());
    }
    let commands = read_commands(&lines);
    let mut expansion = Expansion {
        variables: builtins.to_vec(),
        steps: Vec::new(),
        pragmas: 0,
        halted: false,
    };
    expansion.expand(&commands);
    Parsed::Run {
        steps: expansion.steps,
        pragmas: expansion.pragmas,
    }
}

/// `onlyif X` / `skipif X` before a record.
#[derive(Clone, Debug)]
enum Condition {
    OnlyIf(String),
    SkipIf(String),
}

/// A record as written, before variables are substituted.
#[derive(Clone, Debug)]
struct RawRecord {
    line: usize,
    conditions: Vec<Condition>,
    /// The words of the record's first line: `query II rowsort`.
    header: Vec<String>,
    sql: String,
    /// The lines after `----`, if there is a `----`.
    expected: Option<Vec<String>>,
}

#[derive(Clone, Debug)]
enum Command {
    Record(RawRecord),
    Loop {
        variable: String,
        values: Vec<String>,
        body: Vec<Command>,
    },
    SetVariable(String, String),
    Restart,
    Halt,
}

/// The commands of a file, loops nested. Records between `mode skip` and `mode unskip` are
/// dropped, as DuckDB's runner skips them.
fn read_commands(lines: &[&str]) -> Vec<Command> {
    let mut commands = Vec::new();
    // Loops begun and not yet ended, innermost last, each a `Command::Loop` whose body is
    // being read.
    let mut open: Vec<Command> = Vec::new();
    let mut conditions = Vec::new();
    let mut skipping = false;
    let mut at = 0;
    while at < lines.len() {
        let line = lines[at];
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.is_empty() || line.starts_with('#') {
            at += 1;
            continue;
        }
        let mut command = None;
        match words[0] {
            "statement" | "query" => {
                let (record, next) = read_record(lines, at, std::mem::take(&mut conditions));
                at = next;
                if !skipping {
                    command = Some(Command::Record(record));
                }
            }
            "onlyif" | "skipif" => {
                let label = words.get(1).unwrap_or(&"").to_string();
                conditions.push(match words[0] {
                    "onlyif" => Condition::OnlyIf(label),
                    _ => Condition::SkipIf(label),
                });
                at += 1;
                continue;
            }
            "loop" | "concurrentloop" | "foreach" | "concurrentforeach" => {
                let (variable, values) = loop_values(&words);
                open.push(Command::Loop {
                    variable,
                    values,
                    body: Vec::new(),
                });
            }
            // An `endloop` with no loop open is DuckDB's error; here it is passed over.
            "endloop" => command = open.pop(),
            "mode" if words.get(1) == Some(&"skip") => skipping = true,
            "mode" if words.get(1) == Some(&"unskip") => skipping = false,
            "restart" | "reconnect" if !skipping => command = Some(Command::Restart),
            "halt" if !skipping => command = Some(Command::Halt),
            "set" if words.get(1) == Some(&"variable") && words.len() >= 4 => {
                command = Some(Command::SetVariable(
                    words[2].to_string(),
                    words[3..].join(" "),
                ));
            }
            // `load` names the database file the rest of the file runs on: here a fresh lake
            // already is. `set seed` seeds DuckDB's random(); `hash-threshold`, `sleep`,
            // `tags` and other modes change nothing a result shows.
            _ => {}
        }
        if !matches!(words[0], "statement" | "query") {
            at += 1;
        }
        conditions.clear();
        if let Some(command) = command {
            innermost(&mut open, &mut commands).push(command);
        }
    }
    // A loop the file never closes runs to the end of the file, as DuckDB's runner runs it.
    while let Some(unclosed) = open.pop() {
        innermost(&mut open, &mut commands).push(unclosed);
    }
    commands
}

/// Where the next command goes: the innermost open loop's body, or the file's commands.
fn innermost<'a>(open: &'a mut [Command], commands: &'a mut Vec<Command>) -> &'a mut Vec<Command> {
    match open.last_mut() {
        Some(Command::Loop { body, .. }) => body,
        _ => commands,
    }
}

/// A record from its first line at `start`: the SQL runs to a blank line, a comment or
/// `----`, and the expected lines after `----` to a blank line. Returns the record and the
/// line after it.
fn read_record(lines: &[&str], start: usize, conditions: Vec<Condition>) -> (RawRecord, usize) {
    let header = lines[start]
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let mut at = start + 1;
    let mut sql = Vec::new();
    while at < lines.len()
        && !lines[at].trim().is_empty()
        && !lines[at].starts_with('#')
        && lines[at].trim_end() != "----"
    {
        sql.push(lines[at]);
        at += 1;
    }
    let mut expected = None;
    if at < lines.len() && lines[at].trim_end() == "----" {
        at += 1;
        let mut values = Vec::new();
        while at < lines.len() && !lines[at].is_empty() {
            values.push(lines[at].to_string());
            at += 1;
        }
        expected = Some(values);
    }
    let record = RawRecord {
        line: start + 1,
        conditions,
        header,
        sql: sql.join("\n"),
        expected,
    };
    (record, at)
}

/// The variable a `loop NAME FROM TO` or `foreach NAME VALUE...` line binds and its values.
fn loop_values(words: &[&str]) -> (String, Vec<String>) {
    let variable = words.get(1).unwrap_or(&"").to_string();
    let values = match words[0] {
        "loop" | "concurrentloop" => {
            let bound = |i: usize| words.get(i).and_then(|w| w.parse::<i64>().ok());
            match (bound(2), bound(3)) {
                (Some(from), Some(to)) => (from..to).map(|i| i.to_string()).collect(),
                _ => Vec::new(),
            }
        }
        _ => words[2..].iter().flat_map(|w| foreach_group(w)).collect(),
    };
    (variable, values)
}

const SIGNED: &[&str] = &["tinyint", "smallint", "integer", "bigint", "hugeint"];
const UNSIGNED: &[&str] = &["utinyint", "usmallint", "uinteger", "ubigint", "uhugeint"];

/// The columns of DuckDB's `test_all_types()` (1.4, at the corpus's commit).
const ALL_TYPES_COLUMNS: &[&str] = &[
    "bool",
    "tinyint",
    "smallint",
    "int",
    "bigint",
    "hugeint",
    "uhugeint",
    "utinyint",
    "usmallint",
    "uint",
    "ubigint",
    "bignum",
    "date",
    "time",
    "timestamp",
    "timestamp_s",
    "timestamp_ms",
    "timestamp_ns",
    "time_tz",
    "timestamp_tz",
    "float",
    "double",
    "dec_4_1",
    "dec_9_4",
    "dec_18_6",
    "dec38_10",
    "uuid",
    "interval",
    "varchar",
    "blob",
    "bit",
    "small_enum",
    "medium_enum",
    "large_enum",
    "int_array",
    "double_array",
    "date_array",
    "timestamp_array",
    "timestamptz_array",
    "varchar_array",
    "nested_int_array",
    "struct",
    "struct_of_arrays",
    "array_of_structs",
    "map",
    "union",
    "fixed_int_array",
    "fixed_varchar_array",
    "fixed_nested_int_array",
    "fixed_nested_varchar_array",
    "fixed_struct_array",
    "struct_of_fixed_array",
    "fixed_array_of_int_list",
    "list_of_fixed_int_array",
];

/// A `foreach` value, or the values a group name such as `<integral>` stands for in
/// DuckDB's runner.
fn foreach_group(word: &str) -> Vec<String> {
    let floats = ["float", "double"];
    let group: Vec<&str> = match word {
        "<signed>" => SIGNED.to_vec(),
        "<unsigned>" => UNSIGNED.to_vec(),
        "<integral>" => [SIGNED, UNSIGNED].concat(),
        "<numeric>" => [SIGNED, UNSIGNED, &floats].concat(),
        "<alltypes>" => [SIGNED, UNSIGNED, &floats, &["bool", "interval", "varchar"]].concat(),
        "<all_types_columns>" => ALL_TYPES_COLUMNS.to_vec(),
        _ => vec![word],
    };
    group.into_iter().map(str::to_string).collect()
}

struct Expansion {
    /// Bound variables, innermost last.
    variables: Vec<(String, String)>,
    steps: Vec<Located>,
    pragmas: usize,
    halted: bool,
}

impl Expansion {
    fn expand(&mut self, commands: &[Command]) {
        for command in commands {
            if self.halted {
                return;
            }
            match command {
                Command::Record(record) => self.record(record),
                Command::Loop {
                    variable,
                    values,
                    body,
                } => {
                    for value in values {
                        self.variables.push((variable.clone(), value.clone()));
                        self.expand(body);
                        self.variables.pop();
                    }
                }
                Command::SetVariable(name, value) => {
                    let value = self.substitute(value);
                    self.variables.push((name.clone(), value));
                }
                Command::Restart => self.steps.push(Located {
                    line: 0,
                    step: Step::Restart,
                }),
                Command::Halt => self.halted = true,
            }
        }
    }

    fn record(&mut self, record: &RawRecord) {
        if !record.conditions.iter().all(|c| self.holds(c)) {
            return;
        }
        let sql = self.substitute(&record.sql);
        if sql.trim_start().to_ascii_lowercase().starts_with("pragma") {
            self.pragmas += 1;
            if let Some(set) = pragma_as_setting(&sql) {
                self.steps.push(Located {
                    line: record.line,
                    step: Step::Setting(set),
                });
            }
            return;
        }
        let expected: Vec<String> = (record.expected.iter().flatten())
            .map(|line| self.substitute(line))
            .collect();
        let word = |i: usize| record.header.get(i).map(String::as_str);
        let step = match word(0) {
            Some("statement") => Step::Statement {
                sql,
                expect: match word(1) {
                    Some("error") => {
                        Expect::Error(record.expected.as_ref().map(|_| expected.join("\n")))
                    }
                    _ => Expect::Ok,
                },
            },
            _ => {
                let (sort, label) = match word(2) {
                    Some("nosort") | None => (SortMode::None, word(3)),
                    Some("rowsort") | Some("sort") => (SortMode::Rows, word(3)),
                    Some("valuesort") => (SortMode::Values, word(3)),
                    Some(label) => (SortMode::None, Some(label)),
                };
                Step::Query(Query {
                    sql,
                    columns: word(1).map_or(0, str::len),
                    sort,
                    label: label.map(str::to_string),
                    expected,
                })
            }
        };
        self.steps.push(Located {
            line: record.line,
            step,
        });
    }

    /// Conditions name other engines (this is not DuckDB, nor any engine they name) or a
    /// bound variable's value (`onlyif type=struct`).
    fn holds(&self, condition: &Condition) -> bool {
        let applies_here = |label: &str| match label.split_once('=') {
            Some((name, value)) => self.value_of(name) == Some(value),
            None => false,
        };
        match condition {
            Condition::OnlyIf(label) => applies_here(label),
            Condition::SkipIf(label) => !applies_here(label),
        }
    }

    fn value_of(&self, name: &str) -> Option<&str> {
        let bound = self.variables.iter().rev().find(|(n, _)| n == name);
        bound.map(|(_, value)| value.as_str())
    }

    /// `text` with `${name}` and `{name}` replaced by bound values, innermost first.
    fn substitute(&self, text: &str) -> String {
        let mut text = text.to_string();
        for (name, value) in self.variables.iter().rev() {
            if text.contains(name.as_str()) {
                text = text
                    .replace(&format!("${{{name}}}"), value)
                    .replace(&format!("{{{name}}}"), value);
            }
        }
        text
    }
}

/// `PRAGMA default_null_order = 'x'` (or `='x'`, or `('x')`) as `SET default_null_order = 'x'`;
/// `None` for a PRAGMA of any other setting.
fn pragma_as_setting(sql: &str) -> Option<String> {
    let rest = sql.trim().strip_prefix_ignore_case("pragma")?.trim_start();
    let value = rest.strip_prefix_ignore_case("default_null_order")?;
    let value = value.trim().trim_start_matches('=').trim();
    let value = value
        .trim_start_matches('(')
        .trim_end_matches(';')
        .trim_end_matches(')');
    let value = value.trim().trim_matches('\'').trim_matches('"');
    Some(format!("SET default_null_order = '{value}'"))
}

trait StripPrefixIgnoreCase {
    fn strip_prefix_ignore_case(&self, prefix: &str) -> Option<&str>;
}

impl StripPrefixIgnoreCase for str {
    fn strip_prefix_ignore_case(&self, prefix: &str) -> Option<&str> {
        let head = self.get(..prefix.len())?;
        head.eq_ignore_ascii_case(prefix)
            .then(|| &self[prefix.len()..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(text: &str) -> Vec<Step> {
        match parse_file(text, &[("TEST_DIR".into(), "/tmp/t".into())]) {
            Parsed::Run { steps, .. } => steps.into_iter().map(|s| s.step).collect(),
            Parsed::Skip(reason) => panic!("skipped: {reason}"),
        }
    }

    #[test]
    fn loops_expand_and_substitute_both_spellings() {
        let text = "loop i 0 2\n\nforeach t int <signed>\n\nstatement ok\n\
                    CREATE TABLE x${i} AS SELECT 1::{t} FROM '{TEST_DIR}/a'\n\nendloop\n\nendloop\n";
        let steps = steps(text);
        assert_eq!(steps.len(), 2 * 6);
        let Step::Statement { sql, .. } = &steps[7] else {
            panic!("a statement")
        };
        assert_eq!(sql, "CREATE TABLE x1 AS SELECT 1::tinyint FROM '/tmp/t/a'");
    }

    #[test]
    fn records_end_at_blank_lines_comments_and_dashes() {
        let text = "statement error\nSELECT x\n----\nBinder Error: x\nsecond line\n\n\
                    query IT rowsort res\nSELECT 1, 'a'\n----\n1\ta\n\nquery I\nSELECT 2\n\
                    # a comment ends the SQL\nstatement ok\nSELECT 3\n";
        let steps = steps(text);
        assert!(matches!(
            &steps[0],
            Step::Statement { sql, expect: Expect::Error(Some(m)) }
                if sql == "SELECT x" && m == "Binder Error: x\nsecond line"
        ));
        let Step::Query(q) = &steps[1] else {
            panic!("a query")
        };
        assert_eq!(
            (q.columns, q.sort, q.label.as_deref()),
            (2, SortMode::Rows, Some("res"))
        );
        assert_eq!(q.expected, vec!["1\ta"]);
        let Step::Query(q) = &steps[2] else {
            panic!("a query")
        };
        assert!(q.expected.is_empty() && q.sql == "SELECT 2");
        assert!(matches!(&steps[3], Step::Statement { sql, .. } if sql == "SELECT 3"));
    }

    #[test]
    fn conditions_skip_mode_pragmas_and_halt() {
        let text = "foreach type struct variant\n\nonlyif type=struct\nstatement ok\nSELECT 1\n\n\
                    skipif duckdb\nstatement ok\nSELECT 2\n\nonlyif duckdb\nstatement ok\nSELECT 3\n\n\
                    endloop\n\nmode skip\n\nstatement ok\nSELECT 4\n\nmode unskip\n\n\
                    statement ok\nPRAGMA threads=4\n\nhalt\n\nstatement ok\nSELECT 5\n";
        let sqls: Vec<String> = steps(text)
            .into_iter()
            .map(|s| match s {
                Step::Statement { sql, .. } => sql,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(sqls, vec!["SELECT 1", "SELECT 2", "SELECT 2"]);
    }

    #[test]
    fn unclosed_loops_run_to_the_end_and_stray_endloops_are_passed_over() {
        let text = "endloop\n\nloop i 0 3\n\nstatement ok\nSELECT ${i}\n";
        assert_eq!(steps(text).len(), 3);
    }

    #[test]
    fn files_needing_what_pondra_lacks_are_skipped() {
        let parsed = parse_file("require json\n\nstatement ok\nSELECT 1\n", &[]);
        assert!(matches!(parsed, Parsed::Skip(r) if r == "require json"));
    }
}
