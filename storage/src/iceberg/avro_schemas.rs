//! The Avro schemas of the manifests and manifest lists Pondra writes, as the Iceberg v2
//! spec lists them. Readers such as PyIceberg and Iceberg Java match fields by their
//! `field-id`, not their names, so every field, map key and value, and list element
//! carries its id.

use apache_avro::Schema;
use serde_json::{Value, json};

use crate::error::{Result, StorageError};

fn required(id: i32, name: &str, avro_type: Value) -> Value {
    json!({ "name": name, "field-id": id, "type": avro_type })
}

fn optional(id: i32, name: &str, avro_type: Value) -> Value {
    json!({ "name": name, "field-id": id, "type": ["null", avro_type], "default": null })
}

/// An Iceberg `map<int, value>`: Avro maps key only by strings, so Iceberg writes an array
/// of key/value records marked with the logical type `map`.
fn int_map(id: i32, name: &str, key_id: i32, value_id: i32, value_type: &str) -> Value {
    let entry = json!({
        "type": "record",
        "name": format!("k{key_id}_v{value_id}"),
        "fields": [
            { "name": "key", "type": "int", "field-id": key_id },
            { "name": "value", "type": value_type, "field-id": value_id },
        ],
    });
    optional(
        id,
        name,
        json!({ "type": "array", "items": entry, "logicalType": "map" }),
    )
}

fn list(id: i32, name: &str, element_id: i32, element_type: &str) -> Value {
    optional(
        id,
        name,
        json!({ "type": "array", "element-id": element_id, "items": element_type }),
    )
}

/// The `data_file` record of a v2 manifest entry, for an unpartitioned table (`partition`
/// is an empty record).
fn data_file() -> Value {
    let partition = json!({ "type": "record", "name": "r102", "fields": [] });
    json!({
        "type": "record",
        "name": "r2",
        "fields": [
            required(134, "content", json!("int")),
            required(100, "file_path", json!("string")),
            required(101, "file_format", json!("string")),
            required(102, "partition", partition),
            required(103, "record_count", json!("long")),
            required(104, "file_size_in_bytes", json!("long")),
            int_map(108, "column_sizes", 117, 118, "long"),
            int_map(109, "value_counts", 119, 120, "long"),
            int_map(110, "null_value_counts", 121, 122, "long"),
            int_map(137, "nan_value_counts", 138, 139, "long"),
            int_map(125, "lower_bounds", 126, 127, "bytes"),
            int_map(128, "upper_bounds", 129, 130, "bytes"),
            optional(131, "key_metadata", json!("bytes")),
            list(132, "split_offsets", 133, "long"),
            list(135, "equality_ids", 136, "int"),
            optional(140, "sort_order_id", json!("int")),
        ],
    })
}

/// The schema of a v2 manifest's entries.
pub(super) fn manifest_entry_schema() -> Result<Schema> {
    parse(json!({
        "type": "record",
        "name": "manifest_entry",
        "fields": [
            required(0, "status", json!("int")),
            optional(1, "snapshot_id", json!("long")),
            optional(3, "sequence_number", json!("long")),
            optional(4, "file_sequence_number", json!("long")),
            required(2, "data_file", data_file()),
        ],
    }))
}

/// The schema of a v2 manifest list's records, one per manifest.
pub(super) fn manifest_file_schema() -> Result<Schema> {
    let field_summary = json!({
        "type": "record",
        "name": "r508",
        "fields": [
            required(509, "contains_null", json!("boolean")),
            optional(518, "contains_nan", json!("boolean")),
            optional(510, "lower_bound", json!("bytes")),
            optional(511, "upper_bound", json!("bytes")),
        ],
    });
    parse(json!({
        "type": "record",
        "name": "manifest_file",
        "fields": [
            required(500, "manifest_path", json!("string")),
            required(501, "manifest_length", json!("long")),
            required(502, "partition_spec_id", json!("int")),
            required(517, "content", json!("int")),
            required(515, "sequence_number", json!("long")),
            required(516, "min_sequence_number", json!("long")),
            required(503, "added_snapshot_id", json!("long")),
            required(504, "added_files_count", json!("int")),
            required(505, "existing_files_count", json!("int")),
            required(506, "deleted_files_count", json!("int")),
            required(512, "added_rows_count", json!("long")),
            required(513, "existing_rows_count", json!("long")),
            required(514, "deleted_rows_count", json!("long")),
            optional(507, "partitions", json!({
                "type": "array", "element-id": 508, "items": field_summary,
            })),
            optional(519, "key_metadata", json!("bytes")),
        ],
    }))
}

fn parse(schema: Value) -> Result<Schema> {
    // The schemas are fixed above, so failing here is a bug, reported rather than panicking.
    Schema::parse(&schema).map_err(|e| StorageError::Location {
        location: "the Avro schema of Iceberg manifests".into(),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iceberg_avro_schemas_parse_and_keep_field_ids() {
        let entry = manifest_entry_schema().unwrap();
        let text = serde_json::to_string(&entry).unwrap();
        for needle in [
            "\"field-id\":0",
            "\"field-id\":134",
            "\"field-id\":126",
            "\"logicalType\":\"map\"",
            "\"element-id\":133",
        ] {
            assert!(text.contains(needle), "{needle} in {text}");
        }
        let list = manifest_file_schema().unwrap();
        let text = serde_json::to_string(&list).unwrap();
        assert!(text.contains("\"field-id\":517"), "{text}");
        assert!(text.contains("\"element-id\":508"), "{text}");
    }
}
