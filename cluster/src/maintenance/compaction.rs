//! The size-tiered compactor (ADR 0048): tiering adds a data file (a sorted run, for a keyed
//! table) per pass, and compaction merges a table's files when it pays, in one `Replace`:
//!
//! - files of one size tier (sizes within a factor of 4) once the tier holds
//!   `FILES_PER_TIER` of them, so a table keeps a few files per tier and a lookup by key
//!   searches few runs;
//! - a file a fifth of whose rows are deleted, rewritten without them;
//! - a file of a TTL table older than its TTL, rewritten without its expired rows;
//! - a file written before an ADD or DROP COLUMN, rewritten in the table's columns (its
//!   statistics and page pruning come back).
//!
//! A merge keeps each row's commit columns; a keyed table's merged file is sorted by key. The
//! replaced files' deletion vectors go with them: the commit is refused if more of their rows
//! were deleted since they were read, and the files are merged again on a later pass.

use std::sync::Arc;

use arrow::array::RecordBatch;
use pondra_catalog::{Change, Container, DataFile, Snapshot, TableDef, TableKind, now_ms};
use pondra_planner::LogicalPlan;

use crate::Result;
use crate::maintenance::tiering::{sorted_by_key, unexpired_rows};
use crate::node::Node;

/// Files of one size tier merged into one once there are this many.
const FILES_PER_TIER: usize = 4;
/// Files below this size share the lowest tier.
const SMALLEST_TIER_BYTES: u64 = 1 << 20;
/// A file whose deleted rows are at least this share of its rows is rewritten.
const MOST_DELETED: f64 = 0.2;
/// One merge reads at most this many bytes of files (their rows are held in memory).
const MOST_BYTES_PER_MERGE: u64 = 256 << 20;

/// What a compaction does to a table: which files it merges into one.
#[derive(Debug, PartialEq, Eq)]
pub struct CompactionJob {
    pub paths: Vec<String>,
}

impl Node {
    /// Compacts the tables the policy picks (with `whole`, every table, merging all of each
    /// table's files in runs of bounded size); `only` limits it to one table. Returns how many
    /// files were replaced.
    pub async fn compact(&self, only: Option<&str>, whole: bool) -> Result<usize> {
        let _guard = self.tier_lock.lock().await;
        let snapshot = self.snapshot();
        let mut replaced = 0;
        for table in snapshot.tables.values() {
            if only.is_some_and(|name| name != table.name)
                || !matches!(
                    table.kind,
                    TableKind::Table | TableKind::ValueCounts { .. } | TableKind::JoinState { .. }
                )
            {
                continue;
            }
            let jobs = match whole {
                true => whole_table_jobs(&snapshot, table),
                false => pick_job(&snapshot, table, now_ms()).into_iter().collect(),
            };
            for job in jobs {
                match self.merge_files(&snapshot, table, &job).await {
                    Ok(()) => replaced += job.paths.len(),
                    // Rows deleted or a table dropped meanwhile: merged on a later pass, or
                    // never.
                    Err(crate::NodeError::Catalog(
                        pondra_catalog::CatalogError::TableNotFound(_)
                        | pondra_catalog::CatalogError::DeletedConcurrently(_),
                    )) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(replaced)
    }

    /// Merges the files of `job` into one, in one commit.
    pub(crate) async fn merge_files(
        &self,
        snapshot: &Arc<Snapshot>,
        table: &Arc<TableDef>,
        job: &CompactionJob,
    ) -> Result<()> {
        // The rows of the job's files alone: a snapshot whose table holds only them.
        let mut only_files = snapshot.as_ref().clone();
        let files: Vec<DataFile> = snapshot
            .files(table.id)
            .iter()
            .filter(|f| job.paths.contains(&f.path))
            .cloned()
            .collect();
        assert_eq!(
            files.len(),
            job.paths.len(),
            "a job names files of its table"
        );
        only_files.files.insert(table.id, Arc::new(files));
        only_files.segments.remove(&table.id);
        let scan = LogicalPlan::Scan {
            table: table.clone(),
            schema: table.scan_schema_hidden(true, false, false, true),
        };
        let mut rows = self
            .run_query(scan, Arc::new(only_files), Vec::new())
            .await?
            .into_iter()
            .map(|b| {
                Ok(RecordBatch::try_new(
                    table.stored_schema(),
                    b.columns().to_vec(),
                )?)
            })
            .collect::<Result<Vec<_>>>()?;
        if let Some(ttl) = &table.ttl {
            rows = unexpired_rows(table, ttl, rows)?;
        }
        if !table.key.is_empty() {
            rows = sorted_by_key(table, &rows)?;
        }
        let deleted = job
            .paths
            .iter()
            .filter_map(|p| snapshot.deletion_vector(table.id, &Container::File(p.clone())))
            .map(|v| v.len())
            .sum();
        let added = self.write_data_file(table, &rows).await?;
        self.catalog
            .commit(vec![Change::Replace {
                table_id: table.id,
                segments: Vec::new(),
                files: job.paths.clone(),
                added,
                deleted,
            }])
            .await?;
        Ok(())
    }
}

/// Every file of a table (`VACUUM FULL`), merged in runs of files of at most
/// `MOST_BYTES_PER_MERGE` each: one file per run, unless it is alone and needs no rewrite.
fn whole_table_jobs(snapshot: &Snapshot, table: &TableDef) -> Vec<CompactionJob> {
    let files = snapshot.files(table.id);
    let by_path = |path: &String| files.iter().find(|f| &f.path == path);
    runs_of_bounded_size(files.iter().collect())
        .into_iter()
        .filter(|job| {
            let alone = by_path(&job.paths[0]).expect("a run holds files of the table");
            job.paths.len() > 1 || needs_rewrite(snapshot, table, alone, now_ms())
        })
        .collect()
}

/// `files` merged in runs of consecutive files of at most `MOST_BYTES_PER_MERGE` each (a
/// larger file alone), one job per run.
pub(crate) fn runs_of_bounded_size(files: Vec<&DataFile>) -> Vec<CompactionJob> {
    let mut runs: Vec<(Vec<&DataFile>, u64)> = Vec::new();
    for file in files {
        match runs.last_mut() {
            Some((run, bytes)) if *bytes + file.size_bytes <= MOST_BYTES_PER_MERGE => {
                run.push(file);
                *bytes += file.size_bytes;
            }
            _ => runs.push((vec![file], file.size_bytes)),
        }
    }
    runs.into_iter()
        .map(|(run, _)| CompactionJob {
            paths: run.iter().map(|f| f.path.clone()).collect(),
        })
        .collect()
}

/// The files of `table` the policy merges now, if any: those it must rewrite, with the files
/// of the fullest size tier that holds `FILES_PER_TIER`, within `MOST_BYTES_PER_MERGE`.
pub fn pick_job(snapshot: &Snapshot, table: &TableDef, now: u64) -> Option<CompactionJob> {
    let files = snapshot.files(table.id);
    let mut picked: Vec<&DataFile> = files
        .iter()
        .filter(|f| needs_rewrite(snapshot, table, f, now))
        .collect();
    let mut tiers: std::collections::BTreeMap<u32, Vec<&DataFile>> = Default::default();
    for file in files
        .iter()
        .filter(|f| !picked.iter().any(|p| p.path == f.path))
    {
        tiers
            .entry(tier_of(file.size_bytes))
            .or_default()
            .push(file);
    }
    if let Some(tier) = tiers
        .into_values()
        .filter(|tier| tier.len() >= FILES_PER_TIER)
        .max_by_key(|tier| tier.len())
    {
        picked.extend(tier);
    }
    let mut bytes = 0;
    picked.retain(|f| {
        bytes += f.size_bytes;
        bytes <= MOST_BYTES_PER_MERGE
    });
    // Merging one file with nothing pays only if it must be rewritten.
    let worth = picked.len() > 1
        || picked
            .iter()
            .any(|f| needs_rewrite(snapshot, table, f, now));
    (worth && !picked.is_empty()).then(|| CompactionJob {
        paths: picked.iter().map(|f| f.path.clone()).collect(),
    })
}

/// Sizes within a factor of 4 share a tier.
fn tier_of(size_bytes: u64) -> u32 {
    (size_bytes.max(SMALLEST_TIER_BYTES) / SMALLEST_TIER_BYTES).ilog(4)
}

/// Whether a file must be rewritten whatever its tier: many deleted rows, rows a TTL may have
/// expired, or columns that are not the table's.
fn needs_rewrite(snapshot: &Snapshot, table: &TableDef, file: &DataFile, now: u64) -> bool {
    let deleted = snapshot
        .deletion_vector(table.id, &Container::File(file.path.clone()))
        .map_or(0, |v| v.len());
    let mostly_deleted = file.rows > 0 && deleted as f64 >= MOST_DELETED * file.rows as f64;
    // A file's rows were written no later than the file: once it is older than the TTL, some
    // may have expired (rows whose column lies ahead of their writing, or is NULL, stay).
    let ttl_passed = table.ttl.as_ref().is_some_and(|ttl| {
        let age_ms = now.saturating_sub(file.committed_at_ms);
        file.committed_at_ms > 0 && age_ms as i64 >= ttl.micros / 1000
    });
    mostly_deleted || ttl_passed || table.layout_of(&file.column_ids).is_some()
}

#[cfg(test)]
mod tests {
    use pondra_catalog::{Column, DeletionVector, SqlType, Ttl};

    use super::*;

    fn file(path: &str, size_bytes: u64, rows: u64) -> DataFile {
        DataFile {
            table_id: 1,
            path: path.into(),
            rows,
            size_bytes,
            columns: Vec::new(),
            commit: 1,
            committed_at_ms: 1_000,
            column_ids: Vec::new(),
            offsets: None,
        }
    }

    fn lake(files: Vec<DataFile>) -> (Snapshot, TableDef) {
        let column = Column {
            name: "k".into(),
            sql_type: SqlType::BigInt,
            not_null: false,
            id: 0,
        };
        let mut table = TableDef::new("t".into(), vec![column], TableKind::Table);
        table.id = 1;
        let mut snapshot = Snapshot::default();
        snapshot.files.insert(1, Arc::new(files));
        (snapshot, table)
    }

    fn paths(job: Option<CompactionJob>) -> Vec<String> {
        job.map(|j| j.paths).unwrap_or_default()
    }

    #[test]
    fn a_tier_is_merged_once_it_holds_four_files() {
        let mb = 1 << 20;
        let small = |n: u32| file(&format!("s{n}"), mb / 2, 10);
        let (snapshot, table) = lake(vec![small(1), small(2), small(3), file("big", 64 * mb, 9)]);
        assert_eq!(
            paths(pick_job(&snapshot, &table, 2_000)),
            Vec::<String>::new()
        );
        let (snapshot, table) = lake(vec![
            small(1),
            small(2),
            file("big", 64 * mb, 9),
            small(3),
            small(4),
        ]);
        assert_eq!(
            paths(pick_job(&snapshot, &table, 2_000)),
            vec!["s1", "s2", "s3", "s4"]
        );
    }

    #[test]
    fn deleted_rows_expired_rows_and_old_columns_make_a_file_rewritten() {
        let (mut snapshot, mut table) = lake(vec![file("a", 100, 10), file("b", 100, 10)]);
        let mut deleted = roaring::RoaringBitmap::new();
        deleted.insert_range(0..2);
        let vector: DeletionVector = Arc::new(deleted);
        let vectors = [(Container::File("b".into()), vector)]
            .into_iter()
            .collect();
        snapshot.deletions.insert(1, Arc::new(vectors));
        assert_eq!(paths(pick_job(&snapshot, &table, 2_000)), vec!["b"]);
        table.ttl = Some(Ttl {
            column: "k".into(),
            micros: 5_000_000,
        });
        assert_eq!(paths(pick_job(&snapshot, &table, 5_999)), vec!["b"]);
        assert_eq!(paths(pick_job(&snapshot, &table, 6_000)), vec!["a", "b"]);
        table.ttl = None;
        table.columns[0].id = 7;
        assert_eq!(paths(pick_job(&snapshot, &table, 2_000)), vec!["a", "b"]);
    }

    #[test]
    fn vacuum_full_merges_runs_of_bounded_size() {
        let mb = 1 << 20;
        let (snapshot, table) = lake(vec![
            file("a", 100 * mb, 1),
            file("b", 100 * mb, 1),
            file("c", 100 * mb, 1),
            file("d", 300 * mb, 1),
        ]);
        let jobs: Vec<Vec<String>> = whole_table_jobs(&snapshot, &table)
            .into_iter()
            .map(|j| j.paths)
            .collect();
        // "c" alone and "d" alone need no rewrite.
        assert_eq!(jobs, vec![vec!["a".to_string(), "b".to_string()]]);
    }

    #[test]
    fn one_merge_reads_a_bounded_number_of_bytes() {
        let huge = |n: u32| file(&format!("h{n}"), 100 << 20, 10);
        let (snapshot, table) = lake((1..=4).map(huge).collect());
        assert_eq!(paths(pick_job(&snapshot, &table, 2_000)), vec!["h1", "h2"]);
    }
}
