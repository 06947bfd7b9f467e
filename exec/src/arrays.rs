//! Arrays (SQL `T[]`, Arrow lists): Postgres's text form `{a,b,NULL}`, comparisons, and the
//! functions clients use on them. Arrays are 1-based, as in Postgres.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, BooleanBuilder, GenericListArray, Int32Array,
    Int64Array, ListArray, StringBuilder, StructArray, UInt32Array, new_empty_array,
};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::compute::{CastOptions, cast_with_options, interleave, take};
use arrow::datatypes::{DataType, Field, FieldRef};
use arrow::row::{RowConverter, SortField};
use arrow::util::display::FormatOptions;
use pondra_planner::{BinaryOp, expanded_array_type, push_array_item};

use crate::{ExecError, Result};

const CAST_OPTIONS: CastOptions<'static> = CastOptions {
    safe: false,
    format_options: FormatOptions::new(),
};

fn item_field(list: &DataType) -> Result<FieldRef> {
    match list {
        DataType::List(field) => Ok(field.clone()),
        other => Err(ExecError::Execution(format!("{other} is not an array"))),
    }
}

/// The elements of an array in Postgres's text form (`{1,2,NULL}`, `{"a b",c}`).
pub(crate) fn parse_one(text: &str) -> Result<Vec<Option<String>>> {
    let malformed = || ExecError::Execution(format!("malformed array literal: \"{text}\""));
    let inner = text
        .trim()
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .ok_or_else(malformed)?;
    let mut items = Vec::new();
    if inner.trim().is_empty() {
        return Ok(items);
    }
    let mut chars = inner.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut item = String::new();
        let quoted = chars.next_if_eq(&'"').is_some();
        if quoted {
            loop {
                match chars.next().ok_or_else(malformed)? {
                    '"' => break,
                    '\\' => item.push(chars.next().ok_or_else(malformed)?),
                    c => item.push(c),
                }
            }
            while chars.next_if(|c| c.is_whitespace()).is_some() {}
        } else {
            while let Some(c) = chars.next_if(|&c| c != ',') {
                match c {
                    '{' | '}' | '"' => return Err(malformed()),
                    '\\' => item.push(chars.next().ok_or_else(malformed)?),
                    c => item.push(c),
                }
            }
            item.truncate(item.trim_end().len());
            if item.is_empty() {
                return Err(malformed());
            }
        }
        let is_null = !quoted && item.eq_ignore_ascii_case("null");
        items.push((!is_null).then_some(item));
        match chars.next() {
            None => return Ok(items),
            Some(',') => continue,
            Some(_) => return Err(malformed()),
        }
    }
}

/// Arrays written in Postgres's text form.
pub fn to_text(array: &ArrayRef) -> Result<ArrayRef> {
    let list = array.as_list::<i32>();
    // Elements that are arrays are written as arrays, unquoted (`{{1,2},{3}}`); timestamps
    // as both anchors write them.
    let nested = matches!(list.values().data_type(), DataType::List(_));
    let items = match list.values().data_type() {
        DataType::List(_) => to_text(list.values())?,
        DataType::Struct(_) => crate::structs::to_text(list.values())?,
        DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, None) => {
            crate::casts::timestamps_as_text(list.values())
        }
        _ => cast_with_options(list.values(), &DataType::Utf8, &CAST_OPTIONS)?,
    };
    let items = items.as_string::<i32>();
    let mut out = StringBuilder::new();
    for row in 0..list.len() {
        if list.is_null(row) {
            out.append_null();
            continue;
        }
        let (start, end) = bounds(list, row);
        let mut text = String::from("{");
        for i in start..end {
            if i > start {
                text.push(',');
            }
            if items.is_null(i) {
                text.push_str("NULL");
            } else if nested {
                text.push_str(items.value(i));
            } else {
                push_array_item(&mut text, items.value(i));
            }
        }
        text.push('}');
        out.append_value(text);
    }
    Ok(Arc::new(out.finish()))
}

fn bounds(list: &ListArray, row: usize) -> (usize, usize) {
    let offsets = list.value_offsets();
    (offsets[row] as usize, offsets[row + 1] as usize)
}

/// Compares two lists (or two structs) row by row: element by element, a shorter list before
/// a longer one it starts, NULL elements equal to each other and after values.
pub fn compare(op: BinaryOp, left: &ArrayRef, right: &ArrayRef) -> Result<ArrayRef> {
    // A NULL inside a list or struct compares as the greatest value, as in DuckDB.
    let options = arrow::compute::SortOptions {
        descending: false,
        nulls_first: false,
    };
    let field = SortField::new_with_options(left.data_type().clone(), options);
    let converter = RowConverter::new(vec![field])?;
    let l = converter.convert_columns(std::slice::from_ref(left))?;
    let r = converter.convert_columns(std::slice::from_ref(right))?;
    let out: BooleanArray = (0..left.len())
        .map(|i| {
            if left.is_null(i) || right.is_null(i) {
                return None;
            }
            let ordering = l.row(i).cmp(&r.row(i));
            Some(match op {
                BinaryOp::Eq => ordering.is_eq(),
                BinaryOp::NotEq => ordering.is_ne(),
                BinaryOp::Lt => ordering.is_lt(),
                BinaryOp::LtEq => ordering.is_le(),
                BinaryOp::Gt => ordering.is_gt(),
                BinaryOp::GtEq => ordering.is_ge(),
                other => unreachable!("{other:?} does not compare arrays"),
            })
        })
        .collect();
    Ok(Arc::new(out))
}

/// `ARRAY[a, b, ...]`: one array per row of the arguments, which share one type (there is at
/// least one).
pub fn make(args: &[ArrayRef]) -> Result<ArrayRef> {
    let field = Arc::new(Field::new("item", args[0].data_type().clone(), true));
    let rows = args[0].len();
    let sources: Vec<&dyn Array> = args.iter().map(|a| a.as_ref()).collect();
    let picks: Vec<(usize, usize)> = (0..rows)
        .flat_map(|row| (0..args.len()).map(move |arg| (arg, row)))
        .collect();
    let values = interleave(&sources, &picks)?;
    let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(args.len(), rows));
    Ok(Arc::new(ListArray::try_new(field, offsets, values, None)?))
}

/// `array[i]`: the element at 1-based `index`, NULL outside the array.
pub fn element(array: &ArrayRef, index: &ArrayRef) -> Result<ArrayRef> {
    let list = array.as_list::<i32>();
    let index = index.as_primitive::<arrow::datatypes::Int64Type>();
    let picks: UInt32Array = (0..list.len())
        .map(|row| {
            if list.is_null(row) || index.is_null(row) {
                return None;
            }
            let (start, end) = bounds(list, row);
            let i = index.value(row);
            (i >= 1 && i as usize <= end - start).then(|| (start + i as usize - 1) as u32)
        })
        .collect();
    Ok(take(list.values(), &picks, None)?)
}

/// `array_length(a, dimension)` and `array_upper(a, dimension)` (the same for 1-based arrays
/// of one dimension): NULL for an empty array or another dimension, as in Postgres.
pub fn length(array: &ArrayRef, dimension: &ArrayRef) -> Result<ArrayRef> {
    let list = array.as_list::<i32>();
    let dimension = dimension.as_primitive::<arrow::datatypes::Int64Type>();
    let out: Int64Array = (0..list.len())
        .map(|row| {
            if list.is_null(row) || dimension.is_null(row) || dimension.value(row) != 1 {
                return None;
            }
            let (start, end) = bounds(list, row);
            (end > start).then_some((end - start) as i64)
        })
        .collect();
    Ok(Arc::new(out))
}

/// `cardinality(a)`: the number of elements, 0 for an empty array.
pub fn cardinality(array: &ArrayRef) -> Result<ArrayRef> {
    let list = array.as_list::<i32>();
    let out: Int64Array = (0..list.len())
        .map(|row| {
            let (start, end) = bounds(list, row);
            list.is_valid(row).then_some((end - start) as i64)
        })
        .collect();
    Ok(Arc::new(out))
}

/// `array_to_string(a, separator [, null_text])`: the elements as text, joined; NULL elements
/// are skipped unless `null_text` stands for them.
pub fn join(args: &[ArrayRef]) -> Result<ArrayRef> {
    let list = args[0].as_list::<i32>();
    let separator = args[1].as_string::<i32>();
    let null_text = args.get(2).map(|a| a.as_string::<i32>());
    let items = cast_with_options(list.values(), &DataType::Utf8, &CAST_OPTIONS)?;
    let items = items.as_string::<i32>();
    let mut out = StringBuilder::new();
    for row in 0..list.len() {
        if list.is_null(row) || separator.is_null(row) {
            out.append_null();
            continue;
        }
        let null_text = null_text.and_then(|n| n.is_valid(row).then(|| n.value(row)));
        let (start, end) = bounds(list, row);
        let parts: Vec<&str> = (start..end)
            .filter_map(|i| {
                if items.is_valid(i) {
                    Some(items.value(i))
                } else {
                    null_text
                }
            })
            .collect();
        out.append_value(parts.join(separator.value(row)));
    }
    Ok(Arc::new(out.finish()))
}

/// `x op ANY (array)` (or `ALL` when `all`), with SQL's three values: ANY is true when one
/// comparison is, false when all are false (an empty array included), NULL otherwise; ALL is
/// the dual.
pub fn quantified(
    op: BinaryOp,
    all: bool,
    rows_compared: bool,
    value: &ArrayRef,
    array: &ArrayRef,
) -> Result<ArrayRef> {
    let list = array.as_list::<i32>();
    let rows: UInt32Array = (0..list.len())
        .flat_map(|row| {
            let (start, end) = bounds(list, row);
            std::iter::repeat_n(row as u32, end - start)
        })
        .collect();
    let first = list.value_offsets()[0] as usize;
    let last = *list.value_offsets().last().expect("offsets") as usize;
    let elements = list.values().slice(first, last - first);
    let repeated = take(value, &rows, None)?;
    let hits = match rows_compared {
        true => crate::structs::compare_rows(op, &repeated, &elements)?,
        false => crate::expr::compare(op, &repeated, &elements)?,
    };
    let hits = hits.as_boolean();
    let mut out = BooleanBuilder::with_capacity(list.len());
    for row in 0..list.len() {
        if list.is_null(row) {
            out.append_null();
            continue;
        }
        let (start, end) = bounds(list, row);
        let (mut decided, mut unknown) = (false, false);
        for i in start - first..end - first {
            match (hits.is_valid(i), hits.value(i)) {
                (false, _) => unknown = true,
                (true, hit) if hit != all => decided = true,
                _ => {}
            }
        }
        match (decided, unknown) {
            (true, _) => out.append_value(!all),
            (false, true) => out.append_null(),
            (false, false) => out.append_value(all),
        }
    }
    Ok(Arc::new(out.finish()))
}

/// A list array of `item_type` from per-row groups of `values` rows (for `array_agg`); an
/// empty group is NULL, as `array_agg` of no rows is.
pub fn from_groups(
    item_type: &DataType,
    values: &[ArrayRef],
    groups: &[Vec<(usize, usize)>],
) -> Result<ArrayRef> {
    let field = Arc::new(Field::new("item", item_type.clone(), true));
    let sources: Vec<&dyn Array> = values.iter().map(|a| a.as_ref()).collect();
    let picks: Vec<(usize, usize)> = groups.iter().flatten().copied().collect();
    let items = if picks.is_empty() {
        new_empty_array(item_type)
    } else {
        interleave(&sources, &picks)?
    };
    let offsets = OffsetBuffer::from_lengths(groups.iter().map(Vec::len));
    let valid: NullBuffer = groups.iter().map(|g| !g.is_empty()).collect();
    let array: GenericListArray<i32> = ListArray::try_new(field, offsets, items, Some(valid))?;
    Ok(Arc::new(array))
}

/// Per row, the BIGINTs from `args[0]` to `args[1]` (included when `inclusive`) by `args[2]`;
/// NULL when an argument is.
pub fn series(args: &[ArrayRef], inclusive: bool) -> Result<ArrayRef> {
    use arrow::datatypes::Int64Type;
    let [start, stop, step] = [0, 1, 2].map(|i| args[i].as_primitive::<Int64Type>());
    let mut values: Vec<i64> = Vec::new();
    let mut offsets = vec![0i32];
    let mut valid = Vec::with_capacity(start.len());
    for row in 0..start.len() {
        let ends = [start, stop, step].map(|a| a.is_valid(row).then(|| a.value(row)));
        let [Some(from), Some(to), Some(by)] = ends else {
            valid.push(false);
            offsets.push(values.len() as i32);
            continue;
        };
        if by == 0 {
            return Err(ExecError::Execution("step size cannot equal zero".into()));
        }
        let count = series_length(from, to, by, inclusive);
        if values.len() as u64 + count > i32::MAX as u64 {
            return Err(ExecError::Execution(format!(
                "a series of more than {} values is not supported yet",
                i32::MAX
            )));
        }
        crate::control::check_allocation((values.len() + count as usize) * 8)?;
        values.extend((0..count as i64).map(|i| from + i * by));
        offsets.push(values.len() as i32);
        valid.push(true);
    }
    let field = Arc::new(Field::new("item", DataType::Int64, true));
    Ok(Arc::new(ListArray::try_new(
        field,
        OffsetBuffer::new(offsets.into()),
        Arc::new(Int64Array::from(values)),
        Some(NullBuffer::from(valid)),
    )?))
}

/// How many of `from`, `from + by`, ... lie before `to` (or reach it, when `inclusive`).
fn series_length(from: i64, to: i64, by: i64, inclusive: bool) -> u64 {
    let span = if by > 0 {
        to as i128 - from as i128
    } else {
        from as i128 - to as i128
    };
    let step = (by as i128).abs();
    if span < 0 || (span == 0 && !inclusive) {
        return 0;
    }
    let whole = span / step;
    let reaches = span % step == 0;
    (whole + i128::from(!reaches || inclusive)) as u64
}

/// `_pg_expandarray(a)`: per array, its elements each with its position from 1, as records
/// `(x, n)` in an array of the same shape.
pub fn expand(lists: &ArrayRef) -> Result<ArrayRef> {
    let lists = lists.as_list::<i32>();
    let DataType::List(item) = expanded_array_type(item_field(lists.data_type())?.data_type())
    else {
        unreachable!("an array type")
    };
    let DataType::Struct(fields) = item.data_type() else {
        unreachable!("records")
    };
    let offsets = lists.value_offsets();
    let positions: Vec<i32> = (0..lists.len())
        .flat_map(|row| 1..=(offsets[row + 1] - offsets[row]))
        .collect();
    let first = offsets[0] as usize;
    let length = offsets[lists.len()] as usize - first;
    let records = StructArray::try_new(
        fields.clone(),
        vec![
            lists.values().slice(first, length),
            Arc::new(Int32Array::from(positions)),
        ],
        None,
    )?;
    let rebased: Vec<i32> = offsets.iter().map(|o| o - offsets[0]).collect();
    Ok(Arc::new(ListArray::try_new(
        item,
        OffsetBuffer::new(rebased.into()),
        Arc::new(records),
        lists.nulls().cloned(),
    )?))
}
