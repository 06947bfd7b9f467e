use std::io::Write;

use arrow::util::pretty::pretty_format_batches_with_schema;
use pondra_cluster::StatementResult;

/// How `pondra sql` prints rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Boxed tables.
    Table,
    /// A header row, then one line per row; NULL is empty.
    Csv,
    /// A JSON array of objects, one per row.
    Json,
    /// A Markdown table.
    Markdown,
}

/// Prints one statement's result to stdout. Statements without rows print nothing.
pub fn print_result(result: &StatementResult, format: Format) -> Result<(), String> {
    let StatementResult::Rows { schema, batches } = result else {
        return Ok(());
    };
    let mut out = std::io::stdout().lock();
    let failed = |e: &dyn std::fmt::Display| format!("cannot print the result: {e}");
    // Timestamps as PostgreSQL and DuckDB write them, not in ISO 8601's form; arrays as text,
    // which CSV needs.
    let batches = batches
        .iter()
        .map(pondra_cluster::with_text_for_tables)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| failed(&e))?;
    let schema = match batches.first() {
        Some(batch) => batch.schema(),
        None => schema.clone(),
    };
    match format {
        Format::Table => {
            let table = pretty_format_batches_with_schema(schema.clone(), &batches)
                .map_err(|e| failed(&e))?;
            writeln!(out, "{table}").map_err(|e| failed(&e))?;
        }
        Format::Csv => {
            let mut writer = arrow::csv::WriterBuilder::new()
                .with_header(true)
                .build(&mut out);
            if batches.is_empty() {
                let empty = arrow::array::RecordBatch::new_empty(schema.clone());
                writer.write(&empty).map_err(|e| failed(&e))?;
            }
            for batch in &batches {
                writer.write(batch).map_err(|e| failed(&e))?;
            }
        }
        Format::Markdown => {
            let text = markdown(&schema, &batches).map_err(|e| failed(&e))?;
            write!(out, "{text}").map_err(|e| failed(&e))?;
        }
        Format::Json => {
            let mut writer = arrow::json::ArrayWriter::new(&mut out);
            let refs: Vec<&arrow::array::RecordBatch> = batches.iter().collect();
            writer.write_batches(&refs).map_err(|e| failed(&e))?;
            writer.finish().map_err(|e| failed(&e))?;
            drop(writer);
            writeln!(out).map_err(|e| failed(&e))?;
        }
    }
    out.flush().map_err(|e| failed(&e))
}

/// Rows as a Markdown table: a header, its rule, a line per row; `|` in a value escaped.
fn markdown(
    schema: &arrow::datatypes::SchemaRef,
    batches: &[arrow::array::RecordBatch],
) -> Result<String, arrow::error::ArrowError> {
    use arrow::util::display::{ArrayFormatter, FormatOptions};
    let cell = |text: &str| text.replace('|', "\\|");
    let names: Vec<String> = schema.fields().iter().map(|f| cell(f.name())).collect();
    let mut out = format!("| {} |\n", names.join(" | "));
    out.push_str(&format!("|{}|\n", vec!["---"; names.len()].join("|")));
    let options = FormatOptions::default().with_null("NULL");
    for batch in batches {
        let formatters = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
            .collect::<Result<Vec<_>, _>>()?;
        for row in 0..batch.num_rows() {
            let cells: Vec<String> = formatters
                .iter()
                .map(|f| cell(&f.value(row).to_string()))
                .collect();
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
    }
    Ok(out)
}
