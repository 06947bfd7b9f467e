//! Lambda list functions (ADR 0061), vectorized over elements: the elements of every list in
//! the batch become one batch of the lambda's parameters, its body is evaluated once over it
//! (a reduction once per position), and the results are put back into lists.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, Int64Array, ListArray, RecordBatch, RecordBatchOptions, UInt32Array,
};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::compute::{concat, take};
use arrow::datatypes::{Field, Schema};
use pondra_planner::{Lambda, LambdaOp};

use crate::expr::evaluate;
use crate::{ExecError, Result};

/// The elements of a batch's lists: where each lies in the list array's values, its list's
/// row, and its position in that list (from 1). NULL lists have none.
struct Elements {
    at: Vec<u32>,
    row: Vec<u32>,
    position: Vec<i64>,
}

impl Elements {
    fn of(lists: &ListArray) -> Result<Elements> {
        let offsets = lists.value_offsets();
        let mut elements = Elements {
            at: Vec::new(),
            row: Vec::new(),
            position: Vec::new(),
        };
        for row in (0..lists.len()).filter(|&row| lists.is_valid(row)) {
            let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
            for (i, at) in (start..end).enumerate() {
                elements
                    .at
                    .push(u32::try_from(at).map_err(|_| too_large())?);
                elements.row.push(row as u32);
                elements.position.push(i as i64 + 1);
            }
        }
        Ok(elements)
    }
}

fn too_large() -> ExecError {
    ExecError::Execution("a list function's input is too large".to_string())
}

/// The lambda's values for every row of `batch`.
pub fn evaluate_lambda(lambda: &Lambda, batch: &RecordBatch) -> Result<ArrayRef> {
    let list = evaluate(&lambda.list, batch)?;
    let lists = list.as_list_opt::<i32>().ok_or_else(|| {
        ExecError::Execution(format!("{} over {}", lambda.op.name(), list.data_type()))
    })?;
    let elements = Elements::of(lists)?;
    let values = take(
        lists.values(),
        &UInt32Array::from(elements.at.clone()),
        None,
    )?;
    let captured = Captured {
        columns: lambda
            .captured
            .iter()
            .map(|e| evaluate(e, batch))
            .collect::<Result<_>>()?,
    };
    let by_element = UInt32Array::from(elements.row.clone());
    match lambda.op {
        LambdaOp::Transform => {
            let params = captured.after(vec![values], &by_element)?;
            let out = body_values(lambda, params, &elements.position)?;
            rebuild(lists, &elements, (0..out.len() as u32).collect(), out)
        }
        LambdaOp::Filter => {
            let params = captured.after(vec![values.clone()], &by_element)?;
            let keep = body_values(lambda, params, &elements.position)?;
            let keep = keep.as_boolean();
            let kept: Vec<u32> = (0..keep.len())
                .filter(|&i| keep.is_valid(i) && keep.value(i))
                .map(|i| i as u32)
                .collect();
            rebuild(lists, &elements, kept, values)
        }
        LambdaOp::Reduce => {
            let initial = lambda
                .initial
                .as_ref()
                .map(|e| evaluate(e, batch))
                .transpose()?;
            reduce(lambda, lists, &elements, &values, initial, &captured)
        }
    }
}

/// The values of the query's columns the body reads, one per row of the batch.
struct Captured {
    columns: Vec<ArrayRef>,
}

impl Captured {
    /// `params` followed by the captured values of the rows `rows` (one per element).
    fn after(&self, mut params: Vec<ArrayRef>, rows: &UInt32Array) -> Result<Vec<ArrayRef>> {
        for column in &self.columns {
            params.push(take(column, rows, None)?);
        }
        Ok(params)
    }
}

/// The body over the lambda's columns: `values` holds its parameters but the position, then
/// the captured values; the positions go in after the parameters if the lambda takes them.
fn body_values(lambda: &Lambda, mut values: Vec<ArrayRef>, positions: &[i64]) -> Result<ArrayRef> {
    let rows = values[0].len();
    if lambda.with_index {
        let parameters = values.len() - lambda.captured.len();
        values.insert(parameters, Arc::new(Int64Array::from(positions.to_vec())));
    }
    let params = values;
    let fields: Vec<Field> = params
        .iter()
        .enumerate()
        .map(|(i, p)| Field::new(format!("p{i}"), p.data_type().clone(), true))
        .collect();
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    let batch = RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), params, &options)?;
    evaluate(&lambda.body, &batch)
}

/// Lists holding `values[picked]`, each element in its own list, in order.
fn rebuild(
    lists: &ListArray,
    elements: &Elements,
    picked: Vec<u32>,
    values: ArrayRef,
) -> Result<ArrayRef> {
    let mut counts = vec![0i32; lists.len()];
    for &i in &picked {
        counts[elements.row[i as usize] as usize] += 1;
    }
    let mut offsets = Vec::with_capacity(lists.len() + 1);
    offsets.push(0i32);
    for count in counts {
        let end = offsets.last().expect("starts at 0").checked_add(count);
        offsets.push(end.ok_or_else(too_large)?);
    }
    let values = take(&values, &UInt32Array::from(picked), None)?;
    let field = Arc::new(Field::new("item", values.data_type().clone(), true));
    Ok(Arc::new(ListArray::try_new(
        field,
        OffsetBuffer::new(offsets.into()),
        values,
        lists.nulls().cloned(),
    )?))
}

/// Each list folded by the body, from its first element or from the initial value; a step
/// per position, over the lists long enough to have it.
fn reduce(
    lambda: &Lambda,
    lists: &ListArray,
    elements: &Elements,
    values: &ArrayRef,
    initial: Option<ArrayRef>,
    captured: &Captured,
) -> Result<ArrayRef> {
    let offsets = lists.value_offsets();
    let length = |row: usize| (offsets[row + 1] - offsets[row]) as usize;
    // Where each valid list's elements start among `values`.
    let mut first = vec![0usize; lists.len()];
    let mut seen = 0;
    for row in (0..lists.len()).filter(|&row| lists.is_valid(row)) {
        first[row] = seen;
        seen += length(row);
    }
    debug_assert_eq!(seen, elements.at.len());
    let (mut accumulator, start) = match initial {
        Some(initial) => (initial, 0),
        None => {
            if let Some(row) = (0..lists.len()).find(|&r| lists.is_valid(r) && length(r) == 0) {
                return Err(ExecError::Execution(format!(
                    "list_reduce over an empty list (row {row}) needs an initial value"
                )));
            }
            let heads: Vec<u32> = first.iter().map(|&f| f as u32).collect();
            let heads = match values.is_empty() {
                true => UInt32Array::from(vec![None; lists.len()]),
                false => UInt32Array::from(heads),
            };
            (take(values, &heads, None)?, 1)
        }
    };
    let longest = (0..lists.len()).map(length).max().unwrap_or(0);
    for step in start..longest {
        let active: Vec<usize> = (0..lists.len())
            .filter(|&row| lists.is_valid(row) && length(row) > step)
            .collect();
        let rows = UInt32Array::from_iter_values(active.iter().map(|&r| r as u32));
        let at = UInt32Array::from_iter_values(active.iter().map(|&r| (first[r] + step) as u32));
        let positions = vec![step as i64 + 1; active.len()];
        let params = vec![take(&accumulator, &rows, None)?, take(values, &at, None)?];
        let stepped = body_values(lambda, captured.after(params, &rows)?, &positions)?;
        // Each active row takes its new value, the others keep theirs.
        let mut pick: Vec<u32> = (0..lists.len() as u32).collect();
        for (k, &row) in active.iter().enumerate() {
            pick[row] = (lists.len() + k) as u32;
        }
        let both = concat(&[accumulator.as_ref(), stepped.as_ref()])?;
        accumulator = take(&both, &UInt32Array::from(pick), None)?;
    }
    Ok(match lists.nulls() {
        Some(nulls) => without(&accumulator, nulls)?,
        None => accumulator,
    })
}

/// `values` with NULL where `valid` is not set.
fn without(values: &ArrayRef, valid: &NullBuffer) -> Result<ArrayRef> {
    let invalid = arrow::array::BooleanArray::new(!valid.inner(), None);
    Ok(arrow::compute::nullif(values, &invalid)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::Int32Type;

    #[test]
    fn elements_skip_null_lists() {
        let lists = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1), Some(2)]),
            None,
            Some(vec![]),
            Some(vec![Some(3)]),
        ]);
        let elements = Elements::of(&lists).unwrap();
        assert_eq!(elements.row, vec![0, 0, 3]);
        assert_eq!(elements.position, vec![1, 2, 1]);
        assert_eq!(elements.at, vec![0, 1, 2]);
    }
}
