//! Reading an Iceberg table's metadata.json (format versions 1 and 2): what a scan needs (the
//! current snapshot's manifest list and schema), the snapshots for time travel, and the raw
//! JSON so that the next version Pondra writes carries the table's history on. Which
//! metadata file is the newest is read from a listing of the `metadata/` folder.

use std::collections::BTreeMap;

use serde_json::Value;

use super::types::{IcebergField, parse_schema_fields};
use crate::error::{Result, StorageError};

/// One snapshot of a table: the files of one version, listed by its manifest list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IcebergSnapshot {
    pub snapshot_id: i64,
    pub parent_snapshot_id: Option<i64>,
    /// 0 in format version 1, which has no sequence numbers.
    pub sequence_number: i64,
    pub timestamp_ms: i64,
    /// Absolute URI of the snapshot's manifest list.
    pub manifest_list: String,
    pub schema_id: Option<i32>,
}

/// A parsed metadata.json.
#[derive(Debug, Clone, PartialEq)]
pub struct IcebergTableMetadata {
    pub format_version: i32,
    pub table_uuid: String,
    /// The table's location URI (the folder holding `metadata/`).
    pub location: String,
    pub last_updated_ms: i64,
    pub last_column_id: i32,
    /// 0 in format version 1.
    pub last_sequence_number: i64,
    pub current_schema_id: i32,
    /// The current schema's columns.
    pub schema: Vec<IcebergField>,
    /// None for a table without snapshot yet.
    pub current_snapshot_id: Option<i64>,
    /// The current snapshot's manifest list.
    pub manifest_list: Option<String>,
    /// Every snapshot the metadata keeps, oldest first as the file lists them.
    pub snapshots: Vec<IcebergSnapshot>,
    pub properties: BTreeMap<String, String>,
    /// The whole document, for the history (schemas, snapshots, logs) a next version keeps.
    pub raw: Value,
}

/// Parses the metadata.json `bytes` read from `source` (named in errors).
pub fn parse_iceberg_metadata(bytes: &[u8], source: &str) -> Result<IcebergTableMetadata> {
    if bytes.starts_with(&[0x1F, 0x8B]) {
        return Err(StorageError::Unsupported(format!(
            "gzip-compressed Iceberg metadata ({source})"
        )));
    }
    let raw: Value = serde_json::from_slice(bytes)
        .map_err(|e| malformed(source, format!("not Iceberg metadata JSON: {e}")))?;
    let doc = Doc { raw: &raw, source };
    let format_version = doc.int(&raw, "format-version")?;
    if !(1..=2).contains(&format_version) {
        return Err(StorageError::Unsupported(format!(
            "Iceberg format version {format_version} ({source})"
        )));
    }
    let current_schema_id = doc.optional_int(&raw, "current-schema-id")?.unwrap_or(0);
    let snapshots = doc.snapshots()?;
    // Format version 1 writes -1, later ones null or nothing, for "no snapshot".
    let current_snapshot_id = doc
        .optional_long(&raw, "current-snapshot-id")?
        .filter(|id| *id != -1);
    let manifest_list = match current_snapshot_id {
        Some(id) => Some(
            snapshots
                .iter()
                .find(|s| s.snapshot_id == id)
                .ok_or_else(|| malformed(source, format!("current snapshot {id} is not listed")))?
                .manifest_list
                .clone(),
        ),
        None => None,
    };
    Ok(IcebergTableMetadata {
        format_version,
        table_uuid: doc.string(&raw, "table-uuid")?,
        location: doc.string(&raw, "location")?,
        last_updated_ms: doc.optional_long(&raw, "last-updated-ms")?.unwrap_or(0),
        last_column_id: doc.optional_int(&raw, "last-column-id")?.unwrap_or(0),
        last_sequence_number: doc
            .optional_long(&raw, "last-sequence-number")?
            .unwrap_or(0),
        current_schema_id,
        schema: parse_schema_fields(doc.current_schema(current_schema_id)?, source)?,
        current_snapshot_id,
        manifest_list,
        snapshots,
        properties: doc.properties(),
        raw: raw.clone(),
    })
}

pub(super) fn malformed(source: &str, message: impl Into<String>) -> StorageError {
    StorageError::Location {
        location: source.to_string(),
        message: message.into(),
    }
}

/// The metadata document being read, with the typed look-ups that name it in errors.
struct Doc<'a> {
    raw: &'a Value,
    source: &'a str,
}

impl Doc<'_> {
    fn optional_long(&self, object: &Value, key: &str) -> Result<Option<i64>> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => value
                .as_i64()
                .map(Some)
                .ok_or_else(|| malformed(self.source, format!("{key} is not an integer: {value}"))),
        }
    }

    fn optional_int(&self, object: &Value, key: &str) -> Result<Option<i32>> {
        let Some(value) = self.optional_long(object, key)? else {
            return Ok(None);
        };
        let int = i32::try_from(value)
            .map_err(|_| malformed(self.source, format!("{key} {value} is out of range")))?;
        Ok(Some(int))
    }

    fn int(&self, object: &Value, key: &str) -> Result<i32> {
        self.optional_int(object, key)?
            .ok_or_else(|| malformed(self.source, format!("{key} is missing")))
    }

    fn long(&self, object: &Value, key: &str) -> Result<i64> {
        self.optional_long(object, key)?
            .ok_or_else(|| malformed(self.source, format!("{key} is missing")))
    }

    fn string(&self, object: &Value, key: &str) -> Result<String> {
        object
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| malformed(self.source, format!("{key} is missing or not a string")))
    }

    /// The schema `current-schema-id` names among `schemas`, or format version 1's `schema`.
    fn current_schema(&self, schema_id: i32) -> Result<&Value> {
        if let Some(schemas) = self.raw.get("schemas").and_then(Value::as_array) {
            let found = schemas
                .iter()
                .find(|s| s.get("schema-id").and_then(Value::as_i64) == Some(schema_id.into()));
            if let Some(schema) = found {
                return Ok(schema);
            }
        }
        self.raw
            .get("schema")
            .ok_or_else(|| malformed(self.source, format!("schema {schema_id} is not listed")))
    }

    fn snapshots(&self) -> Result<Vec<IcebergSnapshot>> {
        let Some(listed) = self.raw.get("snapshots").and_then(Value::as_array) else {
            return Ok(Vec::new());
        };
        let mut snapshots = Vec::with_capacity(listed.len());
        for snapshot in listed {
            let snapshot_id = self.long(snapshot, "snapshot-id")?;
            if snapshot.get("manifest-list").is_none() {
                return Err(StorageError::Unsupported(format!(
                    "an Iceberg snapshot without manifest list ({snapshot_id} in {})",
                    self.source
                )));
            }
            snapshots.push(IcebergSnapshot {
                snapshot_id,
                parent_snapshot_id: self.optional_long(snapshot, "parent-snapshot-id")?,
                sequence_number: self
                    .optional_long(snapshot, "sequence-number")?
                    .unwrap_or(0),
                timestamp_ms: self.long(snapshot, "timestamp-ms")?,
                manifest_list: self.string(snapshot, "manifest-list")?,
                schema_id: self.optional_int(snapshot, "schema-id")?,
            });
        }
        Ok(snapshots)
    }

    /// The table properties; values other than strings are kept as their JSON text.
    fn properties(&self) -> BTreeMap<String, String> {
        let Some(properties) = self.raw.get("properties").and_then(Value::as_object) else {
            return BTreeMap::new();
        };
        let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
        properties
            .iter()
            .map(|(k, v)| (k.clone(), text(v)))
            .collect()
    }
}

/// The newest metadata file among the names listed in a table's `metadata/` folder (bare
/// names or paths): the highest version of `v<N>.metadata.json` (Pondra, Hadoop tables) or
/// `<N>-<uuid>.metadata.json` (catalog-managed tables such as PyIceberg's). The listing,
/// rather than `version-hint.text`, decides because a hint may lag behind its newest file.
pub fn newest_metadata_file(names: &[String]) -> Option<String> {
    names
        .iter()
        .filter_map(|name| metadata_file_version(name).map(|version| (version, name)))
        .max()
        .map(|(_, name)| name.clone())
}

/// The version a metadata file's name carries, or None for any other name.
fn metadata_file_version(name: &str) -> Option<u64> {
    let file = name.rsplit('/').next()?;
    let stem = file.strip_suffix(".metadata.json")?;
    let stem = stem.strip_prefix('v').unwrap_or(stem);
    let digits = stem.len() - stem.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let rest = &stem[digits..];
    // Digits then the end, a `-<uuid>` or a codec (`.gz`).
    if digits == 0 || !(rest.is_empty() || rest.starts_with('-') || rest.starts_with('.')) {
        return None;
    }
    stem[..digits].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn newest_iceberg_metadata_file_is_the_highest_version_listed() {
        let listed = names(&[
            "metadata/v1.metadata.json",
            "metadata/v10.metadata.json",
            "metadata/v9.metadata.json",
            "metadata/version-hint.text",
            "metadata/snap-1-1.avro",
        ]);
        assert_eq!(
            newest_metadata_file(&listed).as_deref(),
            Some("metadata/v10.metadata.json")
        );
        let catalog = names(&[
            "00000-90b5eaaf.metadata.json",
            "00002-7bd791cc.metadata.json",
            "00001-2393ff0f.metadata.json",
        ]);
        assert_eq!(
            newest_metadata_file(&catalog).as_deref(),
            Some("00002-7bd791cc.metadata.json")
        );
        assert_eq!(newest_metadata_file(&names(&["version-hint.text"])), None);
        assert_eq!(newest_metadata_file(&names(&["vx.metadata.json"])), None);
    }

    #[test]
    fn malformed_iceberg_metadata_is_an_error() {
        for bytes in [
            &b""[..],
            b"{",
            b"[]",
            b"{\"format-version\": 2}",
            b"{\"format-version\": \"2\", \"table-uuid\": \"u\", \"location\": \"l\"}",
        ] {
            let error = parse_iceberg_metadata(bytes, "m.json").unwrap_err();
            assert!(matches!(error, StorageError::Location { .. }), "{error}");
        }
        let v3 = br#"{"format-version": 3, "table-uuid": "u", "location": "l"}"#;
        let error = parse_iceberg_metadata(v3, "m.json")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("format version 3 (m.json) is not supported"),
            "{error}"
        );
        let gzip = parse_iceberg_metadata(&[0x1F, 0x8B, 0], "m.gz.metadata.json");
        assert!(matches!(gzip, Err(StorageError::Unsupported(_))));
    }
}
