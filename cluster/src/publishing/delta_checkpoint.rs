//! Checkpoints of a published table's Delta log (ADR 0058): every `CHECKPOINT_EVERY`
//! versions, `%020d.checkpoint.parquet` holds the version's `protocol`, `metaData` and an `add`
//! per file, and `_last_checkpoint` names it, so that readers replay from there instead of
//! from version 0. The actions are the log's own JSON, read into the checkpoint's schema.

use std::io::Cursor;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef};
use bytes::Bytes;
use pondra_storage::StorageError;
use serde_json::{Value, json};

use crate::node::Node;
use crate::{NodeError, Result};

/// A checkpoint is written at each version that is a multiple of this.
pub(crate) const CHECKPOINT_EVERY: u64 = 10;

impl Node {
    /// Writes the checkpoint of `version` of the Delta log in `folder`, whose whole state is
    /// `actions` (its protocol, metadata and one add per file).
    pub(crate) async fn write_delta_checkpoint(
        &self,
        folder: &str,
        version: u64,
        actions: &[Value],
    ) -> Result<()> {
        let mut lines = String::new();
        for action in actions {
            lines.push_str(&action.to_string());
            lines.push('\n');
        }
        let schema = checkpoint_schema();
        let mut reader = arrow::json::ReaderBuilder::new(schema.clone())
            .build(Cursor::new(lines.into_bytes()))?;
        let mut batches = Vec::new();
        for batch in &mut reader {
            batches.push(batch?);
        }
        let bytes = pondra_storage::write_parquet_bytes(&schema, &batches)?;
        let path = format!("{folder}/_delta_log/{version:020}.checkpoint.parquet");
        match self.lake.put_if_absent(&path, bytes).await {
            Ok(()) | Err(StorageError::AlreadyExists(_)) => {}
            Err(e) => return Err(NodeError::from(e)),
        }
        let last = json!({"version": version, "size": actions.len()}).to_string();
        let last_path = format!("{folder}/_delta_log/_last_checkpoint");
        self.lake.put(&last_path, Bytes::from(last)).await?;
        Ok(())
    }
}

/// The columns of a Delta checkpoint this publisher fills: one struct per action kind.
fn checkpoint_schema() -> SchemaRef {
    let text = |name: &str| Field::new(name, DataType::Utf8, true);
    let long = |name: &str| Field::new(name, DataType::Int64, true);
    let strings = |name: &str| {
        Field::new(
            name,
            DataType::List(Arc::new(Field::new("element", DataType::Utf8, true))),
            true,
        )
    };
    let map = |name: &str| {
        Field::new_map(
            name,
            "key_value",
            Field::new("key", DataType::Utf8, false),
            Field::new("value", DataType::Utf8, true),
            false,
            true,
        )
    };
    let record = |name: &str, fields: Vec<Field>| {
        Field::new(name, DataType::Struct(Fields::from(fields)), true)
    };
    Arc::new(Schema::new(vec![
        record(
            "protocol",
            vec![
                Field::new("minReaderVersion", DataType::Int32, true),
                Field::new("minWriterVersion", DataType::Int32, true),
                strings("readerFeatures"),
                strings("writerFeatures"),
            ],
        ),
        record(
            "metaData",
            vec![
                text("id"),
                text("name"),
                text("description"),
                record("format", vec![text("provider"), map("options")]),
                text("schemaString"),
                strings("partitionColumns"),
                map("configuration"),
                long("createdTime"),
            ],
        ),
        record(
            "add",
            vec![
                text("path"),
                map("partitionValues"),
                long("size"),
                long("modificationTime"),
                Field::new("dataChange", DataType::Boolean, true),
                text("stats"),
                map("tags"),
            ],
        ),
        record(
            "remove",
            vec![
                text("path"),
                long("deletionTimestamp"),
                Field::new("dataChange", DataType::Boolean, true),
            ],
        ),
    ]))
}
