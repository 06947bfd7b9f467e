//! A published table's Delta log (ADR 0058): `data/<table>/_delta_log/%020d.json`, one
//! commit per change of the table's files, each written create-if-absent. Columns go by name
//! (no column mapping, which deltalake 1.6 does not read); the publisher rewrites files whose
//! names moved before it gets here. Every tenth version also gets a checkpoint.

use std::collections::BTreeSet;

use bytes::Bytes;
use pondra_catalog::{DataFile, Snapshot, SqlType, TableDef, TableFormat, now_ms};
use pondra_storage::{StorageError, replay_delta_log};
use serde_json::{Map, Value, json};

use crate::Result;
use crate::node::Node;
use crate::publishing::delta_checkpoint::CHECKPOINT_EVERY;
use crate::publishing::publish::{PublishedVersion, table_folder};

impl Node {
    /// Writes the next commit of `table`'s Delta log when its files or columns differ from
    /// the newest commit's.
    pub(crate) async fn publish_delta(&self, snapshot: &Snapshot, table: &TableDef) -> Result<()> {
        let folder = table_folder(table);
        let key = (table.id, TableFormat::Delta, folder.clone());
        let published = match self.published.get(&key) {
            Some(published) => published,
            None => self.read_delta_log(&folder).await?,
        };
        let files = snapshot.files(table.id);
        let current: BTreeSet<String> = files.iter().map(|f| f.path.clone()).collect();
        let columns = delta_schema(table);
        if published.holds(&current, &columns) {
            return Ok(());
        }
        let mut actions = Vec::new();
        actions.push(json!({"commitInfo": {
            "timestamp": now_ms(),
            "operation": "WRITE",
            "pondra.commit": snapshot.commit,
        }}));
        if published.version.is_none() || published.columns != columns {
            let ntz_before = published.columns.contains("timestamp_ntz");
            actions.push(protocol(table, ntz_before));
            actions.push(metadata(table, &columns));
        }
        for path in published.files.difference(&current) {
            actions.push(json!({"remove": {
                "path": relative_path(self, &folder, path),
                "deletionTimestamp": now_ms(),
                "dataChange": true,
            }}));
        }
        for file in files.iter().filter(|f| !published.files.contains(&f.path)) {
            actions.push(add(self, &folder, table, file));
        }
        let version = published.version.map_or(0, |v| v + 1);
        let mut text = String::new();
        for action in &actions {
            text.push_str(&action.to_string());
            text.push('\n');
        }
        let path = format!("{folder}/_delta_log/{version:020}.json");
        match self.lake.put_if_absent(&path, Bytes::from(text)).await {
            Ok(()) => {}
            // Another publisher wrote this version: read the log back next pass.
            Err(StorageError::AlreadyExists(_)) => {
                self.published.forget(&key);
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        }
        if version > 0 && version % CHECKPOINT_EVERY == 0 {
            let ntz_before = published.columns.contains("timestamp_ntz");
            let mut state = vec![protocol(table, ntz_before), metadata(table, &columns)];
            state.extend(files.iter().map(|f| add(self, &folder, table, f)));
            self.write_delta_checkpoint(&folder, version, &state)
                .await?;
        }
        let written = PublishedVersion {
            version: Some(version),
            files: current,
            columns,
        };
        self.published.set(key, written);
        Ok(())
    }

    /// The newest commit of the Delta log in `folder`, replayed from the lake.
    async fn read_delta_log(&self, folder: &str) -> Result<PublishedVersion> {
        let mut commits = Vec::new();
        for path in self.lake.list(&format!("{folder}/_delta_log/")).await? {
            let name = path.rsplit('/').next().unwrap_or("");
            if let Some(version) = name.strip_suffix(".json").and_then(|v| v.parse().ok()) {
                commits.push((version, path));
            }
        }
        if commits.is_empty() {
            return Ok(PublishedVersion::default());
        }
        commits.sort();
        let mut texts = Vec::with_capacity(commits.len());
        for (version, path) in commits {
            let bytes = self.lake.get(&path).await?;
            texts.push((version, String::from_utf8_lossy(&bytes).into_owned()));
        }
        let log = replay_delta_log(&texts, folder)?;
        let schema = log.metadata.as_ref().and_then(|m| m.get("schemaString"));
        Ok(PublishedVersion {
            version: Some(log.version),
            files: log.files.iter().map(|f| lake_path(folder, f)).collect(),
            columns: schema.and_then(Value::as_str).unwrap_or("").to_string(),
        })
    }
}

/// The path a Delta action names a data file by: relative to the table's folder when the file
/// is in it, the file's URL when it is not (a file written before the table was renamed).
fn relative_path(node: &Node, folder: &str, path: &str) -> String {
    match path.strip_prefix(folder).and_then(|p| p.strip_prefix('/')) {
        Some(relative) => relative.to_string(),
        None => node.lake.url_of(path),
    }
}

/// The lake path of a data file a Delta action names.
fn lake_path(folder: &str, path: &str) -> String {
    format!("{folder}/{path}")
}

/// The table's columns as Delta's `schemaString`.
fn delta_schema(table: &TableDef) -> String {
    let fields: Vec<Value> = table
        .columns
        .iter()
        .map(|c| {
            json!({
                "name": c.name,
                "type": delta_type(&c.sql_type),
                "nullable": !c.not_null,
                "metadata": {},
            })
        })
        .collect();
    json!({"type": "struct", "fields": fields}).to_string()
}

/// Delta's name of a column type; the binder refuses to publish the types Delta lacks.
fn delta_type(sql_type: &SqlType) -> String {
    match *sql_type {
        SqlType::Boolean => "boolean".into(),
        SqlType::Int => "integer".into(),
        SqlType::BigInt => "long".into(),
        SqlType::Double => "double".into(),
        SqlType::Real => "float".into(),
        SqlType::Decimal { precision, scale } => format!("decimal({precision},{scale})"),
        SqlType::Varchar | SqlType::Json | SqlType::Uuid => "string".into(),
        SqlType::Date => "date".into(),
        SqlType::Timestamp => "timestamp_ntz".into(),
        SqlType::TimestampTz => "timestamp".into(),
        SqlType::Blob => "binary".into(),
        SqlType::Interval | SqlType::Time => {
            unreachable!("a table with an interval or time column is not published")
        }
        SqlType::List(_) | SqlType::Vector(_) | SqlType::Struct(_) | SqlType::Map(..) => {
            unreachable!("a table with a nested column is not published")
        }
    }
}

/// The protocol the table's columns need: the `timestampNtz` feature (reader 3, writer 7)
/// once a column is a timestamp without zone (`ntz_before`: the log had one, and a protocol
/// never goes down), else the first versions.
fn protocol(table: &TableDef, ntz_before: bool) -> Value {
    let ntz = ntz_before
        || table
            .columns
            .iter()
            .any(|c| c.sql_type == SqlType::Timestamp);
    match ntz {
        true => json!({"protocol": {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["timestampNtz"],
            "writerFeatures": ["timestampNtz"],
        }}),
        false => json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}),
    }
}

/// The `metaData` action: the table's id as a UUID, and its columns.
fn metadata(table: &TableDef, schema: &str) -> Value {
    json!({"metaData": {
        "id": format!("00000000-0000-4000-8000-{:012x}", table.id),
        "name": table.name,
        "format": {"provider": "parquet", "options": {}},
        "schemaString": schema,
        "partitionColumns": [],
        "configuration": {},
        "createdTime": now_ms(),
    }})
}

/// The `add` action of a data file, with the statistics its `f/` key keeps.
fn add(node: &Node, folder: &str, table: &TableDef, file: &DataFile) -> Value {
    let (mut nulls, mut mins, mut maxes) = (Map::new(), Map::new(), Map::new());
    let implied: Vec<u32> = (0..table.positional_width).collect();
    let ids = match file.column_ids.is_empty() {
        true => &implied,
        false => &file.column_ids,
    };
    for (id, statistics) in ids.iter().zip(&file.columns) {
        let Some(column) = table.columns.iter().find(|c| c.id == *id) else {
            continue;
        };
        nulls.insert(column.name.clone(), json!(statistics.nulls));
        let bound = |value: Option<i64>| value.and_then(|v| stat_value(&column.sql_type, v));
        if let (Some(min), Some(max)) = (bound(statistics.min), bound(statistics.max)) {
            mins.insert(column.name.clone(), min);
            maxes.insert(column.name.clone(), max);
        }
    }
    let mut stats = json!({"numRecords": file.rows, "nullCount": nulls});
    if !mins.is_empty() {
        stats["minValues"] = Value::Object(mins);
        stats["maxValues"] = Value::Object(maxes);
    }
    // Columns added after the file was written are all NULL in it.
    if !file.columns.is_empty() {
        for column in table.columns.iter().filter(|c| !ids.contains(&c.id)) {
            stats["nullCount"][&column.name] = json!(file.rows);
        }
    }
    let modified = match file.committed_at_ms {
        0 => now_ms(),
        at => at,
    };
    json!({"add": {
        "path": relative_path(node, folder, &file.path),
        "partitionValues": {},
        "size": file.size_bytes,
        "modificationTime": modified,
        "dataChange": true,
        "stats": stats.to_string(),
    }})
}

/// A column's least or greatest value as Delta's statistics write it: integers as numbers,
/// dates as `YYYY-MM-DD`; other types go without (readers then read the file).
fn stat_value(sql_type: &SqlType, value: i64) -> Option<Value> {
    match sql_type {
        SqlType::Int | SqlType::BigInt => Some(json!(value)),
        SqlType::Date => {
            let days = i32::try_from(value).ok()?;
            let date = arrow::temporal_conversions::date32_to_datetime(days)?;
            Some(json!(date.date().to_string()))
        }
        _ => None,
    }
}
