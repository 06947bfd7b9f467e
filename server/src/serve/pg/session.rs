//! What a Postgres session asks that touches no table: SET, SHOW, transaction control; and the
//! state of a COPY FROM STDIN between its messages.

use std::sync::{Arc, Mutex};

use arrow::array::{RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use pgwire::api::ClientInfo;
use pondra_cluster::{Node, ParsedStatement, Session, Statement};
use pondra_parser::ast;

pub enum SessionAnswer {
    /// A statement that changes nothing here, with its command tag.
    Tag(&'static str),
    Rows(SchemaRef, Vec<RecordBatch>),
}

/// The answer to a session statement, or `None` for a statement the lake or the session must
/// run (transaction control among them).
pub fn session_answer(statement: &ParsedStatement) -> Option<SessionAnswer> {
    let Statement::Sql(statement) = &statement.statement else {
        return None;
    };
    if pondra_cluster::is_process_setting(statement)
        || pondra_cluster::is_session_setting(statement)
    {
        return None;
    }
    Some(match statement.as_ref() {
        ast::Statement::Set(_) => SessionAnswer::Tag("SET"),
        // Connection pools reset sessions with these; prepared statements are named again
        // by the next Parse, and nothing is listened to.
        ast::Statement::Deallocate { .. } => SessionAnswer::Tag("DEALLOCATE"),
        ast::Statement::Discard { .. } => SessionAnswer::Tag("DISCARD ALL"),
        ast::Statement::UNLISTEN { .. } => SessionAnswer::Tag("UNLISTEN"),
        ast::Statement::ShowVariable { variable } => {
            let name = variable
                .iter()
                .map(|i| i.value.to_lowercase())
                .collect::<Vec<_>>()
                .join(" ");
            if name == "all" {
                return Some(show_all());
            }
            // Every transaction reads one snapshot (ADR 0045).
            if name != "transaction isolation level" {
                return None;
            }
            let schema = Arc::new(Schema::new(vec![Field::new(
                "transaction_isolation",
                DataType::Utf8,
                false,
            )]));
            let batch = RecordBatch::try_new(
                schema.clone(),
                vec![Arc::new(StringArray::from(vec!["repeatable read"]))],
            )
            .expect("one text column");
            SessionAnswer::Rows(schema, vec![batch])
        }
        _ => return None,
    })
}

/// `SHOW ALL`: each setting with its value and a description, as Postgres lists them.
fn show_all() -> SessionAnswer {
    let schema = Arc::new(Schema::new(vec![
        Field::new("name", DataType::Utf8, false),
        Field::new("setting", DataType::Utf8, false),
        Field::new("description", DataType::Utf8, false),
    ]));
    let rows = pondra_cluster::pg_parameters();
    let names: StringArray = rows.clone().map(|(n, _)| Some(n)).collect();
    let values: StringArray = rows.clone().map(|(_, v)| Some(v)).collect();
    let descriptions: StringArray = rows.map(|_| Some("as Pondra has it")).collect();
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(names), Arc::new(values), Arc::new(descriptions)],
    )
    .expect("three text columns");
    SessionAnswer::Rows(schema, vec![batch])
}

/// A `COPY t [(columns)] FROM STDIN` under way: its target and the bytes received so far.
pub struct CopyIn {
    table: String,
    columns: Vec<String>,
    csv: bool,
    header: bool,
    delimiter: u8,
    null: String,
    data: Vec<u8>,
}

impl CopyIn {
    pub fn from_statement(statement: &ParsedStatement) -> Option<CopyIn> {
        let Statement::Sql(statement) = &statement.statement else {
            return None;
        };
        let ast::Statement::Copy {
            source:
                ast::CopySource::Table {
                    table_name,
                    columns,
                },
            to: false,
            target: ast::CopyTarget::Stdin,
            options,
            legacy_options,
            ..
        } = statement.as_ref()
        else {
            return None;
        };
        let mut copy = CopyIn {
            table: table_name.to_string(),
            columns: columns.iter().map(|c| c.value.clone()).collect(),
            csv: false,
            header: false,
            delimiter: b'\t',
            null: "\\N".into(),
            data: Vec::new(),
        };
        let set_csv = |copy: &mut CopyIn| {
            copy.csv = true;
            copy.delimiter = b',';
            copy.null = String::new();
        };
        for option in options {
            match option {
                ast::CopyOption::Format(name) if name.value.eq_ignore_ascii_case("csv") => {
                    set_csv(&mut copy)
                }
                ast::CopyOption::Header(header) => copy.header = *header,
                ast::CopyOption::Delimiter(d) => copy.delimiter = *d as u8,
                ast::CopyOption::Null(null) => copy.null = null.clone(),
                _ => {}
            }
        }
        for option in legacy_options {
            match option {
                ast::CopyLegacyOption::Csv(_) => set_csv(&mut copy),
                ast::CopyLegacyOption::Header => copy.header = true,
                ast::CopyLegacyOption::Delimiter(d) => copy.delimiter = *d as u8,
                ast::CopyLegacyOption::Null(null) => copy.null = null.clone(),
                _ => {}
            }
        }
        Some(copy)
    }

    /// How many columns each row carries.
    pub fn column_count(&self, node: &Node) -> Result<usize, String> {
        let snapshot = node.snapshot();
        let table = snapshot
            .table(&self.table)
            .ok_or_else(|| format!("table {} does not exist", self.table))?;
        Ok(if self.columns.is_empty() {
            table.columns.len()
        } else {
            self.columns.len()
        })
    }

    /// Appends the rows received; returns how many there were.
    pub async fn finish(self, node: &Arc<Node>, session: &Session) -> Result<usize, String> {
        let columns = if self.columns.is_empty() {
            let snapshot = node.snapshot();
            let table = snapshot
                .table(&self.table)
                .ok_or_else(|| format!("table {} does not exist", self.table))?;
            table.columns.iter().map(|c| c.name.clone()).collect()
        } else {
            self.columns.clone()
        };
        let rows = self.rows(columns.len())?;
        let arrays: Vec<arrow::array::ArrayRef> = (0..columns.len())
            .map(|c| {
                Arc::new(StringArray::from(
                    rows.iter().map(|r| r[c].clone()).collect::<Vec<_>>(),
                )) as arrow::array::ArrayRef
            })
            .collect();
        let fields: Vec<Field> = columns
            .iter()
            .map(|c| Field::new(c, DataType::Utf8, true))
            .collect();
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
            .map_err(|e| e.to_string())?;
        node.append_in(session, &self.table, &[batch])
            .await
            .map_err(|e| e.to_string())
    }

    /// The rows of the data, each a value (or NULL) per column.
    fn rows(&self, width: usize) -> Result<Vec<Vec<Option<String>>>, String> {
        let text = std::str::from_utf8(&self.data).map_err(|_| "COPY data is not UTF-8")?;
        let mut rows = Vec::new();
        if self.csv {
            let mut reader = csv_reader(text.as_bytes(), self.delimiter, self.header);
            for record in reader.by_ref() {
                let record = record?;
                rows.push(
                    record
                        .into_iter()
                        .map(|(value, quoted)| (quoted || value != self.null).then_some(value))
                        .collect::<Vec<_>>(),
                );
            }
        } else {
            for (i, line) in text.lines().enumerate() {
                if line == "\\." || (i == 0 && self.header) {
                    continue;
                }
                rows.push(
                    line.split(self.delimiter as char)
                        .map(|v| (v != self.null).then(|| pondra_parser::unescape(v)))
                        .collect(),
                );
            }
        }
        for (i, row) in rows.iter().enumerate() {
            if row.len() != width {
                return Err(format!(
                    "COPY row {} has {} values; the table takes {width}",
                    i + 1,
                    row.len()
                ));
            }
        }
        Ok(rows)
    }
}

/// CSV records as (value, was it quoted) pairs: an unquoted empty value is NULL.
fn csv_reader(
    data: &[u8],
    delimiter: u8,
    header: bool,
) -> impl Iterator<Item = Result<Vec<(String, bool)>, String>> + '_ {
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let (mut quoted, mut in_quotes, mut was_quote) = (false, false, false);
    let text = String::from_utf8_lossy(data).into_owned();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if in_quotes {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    field.push('"');
                } else {
                    in_quotes = false;
                    was_quote = true;
                }
            } else {
                field.push(c);
            }
            continue;
        }
        match c {
            '"' if field.is_empty() && !was_quote => {
                in_quotes = true;
                quoted = true;
            }
            c if c as u32 == delimiter as u32 => {
                record.push((std::mem::take(&mut field), quoted));
                quoted = false;
                was_quote = false;
            }
            '\r' => {}
            '\n' => {
                record.push((std::mem::take(&mut field), quoted));
                records.push(std::mem::take(&mut record));
                quoted = false;
                was_quote = false;
            }
            c => field.push(c),
        }
    }
    if !field.is_empty() || !record.is_empty() || quoted {
        record.push((field, quoted));
        records.push(record);
    }
    let unterminated = in_quotes;
    records
        .into_iter()
        .skip(usize::from(header))
        .filter(|r| !(r.len() == 1 && r[0].0 == "\\." && !r[0].1))
        .map(move |r| {
            if unterminated {
                Err("COPY data ends inside a quoted value".to_string())
            } else {
                Ok(r)
            }
        })
}

/// The COPY of a connection, kept between its messages.
#[derive(Default)]
pub struct CopyCell(Mutex<Option<CopyIn>>);

impl CopyCell {
    pub fn start(&self, copy: CopyIn) {
        *self.0.lock().expect("copy lock") = Some(copy);
    }

    pub fn push(&self, data: &[u8]) {
        if let Some(copy) = self.0.lock().expect("copy lock").as_mut() {
            copy.data.extend_from_slice(data);
        }
    }

    pub fn take(&self) -> Option<CopyIn> {
        self.0.lock().expect("copy lock").take()
    }
}

pub fn copy_state<C: ClientInfo>(client: &C) -> Arc<CopyCell> {
    client
        .session_extensions()
        .get_or_insert_with(CopyCell::default)
}
