//! Reading a Delta Lake table (ADR 0058): the data files of its newest version, from the
//! commits of its `_delta_log` (newline-delimited JSON actions, `add` and `remove` replayed in
//! version order), in a folder or at a URL alike. What this reader does not follow yet
//! (partition columns, deletion vectors, a log that starts at a checkpoint, column mapping)
//! is refused by name rather than read wrong.

use serde_json::Value;

use crate::error::{Result, StorageError};
use crate::file_source::FileSource;

/// The newest version of a Delta table and the data files it holds, in the order they were
/// added.
#[derive(Debug)]
pub struct DeltaFiles {
    pub version: u64,
    pub files: Vec<FileSource>,
}

/// The data files of the newest version of the Delta table at `location` (a folder, a
/// `file://` or a bucket's URL).
pub fn delta_table_files(location: &str) -> Result<DeltaFiles> {
    let location = location.trim_end_matches('/');
    let not_a_table = |message: String| StorageError::Location {
        location: location.to_string(),
        message,
    };
    let pattern = format!("{location}/_delta_log/*.json");
    let listed = match FileSource::resolve(&pattern) {
        Ok(listed) => listed,
        Err(StorageError::NoFileMatches(_)) => Vec::new(),
        Err(e) => {
            return Err(not_a_table(format!(
                "not a Delta table (no readable _delta_log: {e})"
            )));
        }
    };
    let mut commits: Vec<(u64, FileSource)> = listed
        .into_iter()
        .filter_map(|source| {
            let name = source.name();
            let file = name.rsplit('/').next().unwrap_or("");
            let version = file.strip_suffix(".json")?.parse::<u64>().ok()?;
            Some((version, source))
        })
        .collect();
    commits.sort_by_key(|(version, _)| *version);
    let Some(newest) = commits.last().map(|(version, _)| *version) else {
        return Err(not_a_table(
            "not a Delta table (its _delta_log holds no commit)".into(),
        ));
    };
    if commits.len() as u64 != newest + 1 {
        return Err(StorageError::Unsupported(format!(
            "reading a Delta table whose log starts at a checkpoint ({location})"
        )));
    }
    let mut texts = Vec::with_capacity(commits.len());
    for (version, source) in &commits {
        let bytes = source.read_all()?;
        texts.push((*version, String::from_utf8_lossy(&bytes).into_owned()));
    }
    let log = replay_delta_log(&texts, location)?;
    let mut files = Vec::with_capacity(log.files.len());
    for file in &log.files {
        let named = format!("{location}/{file}");
        let mut found = FileSource::resolve(&named)?;
        files.push(found.swap_remove(0));
    }
    Ok(DeltaFiles {
        version: log.version,
        files,
    })
}

/// A Delta log replayed: its newest version, the data files that version holds (paths
/// relative to the table's folder, in the order they were added), and its newest `metaData`.
#[derive(Debug, Default, PartialEq)]
pub struct DeltaLog {
    pub version: u64,
    pub files: Vec<String>,
    pub metadata: Option<Value>,
}

/// Replays the commits of a Delta log, `(version, newline-delimited actions)` from version 0
/// in order, of the table at `location` (named in errors).
pub fn replay_delta_log(commits: &[(u64, String)], location: &str) -> Result<DeltaLog> {
    let mut log = DeltaLog::default();
    for (expected, (version, text)) in (0u64..).zip(commits) {
        if *version != expected {
            return Err(StorageError::Location {
                location: location.to_string(),
                message: format!("the Delta log misses version {expected}"),
            });
        }
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let action: Value = serde_json::from_str(line).map_err(|e| StorageError::Location {
                location: location.to_string(),
                message: format!("version {version} holds a malformed action: {e}"),
            })?;
            apply(&action, &mut log, location)?;
        }
        log.version = *version;
    }
    Ok(log)
}

/// One action of a Delta commit applied to the log replayed so far.
fn apply(action: &Value, log: &mut DeltaLog, location: &str) -> Result<()> {
    let unsupported = |what: &str| {
        Err(StorageError::Unsupported(format!(
            "reading a Delta table with {what} ({location})"
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
        log.metadata = Some(metadata.clone());
    }
    if let Some(add) = action.get("add") {
        if add.get("deletionVector").is_some_and(|d| !d.is_null()) {
            return unsupported("deletion vectors");
        }
        let path = file_path(add)?;
        if !log.files.contains(&path) {
            log.files.push(path);
        }
    }
    if let Some(remove) = action.get("remove") {
        let path = file_path(remove)?;
        log.files.retain(|f| *f != path);
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

    fn write_log(folder: &std::path::Path, versions: &[&str]) {
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
        for name in ["b c.parquet", "d.parquet"] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let found = delta_table_files(dir.path().to_str().unwrap()).unwrap();
        assert_eq!(found.version, 1);
        let names: Vec<_> = found.files.iter().map(|f| f.name()).collect();
        let names: Vec<_> = names
            .iter()
            .map(|n| n.rsplit('/').next().unwrap())
            .collect();
        assert_eq!(names, ["b c.parquet", "d.parquet"]);
    }

    #[test]
    fn what_the_reader_does_not_follow_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        write_log(
            dir.path(),
            &["{\"metaData\":{\"partitionColumns\":[\"day\"],\"configuration\":{}}}\n"],
        );
        let error = delta_table_files(dir.path().to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(error.contains("partition columns"), "{error}");
        let vectors = tempfile::tempdir().unwrap();
        write_log(
            vectors.path(),
            &["{\"add\":{\"path\":\"a.parquet\",\"deletionVector\":{\"storageType\":\"i\"}}}\n"],
        );
        let error = delta_table_files(vectors.path().to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(error.contains("deletion vectors"), "{error}");
        let missing = tempfile::tempdir().unwrap();
        let error = delta_table_files(missing.path().to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(error.contains("not a Delta table"), "{error}");
    }
}
