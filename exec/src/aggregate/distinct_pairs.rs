//! The distinct (group, value) pairs of `count(DISTINCT x)` (ADR 0039). Integer and date
//! values pack with their group into one word, in a hash set of words; values of other types
//! are kept in Arrow's row format.

use std::collections::HashSet;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Int64Type};
use arrow::row::{RowConverter, SortField};
use foldhash::fast::FixedState;
use pondra_catalog::is_exact_integer;

use crate::Result;

pub(super) enum DistinctPairs {
    /// The group in the high 64 bits, the value's bits (as a BIGINT) in the low 64.
    Words(hashbrown::HashSet<u128, FixedState>),
    Rows {
        converter: RowConverter,
        seen: HashSet<(usize, Box<[u8]>)>,
    },
}

#[inline]
fn word(group: usize, value: i64) -> u128 {
    ((group as u128) << 64) | u128::from(value as u64)
}

impl DistinctPairs {
    pub(super) fn new(data_type: &DataType) -> Result<DistinctPairs> {
        // Every integer or date value is a distinct BIGINT.
        if is_exact_integer(data_type) {
            return Ok(DistinctPairs::Words(hashbrown::HashSet::with_hasher(
                FixedState::with_seed(0x0d15_71c7),
            )));
        }
        Ok(DistinctPairs::Rows {
            converter: RowConverter::new(vec![SortField::new(data_type.clone())])?,
            seen: HashSet::new(),
        })
    }

    /// Adds each non-NULL value with its row's group; each pair not seen before adds one to
    /// its group's count.
    pub(super) fn add(
        &mut self,
        value: &ArrayRef,
        groups: &[usize],
        counts: &mut [i64],
    ) -> Result<()> {
        match self {
            DistinctPairs::Words(seen) => {
                let values = cast(value, &DataType::Int64)?;
                let values = values.as_primitive::<Int64Type>();
                let raw = values.values();
                for (row, &g) in groups.iter().enumerate() {
                    if values.is_valid(row) && seen.insert(word(g, raw[row])) {
                        counts[g] += 1;
                    }
                }
            }
            DistinctPairs::Rows { converter, seen } => {
                let rows = converter.convert_columns(std::slice::from_ref(value))?;
                for (row, &g) in groups.iter().enumerate() {
                    if value.is_valid(row) && seen.insert((g, rows.row(row).as_ref().into())) {
                        counts[g] += 1;
                    }
                }
            }
        }
        Ok(())
    }

    /// Folds in the pairs of `other` (of the same type), whose group `g` is this one's
    /// `map[g]`.
    pub(super) fn merge(&mut self, other: DistinctPairs, map: &[usize], counts: &mut [i64]) {
        match (self, other) {
            (DistinctPairs::Words(seen), DistinctPairs::Words(theirs)) => {
                seen.reserve(theirs.len());
                for pair in theirs {
                    let group = map[(pair >> 64) as usize];
                    if seen.insert(word(group, pair as u64 as i64)) {
                        counts[group] += 1;
                    }
                }
            }
            (DistinctPairs::Rows { seen, .. }, DistinctPairs::Rows { seen: theirs, .. }) => {
                for (g, value) in theirs {
                    if seen.insert((map[g], value)) {
                        counts[map[g]] += 1;
                    }
                }
            }
            _ => unreachable!("partial aggregations of one call keep pairs alike"),
        }
    }
}
