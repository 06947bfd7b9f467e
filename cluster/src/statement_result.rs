//! What a statement gives back: rows, or the command tag of a statement that returns none.

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;

/// What one statement produced.
#[derive(Debug)]
pub enum StatementResult {
    /// Rows for the client.
    Rows {
        schema: SchemaRef,
        batches: Vec<RecordBatch>,
    },
    /// A statement that returns no rows, with its command tag (`INSERT 0 3`, `CREATE TABLE`).
    Done { tag: String },
}

/// The result of a statement that returns no rows, with its command tag.
pub(crate) fn done(tag: impl Into<String>) -> StatementResult {
    StatementResult::Done { tag: tag.into() }
}
