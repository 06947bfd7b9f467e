//! Tables that live in files outside the lake, local or at URLs (ADR 0046):
//! `read_parquet('...')`, `read_csv`, `read_json` and tables registered for a session
//! (`pondra tpch run --parquet`). Read in place, never copied.

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use pondra_storage::{
    ColumnFooterStats, FileSource, ParquetFooter, csv_file_schema, delta_table_files,
    json_file_schema, parquet_file_info,
};

use crate::{Result, bind_err};

/// One file of an external table.
#[derive(Clone)]
pub struct ExternalFile {
    pub source: FileSource,
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
            .field("source", &self.source.name())
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
    /// JSON objects, one per line.
    Json,
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
        ExternalTable::open_sources(name, pattern, expand(pattern)?)
    }

    /// The data files of the newest version of the Delta Lake table in a folder or at a URL
    /// (`delta_scan`, ADR 0058).
    pub fn open_delta(name: &str, location: &str) -> Result<Arc<ExternalTable>> {
        let found =
            delta_table_files(location).map_err(|e| bind_err!("delta_scan('{location}'): {e}"))?;
        if found.files.is_empty() {
            return Err(crate::unsupported!(
                "delta_scan of a Delta table without data files ({location}, version {})",
                found.version
            ));
        }
        ExternalTable::open_sources(name, location, found.files)
    }

    /// The data files of the current snapshot of the Iceberg table in a folder or at a URL,
    /// or of its metadata file (`iceberg_scan`, ADR 0058).
    pub fn open_iceberg(name: &str, location: &str) -> Result<Arc<ExternalTable>> {
        let found = pondra_storage::iceberg_table_files(location)
            .map_err(|e| bind_err!("iceberg_scan('{location}'): {e}"))?;
        if found.files.is_empty() {
            return Err(crate::unsupported!(
                "iceberg_scan of an Iceberg table without data files ({location})"
            ));
        }
        ExternalTable::open_sources(name, location, found.files)
    }

    /// The Parquet files `sources` (named `pattern` in messages), read from their footers.
    fn open_sources(
        name: &str,
        pattern: &str,
        sources: Vec<FileSource>,
    ) -> Result<Arc<ExternalTable>> {
        let mut files = Vec::new();
        let mut schema: Option<SchemaRef> = None;
        let mut columns: Option<Vec<ColumnFooterStats>> = None;
        for source in sources {
            let info = parquet_file_info(&source)
                .map_err(|e| bind_err!("cannot read {}: {e}", source.name()))?;
            match &schema {
                None => schema = Some(info.schema.clone()),
                Some(s) if s.fields() != info.schema.fields() => {
                    return Err(bind_err!(
                        "{} has other columns than the first file of {pattern}",
                        source.name()
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
                source,
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

    /// CSV files with a header row, by path, URL or glob; column types are inferred from the
    /// first file, and every file must have the same columns.
    pub fn open_csv(name: &str, pattern: &str) -> Result<Arc<ExternalTable>> {
        ExternalTable::open_text(name, pattern, FileFormat::Csv)
    }

    /// Files of JSON objects, one per line, by path, URL or glob; column types are inferred
    /// from the first file.
    pub fn open_json(name: &str, pattern: &str) -> Result<Arc<ExternalTable>> {
        ExternalTable::open_text(name, pattern, FileFormat::Json)
    }

    /// Files of a text format, which carry no footer: each is read whole.
    fn open_text(name: &str, pattern: &str, format: FileFormat) -> Result<Arc<ExternalTable>> {
        let sources = expand(pattern)?;
        let first = &sources[0];
        let schema = match format {
            FileFormat::Csv => csv_file_schema(first),
            FileFormat::Json => json_file_schema(first),
            FileFormat::Parquet => unreachable!("Parquet files are opened by their footers"),
        }
        .map_err(|e| bind_err!("cannot read {}: {e}", first.name()))?;
        let mut files = Vec::new();
        for source in sources {
            let size = source.size().unwrap_or(0);
            files.push(ExternalFile {
                source,
                // A guess for planning: text files carry no row count.
                rows: size / 64,
                row_groups: 1,
                footer: None,
            });
        }
        Ok(Arc::new(ExternalTable {
            name: name.to_string(),
            format,
            files,
            schema,
            columns: Vec::new(),
        }))
    }

    pub fn rows(&self) -> u64 {
        self.files.iter().map(|f| f.rows).sum()
    }
}

/// The files a path, URL or glob names (at least one).
fn expand(pattern: &str) -> Result<Vec<FileSource>> {
    FileSource::resolve(pattern).map_err(|e| bind_err!("{e}"))
}
