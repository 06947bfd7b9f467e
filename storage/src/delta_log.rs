//! Reading another engine's Delta Lake table (ADR 0058): the data files of its newest version,
//! from the commits of its `_delta_log` (newline-delimited JSON actions, `add` and `remove`
//! replayed in version order). What this reader does not follow yet (partition columns,
//! deletion vectors, a log that starts at a checkpoint, column mapping) is refused by name
//! rather than read wrong.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{Result, StorageError};

/// The newest version of a Delta table and the data files it holds, in the order they were
/// added.
#[derive(Debug, PartialEq, Eq)]
pub struct DeltaFiles {
    pub version: u64,
    pub files: Vec<PathBuf>,
}

/// The data files of the newest version of the Delta table in `folder`.
pub fn delta_table_files(folder: &Path) -> Result<DeltaFiles> {
    let log = folder.join("_delta_log");
    let entries = std::fs::read_dir(&log).map_err(|e| StorageError::Location {
        location: folder.display().to_string(),
        message: format!("not a Delta table (no readable _delta_log: {e})"),
    })?;
    let mut commits: BTreeMap<u64, PathBuf> = BTreeMap::new();
    for entry in entries {
        let path = entry
            .map_err(|e| StorageError::Location {
                location: log.display().to_string(),
                message: e.to_string(),
            })?
            .path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let version = name
            .strip_suffix(".json")
            .and_then(|v| v.parse::<u64>().ok());
        if let Some(version) = version {
            commits.insert(version, path);
        }
    }
    let newest = *commits
        .keys()
        .next_back()
        .ok_or_else(|| StorageError::Location {
            location: folder.display().to_string(),
            message: "the Delta log holds no commit".into(),
        })?;
    if commits.len() as u64 != newest + 1 {
        return Err(StorageError::Unsupported(format!(
            "reading a Delta table whose log starts at a checkpoint ({})",
            folder.display()
        )));
    }
    let mut files: Vec<String> = Vec::new();
    for (version, path) in &commits {
        let text = std::fs::read_to_string(path).map_err(|e| StorageError::Location {
            location: path.display().to_string(),
            message: e.to_string(),
        })?;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let action: Value = serde_json::from_str(line).map_err(|e| StorageError::Location {
                location: path.display().to_string(),
                message: format!("version {version} holds a malformed action: {e}"),
            })?;
            apply(&action, &mut files, folder)?;
        }
    }
    Ok(DeltaFiles {
        version: newest,
        files: files.into_iter().map(|f| folder.join(f)).collect(),
    })
}

/// One action of a Delta commit applied to the data files held so far.
fn apply(action: &Value, files: &mut Vec<String>, folder: &Path) -> Result<()> {
    let unsupported = |what: &str| {
        Err(StorageError::Unsupported(format!(
            "reading a Delta table with {what} ({})",
            folder.display()
        )))
    };
    if let Some(metadata) = action.get("metaData") {
        let partitioned = metadata
            .get("partitionColumns")
            .and_then(Value::as_array)
            .is_some_and(|p| !p.is_empty());
        if partitioned {
            return unsupported("partition columns");
        }
        let mode = metadata
            .pointer("/configuration/delta.columnMapping.mode")
            .and_then(Value::as_str);
        if mode.is_some_and(|m| m != "none") {
            return unsupported("column mapping");
        }
    }
    if let Some(add) = action.get("add") {
        if add.get("deletionVector").is_some_and(|d| !d.is_null()) {
            return unsupported("deletion vectors");
        }
        let path = file_path(add)?;
        if !files.contains(&path) {
            files.push(path);
        }
    }
    if let Some(remove) = action.get("remove") {
        let path = file_path(remove)?;
        files.retain(|f| *f != path);
    }
    Ok(())
}

/// The relative path of an `add` or `remove`, percent-decoded as the protocol writes it.
fn file_path(action: &Value) -> Result<String> {
    let path = action
        .get("path")
        .and_then(Value::as_str)
        .ok_or_else(|| StorageError::Unsupported("a Delta file action without a path".into()))?;
    if path.contains("://") || path.starts_with('/') {
        return Err(StorageError::Unsupported(format!(
            "a Delta data file outside its table's folder ({path})"
        )));
    }
    let decoded = url::form_urlencoded::parse(format!("p={}", path.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_else(|| path.to_string());
    Ok(decoded)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_log(folder: &Path, versions: &[&str]) {
        std::fs::create_dir_all(folder.join("_delta_log")).unwrap();
        for (version, text) in versions.iter().enumerate() {
            let name = format!("_delta_log/{version:020}.json");
            std::fs::write(folder.join(name), text).unwrap();
        }
    }

    #[test]
    fn adds_and_removes_replay_to_the_newest_files() {
        let dir = tempfile::tempdir().unwrap();
        write_log(
            dir.path(),
            &[
                "{\"protocol\":{\"minReaderVersion\":1,\"minWriterVersion\":2}}\n\
                 {\"metaData\":{\"partitionColumns\":[],\"configuration\":{}}}\n\
                 {\"add\":{\"path\":\"a.parquet\"}}\n{\"add\":{\"path\":\"b%20c.parquet\"}}\n",
                "{\"remove\":{\"path\":\"a.parquet\"}}\n{\"add\":{\"path\":\"d.parquet\"}}\n",
            ],
        );
        let found = delta_table_files(dir.path()).unwrap();
        assert_eq!(found.version, 1);
        let names: Vec<_> = found.files.iter().map(|f| f.file_name().unwrap()).collect();
        assert_eq!(names, ["b c.parquet", "d.parquet"]);
    }

    #[test]
    fn what_the_reader_does_not_follow_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        write_log(
            dir.path(),
            &["{\"metaData\":{\"partitionColumns\":[\"day\"],\"configuration\":{}}}\n"],
        );
        let error = delta_table_files(dir.path()).unwrap_err().to_string();
        assert!(error.contains("partition columns"), "{error}");
        let vectors = tempfile::tempdir().unwrap();
        write_log(
            vectors.path(),
            &["{\"add\":{\"path\":\"a.parquet\",\"deletionVector\":{\"storageType\":\"i\"}}}\n"],
        );
        let error = delta_table_files(vectors.path()).unwrap_err().to_string();
        assert!(error.contains("deletion vectors"), "{error}");
        let missing = tempfile::tempdir().unwrap();
        let error = delta_table_files(missing.path()).unwrap_err().to_string();
        assert!(error.contains("not a Delta table"), "{error}");
    }
}
