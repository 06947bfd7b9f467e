//! The metadata.json of a new version: the previous version's schemas, snapshots and logs
//! carried on (so time travel to any earlier snapshot keeps working), the new snapshot
//! made current on the `main` branch, and an unpartitioned, unsorted table's fixed specs.

use serde_json::{Value, json};

use super::metadata::malformed;
use super::version::IcebergVersionInput;
use crate::error::{Result, StorageError};

/// How many previous metadata files `metadata-log` names, as Iceberg Java keeps by default
/// (`write.metadata.previous-versions-max`); the log only informs, so older ones can go.
const METADATA_LOG_LENGTH: usize = 100;

/// The snapshot a new version adds.
pub(super) struct NewSnapshot {
    pub snapshot_id: i64,
    pub parent_snapshot_id: Option<i64>,
    pub sequence_number: i64,
    /// Absolute URI.
    pub manifest_list: String,
    pub summary: std::collections::BTreeMap<String, String>,
    pub schema_id: i32,
}

/// Refuses an input that would make a table other readers reject or misread.
pub(super) fn check_input(input: &IcebergVersionInput, metadata_path: &str) -> Result<()> {
    let location = format!("{}/{metadata_path}", input.location.trim_end_matches('/'));
    let refuse = |message: String| Err(malformed(&location, message));
    if input.version == 0 {
        return refuse("versions count from 1".into());
    }
    if input.snapshot_id <= 0 {
        return refuse(format!("snapshot id {} is not positive", input.snapshot_id));
    }
    let parent = input.previous.and_then(|p| p.current_snapshot_id);
    if parent.is_none() && !input.previous_files.is_empty() {
        return refuse("previous files without a previous snapshot".into());
    }
    let Some(previous) = input.previous else {
        return Ok(());
    };
    if input.version < 2 {
        return refuse("version 1 cannot follow a previous version".into());
    }
    if previous.format_version != 2 {
        return Err(StorageError::Unsupported(format!(
            "publishing over Iceberg format version {} metadata ({location})",
            previous.format_version
        )));
    }
    if previous.table_uuid != input.table_uuid {
        return refuse(format!(
            "the table uuid would change from {} to {}",
            previous.table_uuid, input.table_uuid
        ));
    }
    if previous
        .snapshots
        .iter()
        .any(|s| s.snapshot_id == input.snapshot_id)
    {
        return refuse(format!("snapshot id {} is taken", input.snapshot_id));
    }
    Ok(())
}

/// The schema id of the input's schema: the previous current one when unchanged, else the
/// next after every schema id the table has used.
pub(super) fn schema_id_for(input: &IcebergVersionInput) -> i32 {
    let Some(previous) = input.previous else {
        return 0;
    };
    if previous.schema == input.schema {
        return previous.current_schema_id;
    }
    let schemas = previous.raw.get("schemas").and_then(Value::as_array);
    let highest = schemas
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("schema-id").and_then(Value::as_i64))
        .filter_map(|id| i32::try_from(id).ok())
        .chain([previous.current_schema_id])
        .max()
        .unwrap_or(0);
    highest.saturating_add(1)
}

/// The metadata.json of the version `input` describes, whose current snapshot is `snapshot`
/// and current schema `schema` (JSON, with its id).
pub(super) fn next_metadata(
    input: &IcebergVersionInput,
    snapshot: &NewSnapshot,
    schema: Value,
    metadata_path: &str,
) -> Result<Value> {
    let previous = input.previous;
    let history = |key: &str| -> Vec<Value> {
        let listed = previous
            .and_then(|p| p.raw.get(key))
            .and_then(Value::as_array);
        listed.cloned().unwrap_or_default()
    };
    let timestamp_ms = i64::try_from(input.timestamp_ms)
        .map_err(|_| malformed(metadata_path, "timestamp out of range"))?;
    let mut schemas = history("schemas");
    if !schemas
        .iter()
        .any(|s| s.get("schema-id") == Some(&json!(snapshot.schema_id)))
    {
        schemas.push(schema);
    }
    let mut snapshots = history("snapshots");
    snapshots.push(snapshot_json(snapshot, timestamp_ms));
    let mut snapshot_log = history("snapshot-log");
    snapshot_log.push(json!({ "snapshot-id": snapshot.snapshot_id, "timestamp-ms": timestamp_ms }));
    let mut metadata_log = history("metadata-log");
    if let Some(previous) = previous {
        // Pondra names its metadata files by version, so the previous one is v<N-1>.
        let file = format!(
            "{}/metadata/v{}.metadata.json",
            previous.location.trim_end_matches('/'),
            input.version - 1
        );
        metadata_log
            .push(json!({ "metadata-file": file, "timestamp-ms": previous.last_updated_ms }));
    }
    let excess = metadata_log.len().saturating_sub(METADATA_LOG_LENGTH);
    metadata_log.drain(..excess);
    let field_ids = input.schema.iter().map(|f| f.id);
    let last_column_id = field_ids
        .chain([
            input.last_column_id,
            previous.map_or(0, |p| p.last_column_id),
        ])
        .max()
        .unwrap_or(0);
    Ok(json!({
        "format-version": 2,
        "table-uuid": input.table_uuid,
        "location": input.location.trim_end_matches('/'),
        "last-sequence-number": snapshot.sequence_number,
        "last-updated-ms": timestamp_ms,
        "last-column-id": last_column_id,
        "current-schema-id": snapshot.schema_id,
        "schemas": schemas,
        "default-spec-id": 0,
        "partition-specs": [{ "spec-id": 0, "fields": [] }],
        "last-partition-id": 999,
        "default-sort-order-id": 0,
        "sort-orders": [{ "order-id": 0, "fields": [] }],
        "properties": input.properties,
        "current-snapshot-id": snapshot.snapshot_id,
        "snapshots": snapshots,
        "snapshot-log": snapshot_log,
        "metadata-log": metadata_log,
        "refs": { "main": { "snapshot-id": snapshot.snapshot_id, "type": "branch" } },
    }))
}

fn snapshot_json(snapshot: &NewSnapshot, timestamp_ms: i64) -> Value {
    let mut json = json!({
        "snapshot-id": snapshot.snapshot_id,
        "sequence-number": snapshot.sequence_number,
        "timestamp-ms": timestamp_ms,
        "manifest-list": snapshot.manifest_list,
        "summary": snapshot.summary,
        "schema-id": snapshot.schema_id,
    });
    if let Some(parent) = snapshot.parent_snapshot_id {
        json["parent-snapshot-id"] = json!(parent);
    }
    json
}
