//! Tables that live in Parquet files outside the lake: `read_parquet('...')` and tables
//! registered for a session (`pondra tpch run --parquet`). Read in place, never copied.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use pondra_storage::{ColumnFooterStats, ParquetFooter, csv_file_schema, parquet_file_info};

use crate::{Result, bind_err};

/// One Parquet file of an external table.
#[derive(Clone)]
pub struct ExternalFile {
    pub path: PathBuf,
    pub rows: u64,
    pub row_groups: usize,
    /// The parsed footer of a Parquet file (none for CSV).
    pub footer: Option<ParquetFooter>,
}

/// Names the file without its footer, which follows from the file and would print every row
/// group's statistics: plans are compared by their text.
impl std::fmt::Debug for ExternalFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalFile")
            .field("path", &self.path)
            .field("rows", &self.rows)
            .field("row_groups", &self.row_groups)
            .finish_non_exhaustive()
    }
}

/// How an external table's files are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileFormat {
    Parquet,
    /// CSV with a header row.
    Csv,
}

/// A table read from files in place.
#[derive(Clone, Debug)]
pub struct ExternalTable {
    pub name: String,
    pub format: FileFormat,
    pub files: Vec<ExternalFile>,
    pub schema: SchemaRef,
    /// Per column, what the files' footers say over all the files (empty for CSV).
    pub columns: Vec<ColumnFooterStats>,
}

impl ExternalTable {
    /// The files a path or a glob (`*` and `?` in the file name) names, read from their footers.
    /// All files must have the same columns.
    pub fn open(name: &str, pattern: &str) -> Result<Arc<ExternalTable>> {
        let paths = expand(pattern)?;
        let mut files = Vec::new();
        let mut schema: Option<SchemaRef> = None;
        let mut columns: Option<Vec<ColumnFooterStats>> = None;
        for path in paths {
            let info = parquet_file_info(&path)
                .map_err(|e| bind_err!("cannot read {}: {e}", path.display()))?;
            match &schema {
                None => schema = Some(info.schema.clone()),
                Some(s) if s.fields() != info.schema.fields() => {
                    return Err(bind_err!(
                        "{} has other columns than the first file of {pattern}",
                        path.display()
                    ));
                }
                Some(_) => {}
            }
            columns = Some(match columns {
                None => info.columns.clone(),
                Some(so_far) => so_far
                    .iter()
                    .zip(&info.columns)
                    .map(|(a, b)| ColumnFooterStats {
                        min: a.min.zip(b.min).map(|(a, b)| a.min(b)),
                        max: a.max.zip(b.max).map(|(a, b)| a.max(b)),
                        nulls: a.nulls.zip(b.nulls).map(|(a, b)| a + b),
                        // The first file's first rows stand for all.
                        sample: a.sample,
                    })
                    .collect(),
            });
            files.push(ExternalFile {
                path,
                rows: info.rows,
                row_groups: info.row_groups,
                footer: Some(info.footer),
            });
        }
        let schema = schema.ok_or_else(|| bind_err!("no file matches {pattern}"))?;
        Ok(Arc::new(ExternalTable {
            name: name.to_string(),
            format: FileFormat::Parquet,
            files,
            schema,
            columns: columns.unwrap_or_default(),
        }))
    }

    /// CSV files with a header row, by path or glob; column types are inferred from the first
    /// file, and every file must have the same columns.
    pub fn open_csv(name: &str, pattern: &str) -> Result<Arc<ExternalTable>> {
        let paths = expand(pattern)?;
        let schema = csv_file_schema(&paths[0])
            .map_err(|e| bind_err!("cannot read {}: {e}", paths[0].display()))?;
        let mut files = Vec::new();
        for path in paths {
            let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            files.push(ExternalFile {
                path,
                // A guess for planning: CSV files carry no row count.
                rows: size / 64,
                row_groups: 1,
                footer: None,
            });
        }
        Ok(Arc::new(ExternalTable {
            name: name.to_string(),
            format: FileFormat::Csv,
            files,
            schema,
            columns: Vec::new(),
        }))
    }

    pub fn rows(&self) -> u64 {
        self.files.iter().map(|f| f.rows).sum()
    }
}

/// The files matching a path whose last part may hold `*` and `?`.
fn expand(pattern: &str) -> Result<Vec<PathBuf>> {
    let path = Path::new(pattern);
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| bind_err!("invalid path {pattern}"))?;
    if !name.contains(['*', '?']) {
        if !path.exists() {
            return Err(bind_err!("no file matches {pattern}"));
        }
        return Ok(vec![path.to_path_buf()]);
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let entries =
        std::fs::read_dir(&dir).map_err(|e| bind_err!("cannot list {}: {e}", dir.display()))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| matches(name.as_bytes(), n.as_bytes()))
        })
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(bind_err!("no file matches {pattern}"));
    }
    Ok(paths)
}

/// Glob matching of one name: `*` any run of characters, `?` one character.
fn matches(pattern: &[u8], name: &[u8]) -> bool {
    match (pattern.first(), name.first()) {
        (None, None) => true,
        (Some(b'*'), _) => {
            matches(&pattern[1..], name) || (!name.is_empty() && matches(pattern, &name[1..]))
        }
        (Some(b'?'), Some(_)) => matches(&pattern[1..], &name[1..]),
        (Some(p), Some(n)) if p == n => matches(&pattern[1..], &name[1..]),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn globs_match_names() {
        assert!(matches(b"*.parquet", b"lineitem.parquet"));
        assert!(matches(b"part?.parquet", b"part1.parquet"));
        assert!(!matches(b"*.parquet", b"lineitem.csv"));
    }
}
