//! One new version of a table Pondra publishes as Iceberg v2: the manifest, manifest list,
//! `v<N>.metadata.json` and `version-hint.text` that make a snapshot of the caller's live
//! files. Pure: the caller reads the previous metadata, writes the objects returned, and
//! decides which files a version holds.
//!
//! Each version writes one manifest listing every live file (ADDED when new, EXISTING when
//! kept) and a DELETED entry per file gone since the previous version; old manifests are
//! never rewritten, so every earlier snapshot still reads as it was. Iceberg wants EXISTING
//! and DELETED entries to carry the data sequence number the file was added with, which
//! only the previous manifests know; this writer dates them to the previous snapshot (its
//! id and sequence number) instead, an upper bound of the true one. That is harmless
//! because sequence numbers only order data files against delete files, and Pondra writes
//! none.

use std::collections::{BTreeMap, HashSet};

use bytes::Bytes;

use super::manifest_write::{
    EntryStatus, EntryToWrite, ManifestToList, to_long, write_manifest, write_manifest_list,
};
use super::metadata::{IcebergSnapshot, IcebergTableMetadata, malformed};
use super::metadata_write::{NewSnapshot, check_input, next_metadata, schema_id_for};
use super::types::{IcebergField, IcebergValue, schema_json};
use crate::error::Result;

/// A Parquet data file of a snapshot, with the statistics its manifest entry carries.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IcebergDataFile {
    /// Absolute URI as written into the manifest, e.g. `s3://b/p/data/t/abc.parquet`.
    pub path: String,
    pub size_bytes: u64,
    pub record_count: u64,
    /// Nulls per field id.
    pub null_counts: Vec<(i32, u64)>,
    pub lower_bounds: Vec<(i32, IcebergValue)>,
    pub upper_bounds: Vec<(i32, IcebergValue)>,
}

/// What a new version is made of.
pub struct IcebergVersionInput<'a> {
    /// N of the `v<N>.metadata.json` to write: 1 for the first.
    pub version: u64,
    /// The previous version's parsed metadata (`v<N-1>.metadata.json`), whose schemas,
    /// snapshots and logs the new one keeps; None for the first.
    pub previous: Option<&'a IcebergTableMetadata>,
    /// The paths live in the previous snapshot: those still in `files` become EXISTING
    /// entries, the others DELETED ones.
    pub previous_files: &'a [String],
    pub table_uuid: String,
    /// The table's location URI: the folder holding `metadata/`.
    pub location: String,
    /// The current schema; a new schema id is added only when it differs from the previous
    /// current schema.
    pub schema: Vec<IcebergField>,
    pub last_column_id: i32,
    /// The whole live file set of the new snapshot.
    pub files: &'a [IcebergDataFile],
    /// Extra snapshot summary entries (e.g. `pondra.commit`).
    pub summary: BTreeMap<String, String>,
    /// Table properties (e.g. `schema.name-mapping.default`).
    pub properties: BTreeMap<String, String>,
    pub timestamp_ms: u64,
    /// Caller-chosen, positive and unique in the table.
    pub snapshot_id: i64,
}

/// An object to write, at `path` relative to the table's location.
#[derive(Debug, Clone, PartialEq)]
pub struct IcebergObject {
    pub path: String,
    pub bytes: Bytes,
}

/// The objects of a new version, in the order to write them.
#[derive(Debug, Clone, PartialEq)]
pub struct IcebergVersion {
    /// The manifest (when the snapshot has entries) and the manifest list: write first.
    pub manifests: Vec<IcebergObject>,
    /// `metadata/v<N>.metadata.json`: write last, create-if-absent, as the commit.
    pub metadata: IcebergObject,
    /// `metadata/version-hint.text` holding N, for readers that do not list folders.
    pub version_hint: IcebergObject,
}

/// The objects that publish `input` as the next version of its table.
pub fn iceberg_version(input: &IcebergVersionInput) -> Result<IcebergVersion> {
    let location = input.location.trim_end_matches('/');
    let metadata_path = format!("metadata/v{}.metadata.json", input.version);
    check_input(input, &metadata_path)?;
    let changes = FileChanges::new(input, &format!("{location}/{metadata_path}"))?;
    let previous = input.previous;
    let parent_snapshot = previous.and_then(|p| {
        let current = p.current_snapshot_id?;
        p.snapshots.iter().find(|s| s.snapshot_id == current)
    });
    let previous_sequence = parent_snapshot.map_or(0, |s| s.sequence_number);
    let sequence_number = previous
        .map_or(0, |p| p.last_sequence_number)
        .saturating_add(1);
    let schema_id = schema_id_for(input);
    let schema = schema_json(schema_id, &input.schema);

    let mut manifests = Vec::new();
    let mut listed = Vec::new();
    let entries = changes.entries(input.snapshot_id, parent_snapshot);
    if !entries.is_empty() {
        let path = format!("metadata/{}-m0.avro", input.snapshot_id);
        let bytes = write_manifest(&entries, &schema, schema_id, &path)?;
        listed.push(changes.manifest_to_list(
            format!("{location}/{path}"),
            bytes.len() as u64,
            input.snapshot_id,
            sequence_number,
            previous_sequence,
        ));
        manifests.push(object(path, bytes));
    }
    let list_path = format!("metadata/snap-{}-1.avro", input.snapshot_id);
    let parent_id = parent_snapshot.map(|s| s.snapshot_id);
    let list = write_manifest_list(
        &listed,
        input.snapshot_id,
        parent_id,
        sequence_number,
        &list_path,
    )?;
    let snapshot = NewSnapshot {
        snapshot_id: input.snapshot_id,
        parent_snapshot_id: parent_id,
        sequence_number,
        manifest_list: format!("{location}/{list_path}"),
        summary: changes.summary(&input.summary, &list_path)?,
        schema_id,
    };
    manifests.push(object(list_path, list));
    let metadata = next_metadata(input, &snapshot, schema, &metadata_path)?;
    Ok(IcebergVersion {
        manifests,
        metadata: object(metadata_path, metadata.to_string().into_bytes()),
        version_hint: object(
            "metadata/version-hint.text".into(),
            input.version.to_string().into_bytes(),
        ),
    })
}

fn object(path: String, bytes: Vec<u8>) -> IcebergObject {
    IcebergObject {
        path,
        bytes: Bytes::from(bytes),
    }
}

/// The new snapshot's files against the previous one's.
struct FileChanges<'a> {
    /// The new snapshot's files, each with whether the previous snapshot held it too.
    live: Vec<(&'a IcebergDataFile, bool)>,
    /// Files of the previous snapshot gone from the new one: only their paths are known.
    removed: Vec<IcebergDataFile>,
}

impl<'a> FileChanges<'a> {
    fn new(input: &IcebergVersionInput<'a>, source: &str) -> Result<FileChanges<'a>> {
        let previous: HashSet<&str> = input.previous_files.iter().map(String::as_str).collect();
        let mut paths = HashSet::new();
        let mut live = Vec::with_capacity(input.files.len());
        for file in input.files {
            if !paths.insert(file.path.as_str()) {
                return Err(malformed(source, format!("{} is listed twice", file.path)));
            }
            live.push((file, previous.contains(file.path.as_str())));
        }
        let removed = input
            .previous_files
            .iter()
            .filter(|path| !paths.contains(path.as_str()))
            .map(|path| IcebergDataFile {
                path: path.clone(),
                ..IcebergDataFile::default()
            })
            .collect();
        Ok(FileChanges { live, removed })
    }

    /// The manifest entries: live files in the caller's order, then the removed ones (whose
    /// record counts and sizes read 0, being unknown here). Kept and removed files are dated
    /// to the parent snapshot (see the module's comment).
    fn entries(&self, snapshot_id: i64, parent: Option<&IcebergSnapshot>) -> Vec<EntryToWrite<'_>> {
        let parent_id = parent.map_or(snapshot_id, |p| p.snapshot_id);
        let parent_sequence = parent.map(|p| p.sequence_number);
        let live = self.live.iter().map(|(file, kept)| {
            if *kept {
                EntryToWrite {
                    status: EntryStatus::Existing,
                    snapshot_id: parent_id,
                    sequence_number: parent_sequence,
                    file,
                }
            } else {
                EntryToWrite {
                    status: EntryStatus::Added,
                    snapshot_id,
                    sequence_number: None,
                    file,
                }
            }
        });
        let removed = self.removed.iter().map(|file| EntryToWrite {
            status: EntryStatus::Deleted,
            snapshot_id,
            sequence_number: parent_sequence,
            file,
        });
        live.chain(removed).collect()
    }

    /// Files and rows of the added and kept files.
    fn counts(&self) -> ([u64; 2], [u64; 2], u64) {
        let (mut files, mut rows, mut size) = ([0; 2], [0; 2], 0);
        for (file, kept) in &self.live {
            let side = usize::from(*kept);
            files[side] += 1;
            rows[side] = file.record_count.saturating_add(rows[side]);
            size = file.size_bytes.saturating_add(size);
        }
        (files, rows, size)
    }

    fn manifest_to_list(
        &self,
        path: String,
        length: u64,
        snapshot_id: i64,
        sequence_number: i64,
        previous_sequence: i64,
    ) -> ManifestToList {
        let ([added, kept], [added_rows, kept_rows], _) = self.counts();
        let has_kept_files = kept > 0;
        ManifestToList {
            path,
            length,
            sequence_number,
            // The smallest data sequence number among its live entries.
            min_sequence_number: if has_kept_files {
                previous_sequence
            } else {
                sequence_number
            },
            added_snapshot_id: snapshot_id,
            files: [added, kept, self.removed.len() as u64],
            rows: [added_rows, kept_rows, 0],
        }
    }

    /// The snapshot summary: the caller's entries, then the operation and the counts
    /// Iceberg engines show.
    fn summary(
        &self,
        extra: &BTreeMap<String, String>,
        path: &str,
    ) -> Result<BTreeMap<String, String>> {
        let ([added, kept], [added_rows, kept_rows], size) = self.counts();
        let added_size = self
            .live
            .iter()
            .filter(|(_, kept)| !kept)
            .fold(0u64, |size, (file, _)| size.saturating_add(file.size_bytes));
        let removed = self.removed.len() as u64;
        let operation = match (added > 0, removed > 0) {
            (_, false) => "append",
            (true, true) => "overwrite",
            (false, true) => "delete",
        };
        let mut summary = extra.clone();
        let mut put = |key: &str, value: String| summary.insert(key.to_string(), value);
        put("operation", operation.into());
        if added > 0 {
            put("added-data-files", added.to_string());
            put("added-records", added_rows.to_string());
            put("added-files-size", added_size.to_string());
        }
        if removed > 0 {
            put("deleted-data-files", removed.to_string());
        }
        put("total-data-files", (added + kept).to_string());
        put(
            "total-records",
            to_long(added_rows.saturating_add(kept_rows), path)?.to_string(),
        );
        put("total-files-size", size.to_string());
        for zero in [
            "total-delete-files",
            "total-position-deletes",
            "total-equality-deletes",
        ] {
            put(zero, "0".into());
        }
        Ok(summary)
    }
}
