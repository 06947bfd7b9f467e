//! Reading manifest lists and manifests (Avro) written by any Iceberg engine: the fields a
//! scan needs, looked up by their spec names; extra fields, partition tuples and the
//! statistics are left unread. Format version 1 files, which lack `content` and sequence
//! numbers, read with the spec's defaults (data, 0).

use apache_avro::Reader;
use apache_avro::types::Value as AvroValue;

use super::metadata::malformed;
use crate::error::Result;

/// One manifest a manifest list names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IcebergManifestRef {
    /// Absolute URI of the manifest.
    pub path: String,
    pub length: i64,
    pub partition_spec_id: i32,
    /// 0 for data files, 1 for delete files (which a reader that does not apply them must
    /// refuse rather than return deleted rows).
    pub content: i32,
    pub sequence_number: i64,
    pub added_snapshot_id: i64,
}

/// The manifests of the manifest list `bytes` read from `source` (named in errors).
pub fn parse_manifest_list(bytes: &[u8], source: &str) -> Result<Vec<IcebergManifestRef>> {
    let mut manifests = Vec::new();
    for fields in avro_records(bytes, source)? {
        let record = Record {
            fields: &fields,
            source,
        };
        manifests.push(IcebergManifestRef {
            path: record.string("manifest_path")?,
            length: record.long("manifest_length")?,
            partition_spec_id: record.int("partition_spec_id")?,
            content: record.optional_int("content")?.unwrap_or(0),
            sequence_number: record.optional_long("sequence_number")?.unwrap_or(0),
            added_snapshot_id: record.long("added_snapshot_id")?,
        });
    }
    Ok(manifests)
}

/// One entry of a manifest: a file added, kept or deleted by a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IcebergManifestEntry {
    /// 0 existing, 1 added, 2 deleted: a snapshot's live files are those not deleted.
    pub status: i32,
    /// 0 data, 1 position deletes, 2 equality deletes.
    pub content: i32,
    /// Absolute URI of the file.
    pub file_path: String,
    /// `PARQUET`, `AVRO` or `ORC` (as written; the spec does not fix the case).
    pub file_format: String,
    pub record_count: i64,
    pub file_size_in_bytes: i64,
}

/// The entries of the manifest `bytes` read from `source` (named in errors).
pub fn parse_manifest(bytes: &[u8], source: &str) -> Result<Vec<IcebergManifestEntry>> {
    let mut entries = Vec::new();
    for fields in avro_records(bytes, source)? {
        let entry = Record {
            fields: &fields,
            source,
        };
        let file = entry.record("data_file")?;
        entries.push(IcebergManifestEntry {
            status: entry.int("status")?,
            content: file.optional_int("content")?.unwrap_or(0),
            file_path: file.string("file_path")?,
            file_format: file.string("file_format")?,
            record_count: file.long("record_count")?,
            file_size_in_bytes: file.long("file_size_in_bytes")?,
        });
    }
    Ok(entries)
}

/// The records of an Avro object container file, each as its fields.
fn avro_records(bytes: &[u8], source: &str) -> Result<Vec<Vec<(String, AvroValue)>>> {
    // apache-avro can panic on malformed input (an invalid name in the header's schema, a
    // corrupt zstd block): another engine's or a damaged file is an error, never a crash.
    std::panic::catch_unwind(|| decode_avro_records(bytes, source))
        .unwrap_or_else(|_| Err(malformed(source, "malformed Avro (the Avro reader failed)")))
}

fn decode_avro_records(bytes: &[u8], source: &str) -> Result<Vec<Vec<(String, AvroValue)>>> {
    let reader =
        Reader::new(bytes).map_err(|e| malformed(source, format!("not an Avro file: {e}")))?;
    let mut records = Vec::new();
    for value in reader {
        match value.map_err(|e| malformed(source, format!("malformed Avro: {e}")))? {
            AvroValue::Record(fields) => records.push(fields),
            _ => {
                return Err(malformed(
                    source,
                    "an Avro file of other values than records",
                ));
            }
        }
    }
    Ok(records)
}

/// One Avro record's fields, with typed look-ups that name the file in errors.
struct Record<'a> {
    fields: &'a [(String, AvroValue)],
    source: &'a str,
}

impl<'a> Record<'a> {
    /// The field `name`, None when absent or null; optional fields are unions with null.
    fn get(&self, name: &str) -> Option<&'a AvroValue> {
        let (_, value) = self.fields.iter().find(|(n, _)| n == name)?;
        let value = match value {
            AvroValue::Union(_, inner) => inner.as_ref(),
            value => value,
        };
        (!matches!(value, AvroValue::Null)).then_some(value)
    }

    fn optional_long(&self, name: &str) -> Result<Option<i64>> {
        match self.get(name) {
            None => Ok(None),
            Some(AvroValue::Long(v)) => Ok(Some(*v)),
            Some(AvroValue::Int(v)) => Ok(Some((*v).into())),
            Some(other) => Err(malformed(
                self.source,
                format!("{name} is not an integer: {other:?}"),
            )),
        }
    }

    fn optional_int(&self, name: &str) -> Result<Option<i32>> {
        let Some(value) = self.optional_long(name)? else {
            return Ok(None);
        };
        let int = i32::try_from(value)
            .map_err(|_| malformed(self.source, format!("{name} {value} is out of range")))?;
        Ok(Some(int))
    }

    fn long(&self, name: &str) -> Result<i64> {
        self.optional_long(name)?.ok_or_else(|| self.missing(name))
    }

    fn int(&self, name: &str) -> Result<i32> {
        self.optional_int(name)?.ok_or_else(|| self.missing(name))
    }

    fn string(&self, name: &str) -> Result<String> {
        match self.get(name) {
            Some(AvroValue::String(s)) => Ok(s.clone()),
            _ => Err(self.missing(name)),
        }
    }

    fn record(&self, name: &str) -> Result<Record<'a>> {
        match self.get(name) {
            Some(AvroValue::Record(fields)) => Ok(Record {
                fields,
                source: self.source,
            }),
            _ => Err(self.missing(name)),
        }
    }

    fn missing(&self, name: &str) -> crate::error::StorageError {
        malformed(self.source, format!("{name} is missing or of another type"))
    }
}
