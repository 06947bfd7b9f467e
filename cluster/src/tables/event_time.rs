//! Watermarks and windows that close (ADR 0055): the event time a commit writes to a
//! watermarked table, with its late rows, and the state rows of windows still open, which are
//! all a view that emits on window close lets a commit change.

use arrow::array::{Array, AsArray, BooleanArray, RecordBatch};
use arrow::compute::{cast, filter_record_batch};
use arrow::datatypes::{DataType, Int64Type};
use pondra_catalog::{Change, Snapshot, TableDef};
use pondra_planner::ViewPlan;

use crate::Result;
use crate::tables::state_expiry::{Expiring, watermark_after};

/// What rows a commit writes to a watermarked table.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    /// New rows, which may be late.
    Arrived,
    /// Rows an UPDATE rewrote: they move the watermark if their times grew, and are not late.
    Rewritten,
}

/// The change recording the greatest event time `batches` (in `table`'s columns) write and
/// how many of their rows are late by the watermark of `snapshot`; `None` for a table without
/// a watermark, or rows without times.
pub(crate) fn event_time_change(
    snapshot: &Snapshot,
    table: &TableDef,
    batches: &[RecordBatch],
    written: Written,
) -> Result<Option<Change>> {
    let Some(declared) = &table.watermark else {
        return Ok(None);
    };
    let Some(position) = table.columns.iter().position(|c| c.name == declared.column) else {
        return Ok(None);
    };
    let watermark = snapshot.watermark(table);
    let mut greatest: Option<i64> = None;
    let mut late_rows = 0u64;
    for batch in batches {
        let times = cast(batch.column(position), &DataType::Int64)?;
        let times = times.as_primitive::<Int64Type>();
        for time in times.iter().flatten() {
            greatest = Some(greatest.map_or(time, |g| g.max(time)));
            let late = written == Written::Arrived && watermark.is_some_and(|w| time < w);
            late_rows += u64::from(late);
        }
    }
    Ok(greatest.map(|greatest| Change::EventTime {
        table_id: table.id,
        greatest,
        late_rows,
    }))
}

/// For a view that emits on window close (or takes an allowed lateness, ADR 0056), the
/// position of its window column (`window_end`, or `window_start`) in its state and the watermark its table had in `snapshot`,
/// before the commit, less the lateness: windows ending at or below it are closed (final).
/// `None` when every window is open.
pub(crate) fn closed_at_or_below(snapshot: &Snapshot, plan: &ViewPlan) -> Option<(usize, i64)> {
    let close = plan.window_close.as_ref()?;
    let table = snapshot.table(&close.table.name).unwrap_or(&close.table);
    let watermark = snapshot.watermark(table)?;
    Some((close.state_column, close.closed_at_or_below(watermark)))
}

/// How a commit that writes `added` rows to `written` moves the windows of `plan` that are
/// closed: the state rows (by `window_end`, state column `column`) of windows that close with
/// it, which the view's count tables drop (ADR 0056). `None` when no window closes.
pub(crate) fn closing(
    snapshot: &Snapshot,
    plan: &ViewPlan,
    written: &TableDef,
    added: &[RecordBatch],
) -> Result<Option<Expiring>> {
    let Some(close) = &plan.window_close else {
        return Ok(None);
    };
    let table = snapshot.table(&close.table.name).unwrap_or(&close.table);
    let Some(after) = watermark_after(snapshot, table, written, added)? else {
        return Ok(None);
    };
    // Closed means an end at or below the bound: below the bound plus one microsecond.
    let bound = |watermark: i64| close.closed_at_or_below(watermark).saturating_add(1);
    let closing = Expiring {
        column: close.state_column,
        from: snapshot.watermark(table).map(bound),
        to: bound(after),
    };
    Ok(closing.moves().then_some(closing))
}

/// The rows of `batch` whose `column` (a window's end) is above `watermark`: the windows
/// still open. A NULL end (a row without a time) belongs to no window that closes.
pub(crate) fn open_windows(
    batch: &RecordBatch,
    column: usize,
    watermark: i64,
) -> Result<RecordBatch> {
    if batch.num_rows() == 0 {
        return Ok(batch.clone());
    }
    let ends = cast(batch.column(column), &DataType::Int64)?;
    let ends = ends.as_primitive::<Int64Type>();
    let open: BooleanArray = (0..ends.len())
        .map(|i| Some(ends.is_null(i) || ends.value(i) > watermark))
        .collect();
    Ok(filter_record_batch(batch, &open)?)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int64Array, TimestampMicrosecondArray};
    use arrow::datatypes::{Field, Schema, TimeUnit};

    use super::*;

    #[test]
    fn open_windows_keep_ends_above_the_watermark_and_nulls() {
        let ends = TimestampMicrosecondArray::from(vec![Some(10), Some(20), None, Some(30)]);
        let values = Int64Array::from(vec![1, 2, 3, 4]);
        let schema = Schema::new(vec![
            Field::new(
                "window_end",
                DataType::Timestamp(TimeUnit::Microsecond, None),
                true,
            ),
            Field::new("v", DataType::Int64, false),
        ]);
        let batch =
            RecordBatch::try_new(Arc::new(schema), vec![Arc::new(ends), Arc::new(values)]).unwrap();
        let open = open_windows(&batch, 0, 20).unwrap();
        let kept: Vec<i64> = open.column(1).as_primitive::<Int64Type>().values().to_vec();
        assert_eq!(kept, vec![3, 4]);
    }
}
