//! `list_aggr(list, 'name')` (DuckDB): an aggregate over each list's elements, computed by the
//! grouped accumulators with a list's position as its elements' group.

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::DataType;
use pondra_planner::{AggregateCall, AggregateFunction, Expr};

use super::Accumulator;
use crate::{ExecError, Result};

/// `func` over each list of `lists` (a list array); NULL for a NULL list. `separator` is a
/// string aggregate's.
pub fn aggregate_lists(
    func: AggregateFunction,
    lists: &ArrayRef,
    separator: Option<String>,
) -> Result<ArrayRef> {
    let DataType::List(item) = lists.data_type() else {
        return Err(ExecError::Execution(format!(
            "list_aggregate needs a list, not {}",
            lists.data_type()
        )));
    };
    let lists = lists.as_list::<i32>();
    let call = AggregateCall {
        func,
        arg: Some(Expr::column(0, "element", item.data_type().clone())),
        data_type: func.result_type(Some(item.data_type())),
        separator,
        order: Vec::new(),
        filter: None,
    };
    let mut accumulator = Accumulator::new(&call)?;
    accumulator.resize(lists.len());
    let offsets = lists.value_offsets();
    let (first, last) = (offsets[0] as usize, offsets[lists.len()] as usize);
    let elements = lists.values().slice(first, last - first);
    // Element i belongs to the list whose offsets bracket it; a NULL list's elements, if it
    // has any, go to its group too, which is NULL in the end.
    let mut groups = Vec::with_capacity(last - first);
    for (row, bounds) in offsets.windows(2).enumerate() {
        groups.extend(std::iter::repeat_n(row, (bounds[1] - bounds[0]) as usize));
    }
    debug_assert_eq!(groups.len(), elements.len());
    accumulator.update(Some(&elements), &groups)?;
    let values = accumulator.finish()?;
    debug_assert_eq!(values.len(), lists.len());
    match lists.logical_nulls() {
        None => Ok(values),
        Some(nulls) => {
            let data = values.to_data();
            let merged = arrow::buffer::NullBuffer::union(data.nulls(), Some(&nulls));
            let data = data.into_builder().nulls(merged).build()?;
            Ok(arrow::array::make_array(data))
        }
    }
}
