//! Publishing tables for other engines (ADR 0058): after tiering, the leader brings each
//! published table's Delta log and Iceberg metadata up to the table's files. A file other
//! engines would read wrong (one with deleted rows, or whose columns were renamed since it was
//! written) is first rewritten in the table's columns without those rows (copy-on-write), in
//! one `Replace` as compaction commits.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use pondra_catalog::{Container, DataFile, Snapshot, TableDef, TableFormat, TableKind};

use crate::maintenance::compaction::runs_of_bounded_size;
use crate::node::Node;
use crate::{NodeError, Result};

/// What one format's newest version of a published table holds, as the publisher last wrote
/// or read it.
#[derive(Clone, Debug, Default)]
pub(crate) struct PublishedVersion {
    /// The format's newest version (Delta's commit number, Iceberg's metadata number); `None`
    /// when nothing is published yet.
    pub version: Option<u64>,
    /// The lake paths of the data files the version holds.
    pub files: BTreeSet<String>,
    /// The table's columns as the version describes them, in the format's own words: a
    /// version is written when they differ from the table's.
    pub columns: String,
}

impl PublishedVersion {
    /// Whether a version is published and holds exactly `files` with `columns`: then there
    /// is nothing to publish.
    pub(crate) fn holds(&self, files: &BTreeSet<String>, columns: &str) -> bool {
        self.version.is_some() && self.files == *files && self.columns == columns
    }
}

/// The publisher's memory of what it published: per table, format and table folder (a
/// renamed table starts a new log in its new folder). Forgotten when a version it meant to
/// write turns out to exist, and read back from the lake.
#[derive(Default)]
pub(crate) struct PublishedVersions {
    versions: std::sync::Mutex<HashMap<(u64, TableFormat, String), PublishedVersion>>,
}

impl PublishedVersions {
    pub(crate) fn get(&self, key: &(u64, TableFormat, String)) -> Option<PublishedVersion> {
        let versions = self.versions.lock().expect("publisher memory");
        versions.get(key).cloned()
    }

    pub(crate) fn set(&self, key: (u64, TableFormat, String), version: PublishedVersion) {
        let mut versions = self.versions.lock().expect("publisher memory");
        versions.insert(key, version);
    }

    pub(crate) fn forget(&self, key: &(u64, TableFormat, String)) {
        let mut versions = self.versions.lock().expect("publisher memory");
        versions.remove(key);
    }
}

/// The folder a table's formats live in, relative to the lake: the folder its files are
/// written to.
pub(crate) fn table_folder(table: &TableDef) -> String {
    format!("data/{}", table.name)
}

impl Node {
    /// Publishes every published table's files in its formats. A table that fails is left
    /// for the next pass; the first failure is returned once every table was tried.
    pub async fn publish(&self) -> Result<()> {
        let _guard = self.tier_lock.lock().await;
        let tables: Vec<Arc<TableDef>> = self
            .snapshot()
            .tables
            .values()
            .filter(|t| matches!(t.kind, TableKind::Table) && !t.publish.is_empty())
            .cloned()
            .collect();
        let mut first_error = None;
        for table in tables {
            if let Err(e) = self.publish_table(table.id).await {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Rewrites what other engines would read wrong, then writes each format's next version.
    async fn publish_table(&self, table_id: u64) -> Result<()> {
        let snapshot = self.snapshot();
        let Some(table) = snapshot.table_by_id(table_id).cloned() else {
            return Ok(());
        };
        let stale = self.files_to_rewrite(&snapshot, &table).await?;
        for job in runs_of_bounded_size(stale) {
            match self.merge_files(&snapshot, &table, &job).await {
                Ok(()) => {}
                // Deleted meanwhile: rewritten on the next pass, and nothing published now.
                Err(NodeError::Catalog(
                    pondra_catalog::CatalogError::TableNotFound(_)
                    | pondra_catalog::CatalogError::DeletedConcurrently(_),
                )) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        let snapshot = self.snapshot();
        let Some(table) = snapshot.table_by_id(table_id).cloned() else {
            return Ok(());
        };
        if !self.files_to_rewrite(&snapshot, &table).await?.is_empty() {
            return Ok(());
        }
        for format in &table.publish {
            match format {
                TableFormat::Delta => self.publish_delta(&snapshot, &table).await?,
                TableFormat::Iceberg => self.publish_iceberg(&snapshot, &table).await?,
            }
        }
        Ok(())
    }

    /// The files of `table` other engines would read wrong: those with deleted rows, and
    /// those holding a column under another name than the table gives it now (or under the
    /// name of another column), which readers that find columns by name would misread.
    async fn files_to_rewrite<'a>(
        &self,
        snapshot: &'a Snapshot,
        table: &TableDef,
    ) -> Result<Vec<&'a DataFile>> {
        let mut stale = Vec::new();
        for file in snapshot.files(table.id).iter() {
            let container = Container::File(file.path.clone());
            let deleted = snapshot.deletion_vector(table.id, &container);
            if deleted.is_some_and(|v| !v.is_empty()) || self.names_moved(table, file).await? {
                stale.push(file);
            }
        }
        Ok(stale)
    }

    /// Whether `file` holds a column whose name is no longer its own in `table`.
    async fn names_moved(&self, table: &TableDef, file: &DataFile) -> Result<bool> {
        let (_, footer) = self.lake.data_file(&file.path).await?;
        let implied: Vec<u32>;
        let ids = match file.column_ids.is_empty() {
            true => {
                implied = (0..table.positional_width).collect();
                &implied
            }
            false => &file.column_ids,
        };
        let names = footer.column_names();
        Ok(ids.iter().zip(&names).any(|(id, name)| {
            match table.columns.iter().find(|c| c.id == *id) {
                Some(column) => column.name != *name,
                None => table.columns.iter().any(|c| c.name == *name),
            }
        }))
    }
}
