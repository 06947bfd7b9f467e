//! Query results as the HTTP door sends them: JSON, CSV or an Arrow IPC stream.

use std::sync::Arc;

use arrow::array::{RecordBatch, RecordBatchOptions};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::error::ArrowError;
use arrow::util::display::{ArrayFormatter, FormatOptions};

/// How rows are laid out in JSON.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum JsonRows {
    /// `{"columns": [{"name", "type"}...], "rows": [[v, ...], ...]}`.
    Arrays,
    /// `{"columns": [...], "rows": [{"name": v, ...}, ...]}`.
    Objects,
}

/// The SQL name of a column type, as DESCRIBE prints it.
pub fn type_name(data_type: &DataType) -> String {
    match pondra_cluster::SqlType::from_arrow(data_type) {
        Some(sql_type) => sql_type.to_string(),
        None if *data_type == DataType::Null => "NULL".into(),
        None => data_type.to_string(),
    }
}

/// Numbers and booleans are written bare; everything else as a JSON string of its text.
fn bare(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Boolean
            | DataType::Int32
            | DataType::Int64
            | DataType::Float32
            | DataType::Float64
            | DataType::Decimal64(..)
            | DataType::Decimal128(..)
    )
}

pub fn json(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    layout: JsonRows,
) -> Result<String, String> {
    let mut out = String::from("{\"columns\":[");
    for (i, field) in schema.fields().iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&format!(
            "{{\"name\":{},\"type\":{}}}",
            quote(field.name()),
            quote(&type_name(field.data_type()))
        ));
    }
    out.push_str("],\"rows\":[");
    let options = FormatOptions::default();
    let mut first_row = true;
    for batch in &text_timestamps(batches)? {
        let formatters = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        for row in 0..batch.num_rows() {
            if !first_row {
                out.push(',');
            }
            first_row = false;
            out.push(if layout == JsonRows::Arrays { '[' } else { '{' });
            for (i, column) in batch.columns().iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if layout == JsonRows::Objects {
                    out.push_str(&quote(schema.field(i).name()));
                    out.push(':');
                }
                let text = formatters[i].value(row).to_string();
                // A column of the NULL type has no null buffer: every value of it is NULL.
                if column.is_null(row) || *column.data_type() == DataType::Null {
                    out.push_str("null");
                } else if bare(column.data_type()) && text.parse::<f64>().is_ok_and(f64::is_finite)
                {
                    out.push_str(&text);
                } else {
                    out.push_str(&quote(&text));
                }
            }
            out.push(if layout == JsonRows::Arrays { ']' } else { '}' });
        }
    }
    out.push_str("]}");
    Ok(out)
}

pub fn csv(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<Vec<u8>, String> {
    let batches: Vec<RecordBatch> = batches
        .iter()
        .map(|b| pondra_cluster::with_text_for_tables(b).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    let mut out = Vec::new();
    {
        let mut writer = arrow::csv::WriterBuilder::new()
            .with_header(true)
            .build(&mut out);
        if batches.is_empty() {
            writer
                .write(&RecordBatch::new_empty(schema.clone()))
                .map_err(|e| e.to_string())?;
        }
        for batch in &batches {
            writer.write(batch).map_err(|e| e.to_string())?;
        }
    }
    Ok(out)
}

/// `batches` with timestamps as PostgreSQL and DuckDB write them, for the text encodings.
fn text_timestamps(batches: &[RecordBatch]) -> Result<Vec<RecordBatch>, String> {
    batches
        .iter()
        .map(|b| pondra_cluster::with_timestamps_as_text(b).map_err(|e| e.to_string()))
        .collect()
}

/// A result as an Arrow IPC stream in pieces, a message of the stream each (the schema, then
/// a batch each, then the end), written as the body is sent: a client reads the first rows
/// while the last are still being written.
pub fn arrow_stream_pieces(
    schema: &SchemaRef,
    batches: Vec<RecordBatch>,
) -> impl Iterator<Item = Result<bytes::Bytes, String>> + Send + 'static {
    let schema = arrow_client_schema(schema);
    let writer =
        arrow::ipc::writer::StreamWriter::try_new(Vec::new(), &schema).map_err(|e| e.to_string());
    let mut writer = Some(writer);
    let mut batches = batches.into_iter();
    let mut finished = false;
    std::iter::from_fn(move || {
        let mut current = match writer.take()? {
            Ok(current) => current,
            Err(e) => return Some(Err(e)),
        };
        let written = match batches.next() {
            Some(batch) => arrow_client_batch(&batch).and_then(|b| current.write(&b)),
            None if finished => return None,
            None => {
                finished = true;
                current.finish()
            }
        };
        if let Err(e) = written {
            return Some(Err(e.to_string()));
        }
        let piece = std::mem::take(current.get_mut());
        writer = Some(Ok(current));
        Some(Ok(bytes::Bytes::from(piece)))
    })
}

/// A result's columns as Arrow clients receive them: 64-bit decimals (ADR 0028) as
/// Decimal128, the decimal type every Arrow library reads, as DuckDB sends them too.
pub fn arrow_client_schema(schema: &Schema) -> Schema {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Decimal64(p, s) => f
                .as_ref()
                .clone()
                .with_data_type(DataType::Decimal128(*p, *s)),
            _ => f.as_ref().clone(),
        })
        .collect();
    Schema::new_with_metadata(fields, schema.metadata().clone())
}

/// A batch of a result as Arrow clients receive it (`arrow_client_schema`).
pub fn arrow_client_batch(batch: &RecordBatch) -> Result<RecordBatch, ArrowError> {
    let schema = batch.schema();
    if !schema
        .fields()
        .iter()
        .any(|f| matches!(f.data_type(), DataType::Decimal64(..)))
    {
        return Ok(batch.clone());
    }
    let columns = batch
        .columns()
        .iter()
        .map(|c| match c.data_type() {
            DataType::Decimal64(p, s) => arrow::compute::cast(c, &DataType::Decimal128(*p, *s)),
            _ => Ok(c.clone()),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    RecordBatch::try_new_with_options(Arc::new(arrow_client_schema(&schema)), columns, &options)
}

pub fn quote(text: &str) -> String {
    serde_json::to_string(text).expect("a string serializes")
}
