//! Writing a v2 manifest (the entries of an unpartitioned table's data files) and a v2
//! manifest list as Avro object container files, deflate-compressed as Iceberg Java and
//! PyIceberg write them.

use apache_avro::types::Value as AvroValue;
use apache_avro::{Codec, DeflateSettings, Schema, Writer};
use serde_json::Value;

use super::avro_schemas::{manifest_entry_schema, manifest_file_schema};
use super::metadata::malformed;
use super::version::IcebergDataFile;
use crate::error::Result;

/// A manifest entry's status, as the spec numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum EntryStatus {
    Existing = 0,
    Added = 1,
    Deleted = 2,
}

/// One entry of a manifest to write.
pub(super) struct EntryToWrite<'a> {
    pub status: EntryStatus,
    /// The snapshot that added the file, or that deleted it for a DELETED entry.
    pub snapshot_id: i64,
    /// The file's data sequence number; None for an ADDED entry, which inherits the
    /// sequence number of the snapshot that commits it.
    pub sequence_number: Option<i64>,
    pub file: &'a IcebergDataFile,
}

/// The manifest holding `entries`; `schema` is the table schema JSON (with its `schema-id`)
/// that the spec asks manifests to carry in their metadata.
pub(super) fn write_manifest(
    entries: &[EntryToWrite],
    schema: &Value,
    schema_id: i32,
    path: &str,
) -> Result<Vec<u8>> {
    let metadata = [
        ("schema", schema.to_string()),
        ("schema-id", schema_id.to_string()),
        ("partition-spec", "[]".to_string()),
        ("partition-spec-id", "0".to_string()),
        ("format-version", "2".to_string()),
        ("content", "data".to_string()),
    ];
    let records = entries
        .iter()
        .map(|e| entry_value(e, path))
        .collect::<Result<Vec<_>>>()?;
    container(&manifest_entry_schema()?, &metadata, records, path)
}

fn entry_value(entry: &EntryToWrite, path: &str) -> Result<AvroValue> {
    let sequence_number = || optional(entry.sequence_number.map(AvroValue::Long));
    Ok(record(vec![
        ("status", AvroValue::Int(entry.status as i32)),
        (
            "snapshot_id",
            optional(Some(AvroValue::Long(entry.snapshot_id))),
        ),
        ("sequence_number", sequence_number()),
        ("file_sequence_number", sequence_number()),
        ("data_file", data_file_value(entry.file, path)?),
    ]))
}

fn data_file_value(file: &IcebergDataFile, path: &str) -> Result<AvroValue> {
    let null_counts = file
        .null_counts
        .iter()
        .map(|(id, count)| Ok((*id, AvroValue::Long(to_long(*count, path)?))))
        .collect::<Result<Vec<_>>>()?;
    let bounds = |bounds: &[(i32, super::types::IcebergValue)]| {
        let entries = bounds
            .iter()
            .map(|(id, value)| (*id, AvroValue::Bytes(value.to_bytes())));
        int_map(entries.collect())
    };
    Ok(record(vec![
        ("content", AvroValue::Int(0)),
        ("file_path", AvroValue::String(file.path.clone())),
        ("file_format", AvroValue::String("PARQUET".into())),
        ("partition", record(Vec::new())),
        (
            "record_count",
            AvroValue::Long(to_long(file.record_count, path)?),
        ),
        (
            "file_size_in_bytes",
            AvroValue::Long(to_long(file.size_bytes, path)?),
        ),
        ("column_sizes", int_map(Vec::new())),
        ("value_counts", int_map(Vec::new())),
        ("null_value_counts", int_map(null_counts)),
        ("nan_value_counts", int_map(Vec::new())),
        ("lower_bounds", bounds(&file.lower_bounds)),
        ("upper_bounds", bounds(&file.upper_bounds)),
        ("key_metadata", optional(None)),
        ("split_offsets", optional(None)),
        ("equality_ids", optional(None)),
        ("sort_order_id", optional(None)),
    ]))
}

/// One manifest as a manifest list names it.
pub(super) struct ManifestToList {
    /// Absolute URI.
    pub path: String,
    pub length: u64,
    pub sequence_number: i64,
    pub min_sequence_number: i64,
    pub added_snapshot_id: i64,
    /// Files and rows of the ADDED, EXISTING and DELETED entries.
    pub files: [u64; 3],
    pub rows: [u64; 3],
}

/// The manifest list of snapshot `snapshot_id`.
pub(super) fn write_manifest_list(
    manifests: &[ManifestToList],
    snapshot_id: i64,
    parent_snapshot_id: Option<i64>,
    sequence_number: i64,
    path: &str,
) -> Result<Vec<u8>> {
    let parent = parent_snapshot_id.map_or_else(|| "null".to_string(), |p| p.to_string());
    let metadata = [
        ("snapshot-id", snapshot_id.to_string()),
        ("parent-snapshot-id", parent),
        ("sequence-number", sequence_number.to_string()),
        ("format-version", "2".to_string()),
    ];
    let records = manifests
        .iter()
        .map(|m| manifest_value(m, path))
        .collect::<Result<Vec<_>>>()?;
    container(&manifest_file_schema()?, &metadata, records, path)
}

fn manifest_value(manifest: &ManifestToList, path: &str) -> Result<AvroValue> {
    let count = |n: u64| -> Result<AvroValue> {
        let n = i32::try_from(n).map_err(|_| malformed(path, format!("{n} files")))?;
        Ok(AvroValue::Int(n))
    };
    let rows = |n: u64| to_long(n, path).map(AvroValue::Long);
    let [added_files, existing_files, deleted_files] = manifest.files;
    let [added_rows, existing_rows, deleted_rows] = manifest.rows;
    Ok(record(vec![
        ("manifest_path", AvroValue::String(manifest.path.clone())),
        ("manifest_length", rows(manifest.length)?),
        ("partition_spec_id", AvroValue::Int(0)),
        ("content", AvroValue::Int(0)),
        ("sequence_number", AvroValue::Long(manifest.sequence_number)),
        (
            "min_sequence_number",
            AvroValue::Long(manifest.min_sequence_number),
        ),
        (
            "added_snapshot_id",
            AvroValue::Long(manifest.added_snapshot_id),
        ),
        ("added_files_count", count(added_files)?),
        ("existing_files_count", count(existing_files)?),
        ("deleted_files_count", count(deleted_files)?),
        ("added_rows_count", rows(added_rows)?),
        ("existing_rows_count", rows(existing_rows)?),
        ("deleted_rows_count", rows(deleted_rows)?),
        ("partitions", optional(None)),
        ("key_metadata", optional(None)),
    ]))
}

/// An Avro object container file of `records`, with the `metadata` Iceberg asks for.
fn container(
    schema: &Schema,
    metadata: &[(&str, String)],
    records: Vec<AvroValue>,
    path: &str,
) -> Result<Vec<u8>> {
    let failed = |e: apache_avro::Error| malformed(path, format!("writing Avro: {e}"));
    let codec = Codec::Deflate(DeflateSettings::default());
    let mut writer = Writer::with_codec(schema, Vec::new(), codec);
    for (key, value) in metadata {
        writer
            .add_user_metadata(key.to_string(), value)
            .map_err(failed)?;
    }
    for record in records {
        writer.append(record).map_err(failed)?;
    }
    writer.into_inner().map_err(failed)
}

fn record(fields: Vec<(&str, AvroValue)>) -> AvroValue {
    AvroValue::Record(
        fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

/// A value of an optional field, whose Avro type is the union `["null", type]`.
fn optional(value: Option<AvroValue>) -> AvroValue {
    match value {
        Some(value) => AvroValue::Union(1, Box::new(value)),
        None => AvroValue::Union(0, Box::new(AvroValue::Null)),
    }
}

/// An optional Iceberg `map<int, _>` (an Avro array of key/value records). Written even
/// when empty, never null: PyIceberg's `inspect.entries()` fails on a null `column_sizes`.
fn int_map(entries: Vec<(i32, AvroValue)>) -> AvroValue {
    let items = entries
        .into_iter()
        .map(|(key, value)| record(vec![("key", AvroValue::Int(key)), ("value", value)]))
        .collect();
    optional(Some(AvroValue::Array(items)))
}

/// A count or size as the `long` Avro holds, which a u64 beyond i64 cannot be.
pub(super) fn to_long(value: u64, path: &str) -> Result<i64> {
    i64::try_from(value).map_err(|_| malformed(path, format!("{value} is beyond a long")))
}
