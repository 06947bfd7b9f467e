//! Window functions: all input rows are gathered and, per window function, sorted by
//! partition and order keys; the function is computed over the sorted rows (`Layout` says
//! where partitions and peer groups start, `Frames` what each row's frame holds), and the
//! values go back to the rows they belong to. The rows come out in the order of the last
//! window that partitions or orders them, as DuckDB's and Postgres's do.

use std::ops::Range;

use arrow::array::{
    Array, ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array, new_empty_array,
};
use arrow::compute::{SortColumn, SortOptions, concat_batches, lexsort_to_indices, take};
use arrow::datatypes::SchemaRef;
use arrow::row::{RowConverter, Rows, SortField};
use pondra_planner::{WindowExpr, WindowFunction};

use crate::expr::{evaluate, evaluate_all};
use crate::{ExecError, Result};

mod aggregates;
mod drivers;
mod extremes;
mod fill;
mod frames;
mod range_offsets;
mod ranking;
mod segment_tree;
mod states;
mod sums;
mod values;

use frames::Frames;

/// The input rows with one column per window function appended.
pub fn compute_windows(
    input_schema: &SchemaRef,
    batches: &[RecordBatch],
    exprs: &[WindowExpr],
    schema: &SchemaRef,
) -> Result<RecordBatch> {
    let all = concat_batches(input_schema, batches)?;
    let mut columns = all.columns().to_vec();
    let mut last_order = None;
    for window in exprs {
        let (values, order) = compute(&all, window)?;
        columns.push(values);
        last_order = order.or(last_order);
    }
    if let Some(order) = last_order {
        columns = columns
            .iter()
            .map(|c| take(c, &order, None))
            .collect::<Result<Vec<_>, _>>()?;
    }
    let options = RecordBatchOptions::new().with_row_count(Some(all.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &options,
    )?)
}

/// Where the partitions and the peer groups (rows with equal ORDER BY keys) of the sorted
/// rows start. A peer group never spans two partitions.
pub(super) struct Layout {
    pub partitions: Vec<Range<usize>>,
    /// Each row's peer group.
    group_of: Vec<u32>,
    /// Where each peer group starts, then the number of rows.
    group_starts: Vec<usize>,
}

impl Layout {
    fn new(partition_keys: &Option<Rows>, order_keys: &Option<Rows>, rows: usize) -> Layout {
        let mut partitions: Vec<Range<usize>> = Vec::new();
        let mut group_of = Vec::with_capacity(rows);
        let mut group_starts = Vec::new();
        for row in 0..rows {
            let new_partition = row == 0 || !same(partition_keys, row - 1, row);
            if new_partition {
                if let Some(last) = partitions.last_mut() {
                    *last = last.start..row;
                }
                partitions.push(row..rows);
            }
            if new_partition || !same(order_keys, row - 1, row) {
                group_starts.push(row);
            }
            group_of.push((group_starts.len() - 1) as u32);
        }
        group_starts.push(rows);
        Layout {
            partitions,
            group_of,
            group_starts,
        }
    }

    pub fn rows(&self) -> usize {
        self.group_of.len()
    }

    /// The peer group of row `row`.
    pub fn group(&self, row: usize) -> usize {
        self.group_of[row] as usize
    }

    /// The rows of peer group `group`.
    pub fn group_rows(&self, group: usize) -> Range<usize> {
        self.group_starts[group]..self.group_starts[group + 1]
    }

    /// The rows with the same ORDER BY keys as row `row` (itself included).
    pub fn peers(&self, row: usize) -> Range<usize> {
        self.group_rows(self.group(row))
    }
}

/// Encodes key columns so rows compare by bytes.
fn keys(columns: &[ArrayRef]) -> Result<Option<Rows>> {
    if columns.is_empty() {
        return Ok(None);
    }
    let fields = columns
        .iter()
        .map(|c| SortField::new(c.data_type().clone()))
        .collect();
    Ok(Some(RowConverter::new(fields)?.convert_columns(columns)?))
}

fn same(rows: &Option<Rows>, a: usize, b: usize) -> bool {
    rows.as_ref().is_none_or(|r| r.row(a) == r.row(b))
}

/// The input rows' positions in the window's order: by partition keys, then order keys.
fn sort_order(
    window: &WindowExpr,
    partition: &[ArrayRef],
    order: &[ArrayRef],
    rows: usize,
) -> Result<UInt32Array> {
    // Positions are u32s, and lag and lead index twice the rows.
    let most = (u32::MAX / 2) as usize;
    if rows > most {
        return Err(ExecError::Execution(format!(
            "a window over {rows} rows: at most {most} are supported"
        )));
    }
    let mut sort_columns: Vec<SortColumn> = partition
        .iter()
        .map(|values| SortColumn {
            values: values.clone(),
            options: Some(SortOptions::default()),
        })
        .collect();
    for (values, key) in order.iter().zip(&window.order_by) {
        crate::sort::push_key_columns(
            &mut sort_columns,
            values.clone(),
            key.descending,
            key.nulls_first,
        )?;
    }
    if sort_columns.is_empty() {
        return Ok(UInt32Array::from_iter_values(0..rows as u32));
    }
    Ok(lexsort_to_indices(&sort_columns, None)?)
}

/// The sorted input of one window function: its arguments and ORDER BY keys in window
/// order, and where partitions and peer groups start.
struct Sorted<'a> {
    window: &'a WindowExpr,
    args: Vec<ArrayRef>,
    order: Vec<ArrayRef>,
    layout: Layout,
}

/// The window function's value for each input row, in input order, and the window's order
/// of the rows when it partitions or orders them.
fn compute(all: &RecordBatch, window: &WindowExpr) -> Result<(ArrayRef, Option<UInt32Array>)> {
    let n = all.num_rows();
    if n == 0 {
        return Ok((new_empty_array(&window.data_type), None));
    }
    let partition = evaluate_all(&window.partition_by, all)?;
    let order = window
        .order_by
        .iter()
        .map(|k| evaluate(&k.expr, all))
        .collect::<Result<Vec<_>>>()?;
    let indices = sort_order(window, &partition, &order, n)?;
    let sorted = |columns: &[ArrayRef]| -> Result<Vec<ArrayRef>> {
        Ok(columns
            .iter()
            .map(|c| take(c, &indices, None))
            .collect::<Result<Vec<_>, _>>()?)
    };
    let order = sorted(&order)?;
    // Numbering rows needs no peer groups: their ORDER BY keys are not encoded to find them.
    let peer_keys = match window.func {
        WindowFunction::RowNumber | WindowFunction::Ntile => None,
        WindowFunction::Lag | WindowFunction::Lead => None,
        _ => keys(&order)?,
    };
    let layout = Layout::new(&keys(&sorted(&partition)?)?, &peer_keys, n);
    let input = Sorted {
        window,
        args: sorted(&evaluate_all(&window.args, all)?)?,
        order,
        layout,
    };
    let in_sorted_order = values_in_window_order(&input)?;
    // Back to input order: the value at sorted position i belongs to input row indices[i].
    let mut inverse = vec![0u32; n];
    for (position, row) in indices.values().iter().enumerate() {
        inverse[*row as usize] = position as u32;
    }
    let values = take(&in_sorted_order, &UInt32Array::from(inverse), None)?;
    let ordered = !window.partition_by.is_empty() || !window.order_by.is_empty();
    Ok((values, ordered.then_some(indices)))
}

/// The function's value for every sorted row.
fn values_in_window_order(input: &Sorted<'_>) -> Result<ArrayRef> {
    let window = input.window;
    let layout = &input.layout;
    if window.func == WindowFunction::Fill {
        // `fill(x ORDER BY k)` interpolates along its own key, the others the window's.
        return match (input.args.as_slice(), input.order.first()) {
            ([values, key], _) => fill::values(values, key, layout, true),
            ([values], Some(order)) => fill::values(values, order, layout, false),
            _ => Err(ExecError::Execution(
                "fill needs a value and one ORDER BY key".to_string(),
            )),
        };
    }
    if !window.func.uses_frame() {
        return ranking::values(window.func, &input.args, layout, window.ignore_nulls);
    }
    let frames = Frames::new(&window.frame, layout, &input.order, &window.order_by)?;
    let value = || {
        input
            .args
            .first()
            .ok_or_else(|| ExecError::Execution(format!("{:?} needs an argument", window.func)))
    };
    let ignore_nulls = window.ignore_nulls;
    match window.func {
        WindowFunction::FirstValue if ignore_nulls => values::first_present(value()?, &frames),
        WindowFunction::FirstValue => values::first_values(value()?, &frames),
        WindowFunction::LastValue if ignore_nulls => values::last_present(value()?, &frames),
        WindowFunction::LastValue => values::last_values(value()?, &frames),
        WindowFunction::NthValue => {
            let n = input.args.get(1).ok_or_else(|| {
                ExecError::Execution("nth_value needs the row's number".to_string())
            })?;
            match ignore_nulls {
                true => values::nth_present(value()?, n, &frames),
                false => values::nth_values(value()?, n, &frames),
            }
        }
        WindowFunction::Aggregate(func) => {
            aggregates::values(func, input.args.first(), &window.data_type, &frames)
        }
        other => Err(ExecError::Execution(format!(
            "{other:?} does not read a frame"
        ))),
    }
}
