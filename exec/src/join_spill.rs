//! Hash joins whose build side outgrows the memory limit (a grace hash join). The build rows
//! are split by key hash over partitions written to disk; the probe rows are split the same
//! way as they arrive. Once the probe side is exhausted, each partition is joined on its own
//! by an in-memory `HashJoin`: equal keys hash alike, so every match is within a partition.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use arrow::array::{ArrayRef, NullArray, RecordBatch, RecordBatchOptions};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use pondra_planner::{Expr, JoinKind};

use crate::expr::evaluate_all;
use crate::join::HashJoin;
use crate::keys::{KeyEncoder, NullKeys};
use crate::memory::{MemoryPool, Reservation};
use crate::sink::Flow;
use crate::spill::{PartitionedSpill, SpillFile};
use crate::{ExecError, Result};

/// log2 of the partitions a spilled join splits its rows over: each holds about 1/32 of the
/// build side, so a build side up to about 32 times the limit joins within it. Each
/// partition's probe rows hold a file open while the probe side runs.
const SPILL_PARTITION_BITS: u32 = 5;

/// The hash bits that pick a spill partition: below those the hash tables of `join_table`
/// take their partitions from (51 to 56), and far above those a table's buckets use.
const SPILL_PARTITION_SHIFT: u32 = 44;

/// A build row holds about this many times its bytes once in a hash table.
const BUILD_OVERHEAD: usize = 2;

/// Whether a join of `kind` on `keys` can be joined partition by partition. A null-aware join
/// asks whether any build key is NULL, and a join without keys matches every pair: neither
/// can be split by key.
pub fn can_spill(kind: JoinKind, keys: &[Expr]) -> bool {
    !keys.is_empty() && !matches!(kind, JoinKind::MarkIn | JoinKind::NullAwareAnti)
}

/// The spill partition of each row's key.
fn partitions(encoder: &KeyEncoder, keys: &[ArrayRef]) -> Result<Vec<u8>> {
    let encoded = encoder.encode(keys, NullKeys::Skip)?;
    let mask = (1u64 << SPILL_PARTITION_BITS) - 1;
    Ok(encoded
        .hashes()
        .iter()
        .map(|hash| ((hash >> SPILL_PARTITION_SHIFT) & mask) as u8)
        .collect())
}

/// The sink of a join's build side: its rows in memory while the pool grants them, split
/// over partitions on disk once it does not (when the join can be split).
pub struct BuildSink {
    keys: Vec<Expr>,
    /// The build columns the keys read.
    key_columns: Vec<usize>,
    /// Encodes the build keys, when the join can spill.
    encoder: Option<KeyEncoder>,
    batches: Vec<RecordBatch>,
    reservation: Reservation,
    spill: Option<PartitionedSpill>,
    /// Once spilling, the build rows' key columns (the others NULL), while the pool grants
    /// them: the scan below the probe side drops the rows whose keys they lack.
    key_rows: Option<Vec<RecordBatch>>,
}

/// A join's build side, once its pipeline has run.
pub enum Built {
    InMemory {
        batches: Vec<RecordBatch>,
        /// What the build rows and their hash table hold, given back when the join is done.
        reservation: Reservation,
    },
    Spilled {
        encoder: KeyEncoder,
        partitions: Vec<Option<SpillFile>>,
        bytes: usize,
        /// The build rows with only their key columns, and the memory they hold.
        key_rows: Option<(Vec<RecordBatch>, Reservation)>,
    },
}

impl BuildSink {
    pub fn new(kind: JoinKind, keys: &[Expr], memory: &Arc<MemoryPool>) -> Result<BuildSink> {
        let encoder = match can_spill(kind, keys) {
            true => {
                let types: Vec<DataType> = keys.iter().map(Expr::data_type).collect();
                Some(KeyEncoder::new(&types)?)
            }
            false => None,
        };
        Ok(BuildSink {
            keys: keys.to_vec(),
            key_columns: keys.iter().flat_map(Expr::column_indices).collect(),
            encoder,
            batches: Vec::new(),
            reservation: memory.reservation(),
            spill: None,
            key_rows: None,
        })
    }

    /// Keeps `batch`'s key columns, if the pool grants them; else lets go of all kept.
    fn keep_keys(&mut self, batch: &RecordBatch) -> Result<()> {
        let Some(kept) = &mut self.key_rows else {
            return Ok(());
        };
        let schema = batch.schema();
        let mut fields = Vec::with_capacity(schema.fields().len());
        let mut columns = Vec::with_capacity(schema.fields().len());
        for (i, field) in schema.fields().iter().enumerate() {
            if self.key_columns.contains(&i) {
                fields.push(field.as_ref().clone());
                columns.push(batch.column(i).clone());
            } else {
                fields.push(Field::new(field.name(), DataType::Null, true));
                columns.push(Arc::new(NullArray::new(batch.num_rows())) as ArrayRef);
            }
        }
        let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
        let keys =
            RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), columns, &options)?;
        let bytes = keys.get_array_memory_size() * BUILD_OVERHEAD;
        if self.reservation.try_grow(bytes) {
            kept.push(keys);
        } else {
            self.key_rows = None;
            self.reservation.free();
        }
        Ok(())
    }

    pub fn sink(&mut self, batch: RecordBatch) -> Result<()> {
        if let (Some(spill), Some(encoder)) = (&self.spill, &self.encoder) {
            let keys = evaluate_all(&self.keys, &batch)?;
            spill.add_rows(&batch, &partitions(encoder, &keys)?)?;
            return self.keep_keys(&batch);
        }
        let bytes = batch.get_array_memory_size() * BUILD_OVERHEAD;
        if !self.reservation.try_grow(bytes) {
            if self.encoder.is_none() {
                // A join that cannot be split holds its build side a little past the limit,
                // and fails beyond.
                if !self.reservation.try_grow_unspillable(bytes) {
                    return Err(crate::ExecError::OutOfMemory {
                        limit: self.reservation.pool().limit(),
                    });
                }
            } else {
                self.start_spilling()?;
                return self.sink(batch);
            }
        }
        self.batches.push(batch);
        Ok(())
    }

    fn start_spilling(&mut self) -> Result<()> {
        let spill = PartitionedSpill::new(
            self.reservation.pool().spill_dir(),
            1 << SPILL_PARTITION_BITS,
        );
        let encoder = self.encoder.as_ref().expect("a join that can spill");
        let batches = std::mem::take(&mut self.batches);
        for batch in &batches {
            let keys = evaluate_all(&self.keys, batch)?;
            spill.add_rows(batch, &partitions(encoder, &keys)?)?;
        }
        self.reservation.free();
        self.spill = Some(spill);
        self.key_rows = Some(Vec::new());
        for batch in &batches {
            self.keep_keys(batch)?;
        }
        Ok(())
    }

    pub fn finish(self) -> Result<Built> {
        match (self.spill, self.encoder) {
            (Some(spill), Some(encoder)) => {
                let bytes = spill.bytes();
                Ok(Built::Spilled {
                    encoder,
                    partitions: spill.finish()?,
                    bytes,
                    key_rows: self.key_rows.map(|rows| (rows, self.reservation)),
                })
            }
            _ => Ok(Built::InMemory {
                batches: self.batches,
                reservation: self.reservation,
            }),
        }
    }
}

/// What a join is, apart from its build rows.
pub struct JoinSpec {
    pub kind: JoinKind,
    pub left_keys: Vec<Expr>,
    pub right_keys: Vec<Expr>,
    pub filter: Option<Expr>,
    pub schema: SchemaRef,
    pub build_schema: SchemaRef,
}

impl JoinSpec {
    /// The in-memory join of these build rows.
    pub fn build(&self, batches: &[RecordBatch]) -> Result<HashJoin> {
        HashJoin::new(
            self.kind,
            &self.left_keys,
            &self.right_keys,
            self.filter.as_ref(),
            self.schema.clone(),
            &self.build_schema,
            batches,
        )
    }
}

/// A join whose build side is on disk by partition: probe rows are written beside it, and
/// joined partition by partition once they have all come.
pub struct SpilledJoin {
    spec: JoinSpec,
    encoder: KeyEncoder,
    build: Mutex<Vec<Option<SpillFile>>>,
    /// Read-locked by the workers writing probe rows (each partition has its own lock),
    /// write-locked once to finish.
    probe: RwLock<Option<PartitionedSpill>>,
    memory: Arc<MemoryPool>,
    build_bytes: usize,
    /// The probe rows' bytes, once their spill is finished.
    probe_bytes: AtomicUsize,
    /// A join of the same keys over the build rows' key columns alone, which the scan below
    /// the probe side checks keys against as it reads (ADR 0020), and the memory it holds.
    keys: Option<(HashJoin, Reservation)>,
}

impl SpilledJoin {
    pub fn new(
        spec: JoinSpec,
        encoder: KeyEncoder,
        (build, build_bytes): (Vec<Option<SpillFile>>, usize),
        key_rows: Option<(Vec<RecordBatch>, Reservation)>,
        memory: &Arc<MemoryPool>,
    ) -> Result<SpilledJoin> {
        let probe = PartitionedSpill::new(memory.spill_dir(), build.len());
        let keys = match key_rows {
            Some((rows, reservation)) => {
                let schema = match rows.first() {
                    Some(first) => first.schema(),
                    None => spec.build_schema.clone(),
                };
                let join = HashJoin::new(
                    spec.kind,
                    &spec.left_keys,
                    &spec.right_keys,
                    None,
                    spec.schema.clone(),
                    &schema,
                    &rows,
                )?;
                Some((join, reservation))
            }
            None => None,
        };
        Ok(SpilledJoin {
            keys,
            spec,
            encoder,
            build: Mutex::new(build),
            probe: RwLock::new(Some(probe)),
            memory: memory.clone(),
            build_bytes,
            probe_bytes: AtomicUsize::new(0),
        })
    }

    /// The join of the build rows' keys alone, for the scan below to check keys against.
    pub fn key_filter(&self) -> Option<&HashJoin> {
        self.keys.as_ref().map(|(join, _)| join)
    }

    /// Writes a probe batch's rows to their partitions; they are joined in `finish_into`.
    pub fn probe(&self, batch: &RecordBatch) -> Result<Vec<RecordBatch>> {
        let keys = evaluate_all(&self.spec.left_keys, batch)?;
        let partitions = partitions(&self.encoder, &keys)?;
        let probe = self.probe.read().expect("probe spill lock");
        probe
            .as_ref()
            .expect("probe rows come before the join finishes")
            .add_rows(batch, &partitions)?;
        Ok(Vec::new())
    }

    /// The bytes of build and probe rows written to disk.
    pub fn spilled_bytes(&self) -> usize {
        let probe = self.probe.read().expect("probe spill lock");
        let probe_bytes = match probe.as_ref() {
            Some(spill) => spill.bytes(),
            None => self.probe_bytes.load(Ordering::Relaxed),
        };
        self.build_bytes + probe_bytes
    }

    /// Joins each partition's probe rows with its build rows, handing the output to `emit`.
    /// Partitions are joined on the thread pool, a few at a time; their rows reach `emit` on
    /// the calling thread (one partition after another when that is one of the pool's).
    pub fn finish_into(&self, emit: &mut dyn FnMut(RecordBatch) -> Result<()>) -> Result<()> {
        use rayon::prelude::*;
        let probe = self.probe.write().expect("probe spill lock").take();
        if let Some(spill) = &probe {
            self.probe_bytes.store(spill.bytes(), Ordering::Relaxed);
        }
        let probe = probe.map(PartitionedSpill::finish).transpose()?;
        let probe = probe.unwrap_or_default();
        let build = std::mem::take(&mut *self.build.lock().expect("build spill lock"));
        let emits_unmatched_build = matches!(
            self.spec.kind,
            JoinKind::Full | JoinKind::Right | JoinKind::RightAnti
        );
        let emits_unmatched_probe = matches!(
            self.spec.kind,
            JoinKind::Left | JoinKind::Full | JoinKind::Single | JoinKind::Anti | JoinKind::Mark
        );
        let partitions: Vec<(Option<SpillFile>, Option<SpillFile>)> = build
            .into_iter()
            .zip(probe)
            .filter(|(build, probe)| match (build, probe) {
                (None, None) => false,
                (Some(_), None) => emits_unmatched_build,
                (None, Some(_)) => emits_unmatched_probe,
                (Some(_), Some(_)) => true,
            })
            .collect();
        if rayon::current_thread_index().is_some() {
            // On one of the pool's threads, waiting on the others could leave none to work.
            for (build, probe) in partitions {
                self.join_partition(build, probe, emit)?;
            }
            return Ok(());
        }
        // A few batches in flight: the pool's threads wait while the caller catches up.
        let (sender, receiver) = std::sync::mpsc::sync_channel::<Result<RecordBatch>>(4);
        let control = crate::control::current();
        std::thread::scope(|scope| {
            scope.spawn(move || {
                partitions
                    .into_par_iter()
                    .for_each_with(sender, |sender, (build, probe)| {
                        let _entered = control.as_ref().map(|c| c.enter());
                        let mut send = |batch: RecordBatch| {
                            // A closed channel: the caller stopped on an error.
                            sender
                                .send(Ok(batch))
                                .map_err(|_| ExecError::Execution("join stopped".into()))
                        };
                        if let Err(error) = self.join_partition(build, probe, &mut send) {
                            let _ = sender.send(Err(error));
                        }
                    });
            });
            for batch in receiver {
                emit(batch?)?;
            }
            Ok(())
        })
    }

    /// Joins one partition's probe rows with its build rows.
    fn join_partition(
        &self,
        build: Option<SpillFile>,
        probe: Option<SpillFile>,
        emit: &mut dyn FnMut(RecordBatch) -> Result<()>,
    ) -> Result<()> {
        let spec = &self.spec;
        let batches: Vec<RecordBatch> = match build {
            Some(file) => file.read()?.collect::<Result<_>>()?,
            None => Vec::new(),
        };
        // A partition must be built whole; it is held even past the limit.
        let mut reservation = self.memory.reservation();
        reservation.grow(
            batches
                .iter()
                .map(|b| b.get_array_memory_size() * BUILD_OVERHEAD)
                .sum(),
        );
        let join = spec.build(&batches)?;
        drop(batches);
        if let Some(probe) = probe {
            for batch in probe.read()? {
                crate::control::check_current()?;
                join.probe(&batch?, &mut |out| {
                    emit(out)?;
                    Ok(Flow::More)
                })?;
            }
        }
        for out in join.finish()? {
            emit(out)?;
        }
        Ok(())
    }
}
