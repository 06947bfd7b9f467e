//! Versions written then read back through the module's own readers.

use std::collections::BTreeMap;

use super::*;
use crate::error::StorageError;

const LOCATION: &str = "s3://bucket/lake/tables/t";

fn schema() -> Vec<IcebergField> {
    vec![
        IcebergField {
            id: 1,
            name: "id".into(),
            required: true,
            field_type: IcebergType::Long,
        },
        IcebergField {
            id: 2,
            name: "name".into(),
            required: false,
            field_type: IcebergType::String,
        },
    ]
}

fn data_file(name: &str, rows: u64) -> IcebergDataFile {
    IcebergDataFile {
        path: format!("{LOCATION}/data/{name}.parquet"),
        size_bytes: 1000 + rows,
        record_count: rows,
        null_counts: vec![(1, 0), (2, 1)],
        lower_bounds: vec![
            (1, IcebergValue::Long(1)),
            (2, IcebergValue::String("a".into())),
        ],
        upper_bounds: vec![
            (1, IcebergValue::Long(9)),
            (2, IcebergValue::String("z".into())),
        ],
    }
}

fn input<'a>(
    version: u64,
    previous: Option<&'a IcebergTableMetadata>,
    previous_files: &'a [String],
    files: &'a [IcebergDataFile],
) -> IcebergVersionInput<'a> {
    IcebergVersionInput {
        version,
        previous,
        previous_files,
        table_uuid: "9c12f0a4-1b5e-4c1f-8f5e-2d7a1c3e4b60".into(),
        location: format!("{LOCATION}/"),
        schema: schema(),
        last_column_id: 2,
        files,
        summary: BTreeMap::from([("pondra.commit".to_string(), version.to_string())]),
        properties: BTreeMap::from([("owner".to_string(), "pondra".to_string())]),
        timestamp_ms: 1_700_000_000_000 + version,
        snapshot_id: 100 + version as i64,
    }
}

/// The version's metadata parsed, and the entries of its current snapshot's manifests.
fn read_back(version: &IcebergVersion) -> (IcebergTableMetadata, Vec<IcebergManifestEntry>) {
    let metadata = parse_iceberg_metadata(&version.metadata.bytes, "v.json").unwrap();
    let object = |uri: &str| {
        let relative = uri.strip_prefix(&format!("{LOCATION}/")).unwrap();
        let found = version.manifests.iter().find(|o| o.path == relative);
        found.unwrap().bytes.clone()
    };
    let list = metadata.manifest_list.clone().unwrap();
    let mut entries = Vec::new();
    for manifest in parse_manifest_list(&object(&list), &list).unwrap() {
        assert_eq!(manifest.content, 0);
        entries.extend(parse_manifest(&object(&manifest.path), &manifest.path).unwrap());
    }
    (metadata, entries)
}

#[test]
fn first_iceberg_version_reads_back() {
    let files = [data_file("a", 3), data_file("b", 4)];
    let version = iceberg_version(&input(1, None, &[], &files)).unwrap();
    assert_eq!(version.metadata.path, "metadata/v1.metadata.json");
    assert_eq!(&version.version_hint.bytes[..], b"1");
    let (metadata, entries) = read_back(&version);
    assert_eq!(metadata.format_version, 2);
    assert_eq!(metadata.location, LOCATION);
    assert_eq!(metadata.current_snapshot_id, Some(101));
    assert_eq!(metadata.schema, schema());
    assert_eq!(metadata.last_sequence_number, 1);
    assert_eq!(metadata.properties["owner"], "pondra");
    let list = metadata.manifest_list.as_deref().unwrap();
    assert!(
        list.starts_with(&format!("{LOCATION}/metadata/snap-101-")),
        "{list}"
    );
    let paths: Vec<_> = entries.iter().map(|e| e.file_path.as_str()).collect();
    assert_eq!(paths, [files[0].path.as_str(), files[1].path.as_str()]);
    assert!(entries.iter().all(|e| e.status == 1 && e.content == 0));
    assert_eq!(entries[1].record_count, 4);
    assert_eq!(entries[1].file_format, "PARQUET");
    let summary = &metadata.raw["snapshots"][0]["summary"];
    assert_eq!(summary["operation"], "append");
    assert_eq!(summary["total-records"], "7");
    assert_eq!(summary["pondra.commit"], "1");
}

#[test]
fn second_iceberg_version_keeps_the_first_snapshot() {
    let first_files = [data_file("a", 3), data_file("b", 4)];
    let first = iceberg_version(&input(1, None, &[], &first_files)).unwrap();
    let (first_metadata, _) = read_back(&first);
    let previous_files: Vec<String> = first_files.iter().map(|f| f.path.clone()).collect();
    let files = [data_file("b", 4), data_file("c", 5)];
    let second = iceberg_version(&input(2, Some(&first_metadata), &previous_files, &files));
    let (metadata, entries) = read_back(&second.unwrap());
    let statuses: Vec<_> = entries
        .iter()
        .map(|e| (e.file_path.as_str(), e.status))
        .collect();
    assert_eq!(
        statuses,
        [
            (files[0].path.as_str(), 0),
            (files[1].path.as_str(), 1),
            (first_files[0].path.as_str(), 2)
        ]
    );
    let ids: Vec<_> = metadata.snapshots.iter().map(|s| s.snapshot_id).collect();
    assert_eq!(ids, [101, 102]);
    assert_eq!(metadata.snapshots[1].parent_snapshot_id, Some(101));
    assert_eq!(metadata.snapshots[1].sequence_number, 2);
    // The first snapshot still names its own manifest list, which is never rewritten.
    assert_eq!(
        metadata.snapshots[0].manifest_list,
        first_metadata.manifest_list.unwrap()
    );
    assert_eq!(metadata.current_schema_id, 0);
    assert_eq!(metadata.raw["schemas"].as_array().unwrap().len(), 1);
    let log = &metadata.raw["metadata-log"][0]["metadata-file"];
    assert_eq!(
        log.as_str().unwrap(),
        format!("{LOCATION}/metadata/v1.metadata.json")
    );
    assert_eq!(metadata.raw["snapshot-log"].as_array().unwrap().len(), 2);
    let summary = &metadata.raw["snapshots"][1]["summary"];
    assert_eq!(summary["operation"], "overwrite");
    assert_eq!(summary["deleted-data-files"], "1");
    assert_eq!(summary["total-records"], "9");
}

#[test]
fn a_changed_iceberg_schema_gets_a_new_id() {
    let first = iceberg_version(&input(1, None, &[], &[])).unwrap();
    let (first_metadata, entries) = read_back(&first);
    assert!(entries.is_empty());
    assert_eq!(
        first.manifests.len(),
        1,
        "an empty snapshot has only its manifest list"
    );
    let mut next = input(2, Some(&first_metadata), &[], &[]);
    next.schema.push(IcebergField {
        id: 3,
        name: "price".into(),
        required: false,
        field_type: IcebergType::Decimal {
            precision: 12,
            scale: 2,
        },
    });
    let (metadata, _) = read_back(&iceberg_version(&next).unwrap());
    assert_eq!(metadata.current_schema_id, 1);
    assert_eq!(metadata.last_column_id, 3);
    assert_eq!(metadata.schema.len(), 3);
    assert_eq!(metadata.raw["schemas"].as_array().unwrap().len(), 2);
}

#[test]
fn inconsistent_iceberg_inputs_are_refused() {
    let files = [data_file("a", 1)];
    let first = iceberg_version(&input(1, None, &[], &files)).unwrap();
    let (previous, _) = read_back(&first);
    let mut other_table = input(2, Some(&previous), &[], &files);
    other_table.table_uuid = "another".into();
    let mut reused_id = input(2, Some(&previous), &[], &files);
    reused_id.snapshot_id = 101;
    let twice = [data_file("a", 1), data_file("a", 1)];
    let orphans = [files[0].path.clone()];
    for bad in [
        other_table,
        reused_id,
        input(1, Some(&previous), &[], &files),
        input(1, None, &[], &twice),
        input(1, None, &orphans, &files),
        input(0, None, &[], &files),
    ] {
        let error = iceberg_version(&bad).unwrap_err();
        assert!(matches!(error, StorageError::Location { .. }), "{error}");
    }
}

#[test]
fn malformed_iceberg_avro_is_an_error_not_a_panic() {
    let files = [data_file("a", 3), data_file("b", 4)];
    let version = iceberg_version(&input(1, None, &[], &files)).unwrap();
    let manifest = &version.manifests[0].bytes;
    let list = &version.manifests[1].bytes;
    for bytes in [manifest, list] {
        for cut in 0..bytes.len() {
            let _ = parse_manifest(&bytes[..cut], "cut");
            let _ = parse_manifest_list(&bytes[..cut], "cut");
        }
        for flip in 0..bytes.len() {
            let mut flipped = bytes.to_vec();
            flipped[flip] ^= 0x5A;
            let _ = parse_manifest(&flipped, "flipped");
            let _ = parse_manifest_list(&flipped, "flipped");
        }
    }
    assert!(parse_manifest(b"not avro", "x").is_err());
    // A manifest list is not a manifest: its records lack the entry fields.
    assert!(parse_manifest(list, "list").is_err());
    assert!(parse_manifest_list(manifest, "manifest").is_err());
}

/// An Avro file of `records` under `schema` (JSON), as another engine could write it.
fn avro_file(schema: serde_json::Value, records: Vec<apache_avro::types::Record>) -> Vec<u8> {
    let schema = apache_avro::Schema::parse(&schema).unwrap();
    let mut writer = apache_avro::Writer::new(&schema, Vec::new());
    for record in records {
        writer.append(record).unwrap();
    }
    writer.into_inner().unwrap()
}

#[test]
fn iceberg_delete_files_are_reported_by_their_content() {
    let long = |name: &str| serde_json::json!({ "name": name, "type": "long" });
    let int = |name: &str| serde_json::json!({ "name": name, "type": "int" });
    let list_schema = serde_json::json!({ "type": "record", "name": "manifest_file", "fields": [
        { "name": "manifest_path", "type": "string" }, long("manifest_length"),
        int("partition_spec_id"), int("content"), long("sequence_number"),
        long("added_snapshot_id"), { "name": "extra", "type": ["null", "string"] },
    ]});
    let schema = apache_avro::Schema::parse(&list_schema).unwrap();
    let mut record = apache_avro::types::Record::new(&schema).unwrap();
    record.put("manifest_path", "s3://b/t/metadata/d-m0.avro");
    record.put("manifest_length", 10i64);
    record.put("partition_spec_id", 0i32);
    record.put("content", 1i32);
    record.put("sequence_number", 7i64);
    record.put("added_snapshot_id", 5i64);
    record.put(
        "extra",
        apache_avro::types::Value::Union(0, Box::new(apache_avro::types::Value::Null)),
    );
    let list = parse_manifest_list(&avro_file(list_schema.clone(), vec![record]), "l").unwrap();
    assert_eq!((list[0].content, list[0].sequence_number), (1, 7));

    let entry_schema = serde_json::json!({ "type": "record", "name": "manifest_entry", "fields": [
        int("status"), { "name": "data_file", "type": { "type": "record", "name": "r2", "fields": [
            int("content"), { "name": "file_path", "type": "string" },
            { "name": "file_format", "type": "string" }, long("record_count"),
            long("file_size_in_bytes"),
        ]}},
    ]});
    let schema = apache_avro::Schema::parse(&entry_schema).unwrap();
    let mut record = apache_avro::types::Record::new(&schema).unwrap();
    record.put("status", 1i32);
    let file = apache_avro::types::Value::Record(vec![
        ("content".into(), 2i32.into()),
        ("file_path".into(), "s3://b/t/data/eq.parquet".into()),
        ("file_format".into(), "PARQUET".into()),
        ("record_count".into(), 3i64.into()),
        ("file_size_in_bytes".into(), 99i64.into()),
    ]);
    record.put("data_file", file);
    let entries = parse_manifest(&avro_file(entry_schema, vec![record]), "m").unwrap();
    assert_eq!((entries[0].content, entries[0].record_count), (2, 3));
}
