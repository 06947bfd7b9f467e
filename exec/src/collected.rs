//! Aggregate states that keep their input rows: `array_agg`'s values, and the rows of an
//! aggregate with ORDER BY (`string_agg(x, ',' ORDER BY y)`), sorted only at the end so that
//! partial aggregations can be merged in any order.

use arrow::array::{Array, ArrayRef, UInt64Array};
use arrow::compute::{SortColumn, SortOptions, concat, lexsort_to_indices, take};
use arrow::datatypes::DataType;

use crate::Result;
use crate::arrays;

/// Each group's values, NULLs included, as (piece, row) picks into the argument arrays seen.
pub struct ArrayAggState {
    item_type: DataType,
    pieces: Vec<ArrayRef>,
    picks: Vec<Vec<(usize, usize)>>,
}

impl ArrayAggState {
    pub fn new(item_type: DataType) -> ArrayAggState {
        ArrayAggState {
            item_type,
            pieces: Vec::new(),
            picks: Vec::new(),
        }
    }

    pub fn resize(&mut self, groups: usize) {
        self.picks.resize_with(groups, Vec::new);
    }

    pub fn update(&mut self, values: &ArrayRef, groups: &[usize]) {
        let piece = self.pieces.len();
        self.pieces.push(values.clone());
        for (row, &g) in groups.iter().enumerate() {
            self.picks[g].push((piece, row));
        }
    }

    /// Appends `other`'s values of each group `g` to this state's group `map[g]`.
    pub fn merge(&mut self, other: ArrayAggState, map: &[usize]) {
        let offset = self.pieces.len();
        self.pieces.extend(other.pieces);
        for (g, picks) in other.picks.into_iter().enumerate() {
            let into = &mut self.picks[map[g]];
            into.extend(picks.into_iter().map(|(piece, row)| (piece + offset, row)));
        }
    }

    pub fn finish(self) -> Result<ArrayRef> {
        arrays::from_groups(&self.item_type, &self.pieces, &self.picks)
    }
}

/// The input of an aggregate whose result depends on the order of its values: each batch's
/// argument, ORDER BY keys and groups, kept until the end.
pub struct OrderedInput {
    options: Vec<SortOptions>,
    values: Vec<ArrayRef>,
    keys: Vec<Vec<ArrayRef>>,
    groups: Vec<u64>,
}

impl OrderedInput {
    /// `order`: (descending, nulls first) of each key.
    pub fn new(order: impl IntoIterator<Item = (bool, bool)>) -> OrderedInput {
        OrderedInput {
            options: order
                .into_iter()
                .map(|(descending, nulls_first)| SortOptions {
                    descending,
                    nulls_first,
                })
                .collect(),
            values: Vec::new(),
            keys: Vec::new(),
            groups: Vec::new(),
        }
    }

    pub fn update(&mut self, values: &ArrayRef, keys: Vec<ArrayRef>, groups: &[usize]) {
        self.values.push(values.clone());
        self.keys.push(keys);
        self.groups.extend(groups.iter().map(|&g| g as u64));
    }

    pub fn merge(&mut self, other: OrderedInput, map: &[usize]) {
        self.values.extend(other.values);
        self.keys.extend(other.keys);
        self.groups
            .extend(other.groups.iter().map(|&g| map[g as usize] as u64));
    }

    /// The values sorted by group, then by the ORDER BY keys, with each one's group; `None`
    /// when there were no rows.
    pub fn sorted(self) -> Result<Option<(ArrayRef, Vec<usize>)>> {
        if self.values.is_empty() {
            return Ok(None);
        }
        let pieces: Vec<&dyn Array> = self.values.iter().map(|v| v.as_ref()).collect();
        let values = concat(&pieces)?;
        let groups = UInt64Array::from(self.groups);
        let mut columns = vec![SortColumn {
            values: std::sync::Arc::new(groups.clone()),
            options: None,
        }];
        for (position, options) in self.options.iter().enumerate() {
            let pieces: Vec<&dyn Array> = self.keys.iter().map(|k| k[position].as_ref()).collect();
            let key = concat(&pieces)?;
            crate::sort::push_key_columns(
                &mut columns,
                key,
                options.descending,
                options.nulls_first,
            )?;
        }
        let order = lexsort_to_indices(&columns, None)?;
        let values = take(&values, &order, None)?;
        let groups = order
            .values()
            .iter()
            .map(|&i| groups.value(i as usize) as usize)
            .collect();
        Ok(Some((values, groups)))
    }
}
