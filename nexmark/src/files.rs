//! The same events for every engine of a benchmark: Nexmark's streams written once as one
//! Parquet file per table, read back into memory, and appended to a lake commit by commit as
//! producers would send them, so that what is timed is the lake's work and not the generator's.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow::compute::concat_batches;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use pondra_cluster::{Node, NodeError};

use crate::{Batches, Commit, Counts, EventBatches, TABLES};

/// The key, in each file's metadata, of its rows per commit: comma-separated counts, so that a
/// reader splits the three files into the same commits.
const ROWS_PER_COMMIT: &str = "pondra.nexmark.rows_per_commit";

/// Writes `events` events, `batch` per commit, to `<table>.parquet` files in `dir`.
pub fn write_parquet(dir: &Path, events: u64, batch: usize) -> Result<Counts, NodeError> {
    std::fs::create_dir_all(dir).map_err(other)?;
    let empty = Batches::default().finish()?;
    let properties = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let mut writers = Vec::new();
    for (name, rows) in &empty {
        let file = File::create(dir.join(format!("{name}.parquet"))).map_err(other)?;
        let writer = ArrowWriter::try_new(file, rows.schema(), Some(properties.clone()));
        writers.push((writer.map_err(other)?, Vec::new()));
    }
    let mut counts = Counts::default();
    for commit in EventBatches::new(events, batch) {
        let commit = commit?;
        for ((writer, rows_per_commit), (_, rows)) in writers.iter_mut().zip(&commit.tables) {
            writer.write(rows).map_err(other)?;
            rows_per_commit.push(rows.num_rows().to_string());
        }
        counts.add(commit.counts);
    }
    for (mut writer, rows_per_commit) in writers {
        writer.append_key_value_metadata(KeyValue::new(
            ROWS_PER_COMMIT.to_string(),
            rows_per_commit.join(","),
        ));
        writer.close().map_err(other)?;
    }
    Ok(counts)
}

/// The commits [`write_parquet`] wrote to `dir`, in memory.
pub fn read_parquet(dir: &Path) -> Result<Vec<Commit>, NodeError> {
    let mut tables = Vec::new();
    for (name, _) in TABLES {
        let path = dir.join(format!("{name}.parquet"));
        let file = File::open(&path)
            .map_err(|e| NodeError::Other(format!("cannot open {}: {e}", path.display())))?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(other)?;
        let rows_per_commit = rows_per_commit(builder.metadata().file_metadata(), name)?;
        let schema = builder.schema().clone();
        let batches = builder
            .with_batch_size(1 << 20)
            .build()
            .map_err(other)?
            .collect::<Result<Vec<_>, _>>()?;
        let rows = concat_batches(&schema, &batches)?;
        let total: usize = rows_per_commit.iter().sum();
        if total != rows.num_rows() {
            return Err(NodeError::Other(format!(
                "{name}.parquet holds {} rows, its commits {total}",
                rows.num_rows()
            )));
        }
        tables.push((name, rows, rows_per_commit));
    }
    let commits = tables[0].2.len();
    if tables
        .iter()
        .any(|(_, _, per_commit)| per_commit.len() != commits)
    {
        return Err(NodeError::Other(
            "the files of the three tables hold different numbers of commits".into(),
        ));
    }
    let mut offsets = [0usize; 3];
    let mut split = Vec::with_capacity(commits);
    for commit in 0..commits {
        let mut rows_of_commit = Vec::with_capacity(3);
        for (offset, (name, rows, per_commit)) in offsets.iter_mut().zip(&tables) {
            rows_of_commit.push((*name, rows.slice(*offset, per_commit[commit])));
            *offset += per_commit[commit];
        }
        let count = |i: usize| rows_of_commit[i].1.num_rows() as u64;
        let counts = Counts {
            persons: count(0),
            auctions: count(1),
            bids: count(2),
        };
        split.push(Commit {
            tables: rows_of_commit,
            counts,
        });
    }
    Ok(split)
}

/// Appends `commits` to the lake behind `node` in order, each table's rows of a commit as one
/// durable append, the three tables' side by side (as three producers would send them).
/// `progress` is told the counts after each commit.
pub async fn replay(
    node: &Arc<Node>,
    commits: &[Commit],
    mut progress: impl FnMut(Counts),
) -> Result<Counts, NodeError> {
    let mut counts = Counts::default();
    for commit in commits {
        // In this task, not spawned: the statement's work needs the deep stacks of the thread
        // that drives it, which a runtime's workers need not have.
        let appends = commit
            .tables
            .iter()
            .filter(|(_, rows)| rows.num_rows() > 0)
            .map(|(name, rows)| node.append(name, std::slice::from_ref(rows), None));
        futures::future::try_join_all(appends).await?;
        counts.add(commit.counts);
        progress(counts);
    }
    Ok(counts)
}

/// The rows of each commit in a file's metadata.
fn rows_per_commit(
    metadata: &parquet::file::metadata::FileMetaData,
    table: &str,
) -> Result<Vec<usize>, NodeError> {
    let missing = || NodeError::Other(format!("{table}.parquet was not written by nexmark gen"));
    let entry = metadata
        .key_value_metadata()
        .and_then(|kv| kv.iter().find(|kv| kv.key == ROWS_PER_COMMIT))
        .and_then(|kv| kv.value.as_deref())
        .ok_or_else(missing)?;
    if entry.is_empty() {
        return Ok(Vec::new());
    }
    entry
        .split(',')
        .map(|n| n.parse::<usize>().map_err(|_| missing()))
        .collect()
}

fn other(error: impl std::fmt::Display) -> NodeError {
    NodeError::Other(error.to_string())
}
