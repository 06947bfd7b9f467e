//! Aggregation by runs of clustered keys (ADR 0029). When each morsel of a scan holds a range
//! of one integer group key that no other morsel's range overlaps (but at its ends), and a
//! morsel's rows arrive ordered by that key, every key strictly inside the morsel's first and
//! last key has all its rows in one run of that morsel. Such a group is finished at the end
//! of the morsel, without a hash table: its rows get the run's number as their group id, and
//! its output row leaves through the HAVING filter at once. The first and last run may go on
//! in a neighbouring morsel, so they are merged into the hash table like any partial group.
//! A morsel found out of order (or with a NULL key) goes to the hash table as a whole.

use arrow::array::{Array, ArrayRef, AsArray, PrimitiveArray, RecordBatch, UInt32Array};
use arrow::datatypes::{ArrowPrimitiveType, DataType, Date32Type, Int32Type, Int64Type};

use super::{HashAggregateSink, keep};
use crate::Result;
use crate::expr::evaluate_all;

/// The runs of the morsel being read.
pub(crate) struct MorselRuns {
    /// One group per run of equal keys of this morsel so far, numbered in order.
    local: HashAggregateSink,
    /// The key of the last row seen in this morsel.
    last: Option<i64>,
    /// False once this morsel's keys were found out of order or NULL.
    ordered: bool,
    ids: Vec<usize>,
    starts: Vec<u32>,
}

/// Whether runs of `data_type` keys can be aggregated this way.
fn runs_key_type(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Int32 | DataType::Int64 | DataType::Date32
    )
}

impl MorselRuns {
    pub fn new(template: &HashAggregateSink) -> Result<MorselRuns> {
        Ok(MorselRuns {
            local: template.empty_like()?,
            last: None,
            ordered: true,
            ids: Vec::new(),
            starts: Vec::new(),
        })
    }

    /// Adds `batch` to this morsel's runs, or to `main`'s hash table once the morsel is out
    /// of order.
    pub fn sink(&mut self, main: &mut HashAggregateSink, batch: &RecordBatch) -> Result<()> {
        if self.ordered {
            let keys = evaluate_all(&main.group, batch)?;
            let first_id = self.local.groups;
            if let Some(last) = self.number_runs(&keys[0], first_id) {
                self.last = last;
                self.add_runs(&keys)?;
                let ids = std::mem::take(&mut self.ids);
                let updated = self.local.update(batch, Some(&ids));
                self.ids = ids;
                return updated;
            }
            self.ordered = false;
            let local = std::mem::replace(&mut self.local, main.empty_like()?);
            if local.groups > 0 {
                main.merge_now(local)?;
            }
        }
        main.sink_hashed(batch)
    }

    /// Gives each row of `key` the number of its run, counting on from `first_id` and from
    /// the morsel's last key; `None` (and nothing changed) when the keys go down or are NULL.
    /// Returns the last key.
    fn number_runs(&mut self, key: &ArrayRef, first_id: usize) -> Option<Option<i64>> {
        if key.null_count() > 0 {
            return None;
        }
        match key.data_type() {
            DataType::Int32 => self.number(key.as_primitive::<Int32Type>(), first_id),
            DataType::Int64 => self.number(key.as_primitive::<Int64Type>(), first_id),
            DataType::Date32 => self.number(key.as_primitive::<Date32Type>(), first_id),
            _ => None,
        }
    }

    fn number<T>(&mut self, key: &PrimitiveArray<T>, first_id: usize) -> Option<Option<i64>>
    where
        T: ArrowPrimitiveType,
        T::Native: Into<i64>,
    {
        self.ids.clear();
        self.starts.clear();
        let mut previous = self.last;
        // The run the morsel's last row is in, if this batch goes on with its key.
        let mut id = first_id.wrapping_sub(1);
        for (row, &value) in key.values().iter().enumerate() {
            let value: i64 = value.into();
            match previous {
                Some(p) if value == p => {}
                Some(p) if value < p => return None,
                _ => {
                    id = id.wrapping_add(1);
                    self.starts.push(row as u32);
                }
            }
            previous = Some(value);
            self.ids.push(id);
        }
        Some(previous)
    }

    /// Records the keys of the runs that start in this batch.
    fn add_runs(&mut self, keys: &[ArrayRef]) -> Result<()> {
        if self.starts.is_empty() {
            return Ok(());
        }
        let rows = UInt32Array::from_iter_values(self.starts.iter().copied());
        let taken = keys
            .iter()
            .map(|k| arrow::compute::take(k, &rows, None))
            .collect::<Result<Vec<_>, _>>()?;
        self.local.groups += rows.len();
        self.local.group_keys.push(taken);
        Ok(())
    }

    /// Ends the morsel: its inner runs' groups become output rows of `main`, its first and
    /// last runs' groups are merged into `main`'s hash table.
    pub fn end_of_morsel(&mut self, main: &mut HashAggregateSink) -> Result<()> {
        let mut local = std::mem::replace(&mut self.local, main.empty_like()?);
        // A morsel found out of order has already gone to the hash table, runs and all.
        self.ordered = true;
        self.last = None;
        let runs = local.groups;
        if runs == 0 {
            return Ok(());
        }
        let edges: Vec<u32> = match runs {
            1 => vec![0],
            _ => vec![0, runs as u32 - 1],
        };
        main.merge_groups_of(&mut local, &edges)?;
        if runs > 2 {
            main.run_groups += runs - 2;
            let inner = local.finish_one()?.slice(1, runs - 2);
            main.finished
                .push(keep(main.output_filter.as_ref(), &inner)?);
        }
        Ok(())
    }
}

impl HashAggregateSink {
    /// From now on, takes each morsel's keys as runs (ADR 0029); `end_of_morsel` must follow
    /// each morsel's rows. Only for one group key of a type `runs_key_type` takes, and
    /// accumulators that merge.
    pub fn aggregate_runs(&mut self) -> Result<()> {
        let key_type = match self.group.as_slice() {
            [key] => key.data_type(),
            _ => return Ok(()),
        };
        if runs_key_type(&key_type) && self.can_merge() {
            self.runs = Some(Box::new(MorselRuns::new(self)?));
        }
        Ok(())
    }

    /// The aggregate's input column it groups by, when it groups by one column alone.
    pub fn single_key_column(&self) -> Option<usize> {
        match self.group.as_slice() {
            [pondra_planner::Expr::Column { index, .. }] => Some(*index),
            _ => None,
        }
    }

    /// How many groups were finished as runs.
    pub fn run_groups(&self) -> usize {
        self.run_groups
    }

    /// Finishes the morsel whose rows were sunk last.
    pub fn end_of_morsel(&mut self) -> Result<()> {
        if let Some(mut runs) = self.runs.take() {
            let ended = runs.end_of_morsel(self);
            self.runs = Some(runs);
            ended?;
        }
        Ok(())
    }

    /// Merges groups `from` of `other` into this aggregation's hash table.
    fn merge_groups_of(&mut self, other: &mut HashAggregateSink, from: &[u32]) -> Result<()> {
        let keys = other.keys_of(from)?;
        let map = self.group_ids(&keys)?;
        for (mine, theirs) in self.accumulators.iter_mut().zip(&mut other.accumulators) {
            mine.resize(self.groups);
            theirs.resize(other.groups);
            mine.merge_groups(theirs, from, &map)?;
        }
        Ok(())
    }

    /// The key columns of groups `ids`.
    fn keys_of(&self, ids: &[u32]) -> Result<Vec<ArrayRef>> {
        let mut columns = Vec::with_capacity(self.group.len());
        for position in 0..self.group.len() {
            let mut values = Vec::with_capacity(ids.len());
            for &id in ids {
                let (piece, row) = self.piece_of(id as usize);
                values.push(self.group_keys[piece][position].slice(row, 1));
            }
            let values: Vec<&dyn Array> = values.iter().map(|v| v.as_ref()).collect();
            columns.push(arrow::compute::concat(&values)?);
        }
        Ok(columns)
    }

    /// The piece of `group_keys` holding group `id`'s key, and its row there.
    fn piece_of(&self, id: usize) -> (usize, usize) {
        let mut start = 0;
        for (piece, keys) in self.group_keys.iter().enumerate() {
            let len = keys.first().map_or(0, |k| k.len());
            if id < start + len {
                return (piece, id - start);
            }
            start += len;
        }
        unreachable!("group {id} has a key")
    }
}
