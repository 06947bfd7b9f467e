//! Reading another engine's Iceberg table (`iceberg_scan`, ADR 0058): the data files of its
//! current snapshot, from its newest metadata file, manifest list and manifests, in a folder
//! or at a URL alike. What this reader does not follow yet (delete files, other file formats
//! than Parquet) is refused by name rather than read wrong.

use super::{newest_metadata_file, parse_iceberg_metadata, parse_manifest, parse_manifest_list};
use crate::error::{Result, StorageError};
use crate::file_source::FileSource;

/// The current snapshot of an Iceberg table and the data files it holds.
#[derive(Debug)]
pub struct IcebergFiles {
    pub snapshot_id: Option<i64>,
    pub files: Vec<FileSource>,
}

/// The data files of the current snapshot of the Iceberg table whose metadata file is
/// `location`, or whose folder it is (its newest `metadata/*.metadata.json`); a path or a URL.
pub fn iceberg_table_files(location: &str) -> Result<IcebergFiles> {
    let location = location.trim_end_matches('/');
    let metadata_file = match location.ends_with(".metadata.json") {
        true => named(location)?,
        false => newest_in(location)?,
    };
    let source = metadata_file.name();
    let metadata = parse_iceberg_metadata(&metadata_file.read_all()?, &source)?;
    let mut files = Vec::new();
    let Some(list) = &metadata.manifest_list else {
        return Ok(IcebergFiles {
            snapshot_id: None,
            files,
        });
    };
    for manifest in parse_manifest_list(&named(list)?.read_all()?, list)? {
        if manifest.content != 0 {
            return Err(delete_files(location));
        }
        let entries = parse_manifest(&named(&manifest.path)?.read_all()?, &manifest.path)?;
        for entry in entries.into_iter().filter(|e| e.status != 2) {
            if entry.content != 0 {
                return Err(delete_files(location));
            }
            if !entry.file_format.eq_ignore_ascii_case("parquet") {
                return Err(StorageError::Unsupported(format!(
                    "reading an Iceberg table with {} data files ({location})",
                    entry.file_format
                )));
            }
            files.push(named(&entry.file_path)?);
        }
    }
    Ok(IcebergFiles {
        snapshot_id: metadata.current_snapshot_id,
        files,
    })
}

fn delete_files(location: &str) -> StorageError {
    StorageError::Unsupported(format!(
        "reading an Iceberg table with delete files ({location})"
    ))
}

/// The newest metadata file of the table in the folder at `location`.
fn newest_in(location: &str) -> Result<FileSource> {
    let not_a_table = |message: String| StorageError::Location {
        location: location.to_string(),
        message,
    };
    let listed = match FileSource::resolve(&format!("{location}/metadata/*.metadata.json")) {
        Ok(listed) => listed,
        Err(StorageError::NoFileMatches(_)) => Vec::new(),
        Err(e) => return Err(not_a_table(format!("not an Iceberg table ({e})"))),
    };
    let names: Vec<String> = listed.iter().map(FileSource::name).collect();
    let newest = newest_metadata_file(&names)
        .ok_or_else(|| not_a_table("not an Iceberg table (no metadata file)".into()))?;
    let index = names
        .iter()
        .position(|n| *n == newest)
        .expect("a listed name");
    Ok(listed.into_iter().nth(index).expect("a listed file"))
}

/// The one file a path or URL names (`file:` URLs as paths).
fn named(name: &str) -> Result<FileSource> {
    let path = match name.strip_prefix("file:") {
        Some(rest) if !rest.starts_with("//") => rest,
        _ => name,
    };
    let mut found = FileSource::resolve(path)?;
    Ok(found.swap_remove(0))
}
