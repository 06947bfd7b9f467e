//! State the watermark bounds (ADR 0056): the rows of an interval join's states that no row
//! still to come can match, and the count-table rows of windows past their lateness. A
//! commit that moves a watermark deletes the rows it expires; rows below the bound are never
//! written.

use std::sync::Arc;

use arrow::array::{Array, AsArray, BooleanArray, RecordBatch};
use arrow::compute::{cast, filter_record_batch};
use arrow::datatypes::{DataType, Int64Type};
use pondra_catalog::{Snapshot, TableDef};
use pondra_planner::{BinaryOp, Expr, LogicalPlan, ScalarValue, StateExpiry};

use crate::Result;
use crate::node::Node;
use crate::tables::rewrite::address_column;

/// How far a commit moves the bound of one expiring state: rows whose time is below `to`
/// are expired after it; those below `from` already were before it (none when the
/// watermark had not been set).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Expiring {
    pub column: usize,
    pub from: Option<i64>,
    pub to: i64,
}

impl Expiring {
    /// Whether the commit expires rows the state may still hold.
    pub fn moves(&self) -> bool {
        self.from.is_none_or(|from| from < self.to)
    }
}

/// The watermark of `table` once a commit writes `added` rows to `written` (the rows of the
/// commit's own table, in its columns): its watermark in `snapshot` unless the commit writes
/// to it, and then moved by the greatest time it writes.
pub(crate) fn watermark_after(
    snapshot: &Snapshot,
    table: &TableDef,
    written: &TableDef,
    added: &[RecordBatch],
) -> Result<Option<i64>> {
    let before = snapshot.watermark(table);
    let Some(declared) = &table.watermark else {
        return Ok(None);
    };
    if written.id != table.id {
        return Ok(before);
    }
    let Some(position) = table.columns.iter().position(|c| c.name == declared.column) else {
        return Ok(before);
    };
    let mut greatest = None;
    for batch in added {
        let times = cast(batch.column(position), &DataType::Int64)?;
        let most = arrow::compute::max(times.as_primitive::<Int64Type>());
        greatest = greatest.max(most);
    }
    let moved = greatest.map(|g: i64| g.saturating_sub(declared.delay_micros));
    Ok(before.max(moved))
}

/// How a commit that writes `added` rows to the watermarked table of `expiry` moves the
/// bound of a join state that expires as it says; `None` while that table has no watermark.
pub(crate) fn join_state_expiring(
    snapshot: &Snapshot,
    expiry: &StateExpiry,
    added: &[RecordBatch],
) -> Result<Option<Expiring>> {
    let table = snapshot.table(&expiry.table.name).unwrap_or(&expiry.table);
    let Some(after) = watermark_after(snapshot, table, table, added)? else {
        return Ok(None);
    };
    Ok(Some(Expiring {
        column: expiry.column,
        from: snapshot.watermark(table).map(|w| expiry.bound(w)),
        to: expiry.bound(after),
    }))
}

/// The rows of `batch` whose `column` (a time) is at or above `floor`, or NULL: a NULL time
/// is never late and never expires.
pub(crate) fn at_or_above(batch: &RecordBatch, column: usize, floor: i64) -> Result<RecordBatch> {
    if batch.num_rows() == 0 {
        return Ok(batch.clone());
    }
    let times = cast(batch.column(column), &DataType::Int64)?;
    let times = times.as_primitive::<Int64Type>();
    if times.null_count() == 0 && arrow::compute::min(times).is_some_and(|m| m >= floor) {
        return Ok(batch.clone());
    }
    let kept: BooleanArray = (0..times.len())
        .map(|i| Some(times.is_null(i) || times.value(i) >= floor))
        .collect();
    Ok(filter_record_batch(batch, &kept)?)
}

impl Node {
    /// The addresses of `table`'s rows whose `column` (a time) lies in `[from, to)`, from
    /// the least when `from` is `None`: the rows a moved bound expires. The scan prunes by
    /// the column's ranges, so it reads the files and segments near the bound.
    pub(crate) async fn expired_addresses(
        &self,
        snapshot: &Arc<Snapshot>,
        table: &Arc<TableDef>,
        expiring: Expiring,
    ) -> Result<Vec<i64>> {
        let schema = table.scan_schema(false, true);
        let field = schema.field(expiring.column);
        let time = Expr::column(expiring.column, field.name(), field.data_type().clone())
            .cast(&DataType::Int64);
        let compared = |op, value: i64| Expr::Binary {
            op,
            left: Box::new(time.clone()),
            right: Box::new(Expr::Literal(ScalarValue::Int64(value))),
        };
        let mut bounds = vec![compared(BinaryOp::Lt, expiring.to)];
        bounds.extend(expiring.from.map(|from| compared(BinaryOp::GtEq, from)));
        let plan = LogicalPlan::Filter {
            input: Box::new(LogicalPlan::Scan {
                table: table.clone(),
                schema,
            }),
            predicate: Expr::and_all(bounds).expect("a bound"),
        };
        let mut addresses = Vec::new();
        for batch in self.run_query(plan, snapshot.clone(), Vec::new()).await? {
            addresses.extend_from_slice(address_column(&batch).values());
        }
        Ok(addresses)
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{Int64Array, TimestampMicrosecondArray};
    use arrow::datatypes::{Field, Schema, TimeUnit};

    use super::*;

    #[test]
    fn rows_at_or_above_the_floor_and_nulls_stay() {
        let times = TimestampMicrosecondArray::from(vec![Some(5), None, Some(10), Some(20)]);
        let values = Int64Array::from(vec![1, 2, 3, 4]);
        let schema = Schema::new(vec![
            Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, None), true),
            Field::new("v", DataType::Int64, false),
        ]);
        let batch = RecordBatch::try_new(Arc::new(schema), vec![Arc::new(times), Arc::new(values)])
            .unwrap();
        let kept = at_or_above(&batch, 0, 10).unwrap();
        let kept: Vec<i64> = kept.column(1).as_primitive::<Int64Type>().values().to_vec();
        assert_eq!(kept, vec![2, 3, 4]);
    }

    #[test]
    fn a_bound_moves_when_it_grows_or_first_appears() {
        let at = |from, to| Expiring {
            column: 0,
            from,
            to,
        };
        assert!(at(None, 3).moves());
        assert!(at(Some(2), 3).moves());
        assert!(!at(Some(3), 3).moves());
    }
}
