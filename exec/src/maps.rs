//! Maps (SQL `MAP(K, V)`, Arrow maps; ADR 0064): building them from literals, lists and
//! entries with their keys checked distinct and present, the map functions, `histogram`, and
//! casts between maps and from structs.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Int64Array, ListArray, MapArray, StructArray,
    UInt32Array, new_null_array,
};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::compute::take;
use arrow::datatypes::{DataType, Field, FieldRef};
use arrow::row::{RowConverter, SortField};
use pondra_planner::{BinaryOp, MapOp};

use crate::{ExecError, Result};

/// `MAP {k1: v1, ...}`: per row, the arguments' keys (even places) and values (odd places).
pub fn make(args: &[ArrayRef], data_type: &DataType, rows: usize) -> Result<ArrayRef> {
    let pairs = args.len() / 2;
    let picks: Vec<(usize, usize)> = (0..rows)
        .flat_map(|row| (0..pairs).map(move |pair| (pair, row)))
        .collect();
    let pick = |offset: usize| -> Result<ArrayRef> {
        let sources: Vec<&dyn Array> = (0..pairs).map(|p| args[2 * p + offset].as_ref()).collect();
        match sources.is_empty() {
            true => Ok(new_null_array(&entry_types(data_type).0, 0)),
            false => Ok(arrow::compute::interleave(&sources, &picks)?),
        }
    };
    let (keys, values) = (pick(0)?, pick(1)?);
    let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(pairs, rows));
    build(data_type, offsets, keys, values, None)
}

/// `struct::MAP(K, V)` (DuckDB): a row's fields as its entries, each field's name cast to `K`
/// and its value to `V`, in the struct's order; NULL for a NULL struct.
pub(crate) fn from_struct(record: &ArrayRef, data_type: &DataType, safe: bool) -> Result<ArrayRef> {
    let record = record.as_struct();
    let (key_type, value_type) = entry_types(data_type);
    let (rows, width) = (record.len(), record.num_columns());
    let names: arrow::array::StringArray = (0..rows)
        .flat_map(|_| record.column_names())
        .map(Some)
        .collect();
    let keys = crate::casts::cast(&(Arc::new(names) as ArrayRef), &key_type, safe)?;
    let fields = record
        .columns()
        .iter()
        .map(|field| crate::casts::cast(field, &value_type, safe))
        .collect::<Result<Vec<_>>>()?;
    let values = match width {
        0 => new_null_array(&value_type, 0),
        _ => {
            let sources: Vec<&dyn Array> = fields.iter().map(|f| f.as_ref()).collect();
            let picks: Vec<(usize, usize)> = (0..rows)
                .flat_map(|row| (0..width).map(move |field| (field, row)))
                .collect();
            arrow::compute::interleave(&sources, &picks)?
        }
    };
    let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(width, rows));
    build(data_type, offsets, keys, values, record.nulls().cloned())
}

/// A map array of `data_type` from its parts, each row's keys checked distinct and present.
pub(crate) fn build(
    data_type: &DataType,
    offsets: OffsetBuffer<i32>,
    keys: ArrayRef,
    values: ArrayRef,
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef> {
    let DataType::Map(entries_field, sorted) = data_type else {
        unreachable!("a map is built with a map type, not {data_type}")
    };
    check_keys(&keys, &offsets, nulls.as_ref())?;
    let DataType::Struct(fields) = entries_field.data_type() else {
        unreachable!("a map's entries are structs")
    };
    let entries = StructArray::try_new(fields.clone(), vec![keys, values], None)?;
    Ok(Arc::new(MapArray::try_new(
        entries_field.clone(),
        offsets,
        entries,
        nulls,
        *sorted,
    )?))
}

/// Each valid row's keys are present and distinct, as DuckDB requires of a map.
fn check_keys(
    keys: &ArrayRef,
    offsets: &OffsetBuffer<i32>,
    nulls: Option<&NullBuffer>,
) -> Result<()> {
    let valid = |row: usize| nulls.is_none_or(|n| n.is_valid(row));
    let key_nulls = keys.logical_nulls();
    let rows = RowConverter::new(vec![SortField::new(keys.data_type().clone())])?
        .convert_columns(std::slice::from_ref(keys))?;
    for (row, range) in offsets.windows(2).enumerate() {
        let (start, end) = (range[0] as usize, range[1] as usize);
        if !valid(row) || end - start < 1 {
            continue;
        }
        if key_nulls
            .as_ref()
            .is_some_and(|n| (start..end).any(|i| n.is_null(i)))
        {
            return Err(ExecError::Execution("Map keys can not be NULL".into()));
        }
        let mut seen: Vec<_> = (start..end).map(|i| rows.row(i)).collect();
        seen.sort_unstable();
        if seen.windows(2).any(|w| w[0] == w[1]) {
            return Err(ExecError::Execution("Map keys must be unique".into()));
        }
    }
    Ok(())
}

/// The key and value types of a map type.
fn entry_types(data_type: &DataType) -> (DataType, DataType) {
    let DataType::Map(entries, _) = data_type else {
        unreachable!("a map type, not {data_type}")
    };
    let DataType::Struct(fields) = entries.data_type() else {
        unreachable!("a map's entries are structs")
    };
    (fields[0].data_type().clone(), fields[1].data_type().clone())
}

/// The map functions; `data_type` is the call's.
pub fn map_function(op: MapOp, args: &[ArrayRef], data_type: &DataType) -> Result<ArrayRef> {
    match op {
        MapOp::FromLists => from_lists(&args[0], &args[1], data_type),
        MapOp::FromEntries => from_entries(&args[0], data_type),
        MapOp::Histogram => histogram(&args[0], data_type),
        MapOp::Bins => bins(&args[0], &args[1], data_type, false),
        MapOp::ExactBins => bins(&args[0], &args[1], data_type, true),
        MapOp::IsOtherBin => is_other_bin(&args[0]),
        MapOp::Keys | MapOp::Values => {
            let map = args[0].as_map();
            let column = if op == MapOp::Keys {
                map.keys()
            } else {
                map.values()
            };
            list_of(column.clone(), map.offsets().clone(), map.nulls().cloned())
        }
        MapOp::Entries => {
            let map = args[0].as_map();
            let DataType::List(item) = data_type else {
                unreachable!("map_entries gives a list")
            };
            let DataType::Struct(fields) = item.data_type() else {
                unreachable!("of structs")
            };
            let entries = StructArray::try_new(
                fields.clone(),
                vec![map.keys().clone(), map.values().clone()],
                None,
            )?;
            list_of(
                Arc::new(entries),
                map.offsets().clone(),
                map.nulls().cloned(),
            )
        }
        MapOp::Cardinality => {
            let map = args[0].as_map();
            let counts: Int64Array = (0..map.len())
                .map(|row| map.is_valid(row).then(|| map.value_length(row) as i64))
                .collect();
            Ok(Arc::new(counts))
        }
        MapOp::Element | MapOp::Extract | MapOp::Contains => lookup(op, &args[0], &args[1]),
    }
}

fn list_of(
    values: ArrayRef,
    offsets: OffsetBuffer<i32>,
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef> {
    let item: FieldRef = Arc::new(Field::new("item", values.data_type().clone(), true));
    Ok(Arc::new(ListArray::try_new(item, offsets, values, nulls)?))
}

/// `m[k]`, `map_extract(m, k)` and `map_contains(m, k)`: each row's key found in its map.
fn lookup(op: MapOp, maps: &ArrayRef, keys: &ArrayRef) -> Result<ArrayRef> {
    let map = maps.as_map();
    // The key of each entry repeated against the row's wanted key, compared at once.
    let rows: UInt32Array = (0..map.len())
        .flat_map(|row| std::iter::repeat_n(row as u32, map.value_length(row) as usize))
        .collect();
    let first = map.value_offsets()[0] as usize;
    let last = *map.value_offsets().last().expect("offsets") as usize;
    let entry_keys = map.keys().slice(first, last - first);
    let wanted = take(keys, &rows, None)?;
    let hits = crate::expr::compare(BinaryOp::Eq, &entry_keys, &wanted)?;
    let hits = hits.as_boolean();
    let found: Vec<Option<usize>> = (0..map.len())
        .map(|row| {
            let start = map.value_offsets()[row] as usize - first;
            let end = map.value_offsets()[row + 1] as usize - first;
            (start..end).find(|&i| hits.is_valid(i) && hits.value(i))
        })
        .collect();
    let present = |row: usize| map.is_valid(row) && keys.is_valid(row);
    match op {
        MapOp::Contains => {
            let out: BooleanArray = (0..map.len())
                .map(|row| present(row).then(|| found[row].is_some()))
                .collect();
            Ok(Arc::new(out))
        }
        MapOp::Element => {
            let picks: UInt32Array = (0..map.len())
                .map(|row| {
                    found[row]
                        .filter(|_| present(row))
                        .map(|i| (first + i) as u32)
                })
                .collect();
            Ok(take(map.values(), &picks, None)?)
        }
        _ => {
            let picks: Vec<u32> = (0..map.len())
                .filter_map(|row| {
                    found[row]
                        .filter(|_| present(row))
                        .map(|i| (first + i) as u32)
                })
                .collect();
            let lengths =
                (0..map.len()).map(|row| usize::from(found[row].is_some() && present(row)));
            let values = take(map.values(), &UInt32Array::from(picks), None)?;
            let nulls: NullBuffer = (0..map.len()).map(|row| map.is_valid(row)).collect();
            list_of(values, OffsetBuffer::from_lengths(lengths), Some(nulls))
        }
    }
}

/// `map(keys, values)`: the lists side by side; their lengths must agree.
fn from_lists(keys: &ArrayRef, values: &ArrayRef, data_type: &DataType) -> Result<ArrayRef> {
    let (keys, values) = (keys.as_list::<i32>(), values.as_list::<i32>());
    let mut key_picks = Vec::new();
    let mut value_picks = Vec::new();
    let mut lengths = Vec::with_capacity(keys.len());
    let mut valid = Vec::with_capacity(keys.len());
    for row in 0..keys.len() {
        let present = keys.is_valid(row) && values.is_valid(row);
        let (k, v) = (
            crate::list_functions::bounds(keys, row),
            crate::list_functions::bounds(values, row),
        );
        if present && k.len() != v.len() {
            return Err(ExecError::Execution(
                "map: the key list and the value list must be of one length".into(),
            ));
        }
        let length = if present { k.len() } else { 0 };
        key_picks.extend(k.take(length).map(|i| i as u32));
        value_picks.extend(v.take(length).map(|i| i as u32));
        lengths.push(length);
        valid.push(present);
    }
    // The binder cast both lists to the map's key and value types.
    let keys = take(keys.values(), &UInt32Array::from(key_picks), None)?;
    let values = take(values.values(), &UInt32Array::from(value_picks), None)?;
    let nulls = Some(NullBuffer::from(valid));
    build(
        data_type,
        OffsetBuffer::from_lengths(lengths),
        keys,
        values,
        nulls,
    )
}

/// `map_from_entries(list)`: each list's structs as a map's entries.
fn from_entries(entries: &ArrayRef, data_type: &DataType) -> Result<ArrayRef> {
    let lists = entries.as_list::<i32>();
    let records = lists.values().as_struct();
    if records.null_count() > 0 {
        return Err(ExecError::Execution(
            "map_from_entries: an entry is NULL".into(),
        ));
    }
    build(
        data_type,
        lists.offsets().clone(),
        records.column(0).clone(),
        records.column(1).clone(),
        lists.nulls().cloned(),
    )
}

/// `histogram(x)` from each group's (or list's) sorted non-NULL values: each distinct value
/// with its count, in order; NULL for no values.
fn histogram(sorted: &ArrayRef, data_type: &DataType) -> Result<ArrayRef> {
    let lists = sorted.as_list::<i32>();
    let values = lists.values();
    let rows = RowConverter::new(vec![SortField::new(values.data_type().clone())])?
        .convert_columns(std::slice::from_ref(values))?;
    let (mut picks, mut counts, mut lengths, mut valid) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for row in 0..lists.len() {
        let range = crate::list_functions::bounds(lists, row);
        let before = picks.len();
        for i in range.clone() {
            if i > range.start && rows.row(i) == rows.row(i - 1) {
                *counts.last_mut().expect("a value counted") += 1;
            } else {
                picks.push(i as u32);
                counts.push(1i64);
            }
        }
        lengths.push(picks.len() - before);
        valid.push(lists.is_valid(row) && !range.is_empty());
    }
    let keys = take(values, &UInt32Array::from(picks), None)?;
    let counts: ArrayRef = Arc::new(Int64Array::from(counts));
    let nulls = Some(NullBuffer::from(valid));
    build(
        data_type,
        OffsetBuffer::from_lengths(lengths),
        keys,
        counts,
        nulls,
    )
}

/// `histogram(x, boundaries)`: per row, the boundaries sorted and kept once, each with the
/// count of the sorted values above the boundary before it and at most it, and the values
/// above every boundary under the key type's greatest value (integers only); NULL for no
/// values.
/// `histogram(x, boundaries)`, or with `exact` `histogram_exact(x, bins)`: see `MapOp::Bins`.
fn bins(
    sorted: &ArrayRef,
    boundaries: &ArrayRef,
    data_type: &DataType,
    exact: bool,
) -> Result<ArrayRef> {
    let lists = sorted.as_list::<i32>();
    let bounds = boundaries.as_list::<i32>();
    let values = lists.values();
    let (key_type, _) = entry_types(data_type);
    let greatest = other_bin_key(&key_type);
    // Values, boundaries and the greatest key in one array, compared as rows.
    let mut parts: Vec<&dyn Array> = vec![values.as_ref(), bounds.values().as_ref()];
    if let Some(greatest) = &greatest {
        parts.push(greatest.as_ref());
    }
    let all = arrow::compute::concat(&parts)?;
    let rows = RowConverter::new(vec![SortField::new(all.data_type().clone())])?
        .convert_columns(std::slice::from_ref(&all))?;
    let (bound_base, greatest_at) = (values.len(), values.len() + bounds.values().len());
    let (mut picks, mut counts, mut lengths, mut valid) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for row in 0..lists.len() {
        let range = crate::list_functions::bounds(lists, row);
        let bound_row = if bounds.len() == 1 { 0 } else { row };
        let mut edges: Vec<usize> = crate::list_functions::bounds(bounds, bound_row)
            .map(|i| bound_base + i)
            .filter(|&i| all.is_valid(i))
            .collect();
        edges.sort_by(|a, b| rows.row(*a).cmp(&rows.row(*b)));
        edges.dedup_by(|a, b| rows.row(*a) == rows.row(*b));
        let mut bin_counts = vec![0i64; edges.len()];
        let mut beyond = 0i64;
        for i in range.clone() {
            let at = edges.partition_point(|&e| rows.row(e) < rows.row(i));
            let missed = exact && edges.get(at).is_none_or(|&e| rows.row(e) != rows.row(i));
            match bin_counts.get_mut(at).filter(|_| !missed) {
                Some(count) => *count += 1,
                None => beyond += 1,
            }
        }
        let before = picks.len();
        for (edge, count) in edges.iter().zip(&bin_counts) {
            picks.push(*edge as u32);
            counts.push(*count);
        }
        if beyond > 0 {
            if greatest.is_none() {
                return Err(ExecError::Execution(format!(
                    "not supported yet: histogram values of {key_type} past the last boundary"
                )));
            }
            picks.push(greatest_at as u32);
            counts.push(beyond);
        }
        lengths.push(picks.len() - before);
        valid.push(lists.is_valid(row) && !range.is_empty());
    }
    let keys = take(&all, &UInt32Array::from(picks), None)?;
    let counts: ArrayRef = Arc::new(Int64Array::from(counts));
    build(
        data_type,
        OffsetBuffer::from_lengths(lengths),
        keys,
        counts,
        Some(NullBuffer::from(valid)),
    )
}

/// Whether each value is its type's "other" key (`other_bin_key`); false for a type without one.
fn is_other_bin(values: &ArrayRef) -> Result<ArrayRef> {
    let Some(other) = other_bin_key(values.data_type()) else {
        let nulls = values.logical_nulls();
        let flags: arrow::array::BooleanArray = (0..values.len())
            .map(|i| {
                nulls
                    .as_ref()
                    .is_none_or(|n| n.is_valid(i))
                    .then_some(false)
            })
            .collect();
        return Ok(Arc::new(flags));
    };
    let converter = RowConverter::new(vec![SortField::new(values.data_type().clone())])?;
    let rows = converter.convert_columns(std::slice::from_ref(values))?;
    let other = converter.convert_columns(&[other])?;
    let flags: arrow::array::BooleanArray = (0..values.len())
        .map(|i| values.is_valid(i).then(|| rows.row(i) == other.row(0)))
        .collect();
    Ok(Arc::new(flags))
}

/// The key a histogram counts values past its last boundary (or, exact, in no bin) under, as
/// DuckDB has it: an integer type's greatest value, infinity for floats, dates and
/// timestamps, the empty text, the empty list, a struct of its fields' keys; `None` for
/// other types.
fn other_bin_key(data_type: &DataType) -> Option<ArrayRef> {
    use arrow::array::{
        Int8Array, Int16Array, Int32Array, UInt8Array, UInt16Array, UInt32Array as U32, UInt64Array,
    };
    Some(match data_type {
        DataType::Int8 => Arc::new(Int8Array::from(vec![i8::MAX])),
        DataType::Int16 => Arc::new(Int16Array::from(vec![i16::MAX])),
        DataType::Int32 => Arc::new(Int32Array::from(vec![i32::MAX])),
        DataType::Int64 => Arc::new(Int64Array::from(vec![i64::MAX])),
        DataType::UInt8 => Arc::new(UInt8Array::from(vec![u8::MAX])),
        DataType::UInt16 => Arc::new(UInt16Array::from(vec![u16::MAX])),
        DataType::UInt32 => Arc::new(U32::from(vec![u32::MAX])),
        DataType::UInt64 => Arc::new(UInt64Array::from(vec![u64::MAX])),
        DataType::Float32 => Arc::new(arrow::array::Float32Array::from(vec![f32::INFINITY])),
        DataType::Float64 => Arc::new(arrow::array::Float64Array::from(vec![f64::INFINITY])),
        DataType::Date32 => Arc::new(arrow::array::Date32Array::from(vec![
            crate::infinite_times::DATE_INFINITY,
        ])),
        DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, zone) => Arc::new(
            arrow::array::TimestampMicrosecondArray::from(vec![
                crate::infinite_times::TIMESTAMP_INFINITY,
            ])
            .with_timezone_opt(zone.clone()),
        ),
        DataType::Utf8 => Arc::new(arrow::array::StringArray::from(vec![""])),
        DataType::List(item) => Arc::new(arrow::array::ListArray::new(
            item.clone(),
            OffsetBuffer::from_lengths([0]),
            arrow::array::new_empty_array(item.data_type()),
            None,
        )),
        DataType::Struct(fields) => {
            let keys = fields
                .iter()
                .map(|f| other_bin_key(f.data_type()))
                .collect::<Option<Vec<_>>>()?;
            Arc::new(arrow::array::StructArray::new(fields.clone(), keys, None))
        }
        _ => return None,
    })
}

/// A map cast to another map type: its keys and values each cast by the engine's rules.
pub fn cast(value: &ArrayRef, to: &DataType, safe: bool) -> Result<ArrayRef> {
    let map = value.as_map();
    let (key_type, value_type) = entry_types(to);
    let keys = crate::expr::cast_value(map.keys(), &key_type, safe)?;
    let values = crate::expr::cast_value(map.values(), &value_type, safe)?;
    build(
        to,
        map.offsets().clone(),
        keys,
        values,
        map.nulls().cloned(),
    )
}
