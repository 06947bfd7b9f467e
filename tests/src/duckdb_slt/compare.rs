//! Judges a query's rows against the record's expected lines as DuckDB's runner does: the
//! lines are rows of tab-separated values, or one value per line; numbers compare as numbers
//! (floats within DuckDB's tolerance of 1% of the expected value), booleans as `true`/`1`,
//! everything else as text; `<REGEX>:` and `<!REGEX>:` values match a pattern; a labelled
//! query answers as its label's first query did.

use std::collections::HashMap;
use std::path::Path;

use super::md5::md5_hex;
use super::parse::{Query, SortMode};
use super::regex::full_match;
use super::values::ValueKind;

/// A query's result as text, with how each column compares.
#[derive(Clone, Debug)]
pub struct Answer {
    pub kinds: Vec<ValueKind>,
    pub rows: Vec<Vec<String>>,
}

/// Why a query's answer is not the one the file expects.
#[derive(Clone, Debug, PartialEq)]
pub enum Mismatch {
    ColumnCount {
        expected: usize,
        actual: usize,
    },
    RowCount {
        expected: usize,
        actual: usize,
    },
    Value {
        row: usize,
        column: usize,
        expected: String,
        actual: String,
    },
    Hash {
        expected: String,
    },
    /// Not the rows the first query with this label answered.
    Label(String),
    /// A `<FILE>:` answer the copied folders do not hold.
    MissingFile(String),
}

impl Mismatch {
    /// The failure group in reports: the kind of mismatch, without its values.
    pub fn group(&self) -> &'static str {
        match self {
            Mismatch::ColumnCount { .. } => "wrong result: column count",
            Mismatch::RowCount { .. } => "wrong result: row count",
            Mismatch::Value { .. } => "wrong result: values",
            Mismatch::Hash { .. } => "wrong result: hash",
            Mismatch::Label(_) => "wrong result: differs from its label's first answer",
            Mismatch::MissingFile(_) => "expected result file not in the copy",
        }
    }
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mismatch::ColumnCount { expected, actual } => {
                write!(f, "{actual} columns where {expected} are expected")
            }
            Mismatch::RowCount { expected, actual } => {
                write!(f, "{actual} rows where {expected} are expected")
            }
            Mismatch::Value {
                row,
                column,
                expected,
                actual,
            } => write!(
                f,
                "row {row} column {column}: {actual:?} where {expected:?} is expected"
            ),
            Mismatch::Hash { expected } => write!(f, "the values do not hash to {expected}"),
            Mismatch::Label(label) => write!(f, "not the rows of label {label}"),
            Mismatch::MissingFile(path) => write!(f, "no file {path}"),
        }
    }
}

/// The answers of labelled queries in a file so far.
pub type Labels = HashMap<String, Vec<Vec<String>>>;

/// Checks `answer` against `query`. `corpus` is the copied `test/sql/` folder, where
/// `<FILE>:test/sql/...` answers are.
pub fn check(
    query: &Query,
    mut answer: Answer,
    labels: &mut Labels,
    corpus: &Path,
) -> Result<(), Mismatch> {
    let columns = answer.kinds.len();
    sort(&mut answer.rows, query.sort);
    if let [line] = query.expected.as_slice()
        && let Some((count, hash)) = hashed(line)
    {
        let values: Vec<&String> = answer.rows.iter().flatten().collect();
        let text: String = values.iter().map(|v| format!("{v}\n")).collect();
        if values.len() != count || md5_hex(text.as_bytes()) != hash {
            return Err(Mismatch::Hash {
                expected: line.clone(),
            });
        }
        return Ok(());
    }
    if let Some(label) = &query.label {
        return match labels.get(label) {
            Some(rows) if *rows != answer.rows => Err(Mismatch::Label(label.clone())),
            Some(_) => Ok(()),
            None => {
                labels.insert(label.clone(), answer.rows);
                Ok(())
            }
        };
    }
    // Hashed and labelled answers are compared whatever the record's type letters say, as
    // DuckDB's runner compares them.
    if query.columns != columns {
        return Err(Mismatch::ColumnCount {
            expected: query.columns,
            actual: columns,
        });
    }
    let lines = match query.expected.as_slice() {
        [line] if line.starts_with("<FILE>:") => file_lines(&line["<FILE>:".len()..], corpus)?,
        lines => lines.to_vec(),
    };
    let mut expected = split_rows(&lines, columns, answer.rows.len());
    sort(&mut expected, query.sort);
    if query.sort == SortMode::Values {
        // Values from different columns now share rows: compare them all as text.
        answer.kinds = vec![ValueKind::Text; columns];
    }
    if expected.len() != answer.rows.len() {
        return Err(Mismatch::RowCount {
            expected: expected.len(),
            actual: answer.rows.len(),
        });
    }
    for (row, (want, got)) in expected.iter().zip(&answer.rows).enumerate() {
        if want.len() != got.len() {
            return Err(Mismatch::ColumnCount {
                expected: want.len(),
                actual: got.len(),
            });
        }
        for (column, ((want, got), kind)) in want.iter().zip(got).zip(&answer.kinds).enumerate() {
            if !values_equal(got, want, *kind) {
                return Err(Mismatch::Value {
                    row,
                    column,
                    expected: want.clone(),
                    actual: got.clone(),
                });
            }
        }
    }
    Ok(())
}

/// `N values hashing to <md5>`.
fn hashed(line: &str) -> Option<(usize, &str)> {
    let (count, hash) = line.split_once(" values hashing to ")?;
    Some((count.trim().parse().ok()?, hash.trim()))
}

/// The rows of a `<FILE>:` answer: a CSV file with a header, values separated by `|`, an
/// empty value for NULL. Paths start at DuckDB's repository; only `test/sql/` is copied.
fn file_lines(path: &str, corpus: &Path) -> Result<Vec<String>, Mismatch> {
    let missing = || Mismatch::MissingFile(path.to_string());
    let inside = path.strip_prefix("test/sql/").ok_or_else(missing)?;
    let text = std::fs::read_to_string(corpus.join(inside)).map_err(|_| missing())?;
    let rows = text.lines().skip(1).map(|line| {
        let values: Vec<&str> = line
            .split('|')
            .map(|v| if v.is_empty() { "NULL" } else { v })
            .collect();
        values.join("\t")
    });
    Ok(rows.collect())
}

/// The expected values as rows. Lines are rows of tab-separated values when there are as
/// many lines as rows in the answer or every line holds a tab; otherwise each line is one
/// value, taken `columns` at a time (DuckDB's rule).
fn split_rows(lines: &[String], columns: usize, answer_rows: usize) -> Vec<Vec<String>> {
    let row_wise = (columns > 1 && lines.len() == answer_rows)
        || (!lines.is_empty() && lines.iter().all(|l| l.contains('\t')));
    if row_wise || columns <= 1 {
        return lines
            .iter()
            .map(|l| l.split('\t').map(str::to_string).collect())
            .collect();
    }
    lines.chunks(columns).map(<[String]>::to_vec).collect()
}

fn sort(rows: &mut Vec<Vec<String>>, mode: SortMode) {
    match mode {
        SortMode::None => {}
        SortMode::Rows => rows.sort(),
        SortMode::Values => {
            let width = rows.first().map_or(1, Vec::len).max(1);
            let mut values: Vec<String> = rows.drain(..).flatten().collect();
            values.sort();
            rows.extend(values.chunks(width).map(<[String]>::to_vec));
        }
    }
}

/// One value against its expected text.
pub fn values_equal(actual: &str, expected: &str, kind: ValueKind) -> bool {
    if actual == expected {
        return true;
    }
    if let Some(pattern) = expected.strip_prefix("<REGEX>:") {
        return full_match(pattern, actual) == Some(true);
    }
    if let Some(pattern) = expected.strip_prefix("<!REGEX>:") {
        return full_match(pattern, actual) == Some(false);
    }
    match kind {
        ValueKind::Number { float } => numbers_equal(actual, expected, float),
        ValueKind::Boolean => {
            let truth = |v: &str| match v.trim().to_ascii_lowercase().as_str() {
                "true" | "1" => Some(true),
                "false" | "0" => Some(false),
                _ => None,
            };
            truth(actual).is_some() && truth(actual) == truth(expected)
        }
        ValueKind::Text => false,
    }
}

/// Whole numbers exactly; decimals as the numbers they write; floats within 1% of the
/// expected value (DuckDB's `ApproxEqual`), NaN equal to NaN, infinities to themselves.
/// Spaces around the expected text do not count, as DuckDB's cast to a number ignores them.
fn numbers_equal(actual: &str, expected: &str, float: bool) -> bool {
    let (actual, expected) = (actual.trim(), expected.trim());
    if let (Ok(a), Ok(e)) = (actual.parse::<i128>(), expected.parse::<i128>()) {
        return a == e;
    }
    let (Ok(a), Ok(e)) = (actual.parse::<f64>(), expected.parse::<f64>()) else {
        return false;
    };
    if !float {
        return a == e;
    }
    if a.is_nan() || e.is_nan() {
        return a.is_nan() && e.is_nan();
    }
    if !a.is_finite() || !e.is_finite() {
        return a == e;
    }
    (a - e).abs() <= e.abs() * 0.01 + 1e-8
}

/// Whether an error message is the one a `statement error` record names: it contains the
/// fragment, or matches it when it starts with `<REGEX>:`.
pub fn message_matches(message: &str, expected: &str) -> bool {
    match expected.strip_prefix("<REGEX>:") {
        Some(pattern) => full_match(pattern, message) == Some(true),
        None => match expected.strip_prefix("<!REGEX>:") {
            Some(pattern) => full_match(pattern, message) == Some(false),
            None => message.contains(expected.trim()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(columns: usize, sort: SortMode, expected: &[&str]) -> Query {
        Query {
            sql: String::new(),
            columns,
            sort,
            label: None,
            expected: expected.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn answer(kinds: Vec<ValueKind>, rows: &[&[&str]]) -> Answer {
        let rows = rows
            .iter()
            .map(|r| r.iter().map(|v| v.to_string()).collect())
            .collect();
        Answer { kinds, rows }
    }

    const INT: ValueKind = ValueKind::Number { float: false };
    const FLOAT: ValueKind = ValueKind::Number { float: true };

    #[test]
    fn rows_compare_row_wise_or_value_per_line() {
        let mut labels = Labels::new();
        let here = Path::new(".");
        let got = answer(vec![INT, ValueKind::Text], &[&["2", "b"], &["1", "a"]]);
        let row_wise = query(2, SortMode::Rows, &["1\ta", "2\tb"]);
        assert_eq!(check(&row_wise, got.clone(), &mut labels, here), Ok(()));
        let per_line = query(2, SortMode::None, &["2", "b", "1", "a"]);
        assert_eq!(check(&per_line, got.clone(), &mut labels, here), Ok(()));
        let unsorted = query(2, SortMode::None, &["1\ta", "2\tb"]);
        assert!(matches!(
            check(&unsorted, got.clone(), &mut labels, here),
            Err(Mismatch::Value { row: 0, .. })
        ));
        let wrong_width = query(1, SortMode::None, &["2", "1"]);
        assert!(matches!(
            check(&wrong_width, got, &mut labels, here),
            Err(Mismatch::ColumnCount { .. })
        ));
    }

    #[test]
    fn values_compare_by_kind() {
        assert!(values_equal("0.3333333333333333", "0.333333", FLOAT));
        assert!(!values_equal("0.34", "0.333333", FLOAT));
        assert!(values_equal("1.50", "1.5", INT));
        assert!(values_equal("0", " 0", INT));
        assert!(!values_equal("2", "2.0001", INT));
        assert!(values_equal("nan", "NaN", FLOAT));
        assert!(values_equal("true", "1", ValueKind::Boolean));
        assert!(!values_equal("1.0", "1", ValueKind::Text));
        assert!(values_equal(
            "plan: HASH_JOIN",
            "<REGEX>:.*HASH_JOIN.*",
            ValueKind::Text
        ));
    }

    #[test]
    fn hashes_and_labels() {
        let mut labels = Labels::new();
        let here = Path::new(".");
        let got = answer(vec![INT], &[&["1"], &["2"]]);
        let hash = md5_hex(b"1\n2\n");
        let hashed = query(1, SortMode::None, &[&format!("2 values hashing to {hash}")]);
        assert_eq!(check(&hashed, got.clone(), &mut labels, here), Ok(()));
        let mut labelled = query(1, SortMode::Rows, &[]);
        labelled.label = Some("q".into());
        assert_eq!(check(&labelled, got, &mut labels, here), Ok(()));
        let other = answer(vec![INT], &[&["1"]]);
        assert!(matches!(
            check(&labelled, other, &mut labels, here),
            Err(Mismatch::Label(_))
        ));
    }
}
