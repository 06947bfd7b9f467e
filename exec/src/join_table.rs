//! The key table of a hash join's build side, built on every thread of the pool.
//!
//! Build rows are split into partitions by their key's hash, so each partition's keys and rows
//! are built by one task without locks, as in radix-partitioned hash joins: first every build
//! batch's keys are evaluated, encoded and hashed, and its rows grouped by partition (one task
//! per batch); then each partition interns its rows' keys in its own index and groups its rows
//! by key (one task per partition). A probe row's hash picks the one partition its key can be
//! in.

use arrow::array::{ArrayRef, BooleanArray, BooleanBufferBuilder, RecordBatch};
use arrow::buffer::BooleanBuffer;
use arrow::compute::filter;
use arrow::datatypes::DataType;
use pondra_planner::Expr;
use rayon::prelude::*;

use crate::Result;
use crate::dense_keys::{DenseKeys, KeyBitmap, KeyRange};
use crate::expr::evaluate_all;
use crate::keys::{EncodedKeys, Key, KeyEncoder, KeyIndex, NO_KEY, NullKeys, PackedKeys};
use crate::word_slots::WordSlots;

/// Builds of fewer rows stay in one partition: splitting them costs more than it saves.
const SMALL_BUILD_ROWS: usize = 100_000;

/// Larger builds are split into 64 partitions (log2). That is more than the workers, so that
/// partitions of uneven size still keep every worker busy until the end, and it keeps each
/// partition's table small: at TPC-H scale 10, 64 partitions built faster than 16.
const PARTITION_BITS: u32 = 6;

/// Where hashbrown takes the 7-bit tag of a hash that it compares before a key. Partitions are
/// taken from the bits just below it: the tag keeps all its bits in every partition's table,
/// and the low bits, which pick a bucket, are left to the tables.
const TAG_SHIFT: u32 = 57;

/// The build side's keys: for each distinct key, the build rows that hold it.
pub struct JoinTable {
    keys: Keys,
    has_null_key: bool,
    /// Per key column of an integer or date type, its least and greatest build key.
    bounds: Vec<Option<(i64, i64)>>,
}

enum Keys {
    /// One integer key column with dense values: a slot per value.
    Dense(DenseKeys),
    Hashed(HashedKeys),
}

/// Keys hashed into partitions.
struct HashedKeys {
    /// For each key column of integers not too sparse, which of its values the build rows
    /// hold: a single column's answers membership without hashing; one of several columns
    /// rules out the probe rows whose value in it no build row has.
    bitmaps: Vec<Option<KeyBitmap>>,
    encoder: KeyEncoder,
    /// log2 of the number of partitions.
    partition_bits: u32,
    partitions: Vec<Partition>,
}

/// The keys of the build rows whose hashes fall in one partition.
struct Partition {
    keys: PartitionKeys,
    /// The partition's build rows, grouped by key and in build order within a key.
    rows: Vec<u32>,
}

/// A partition's keys, each with where its rows are in `Partition::rows`.
enum PartitionKeys {
    /// Keys packed into words (most join keys): slots built for probing.
    Word64(WordSlots<u64>),
    Word128(WordSlots<[u64; 2]>),
    /// Keys in row format, by id; `starts[id]` is where the key's rows start, and one more
    /// entry ends the last key's.
    Index {
        index: Box<KeyIndex>,
        starts: Vec<u32>,
    },
}

/// One build batch's rows without a NULL key, grouped by partition so that each partition's
/// task reads only its own rows' keys.
struct BatchKeys {
    /// The keys of `rows`.
    keys: EncodedKeys,
    /// For each partition, where its rows start in `rows`; one more entry ends the last one's.
    starts: Vec<u32>,
    /// The batch's rows, by partition, in batch order within a partition.
    rows: Vec<u32>,
}

impl JoinTable {
    /// Builds the table of `key_exprs` over `batches`, whose rows are numbered in order across
    /// the batches (as in their concatenation).
    pub fn build(key_exprs: &[Expr], batches: &[RecordBatch]) -> Result<JoinTable> {
        let keys = evaluate_keys(key_exprs, batches)?;
        let mut bitmaps = Vec::with_capacity(key_exprs.len());
        let mut bounds = Vec::with_capacity(key_exprs.len());
        for (position, key_expr) in key_exprs.iter().enumerate() {
            let columns: Vec<ArrayRef> = keys.iter().map(|k| k[position].clone()).collect();
            let Some(range) = KeyRange::of(&key_expr.data_type(), &columns)? else {
                bitmaps.push(None);
                bounds.push(None);
                continue;
            };
            bounds.push(Some(range.bounds()));
            let range = match key_exprs.len() {
                1 => match DenseKeys::build(range) {
                    Ok(dense) => {
                        return Ok(JoinTable {
                            keys: Keys::Dense(dense),
                            has_null_key: columns.iter().any(|c| c.null_count() > 0),
                            bounds,
                        });
                    }
                    Err(range) => range,
                },
                _ => range,
            };
            bitmaps.push(KeyBitmap::build(range));
        }
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        let partition_bits = if rows < SMALL_BUILD_ROWS {
            0
        } else {
            PARTITION_BITS
        };
        let mut table = JoinTable::hashed(key_exprs, &keys, partition_bits)?;
        if let Keys::Hashed(hashed) = &mut table.keys {
            hashed.bitmaps = bitmaps;
        }
        table.bounds = bounds;
        Ok(table)
    }

    /// Hashes the keys (for each batch, its key columns) into `1 << partition_bits`
    /// partitions.
    fn hashed(
        key_exprs: &[Expr],
        keys: &[Vec<ArrayRef>],
        partition_bits: u32,
    ) -> Result<JoinTable> {
        let types: Vec<DataType> = key_exprs.iter().map(Expr::data_type).collect();
        let encoder = KeyEncoder::new(&types)?;
        let batch_keys = keys
            .par_iter()
            .map(|keys| {
                let keys = encoder.encode(keys, NullKeys::Skip)?;
                Ok(BatchKeys::new(&encoder, &keys, partition_bits))
            })
            .collect::<Result<Vec<_>>>()?;
        let batch_rows = |keys: &Vec<ArrayRef>| keys.first().map_or(0, |k| k.len());
        let has_null_key = batch_keys
            .iter()
            .zip(keys)
            .any(|(encoded, keys)| encoded.rows.len() < batch_rows(keys));
        let mut first_rows = Vec::with_capacity(keys.len());
        let mut first_row = 0u32;
        for keys in keys {
            first_rows.push(first_row);
            first_row += batch_rows(keys) as u32;
        }
        let partitions = (0..1usize << partition_bits)
            .into_par_iter()
            .map(|partition| Partition::build(&types, &batch_keys, &first_rows, partition))
            .collect::<Result<Vec<_>>>()?;
        Ok(JoinTable {
            keys: Keys::Hashed(HashedKeys {
                bitmaps: Vec::new(),
                encoder,
                partition_bits,
                partitions,
            }),
            has_null_key,
            bounds: Vec::new(),
        })
    }

    /// How many partitions the build rows were hashed into (none when addressed directly).
    #[cfg(test)]
    pub fn partition_count(&self) -> usize {
        match &self.keys {
            Keys::Dense(_) => 0,
            Keys::Hashed(hashed) => hashed.partitions.len(),
        }
    }

    /// Whether some build row has a NULL in a key column (such rows match nothing).
    /// The least and greatest build key of key column `position`, when it is an integer or
    /// date column.
    pub fn key_bounds(&self, position: usize) -> Option<(i64, i64)> {
        self.bounds.get(position).copied().flatten()
    }

    pub fn has_null_key(&self) -> bool {
        self.has_null_key
    }

    /// For each probe row, whether some build row has its key (NULL keys have none).
    pub fn contains(&self, keys: &[ArrayRef]) -> Result<BooleanBuffer> {
        let hashed = match &self.keys {
            Keys::Dense(dense) => return dense.contains(&keys[0]),
            Keys::Hashed(hashed) => match (&hashed.bitmaps[..], keys) {
                ([Some(bitmap)], [key]) => return bitmap.contains(key),
                _ => hashed,
            },
        };
        // Of several key columns, those with a bitmap rule rows out first, so that only the
        // rest are encoded and looked up (a join's other keys often narrow its probe rows to
        // a few, as q9's part keys narrow partsupp's part and supplier pairs).
        let positions: Vec<usize> = (0..keys.len()).filter(|&p| self.knows_column(p)).collect();
        if positions.is_empty() {
            return hashed.contains(keys);
        }
        let values: Vec<ArrayRef> = positions.iter().map(|&p| keys[p].clone()).collect();
        let known = self.contains_in_columns(&positions, &values)?;
        let candidates = known.count_set_bits();
        if candidates == 0 || candidates == known.len() {
            return match candidates {
                0 => Ok(known),
                _ => hashed.contains(keys),
            };
        }
        let mask = BooleanArray::new(known.clone(), None);
        let narrowed = keys
            .iter()
            .map(|key| Ok(filter(key, &mask)?))
            .collect::<Result<Vec<_>>>()?;
        let found = hashed.contains(&narrowed)?;
        let mut contains = BooleanBufferBuilder::new(known.len());
        contains.append_n(known.len(), false);
        for (candidate, row) in known.set_indices().enumerate() {
            if found.value(candidate) {
                contains.set_bit(row, true);
            }
        }
        Ok(contains.finish())
    }

    /// Whether `contains_in_columns` can answer for key column `position`.
    pub fn knows_column(&self, position: usize) -> bool {
        match &self.keys {
            Keys::Dense(_) => position == 0,
            Keys::Hashed(hashed) => hashed.bitmaps.get(position).is_some_and(Option::is_some),
        }
    }

    /// For each probe row, whether for each of `columns` (key column positions, each one
    /// `knows_column` is true for) some build row has its value there. `values` are the
    /// probe batch's values of those key columns. A row without is in no build row's key.
    pub fn contains_in_columns(
        &self,
        columns: &[usize],
        values: &[ArrayRef],
    ) -> Result<BooleanBuffer> {
        let mut keep = BooleanBuffer::new_set(values.first().map_or(0, |v| v.len()));
        for (&position, value) in columns.iter().zip(values) {
            let has = match &self.keys {
                Keys::Dense(dense) => dense.contains(value)?,
                Keys::Hashed(hashed) => match &hashed.bitmaps[position] {
                    Some(bitmap) => bitmap.contains(value)?,
                    None => unreachable!("a key column the table knows"),
                },
            };
            keep = &keep & &has;
        }
        Ok(keep)
    }

    /// Appends every pair of a probe row and a build row with equal keys, probe row by probe
    /// row and each probe row's build rows in build order. `keys` are the probe batch's key
    /// columns.
    ///
    /// Stops after the first probe row that takes the pairs past `max_pairs`, so that a key
    /// many build rows share cannot make one batch's pairs unbounded; returns how many probe
    /// rows it went through, all of whose pairs it appended.
    pub fn matches(
        &self,
        keys: &[ArrayRef],
        max_pairs: usize,
        probe: &mut Vec<u32>,
        build: &mut Vec<u32>,
    ) -> Result<usize> {
        let hashed = match &self.keys {
            Keys::Dense(dense) => return dense.matches(&keys[0], max_pairs, probe, build),
            Keys::Hashed(hashed) => hashed,
        };
        let keys = hashed.encoder.encode(keys, NullKeys::Skip)?;
        for row in 0..keys.len() {
            if probe.len() >= max_pairs {
                return Ok(row);
            }
            hashed.prefetch_ahead(&keys, row);
            let rows = hashed.partition(keys.hash(row)).rows_matching(&keys, row);
            if rows.is_empty() {
                continue;
            }
            probe.extend(std::iter::repeat_n(row as u32, rows.len()));
            build.extend_from_slice(rows);
        }
        Ok(keys.len())
    }
}

impl HashedKeys {
    /// The partition a key with this hash is in.
    #[inline]
    fn partition(&self, hash: u64) -> &Partition {
        &self.partitions[partition_of(hash, self.partition_bits)]
    }

    /// For each probe row, whether some build row has its key.
    fn contains(&self, keys: &[ArrayRef]) -> Result<BooleanBuffer> {
        let keys = self.encoder.encode(keys, NullKeys::Skip)?;
        Ok(BooleanBuffer::collect_bool(keys.len(), |row| {
            self.prefetch_ahead(&keys, row);
            !self
                .partition(keys.hash(row))
                .rows_matching(&keys, row)
                .is_empty()
        }))
    }

    /// Prefetches the slot of the probe row `PREFETCH_AHEAD` rows after `row`.
    #[inline]
    fn prefetch_ahead(&self, keys: &EncodedKeys, row: usize) {
        if let Some(hash) = keys.hashes().get(row + PREFETCH_AHEAD) {
            self.partition(*hash).prefetch(*hash);
        }
    }
}

/// Each batch's key columns, evaluated on every thread.
fn evaluate_keys(key_exprs: &[Expr], batches: &[RecordBatch]) -> Result<Vec<Vec<ArrayRef>>> {
    let control = crate::control::current();
    batches
        .par_iter()
        .map(|batch| {
            let _entered = control.as_ref().map(|c| c.enter());
            evaluate_all(key_exprs, batch)
        })
        .collect()
}

impl Partition {
    /// Interns the keys of `partition`'s rows of every batch, batch by batch so that rows stay
    /// in build order.
    fn build(
        types: &[DataType],
        batches: &[BatchKeys],
        first_rows: &[u32],
        partition: usize,
    ) -> Result<Partition> {
        let mut index = KeyIndex::new(types)?;
        let row_count = batches
            .iter()
            .map(|b| (b.starts[partition + 1] - b.starts[partition]) as usize)
            .sum();
        let mut ids = Vec::with_capacity(row_count);
        let mut rows = Vec::with_capacity(row_count);
        // Each key's hash, by id.
        let mut hashes = Vec::new();
        for (batch, &first_row) in batches.iter().zip(first_rows) {
            let start = batch.starts[partition] as usize;
            let end = batch.starts[partition + 1] as usize;
            for (position, &row) in batch.rows.iter().enumerate().take(end).skip(start) {
                let (id, new) = index.intern_row(&batch.keys, position);
                if new {
                    hashes.push(batch.keys.hash(position));
                }
                ids.push(id);
                rows.push(first_row + row);
            }
        }
        // Every row a key of its own (a primary key's table): rows are already grouped.
        if index.len() == rows.len() {
            let starts = (0..=rows.len() as u32).collect();
            return Ok(Partition::new(index, &hashes, starts, rows));
        }
        let mut starts = vec![0u32; index.len() + 1];
        for &id in &ids {
            starts[id as usize + 1] += 1;
        }
        for id in 0..index.len() {
            starts[id + 1] += starts[id];
        }
        // A stable counting sort by key id keeps each key's rows in build order.
        let mut next_slot = starts.clone();
        let mut grouped = vec![0u32; rows.len()];
        for (&row, &id) in rows.iter().zip(&ids) {
            grouped[next_slot[id as usize] as usize] = row;
            next_slot[id as usize] += 1;
        }
        Ok(Partition::new(index, &hashes, starts, grouped))
    }

    /// The partition of keys interned in `index` (`hashes` by id), key `id` holding the rows
    /// `rows[starts[id]..starts[id + 1]]`.
    fn new(index: KeyIndex, hashes: &[u64], starts: Vec<u32>, rows: Vec<u32>) -> Partition {
        let keys = match index.packed_keys() {
            Some(PackedKeys::Word64(words)) => {
                PartitionKeys::Word64(WordSlots::build(words, hashes, &starts, &rows))
            }
            Some(PackedKeys::Word128(words)) => {
                let words: Vec<[u64; 2]> = words.iter().map(|&w| split_word(w)).collect();
                PartitionKeys::Word128(WordSlots::build(&words, hashes, &starts, &rows))
            }
            None => PartitionKeys::Index {
                index: Box::new(index),
                starts,
            },
        };
        Partition { keys, rows }
    }

    /// The build rows with `keys`' key at `row` (none when it has a NULL).
    #[inline]
    fn rows_matching(&self, keys: &EncodedKeys, row: usize) -> &[u32] {
        if keys.has_null(row) {
            return &[];
        }
        let hash = keys.hash(row);
        match (&self.keys, keys.key(row)) {
            (PartitionKeys::Word64(slots), Key::Word64(word)) => slots.find(hash, word, &self.rows),
            (PartitionKeys::Word128(slots), Key::Word128(word)) => {
                slots.find(hash, split_word(word), &self.rows)
            }
            // A key in row format (its string is too long to pack) is in no table of words.
            (PartitionKeys::Word64(_) | PartitionKeys::Word128(_), _) => &[],
            (PartitionKeys::Index { index, starts }, _) => match index.lookup_row(keys, row) {
                NO_KEY => &[],
                id => {
                    let id = id as usize;
                    &self.rows[starts[id] as usize..starts[id + 1] as usize]
                }
            },
        }
    }

    /// Asks for the slot a key of this hash is looked up at, ahead of the lookup.
    #[inline]
    fn prefetch(&self, hash: u64) {
        match &self.keys {
            PartitionKeys::Word64(slots) => slots.prefetch(hash),
            PartitionKeys::Word128(slots) => slots.prefetch(hash),
            PartitionKeys::Index { .. } => {}
        }
    }
}

/// A 128-bit packed key as two words, so that a slot holding it is aligned to 8 bytes (24
/// bytes a slot rather than 32).
#[inline]
fn split_word(word: u128) -> [u64; 2] {
    [word as u64, (word >> 64) as u64]
}

/// How many probe rows ahead a probe asks for its slot: enough for the misses of several
/// probes to overlap, few enough that the slots are still cached when they are read.
const PREFETCH_AHEAD: usize = 16;

impl BatchKeys {
    /// Groups the batch's rows without a NULL key by partition (a counting sort, so that each
    /// partition's rows stay in order), with their keys.
    fn new(encoder: &KeyEncoder, keys: &EncodedKeys, partition_bits: u32) -> BatchKeys {
        let partitions = 1usize << partition_bits;
        let mut starts = vec![0u32; partitions + 1];
        for row in 0..keys.len() {
            if !keys.has_null(row) {
                starts[partition_of(keys.hash(row), partition_bits) + 1] += 1;
            }
        }
        for p in 0..partitions {
            starts[p + 1] += starts[p];
        }
        let mut next_slot = starts.clone();
        let mut rows = vec![0u32; starts[partitions] as usize];
        for row in 0..keys.len() {
            if !keys.has_null(row) {
                let p = partition_of(keys.hash(row), partition_bits);
                rows[next_slot[p] as usize] = row as u32;
                next_slot[p] += 1;
            }
        }
        BatchKeys {
            keys: encoder.gather(keys, &rows),
            starts,
            rows,
        }
    }
}

/// The partition of a key with this hash, of `1 << partition_bits`.
fn partition_of(hash: u64, partition_bits: u32) -> usize {
    let mask = (1u64 << partition_bits) - 1;
    ((hash >> (TAG_SHIFT - partition_bits)) & mask) as usize
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int32Array, Int64Array, StringArray};
    use arrow::datatypes::{Field, Schema};

    use super::*;

    fn column(index: usize, data_type: DataType) -> Expr {
        Expr::Column {
            index,
            name: format!("c{index}"),
            data_type,
        }
    }

    /// Batches of `rows` rows, `per_batch` rows each, from columns made of row numbers.
    fn batches(
        rows: usize,
        per_batch: usize,
        columns: &[(DataType, &dyn Fn(usize) -> ArrayRef)],
    ) -> Vec<RecordBatch> {
        let fields: Vec<Field> = columns
            .iter()
            .enumerate()
            .map(|(i, (t, _))| Field::new(format!("c{i}"), t.clone(), true))
            .collect();
        let schema = Arc::new(Schema::new(fields));
        (0..rows)
            .step_by(per_batch)
            .map(|start| {
                let end = (start + per_batch).min(rows);
                let arrays = columns
                    .iter()
                    .map(|(_, make)| make(start).slice(0, end - start))
                    .collect();
                RecordBatch::try_new(schema.clone(), arrays).unwrap()
            })
            .collect()
    }

    /// Every (probe row, build row) pair with equal keys, probe row by probe row and each
    /// probe row's build rows in build order, found by comparing every pair; `key(batches,
    /// row)` is a row's key or `None` when it has a NULL.
    fn nested_loop<K: PartialEq>(
        probe_rows: usize,
        build_rows: usize,
        probe_key: impl Fn(usize) -> Option<K>,
        build_key: impl Fn(usize) -> Option<K>,
    ) -> (Vec<u32>, Vec<u32>) {
        let (mut probe, mut build) = (Vec::new(), Vec::new());
        for p in 0..probe_rows {
            let Some(key) = probe_key(p) else { continue };
            for b in 0..build_rows {
                if build_key(b).as_ref() == Some(&key) {
                    probe.push(p as u32);
                    build.push(b as u32);
                }
            }
        }
        (probe, build)
    }

    fn matches(table: &JoinTable, probe_keys: &[ArrayRef]) -> (Vec<u32>, Vec<u32>) {
        let (mut probe, mut build) = (Vec::new(), Vec::new());
        let rows = table
            .matches(probe_keys, usize::MAX, &mut probe, &mut build)
            .unwrap();
        assert_eq!(rows, probe_keys[0].len());
        (probe, build)
    }

    /// A hashed table, whatever the keys, in `1 << partition_bits` partitions.
    fn build_partitioned(keys: &[Expr], batches: &[RecordBatch], bits: u32) -> Result<JoinTable> {
        JoinTable::hashed(keys, &evaluate_keys(keys, batches)?, bits)
    }

    fn used_partitions(table: &JoinTable) -> usize {
        let Keys::Hashed(hashed) = &table.keys else {
            panic!("a hashed table")
        };
        hashed
            .partitions
            .iter()
            .filter(|p| !p.rows.is_empty())
            .count()
    }

    /// Build key of row `r`: 0..701 repeating with a stride, so most keys appear several
    /// times far apart, in different batches; every 13th row NULL.
    fn int_key(r: usize) -> Option<i64> {
        (r % 13 != 5).then_some(((r * 7) % 701) as i64)
    }

    fn int_keys(first: usize, rows: usize, key: impl Fn(usize) -> Option<i64>) -> ArrayRef {
        Arc::new(Int64Array::from_iter((first..first + rows).map(key)))
    }

    #[test]
    fn partitioned_integer_keys_match_as_a_nested_loop_does() {
        let build_rows = 3_000;
        let build = batches(
            build_rows,
            256,
            &[(DataType::Int64, &|first| int_keys(first, 256, int_key))],
        );
        // Keys in and out of the build side, in another order, some NULL.
        let probe_key = |r: usize| (r % 11 != 3).then_some(((r * 5) % 900) as i64);
        let probe = int_keys(0, 1_000, probe_key);
        let expected = nested_loop(1_000, build_rows, probe_key, int_key);
        assert!(expected.0.len() > 1_000, "keys repeat on the build side");
        for bits in [0, 1, 4, PARTITION_BITS] {
            let table = build_partitioned(&[column(0, DataType::Int64)], &build, bits).unwrap();
            assert_eq!(used_partitions(&table), 1 << bits, "{bits} partition bits");
            assert!(table.has_null_key());
            assert_eq!(matches(&table, std::slice::from_ref(&probe)), expected);
        }
    }

    #[test]
    fn dense_integer_keys_match_as_hashed_keys_do() {
        let build_rows = 3_000;
        let build = batches(
            build_rows,
            256,
            &[(DataType::Int64, &|first| int_keys(first, 256, int_key))],
        );
        let probe_key = |r: usize| (r % 11 != 3).then_some(((r * 5) % 900) as i64 - 100);
        let probe = int_keys(0, 1_000, probe_key);
        let expected = nested_loop(1_000, build_rows, probe_key, int_key);
        let key = [column(0, DataType::Int64)];
        let table = JoinTable::build(&key, &build).unwrap();
        assert!(
            matches!(table.keys, Keys::Dense(_)),
            "keys 0..701 are dense"
        );
        assert!(table.has_null_key());
        assert_eq!(matches(&table, std::slice::from_ref(&probe)), expected);
        let hashed = build_partitioned(&key, &build, 0).unwrap();
        let contains = |t: &JoinTable| t.contains(std::slice::from_ref(&probe)).unwrap();
        assert_eq!(contains(&table), contains(&hashed));
    }

    #[test]
    fn sparse_integer_keys_are_hashed_and_answer_membership_from_a_bitmap() {
        // 3,000 rows over a range of 70,100: too sparse for slots, not for bits.
        let sparse_key = |r: usize| int_key(r).map(|k| k * 100);
        let build = batches(
            3_000,
            256,
            &[(DataType::Int64, &|first| int_keys(first, 256, sparse_key))],
        );
        let probe_key = |r: usize| (r % 11 != 3).then_some(((r * 5) % 900) as i64 * 50);
        let probe = int_keys(0, 2_000, probe_key);
        let key = [column(0, DataType::Int64)];
        let table = JoinTable::build(&key, &build).unwrap();
        let Keys::Hashed(hashed) = &table.keys else {
            panic!("sparse keys are hashed")
        };
        assert!(matches!(hashed.bitmaps[..], [Some(_)]));
        let expected = nested_loop(2_000, 3_000, probe_key, sparse_key);
        assert_eq!(matches(&table, std::slice::from_ref(&probe)), expected);
        let contains = table.contains(std::slice::from_ref(&probe)).unwrap();
        let matched: std::collections::HashSet<u32> = expected.0.into_iter().collect();
        assert!(contains.iter().any(|c| !c));
        for (row, has_key) in contains.into_iter().enumerate() {
            assert_eq!(has_key, matched.contains(&(row as u32)), "row {row}");
        }
    }

    #[test]
    fn one_column_of_a_multi_column_key_answers_for_its_values() {
        let first = |r: usize| (r % 13 != 5).then_some((r % 300) as i64 * 40);
        let second = |r: usize| Some((r % 7) as i64);
        let build = batches(
            2_000,
            500,
            &[
                (DataType::Int64, &|start| int_keys(start, 500, first)),
                (DataType::Int64, &|start| int_keys(start, 500, second)),
            ],
        );
        let keys = [column(0, DataType::Int64), column(1, DataType::Int64)];
        let table = JoinTable::build(&keys, &build).unwrap();
        assert!(table.knows_column(0) && table.knows_column(1));
        let probe_first = |r: usize| (r % 17 != 2).then_some(r as i64 * 20);
        let probe = int_keys(0, 1_000, probe_first);
        let values: std::collections::HashSet<i64> = (0..2_000).filter_map(first).collect();
        let expected: Vec<bool> = (0..1_000)
            .map(|r| probe_first(r).is_some_and(|v| values.contains(&v)))
            .collect();
        assert!(expected.iter().any(|e| *e) && expected.iter().any(|e| !e));
        let contained = table.contains_in_columns(&[0], &[probe]).unwrap();
        assert_eq!(contained.iter().collect::<Vec<_>>(), expected);
        // Strings keep no bitmap.
        let strings = [column(0, DataType::Utf8), column(1, DataType::Int64)];
        let names = |start: usize| -> ArrayRef {
            Arc::new(StringArray::from_iter(
                (start..start + 10).map(|r| Some(r.to_string())),
            ))
        };
        let build = batches(
            10,
            10,
            &[
                (DataType::Utf8, &names),
                (DataType::Int64, &|s| int_keys(s, 10, second)),
            ],
        );
        let table = JoinTable::build(&strings, &build).unwrap();
        assert!(!table.knows_column(0) && table.knows_column(1));
    }

    #[test]
    fn partitioned_string_and_multi_column_keys_match_as_a_nested_loop_does() {
        let build_rows = 2_000;
        let name = |r: usize| (r % 17 != 2).then(|| format!("name-{}", (r * 3) % 301));
        let number = |r: usize| (r % 19 != 4).then_some((r % 4) as i32);
        let names = |first: usize| -> ArrayRef {
            Arc::new(StringArray::from_iter((first..first + 200).map(name)))
        };
        let numbers = |first: usize| -> ArrayRef {
            Arc::new(Int32Array::from_iter((first..first + 200).map(number)))
        };
        let build = batches(
            build_rows,
            200,
            &[(DataType::Utf8, &names), (DataType::Int32, &numbers)],
        );
        let probe_name = |r: usize| (r % 23 != 1).then(|| format!("name-{}", r % 350));
        let probe_number = |r: usize| Some((r % 5) as i32);
        let probe_names: ArrayRef = Arc::new(StringArray::from_iter((0..700).map(probe_name)));
        let probe_numbers: ArrayRef = Arc::new(Int32Array::from_iter((0..700).map(probe_number)));
        let both = |n: Option<String>, i: Option<i32>| n.zip(i);

        // A string key alone, in Arrow's row format.
        let expected = nested_loop(700, build_rows, probe_name, name);
        let table = build_partitioned(&[column(0, DataType::Utf8)], &build, 4).unwrap();
        assert_eq!(used_partitions(&table), 16);
        assert_eq!(
            matches(&table, std::slice::from_ref(&probe_names)),
            expected
        );

        // Two columns, a string and an integer.
        let expected = nested_loop(
            700,
            build_rows,
            |r| both(probe_name(r), probe_number(r)),
            |r| both(name(r), number(r)),
        );
        assert!(!expected.0.is_empty());
        let keys = [column(0, DataType::Utf8), column(1, DataType::Int32)];
        let table = build_partitioned(&keys, &build, 4).unwrap();
        assert_eq!(used_partitions(&table), 16);
        assert_eq!(matches(&table, &[probe_names, probe_numbers]), expected);
    }

    #[test]
    fn strings_too_long_to_pack_match_beside_packed_ones() {
        // Every seventh name is longer than a packed slot holds: some partitions hold only
        // packed keys, others both kinds.
        let name = |r: usize| {
            let n = (r * 3) % 301;
            (r % 13 != 2).then(|| match n % 7 {
                0 => format!("a name too long to pack into a word {n}"),
                _ => format!("n{n}"),
            })
        };
        let names = |first: usize| -> ArrayRef {
            Arc::new(StringArray::from_iter((first..first + 200).map(name)))
        };
        let build = batches(2_000, 200, &[(DataType::Utf8, &names)]);
        let probe_name = |r: usize| name(r * 7 + 1);
        let probe: ArrayRef = Arc::new(StringArray::from_iter((0..800).map(probe_name)));
        let expected = nested_loop(800, 2_000, probe_name, name);
        assert!(expected.0.len() > 100);
        let table = build_partitioned(&[column(0, DataType::Utf8)], &build, 4).unwrap();
        assert_eq!(matches(&table, std::slice::from_ref(&probe)), expected);
        let matched: std::collections::HashSet<u32> = expected.0.into_iter().collect();
        let contains = table.contains(std::slice::from_ref(&probe)).unwrap();
        for (row, has_key) in contains.into_iter().enumerate() {
            assert_eq!(has_key, matched.contains(&(row as u32)), "row {row}");
        }
    }

    #[test]
    fn partitioned_packed_multi_column_keys_match_as_a_nested_loop_does() {
        // Two 64-bit columns pack into one 128-bit word.
        let build_rows = 2_500;
        let high = |r: usize| Some((r % 40) as i64 - 20);
        let low = |r: usize| (!r.is_multiple_of(31)).then_some((r % 70) as i64 * 1_000_000_007);
        let build = batches(
            build_rows,
            500,
            &[
                (DataType::Int64, &|first| int_keys(first, 500, high)),
                (DataType::Int64, &|first| int_keys(first, 500, low)),
            ],
        );
        let keys = [column(0, DataType::Int64), column(1, DataType::Int64)];
        let table = build_partitioned(&keys, &build, PARTITION_BITS).unwrap();
        assert_eq!(used_partitions(&table), 1 << PARTITION_BITS);
        let probe = [int_keys(0, 900, |r| high(r * 3)), int_keys(0, 900, low)];
        let expected = nested_loop(
            900,
            build_rows,
            |r| high(r * 3).zip(low(r)),
            |r| high(r).zip(low(r)),
        );
        assert!(!expected.0.is_empty());
        assert_eq!(matches(&table, &probe), expected);
        // The first column's bitmap rules out some probe rows before the pairs are looked up.
        let table = JoinTable::build(&keys, &build).unwrap();
        let Keys::Hashed(hashed) = &table.keys else {
            panic!("pairs are hashed")
        };
        assert!(hashed.bitmaps[0].is_some());
        let matched: std::collections::HashSet<u32> = expected.0.into_iter().collect();
        let contains = table.contains(&probe).unwrap();
        assert!(contains.iter().any(|c| c) && contains.iter().any(|c| !c));
        for (row, has_key) in contains.into_iter().enumerate() {
            assert_eq!(has_key, matched.contains(&(row as u32)), "row {row}");
        }
    }
}
