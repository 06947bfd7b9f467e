//! `COPY table | (query) TO STDOUT` on the Postgres door, in Postgres's text format
//! (tab-separated, `\N` for NULL, backslash escapes) or as CSV, which psycopg's `copy()` and
//! pandas' Postgres loaders read.

use arrow::array::RecordBatch;
use pondra_parser::ast;

use super::values::PgValue;

/// What a `COPY ... TO STDOUT` asks for.
pub struct CopyOut {
    /// The query whose rows go out.
    pub query: String,
    csv: bool,
    header: bool,
    delimiter: char,
    null: String,
}

impl CopyOut {
    /// Postgres's text format, no header: what `COPY (SUBSCRIBE ...) TO STDOUT` writes.
    pub fn text(query: String) -> CopyOut {
        CopyOut {
            query,
            csv: false,
            header: false,
            delimiter: '\t',
            null: "\\N".into(),
        }
    }

    /// The COPY TO STDOUT a statement is, if it is one.
    pub fn from_statement(statement: &ast::Statement) -> Option<CopyOut> {
        let ast::Statement::Copy {
            source,
            to: true,
            target: ast::CopyTarget::Stdout,
            options,
            legacy_options,
            ..
        } = statement
        else {
            return None;
        };
        let query = match source {
            ast::CopySource::Table {
                table_name,
                columns,
            } => {
                let columns = match columns.is_empty() {
                    true => "*".to_string(),
                    false => columns
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                };
                format!("SELECT {columns} FROM {table_name}")
            }
            ast::CopySource::Query(query) => query.to_string(),
        };
        let mut copy = CopyOut {
            query,
            csv: false,
            header: false,
            delimiter: '\t',
            null: "\\N".into(),
        };
        let csv = |copy: &mut CopyOut| {
            copy.csv = true;
            copy.delimiter = ',';
            copy.null = String::new();
        };
        for option in options {
            match option {
                ast::CopyOption::Format(name) if name.value.eq_ignore_ascii_case("csv") => {
                    csv(&mut copy)
                }
                ast::CopyOption::Header(header) => copy.header = *header,
                ast::CopyOption::Delimiter(d) => copy.delimiter = *d,
                ast::CopyOption::Null(null) => copy.null = null.clone(),
                _ => {}
            }
        }
        for option in legacy_options {
            match option {
                ast::CopyLegacyOption::Csv(_) => csv(&mut copy),
                ast::CopyLegacyOption::Header => copy.header = true,
                ast::CopyLegacyOption::Delimiter(d) => copy.delimiter = *d,
                ast::CopyLegacyOption::Null(null) => copy.null = null.clone(),
                _ => {}
            }
        }
        Some(copy)
    }

    /// The header line, if asked for, then one line per row of `batches`.
    pub fn lines(&self, names: &[String], batches: Vec<RecordBatch>) -> Vec<Vec<u8>> {
        let mut lines = Vec::new();
        if self.header {
            let fields: Vec<Option<String>> = names.iter().cloned().map(Some).collect();
            lines.push(self.line(&fields));
        }
        for batch in batches {
            for row in 0..batch.num_rows() {
                let fields: Vec<Option<String>> = batch
                    .columns()
                    .iter()
                    .map(|column| PgValue::at(column, row).text())
                    .collect();
                lines.push(self.line(&fields));
            }
        }
        lines
    }

    fn line(&self, fields: &[Option<String>]) -> Vec<u8> {
        let mut line = String::new();
        for (i, field) in fields.iter().enumerate() {
            if i > 0 {
                line.push(self.delimiter);
            }
            match field {
                None => line.push_str(&self.null),
                Some(value) if self.csv => line.push_str(&self.csv_field(value)),
                Some(value) => line.push_str(&text_field(value, self.delimiter)),
            }
        }
        line.push('\n');
        line.into_bytes()
    }

    /// A CSV field, quoted when it holds the delimiter, a quote, a line break, or looks like
    /// the NULL marker.
    fn csv_field(&self, value: &str) -> String {
        let needs_quotes = value.is_empty()
            || value == self.null
            || value.contains([self.delimiter, '"', '\n', '\r']);
        match needs_quotes {
            true => format!("\"{}\"", value.replace('"', "\"\"")),
            false => value.to_string(),
        }
    }
}

/// A text-format field: backslash, the delimiter and line breaks escaped.
fn text_field(value: &str, delimiter: char) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' if delimiter == '\t' => out.push_str("\\t"),
            c if c == delimiter => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_fields_escape_and_csv_fields_quote() {
        assert_eq!(text_field("a\tb\\c\nd", '\t'), "a\\tb\\\\c\\nd");
        let copy = CopyOut {
            query: String::new(),
            csv: true,
            header: false,
            delimiter: ',',
            null: String::new(),
        };
        assert_eq!(copy.csv_field("x,y"), "\"x,y\"");
        assert_eq!(copy.csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(copy.csv_field(""), "\"\"");
        assert_eq!(copy.csv_field("plain"), "plain");
    }
}
