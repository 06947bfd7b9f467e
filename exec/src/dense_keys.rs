//! The build side of a join on one integer column whose values are dense, as primary keys
//! numbered from 1 are: every value of the range from the least key to the greatest has a
//! slot of its own in an array, so a probe row finds its build rows by subtracting the least
//! key from its own, with no hashing and no key comparison. Keys too sparse for a slot per
//! value may still be dense enough for a bit per value, which answers whether a probe key is
//! among them (a scan below the join drops the rows whose key is not).

use arrow::array::{Array, ArrayRef, AsArray, Int64Array};
use arrow::buffer::BooleanBuffer;
use arrow::compute::cast;
use arrow::datatypes::{DataType, Int64Type};
use pondra_catalog::is_exact_integer;

use crate::Result;

/// Keys are addressed directly when their range is at most this many times the number of
/// build rows. At 8, a slot for every value of the range (4 bytes) takes about the memory of
/// a hash table's entry for every key (16 bytes for the key and id, at most 7/8 full, and
/// half full just after growing).
const MAX_RANGE_PER_ROW: u64 = 8;

/// Ranges this small are addressed directly however few the build rows: the array fits in
/// the cache.
const SMALL_RANGE: u64 = 1 << 16;

/// A bitmap of the keys is kept when their range is at most this many values per build row
/// (8 bytes a row, a fraction of a hash table's), or at most `SMALL_BITMAP_RANGE` values (8 MB,
/// less than the hash table of the half million order keys that range of orders may hold).
const MAX_BITMAP_RANGE_PER_ROW: u64 = 64;
const SMALL_BITMAP_RANGE: u64 = 1 << 26;

/// The build keys of one integer column, as 64-bit integers, with their range.
pub struct KeyRange {
    /// The build side's key type: probe keys are cast to it first, as hashed keys are.
    key_type: DataType,
    min: i64,
    max: i64,
    /// The keys that are not NULL.
    count: u64,
    /// Each build batch's keys.
    values: Vec<Int64Array>,
}

impl KeyRange {
    /// The range of `keys` (one array per build batch), or `None` when the key type is not an
    /// integer or every key is NULL.
    pub fn of(key_type: &DataType, keys: &[ArrayRef]) -> Result<Option<KeyRange>> {
        if !is_exact_integer(key_type) {
            return Ok(None);
        }
        let values = keys
            .iter()
            .map(as_i64)
            .collect::<Result<Vec<Int64Array>>>()?;
        let (mut min, mut max, mut count) = (i64::MAX, i64::MIN, 0u64);
        for key in &values {
            if let (Some(low), Some(high)) = (arrow::compute::min(key), arrow::compute::max(key)) {
                min = min.min(low);
                max = max.max(high);
            }
            count += (key.len() - key.null_count()) as u64;
        }
        Ok((count > 0).then(|| KeyRange {
            key_type: key_type.clone(),
            min,
            max,
            count,
            values,
        }))
    }

    /// The least and the greatest key.
    pub fn bounds(&self) -> (i64, i64) {
        (self.min, self.max)
    }

    /// How many values lie from the least key to the greatest.
    fn width(&self) -> u128 {
        (self.max as i128 - self.min as i128 + 1) as u128
    }

    /// Whether the range is at most `per_row` values per key, or at most `small` values, and
    /// small enough to index with 32 bits.
    fn within(&self, per_row: u64, small: u64) -> bool {
        let limit = small.max(self.count.saturating_mul(per_row));
        self.width() <= limit as u128 && self.width() < u32::MAX as u128
    }

    /// The probe keys as 64-bit integers, cast to the build key type first (as hashed keys
    /// are, so that every kind of table matches the same rows).
    fn probe_values(&self, key: &ArrayRef) -> Result<Int64Array> {
        if key.data_type() == &self.key_type {
            return as_i64(key);
        }
        as_i64(&cast(key, &self.key_type)?)
    }

    /// A key value's offset in the range, or `None` when it is outside.
    #[inline]
    fn offset(&self, value: i64) -> Option<usize> {
        (self.min <= value && value <= self.max).then(|| (value - self.min) as usize)
    }

    /// For each probe row, whether its key is in the range and `present` at its offset; a
    /// bit per row, set without a branch per row's NULL.
    fn probe(&self, key: &ArrayRef, present: impl Fn(usize) -> bool) -> Result<BooleanBuffer> {
        let values = self.probe_values(key)?;
        let raw = values.values();
        let (min, last) = (self.min, (self.max as i128 - self.min as i128) as u64);
        // A NULL row's value is whatever its slot holds: checked like any, then masked.
        let found = BooleanBuffer::collect_bool(raw.len(), |row| {
            let offset = raw[row].wrapping_sub(min) as u64;
            offset <= last && present(offset as usize)
        });
        Ok(match values.nulls() {
            Some(nulls) => &found & nulls.inner(),
            None => found,
        })
    }
}

/// One bit for each value of the build keys' range: whether some build row has it.
pub struct KeyBitmap {
    range: KeyRange,
    bits: Vec<u64>,
}

impl KeyBitmap {
    /// The bitmap of the keys, or `None` when they are too sparse for a bit per value.
    pub fn build(mut range: KeyRange) -> Option<KeyBitmap> {
        if !range.within(MAX_BITMAP_RANGE_PER_ROW, SMALL_BITMAP_RANGE) {
            return None;
        }
        let mut bits = vec![0u64; (range.width() as usize).div_ceil(64)];
        for key in &range.values {
            for value in key.iter().flatten() {
                let offset = (value - range.min) as usize;
                bits[offset / 64] |= 1 << (offset % 64);
            }
        }
        range.values = Vec::new();
        Some(KeyBitmap { range, bits })
    }

    /// For each probe row, whether some build row has its key (NULL keys have none).
    pub fn contains(&self, key: &ArrayRef) -> Result<BooleanBuffer> {
        self.range.probe(key, |offset| {
            self.bits[offset / 64] & (1 << (offset % 64)) != 0
        })
    }
}

/// The build rows of each key value of a dense range.
pub struct DenseKeys {
    range: KeyRange,
    slots: Slots,
}

enum Slots {
    /// No key is on two build rows: for each value `min + i`, its build row plus one, or 0
    /// when no row has it.
    Unique(Vec<u32>),
    /// For each value `min + i`, where its rows start in `rows`; one more entry ends the last
    /// value's.
    Grouped { starts: Vec<u32>, rows: Vec<u32> },
}

impl DenseKeys {
    /// The key slots of the keys of `range` (rows are numbered in order across its batches,
    /// and rows with a NULL key are left out), or the range back when its keys are too sparse
    /// for a slot per value.
    pub fn build(mut range: KeyRange) -> Result<DenseKeys, KeyRange> {
        if !range.within(MAX_RANGE_PER_ROW, SMALL_RANGE) {
            return Err(range);
        }
        let width = range.width() as usize;
        let values = std::mem::take(&mut range.values);
        let slots = match unique_slots(&values, range.min, width) {
            Some(slots) => Slots::Unique(slots),
            None => Slots::grouped(&values, range.min, width),
        };
        Ok(DenseKeys { range, slots })
    }

    /// For each probe row, whether some build row has its key (NULL keys have none).
    pub fn contains(&self, key: &ArrayRef) -> Result<BooleanBuffer> {
        self.range.probe(key, |offset| match &self.slots {
            Slots::Unique(slots) => slots[offset] != 0,
            Slots::Grouped { starts, .. } => starts[offset] != starts[offset + 1],
        })
    }

    /// Appends every pair of a probe row and a build row with equal keys, probe row by probe
    /// row and each probe row's build rows in build order. Stops after the first probe row
    /// that takes the pairs past `max_pairs`; returns how many probe rows it went through.
    pub fn matches(
        &self,
        key: &ArrayRef,
        max_pairs: usize,
        probe: &mut Vec<u32>,
        build: &mut Vec<u32>,
    ) -> Result<usize> {
        let values = self.range.probe_values(key)?;
        let offsets = values
            .iter()
            .enumerate()
            .map(|(row, v)| (row as u32, v.and_then(|v| self.range.offset(v))));
        match &self.slots {
            Slots::Unique(slots) => {
                for (row, offset) in offsets {
                    if probe.len() >= max_pairs {
                        return Ok(row as usize);
                    }
                    let Some(offset) = offset else { continue };
                    let slot = slots[offset];
                    if slot != 0 {
                        probe.push(row);
                        build.push(slot - 1);
                    }
                }
            }
            Slots::Grouped { starts, rows } => {
                for (row, offset) in offsets {
                    if probe.len() >= max_pairs {
                        return Ok(row as usize);
                    }
                    let Some(offset) = offset else { continue };
                    let found = &rows[starts[offset] as usize..starts[offset + 1] as usize];
                    probe.extend(std::iter::repeat_n(row, found.len()));
                    build.extend_from_slice(found);
                }
            }
        }
        Ok(values.len())
    }

    #[cfg(test)]
    pub fn is_unique(&self) -> bool {
        matches!(self.slots, Slots::Unique(_))
    }
}

/// For each value of the range from `min`, its row plus one (0 when no row has it), or `None`
/// when a key is on two rows.
fn unique_slots(values: &[Int64Array], min: i64, width: usize) -> Option<Vec<u32>> {
    let mut slots = vec![0u32; width];
    let mut first_row = 0u32;
    for key in values {
        for (row, value) in key.iter().enumerate() {
            let Some(value) = value else { continue };
            let slot = &mut slots[(value - min) as usize];
            if *slot != 0 {
                return None;
            }
            *slot = first_row + row as u32 + 1;
        }
        first_row += key.len() as u32;
    }
    Some(slots)
}

impl Slots {
    /// Each value's rows, by a counting sort: rows stay in build order within a value.
    fn grouped(keys: &[Int64Array], min: i64, range: usize) -> Slots {
        let mut starts = vec![0u32; range + 1];
        for key in keys {
            for value in key.iter().flatten() {
                starts[(value - min) as usize + 1] += 1;
            }
        }
        for offset in 0..range {
            starts[offset + 1] += starts[offset];
        }
        let mut rows = vec![0u32; starts[range] as usize];
        // Each value's start moves on as its rows are placed, ending where the next value's
        // rows start; shifting the starts up by one then restores them.
        let mut first_row = 0u32;
        for key in keys {
            for (row, value) in key.iter().enumerate() {
                let Some(value) = value else { continue };
                let next = &mut starts[(value - min) as usize];
                rows[*next as usize] = first_row + row as u32;
                *next += 1;
            }
            first_row += key.len() as u32;
        }
        starts.copy_within(0..range, 1);
        starts[0] = 0;
        Slots::Grouped { starts, rows }
    }
}

pub(crate) fn as_i64(key: &ArrayRef) -> Result<Int64Array> {
    Ok(match key.data_type() {
        DataType::Int64 => key.as_primitive::<Int64Type>().clone(),
        _ => cast(key, &DataType::Int64)?
            .as_primitive::<Int64Type>()
            .clone(),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Date32Array, Int32Array};

    use super::*;

    fn int64(values: &[Option<i64>]) -> ArrayRef {
        Arc::new(Int64Array::from(values.to_vec()))
    }

    fn dense(key_type: &DataType, keys: &[ArrayRef]) -> Option<DenseKeys> {
        let range = KeyRange::of(key_type, keys).unwrap()?;
        DenseKeys::build(range).ok()
    }

    fn bitmap_of(keys: &[ArrayRef]) -> Option<KeyBitmap> {
        KeyBitmap::build(KeyRange::of(&DataType::Int64, keys).unwrap()?)
    }

    fn matches(table: &DenseKeys, key: &ArrayRef) -> (Vec<u32>, Vec<u32>) {
        let (mut probe, mut build) = (Vec::new(), Vec::new());
        let rows = table
            .matches(key, usize::MAX, &mut probe, &mut build)
            .unwrap();
        assert_eq!(rows, key.len());
        (probe, build)
    }

    #[test]
    fn unique_keys_take_one_slot_each() {
        let build = [int64(&[Some(10), None, Some(12)]), int64(&[Some(11)])];
        let table = dense(&DataType::Int64, &build).unwrap();
        assert!(table.is_unique());
        let probe = int64(&[Some(11), Some(9), None, Some(12), Some(13), Some(10)]);
        assert_eq!(matches(&table, &probe), (vec![0, 3, 5], vec![3, 2, 0]));
        assert_eq!(
            table.contains(&probe).unwrap().iter().collect::<Vec<_>>(),
            [true, false, false, true, false, true]
        );
    }

    #[test]
    fn repeated_keys_keep_build_order() {
        let build = [
            int64(&[Some(5), Some(7), Some(5)]),
            int64(&[None, Some(5), Some(8), Some(7)]),
        ];
        let table = dense(&DataType::Int64, &build).unwrap();
        assert!(!table.is_unique());
        let probe = int64(&[Some(7), Some(6), Some(5), None, Some(8)]);
        assert_eq!(
            matches(&table, &probe),
            (vec![0, 0, 2, 2, 2, 4], vec![1, 6, 0, 2, 4, 5])
        );
        assert_eq!(
            table.contains(&probe).unwrap().iter().collect::<Vec<_>>(),
            [true, false, true, false, true]
        );
    }

    #[test]
    fn probe_keys_far_outside_the_range_match_nothing() {
        // Near i64::MAX, so that a probe key near i64::MIN would wrap into the range if the
        // offset were taken by wrapping subtraction.
        let top = i64::MAX - 3;
        let build = [int64(&[Some(top), Some(top + 2)])];
        let table = dense(&DataType::Int64, &build).unwrap();
        let probe = int64(&[
            Some(i64::MIN),
            Some(i64::MIN + 2),
            Some(top + 2),
            Some(i64::MAX),
        ]);
        assert_eq!(matches(&table, &probe), (vec![2], vec![1]));
    }

    #[test]
    fn probe_keys_of_another_type_are_cast_to_the_build_type() {
        let build: [ArrayRef; 1] = [Arc::new(Date32Array::from(vec![19_000, 19_002]))];
        let table = dense(&DataType::Date32, &build).unwrap();
        let probe: ArrayRef = Arc::new(Int32Array::from(vec![19_002, 19_001, 19_000]));
        assert_eq!(matches(&table, &probe), (vec![0, 2], vec![1, 0]));
    }

    #[test]
    fn sparse_or_non_integer_keys_are_left_to_hashing() {
        let sparse = int64(&[Some(0), Some(SMALL_RANGE as i64 * 10)]);
        assert!(dense(&DataType::Int64, &[sparse]).is_none());
        let nulls = int64(&[None, None]);
        assert!(dense(&DataType::Int64, &[nulls]).is_none());
        let strings: ArrayRef = Arc::new(arrow::array::StringArray::from(vec!["1"]));
        assert!(dense(&DataType::Utf8, &[strings]).is_none());
        // A range of 8 values per row is still dense.
        let spread: Vec<Option<i64>> = (0..10_000).map(|i| Some(i * 8)).collect();
        assert!(dense(&DataType::Int64, &[int64(&spread)]).is_some());
    }

    #[test]
    fn bitmaps_answer_membership_for_keys_too_sparse_for_slots() {
        let top = SMALL_BITMAP_RANGE as i64 - 1;
        let keys = [int64(&[Some(0), None, Some(top), Some(64), Some(64)])];
        assert!(dense(&DataType::Int64, &keys).is_none());
        let bitmap = bitmap_of(&keys).unwrap();
        let probe = int64(&[
            Some(64),
            Some(63),
            Some(65),
            None,
            Some(top),
            Some(top + 1),
            Some(0),
        ]);
        assert_eq!(
            bitmap.contains(&probe).unwrap().iter().collect::<Vec<_>>(),
            [true, false, false, false, true, false, true]
        );
        // Past 64 values per key and past the small range: no bitmap.
        let sparse = [int64(&[Some(0), Some(SMALL_BITMAP_RANGE as i64 * 2)])];
        assert!(bitmap_of(&sparse).is_none());
    }
}
