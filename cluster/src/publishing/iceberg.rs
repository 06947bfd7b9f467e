//! A published table's Iceberg v2 metadata (ADR 0058): `data/<table>/metadata/vN.metadata.json`,
//! each version a snapshot of the table's whole file set in one manifest, the manifests
//! written before the metadata file that names them (create-if-absent). Columns go by field
//! id, which data files carry; files written before they did are read through the table's
//! name mapping. Also what the REST catalog serves: the namespaces, the tables published as
//! Iceberg and their newest metadata.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use pondra_catalog::{DataFile, Snapshot, SqlType, TableDef, TableFormat, field_id, now_ms};
use pondra_storage::{
    IcebergDataFile, IcebergField, IcebergTableMetadata, IcebergType, IcebergValue,
    IcebergVersionInput, StorageError, iceberg_version, newest_metadata_file,
    parse_iceberg_metadata, parse_manifest, parse_manifest_list,
};
use serde_json::json;

use crate::node::Node;
use crate::publishing::publish::{PublishedVersion, table_folder};
use crate::{NodeError, Result};

/// The namespace of the tables outside any schema.
const DEFAULT_NAMESPACE: &str = "public";

impl Node {
    /// Writes the next Iceberg version of `table` when its files or columns differ from the
    /// newest version's.
    pub(crate) async fn publish_iceberg(
        &self,
        snapshot: &Snapshot,
        table: &TableDef,
    ) -> Result<()> {
        let folder = table_folder(table);
        let key = (table.id, TableFormat::Iceberg, folder.clone());
        let published = match self.published.get(&key) {
            Some(published) => published,
            None => self.read_iceberg_version(&folder).await?.0,
        };
        let files = snapshot.files(table.id);
        let current: BTreeSet<String> = files.iter().map(|f| f.path.clone()).collect();
        let schema = iceberg_schema(table);
        let columns = format!("{schema:?}");
        if published.holds(&current, &columns) {
            return Ok(());
        }
        let previous = match published.version {
            Some(version) => Some(self.iceberg_metadata_at(&folder, version).await?),
            None => None,
        };
        let previous_files: Vec<String> = published
            .files
            .iter()
            .map(|p| self.lake.url_of(p))
            .collect();
        let data_files: Vec<IcebergDataFile> =
            files.iter().map(|f| self.iceberg_file(table, f)).collect();
        let version = published.version.map_or(1, |v| v + 1);
        let input = IcebergVersionInput {
            version,
            previous: previous.as_ref(),
            previous_files: &previous_files,
            table_uuid: previous
                .as_ref()
                .map_or_else(|| table_uuid(table), |p| p.table_uuid.clone()),
            location: self.lake.url_of(&folder),
            last_column_id: i32::try_from(table.next_column_id).unwrap_or(i32::MAX),
            schema,
            files: &data_files,
            summary: BTreeMap::from([("pondra.commit".into(), snapshot.commit.to_string())]),
            properties: BTreeMap::from([(
                "schema.name-mapping.default".into(),
                name_mapping(table),
            )]),
            timestamp_ms: now_ms(),
            snapshot_id: (now_ms() as i64) * 1000 + (version % 1000) as i64,
        };
        let objects = iceberg_version(&input)?;
        for object in &objects.manifests {
            self.lake
                .put(&format!("{folder}/{}", object.path), object.bytes.clone())
                .await?;
        }
        let metadata = format!("{folder}/{}", objects.metadata.path);
        match self
            .lake
            .put_if_absent(&metadata, objects.metadata.bytes)
            .await
        {
            Ok(()) => {}
            // Another publisher wrote this version: read the metadata back next pass.
            Err(StorageError::AlreadyExists(_)) => {
                self.published.forget(&key);
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        }
        let hint = objects.version_hint;
        self.lake
            .put(&format!("{folder}/{}", hint.path), hint.bytes)
            .await?;
        let written = PublishedVersion {
            version: Some(version),
            files: current,
            columns,
        };
        self.published.set(key, written);
        Ok(())
    }

    /// A data file as an Iceberg manifest entry names it, with the statistics its `f/` key
    /// keeps, by field id.
    fn iceberg_file(&self, table: &TableDef, file: &DataFile) -> IcebergDataFile {
        let implied: Vec<u32> = (0..table.positional_width).collect();
        let ids = match file.column_ids.is_empty() {
            true => &implied,
            false => &file.column_ids,
        };
        let mut entry = IcebergDataFile {
            path: self.lake.url_of(&file.path),
            size_bytes: file.size_bytes,
            record_count: file.rows,
            ..Default::default()
        };
        for (id, statistics) in ids.iter().zip(&file.columns) {
            let Some(column) = table.columns.iter().find(|c| c.id == *id) else {
                continue;
            };
            let field = field_id(column.id);
            entry.null_counts.push((field, statistics.nulls));
            let bound = |v: Option<i64>| v.and_then(|v| bound_value(&column.sql_type, v));
            if let (Some(min), Some(max)) = (bound(statistics.min), bound(statistics.max)) {
                entry.lower_bounds.push((field, min));
                entry.upper_bounds.push((field, max));
            }
        }
        entry
    }

    /// The newest Iceberg version in `folder` as the publisher keeps it, with its metadata;
    /// nothing when none is published.
    async fn read_iceberg_version(
        &self,
        folder: &str,
    ) -> Result<(PublishedVersion, Option<IcebergTableMetadata>)> {
        let names = self.lake.list(&format!("{folder}/metadata/")).await?;
        let Some(newest) = newest_metadata_file(&names) else {
            return Ok((PublishedVersion::default(), None));
        };
        let version = metadata_version(&newest).ok_or_else(|| {
            NodeError::Other(format!("{newest} is not a metadata file Pondra writes"))
        })?;
        let metadata = parse_iceberg_metadata(&self.lake.get(&newest).await?, &newest)?;
        let mut files = BTreeSet::new();
        for path in self.live_iceberg_files(&metadata).await? {
            files.insert(self.lake_path_of(&path)?);
        }
        let published = PublishedVersion {
            version: Some(version),
            files,
            columns: format!("{:?}", metadata.schema),
        };
        Ok((published, Some(metadata)))
    }

    /// The metadata of version `version` Pondra published in `folder`.
    async fn iceberg_metadata_at(
        &self,
        folder: &str,
        version: u64,
    ) -> Result<IcebergTableMetadata> {
        let path = format!("{folder}/metadata/v{version}.metadata.json");
        Ok(parse_iceberg_metadata(&self.lake.get(&path).await?, &path)?)
    }

    /// The URLs of the data files the current snapshot of `metadata` holds.
    async fn live_iceberg_files(&self, metadata: &IcebergTableMetadata) -> Result<Vec<String>> {
        let Some(list) = &metadata.manifest_list else {
            return Ok(Vec::new());
        };
        let list_path = self.lake_path_of(list)?;
        let mut files = Vec::new();
        for manifest in parse_manifest_list(&self.lake.get(&list_path).await?, list)? {
            let path = self.lake_path_of(&manifest.path)?;
            let entries = parse_manifest(&self.lake.get(&path).await?, &manifest.path)?;
            files.extend(
                entries
                    .into_iter()
                    .filter(|e| e.status != 2 && e.content == 0)
                    .map(|e| e.file_path),
            );
        }
        Ok(files)
    }

    /// The lake path of a URL in the lake.
    fn lake_path_of(&self, url: &str) -> Result<String> {
        let root = self.lake.url_of("");
        url.strip_prefix(&root)
            .map(str::to_string)
            .ok_or_else(|| NodeError::Other(format!("{url} is not in the lake ({root})")))
    }

    /// The Iceberg REST catalog's namespaces: `public` and each schema of the lake.
    pub fn iceberg_namespaces(&self) -> Vec<String> {
        let snapshot = self.snapshot();
        let schemas = snapshot.schemas.keys().filter(|s| *s != DEFAULT_NAMESPACE);
        std::iter::once(DEFAULT_NAMESPACE.to_string())
            .chain(schemas.cloned())
            .collect()
    }

    /// The tables of `namespace` published as Iceberg, by their names in it.
    pub fn iceberg_tables(&self, namespace: &str) -> Vec<String> {
        let snapshot = self.snapshot();
        snapshot
            .tables
            .values()
            .filter(|t| t.publish.contains(&TableFormat::Iceberg))
            .filter_map(|t| match t.name.split_once('.') {
                Some((schema, name)) if schema == namespace => Some(name.to_string()),
                None if namespace == DEFAULT_NAMESPACE => Some(t.name.clone()),
                _ => None,
            })
            .collect()
    }

    /// The URL and bytes of the newest metadata file of `namespace.table`, when it is
    /// published as Iceberg and a version is written.
    pub async fn iceberg_metadata(
        &self,
        namespace: &str,
        table: &str,
    ) -> Result<Option<(String, Bytes)>> {
        if !self.iceberg_tables(namespace).iter().any(|t| t == table) {
            return Ok(None);
        }
        let name = match namespace {
            DEFAULT_NAMESPACE => table.to_string(),
            schema => format!("{schema}.{table}"),
        };
        let names = self.lake.list(&format!("data/{name}/metadata/")).await?;
        let Some(newest) = newest_metadata_file(&names) else {
            return Ok(None);
        };
        let bytes = self.lake.get(&newest).await?;
        Ok(Some((self.lake.url_of(&newest), bytes)))
    }
}

/// The version `N` of a `vN.metadata.json` path.
fn metadata_version(path: &str) -> Option<u64> {
    let name = path.rsplit('/').next()?;
    name.strip_prefix('v')?
        .strip_suffix(".metadata.json")?
        .parse()
        .ok()
}

/// The table's id as a UUID, the same for each format.
pub(crate) fn table_uuid(table: &TableDef) -> String {
    format!("00000000-0000-4000-8000-{:012x}", table.id)
}

/// The table's columns as an Iceberg schema, by field id.
fn iceberg_schema(table: &TableDef) -> Vec<IcebergField> {
    table
        .columns
        .iter()
        .map(|c| IcebergField {
            id: field_id(c.id),
            name: c.name.clone(),
            required: c.not_null,
            field_type: iceberg_type(&c.sql_type),
        })
        .collect()
}

/// Iceberg's type of a column type; the binder refuses to publish the types Iceberg lacks.
fn iceberg_type(sql_type: &SqlType) -> IcebergType {
    match *sql_type {
        SqlType::Boolean => IcebergType::Boolean,
        SqlType::Int => IcebergType::Int,
        SqlType::BigInt => IcebergType::Long,
        SqlType::Double => IcebergType::Double,
        SqlType::Real => IcebergType::Float,
        SqlType::Decimal { precision, scale } => IcebergType::Decimal {
            precision: u32::from(precision),
            scale: scale.max(0) as u32,
        },
        SqlType::Varchar | SqlType::Json | SqlType::Uuid => IcebergType::String,
        SqlType::Date => IcebergType::Date,
        SqlType::Timestamp => IcebergType::Timestamp,
        SqlType::TimestampTz => IcebergType::Timestamptz,
        SqlType::Blob => IcebergType::Binary,
        SqlType::Interval | SqlType::Time => {
            unreachable!("a table with an interval or time column is not published")
        }
        SqlType::List(_) | SqlType::Vector(_) | SqlType::Struct(_) | SqlType::Map(..) => {
            unreachable!("a table with a nested column is not published")
        }
    }
}

/// A column's least or greatest value as a manifest's bound: integers and dates.
fn bound_value(sql_type: &SqlType, value: i64) -> Option<IcebergValue> {
    match sql_type {
        SqlType::Int => Some(IcebergValue::Int(i32::try_from(value).ok()?)),
        SqlType::BigInt => Some(IcebergValue::Long(value)),
        SqlType::Date => Some(IcebergValue::Date(i32::try_from(value).ok()?)),
        _ => None,
    }
}

/// `schema.name-mapping.default`: each column's current name by field id, for files written
/// before data files carried field ids (the publisher rewrites those whose names moved).
fn name_mapping(table: &TableDef) -> String {
    let fields: Vec<_> = table
        .columns
        .iter()
        .map(|c| json!({"field-id": field_id(c.id), "names": [c.name]}))
        .collect();
    serde_json::Value::Array(fields).to_string()
}
