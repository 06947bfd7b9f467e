//! Rows written to disk when the memory pool refuses an operator more (`memory`): Arrow IPC
//! streams, LZ4-compressed, in temporary files (`pondra-spill-*`) deleted once read or
//! dropped. A finished file is closed until it is read, so that a query with many spilled
//! partitions holds few files open.

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use arrow::array::{RecordBatch, UInt32Array};
use arrow::compute::concat_batches;
use arrow::datatypes::SchemaRef;
use arrow::ipc::CompressionType;
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::{IpcWriteOptions, StreamWriter};
use tempfile::TempPath;

use crate::scan::as_schema;
use crate::{ExecError, Result};

/// Rows are buffered per partition until there are this many, then written as one batch.
pub const SPILL_BATCH_ROWS: usize = 8192;

fn spill_error(error: std::io::Error) -> ExecError {
    ExecError::Execution(format!("could not spill rows to disk: {error}"))
}

/// A spill file being written.
pub struct SpillWriter {
    writer: StreamWriter<BufWriter<File>>,
    path: TempPath,
    schema: SchemaRef,
    bytes: usize,
}

impl SpillWriter {
    pub fn new(dir: &Path, schema: &SchemaRef) -> Result<SpillWriter> {
        let (file, path) = tempfile::Builder::new()
            .prefix("pondra-spill-")
            .tempfile_in(dir)
            .map_err(spill_error)?
            .into_parts();
        let options =
            IpcWriteOptions::default().try_with_compression(Some(CompressionType::LZ4_FRAME))?;
        let writer = StreamWriter::try_new_with_options(BufWriter::new(file), schema, options)?;
        Ok(SpillWriter {
            writer,
            path,
            schema: schema.clone(),
            bytes: 0,
        })
    }

    /// Appends `batch`, whose columns are cast to the file's types if they differ (a string
    /// column may come as a dictionary in one batch and plain in another).
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.bytes += batch.get_array_memory_size();
        if batch.schema().fields() == self.schema.fields() {
            return Ok(self.writer.write(batch)?);
        }
        Ok(self.writer.write(&as_schema(batch, &self.schema)?)?)
    }

    pub fn finish(mut self) -> Result<SpillFile> {
        self.writer.finish()?;
        // Flushed, then closed until read.
        self.writer
            .into_inner()?
            .into_inner()
            .map_err(|e| spill_error(e.into_error()))?;
        Ok(SpillFile {
            path: self.path,
            bytes: self.bytes,
        })
    }
}

/// A finished spill file, to be read back once.
pub struct SpillFile {
    path: TempPath,
    /// The in-memory size of the rows written, as counted against the pool.
    bytes: usize,
}

impl SpillFile {
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The file's batches, in the order they were written.
    pub fn read(self) -> Result<impl Iterator<Item = Result<RecordBatch>>> {
        let file = File::open(&self.path).map_err(spill_error)?;
        // The open file stays readable once its name is gone.
        self.path.close().map_err(spill_error)?;
        let reader = StreamReader::try_new(BufReader::new(file), None)?;
        Ok(reader.map(|batch| Ok(batch?)))
    }
}

/// Rows split over a fixed number of partitions, each written to a file of its own in
/// batches of about `SPILL_BATCH_ROWS`. Writers on several threads may add to it at once.
pub struct PartitionedSpill {
    dir: std::path::PathBuf,
    partitions: Vec<Mutex<PartitionWriter>>,
    /// The in-memory bytes of the rows added so far.
    bytes: AtomicUsize,
}

#[derive(Default)]
struct PartitionWriter {
    buffered: Vec<RecordBatch>,
    buffered_rows: usize,
    writer: Option<SpillWriter>,
}

impl PartitionedSpill {
    pub fn new(dir: &Path, partitions: usize) -> PartitionedSpill {
        PartitionedSpill {
            dir: dir.to_path_buf(),
            partitions: (0..partitions).map(|_| Mutex::default()).collect(),
            bytes: AtomicUsize::new(0),
        }
    }

    /// The in-memory bytes of the rows added so far.
    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Adds `batch` to `partition`.
    pub fn add(&self, partition: usize, batch: RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.bytes
            .fetch_add(batch.get_array_memory_size(), Ordering::Relaxed);
        let mut part = self.partitions[partition]
            .lock()
            .expect("spill partition lock");
        part.buffered_rows += batch.num_rows();
        part.buffered.push(batch);
        if part.buffered_rows >= SPILL_BATCH_ROWS {
            part.flush(&self.dir)?;
        }
        Ok(())
    }

    /// Adds each row of `batch` to the partition `partition_of` gives it.
    pub fn add_rows(&self, batch: &RecordBatch, partition_of: &[u8]) -> Result<()> {
        let mut rows: Vec<Vec<u32>> = vec![Vec::new(); self.partitions.len()];
        for (row, &partition) in partition_of.iter().enumerate() {
            rows[partition as usize].push(row as u32);
        }
        for (partition, rows) in rows.into_iter().enumerate() {
            if rows.len() == batch.num_rows() {
                return self.add(partition, batch.clone());
            }
            if !rows.is_empty() {
                let taken = arrow::compute::take_record_batch(batch, &UInt32Array::from(rows))?;
                self.add(partition, taken)?;
            }
        }
        Ok(())
    }

    /// Each partition's file (`None` for a partition that got no rows).
    pub fn finish(self) -> Result<Vec<Option<SpillFile>>> {
        let mut files = Vec::with_capacity(self.partitions.len());
        for part in self.partitions {
            let mut part = part.into_inner().expect("spill partition lock");
            part.flush(&self.dir)?;
            files.push(part.writer.map(SpillWriter::finish).transpose()?);
        }
        Ok(files)
    }
}

impl PartitionWriter {
    fn flush(&mut self, dir: &Path) -> Result<()> {
        let Some(first) = self.buffered.first() else {
            return Ok(());
        };
        let writer = match &mut self.writer {
            Some(writer) => writer,
            None => self.writer.insert(SpillWriter::new(dir, &first.schema())?),
        };
        let schema = writer.schema.clone();
        let batches: Vec<RecordBatch> = self
            .buffered
            .drain(..)
            .map(|b| match b.schema() == schema {
                true => Ok(b),
                false => as_schema(&b, &schema),
            })
            .collect::<Result<_>>()?;
        writer.write(&concat_batches(&schema, &batches)?)?;
        self.buffered_rows = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    fn batch(values: std::ops::Range<i64>) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("n", DataType::Int64, false),
            Field::new("s", DataType::Utf8, true),
        ]));
        let strings: StringArray = values.clone().map(|v| Some(format!("v{v}"))).collect();
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from_iter_values(values)),
                Arc::new(strings),
            ],
        )
        .unwrap()
    }

    #[test]
    fn partitions_read_back_every_row_they_were_given() {
        let spill = PartitionedSpill::new(&std::env::temp_dir(), 4);
        for start in (0..20_000).step_by(1000) {
            let rows = batch(start..start + 1000);
            let partitions: Vec<u8> = (start..start + 1000).map(|v| (v % 4) as u8).collect();
            spill.add_rows(&rows, &partitions).unwrap();
        }
        assert!(spill.bytes() > 0);
        let files = spill.finish().unwrap();
        for (partition, file) in files.into_iter().enumerate() {
            let mut seen = Vec::new();
            for batch in file.unwrap().read().unwrap() {
                let batch = batch.unwrap();
                let n = batch
                    .column(0)
                    .as_any()
                    .downcast_ref::<Int64Array>()
                    .unwrap();
                seen.extend(n.values().iter().copied());
            }
            let expected: Vec<i64> = (0..20_000).filter(|v| v % 4 == partition as i64).collect();
            assert_eq!(seen, expected);
        }
    }
}
