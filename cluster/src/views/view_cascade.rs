//! The change of a view's rows, for the views that read it (ADR 0054). A view of rows changes
//! by the rows it stores and deletes. An aggregating view changes by whole groups: the rows a
//! read answers over the state rows of the groups a commit touched, after the commit less
//! before it.

use hashbrown::HashSet;
use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, BooleanArray, RecordBatch};
use arrow::compute::{concat_batches, filter_record_batch};
use arrow::datatypes::{
    ArrowNumericType, DataType, Date32Type, Int32Type, Int64Type, TimeUnit,
    TimestampMicrosecondType,
};
use pondra_catalog::{Snapshot, TableDef};
use pondra_planner::{BinaryOp, Expr, LogicalPlan, ScalarValue, StateRole, ViewPlan};

use crate::Result;
use crate::node::Node;
use crate::views::view_changes::{
    RowKeys, StateChange, address_column, conform, group_values, without_address,
};
use crate::views::view_stream::{Delta, consolidated};

/// Above this many touched groups, the state is read whole rather than group by group.
const MOST_GROUPS_READ: usize = 256;

/// A view's state rows of the groups a commit touches, as they stand before it, with their
/// addresses: none for a view of rows, whose change is its rows.
pub(crate) struct Before {
    rows: RecordBatch,
    addresses: Vec<i64>,
}

impl Node {
    /// The state rows of the groups `images` (state rows of the commit's gained and lost
    /// rows) belong to, before the commit.
    pub(crate) async fn touched_state(
        &self,
        snapshot: &Arc<Snapshot>,
        view: &Arc<TableDef>,
        plan: &ViewPlan,
        images: [&RecordBatch; 2],
    ) -> Result<Before> {
        let schema = view.arrow_schema();
        if !plan.is_aggregating() {
            return Ok(Before {
                rows: RecordBatch::new_empty(schema),
                addresses: Vec::new(),
            });
        }
        let groups = plan
            .state_roles()
            .iter()
            .filter(|r| **r == StateRole::Group)
            .count();
        let touched = conform(&schema, &images.map(RecordBatch::clone))?;
        let keys = RowKeys::new(&schema, groups)?;
        let wanted: HashSet<Vec<u8>> = keys.of(&touched)?.into_iter().collect();
        if wanted.is_empty() {
            return Ok(Before {
                rows: RecordBatch::new_empty(schema),
                addresses: Vec::new(),
            });
        }
        // A few groups are read by their values; many by the range their values span, then
        // matched exactly, so that a read costs the groups' neighborhood and not the view.
        let read = match wanted.len() {
            n if n <= MOST_GROUPS_READ => {
                let mut distinct = Vec::new();
                for group in group_values(&touched, groups) {
                    if !distinct.contains(&group) {
                        distinct.push(group);
                    }
                }
                plan.state_rows_plan(view, &distinct)
            }
            _ => None,
        };
        let read = read.unwrap_or_else(|| groups_range_plan(view, &touched, groups));
        let stored = self.run_query(read, snapshot.clone(), Vec::new()).await?;
        let mut rows = Vec::new();
        let mut addresses = Vec::new();
        for batch in &stored {
            let state = without_address(batch);
            let keep: BooleanArray = keys
                .of(&state)?
                .iter()
                .map(|key| Some(wanted.contains(key)))
                .collect();
            rows.push(filter_record_batch(&state, &keep)?);
            let found = address_column(batch);
            let kept = found.iter().zip(keep.values().iter()).filter(|(_, k)| *k);
            addresses.extend(kept.map(|(a, _)| a.expect("an address")));
        }
        Ok(Before {
            rows: conform(&schema, &rows)?,
            addresses,
        })
    }

    /// The change of `view`'s rows through a commit that makes `change` to its state, whose
    /// touched groups held `before`.
    pub(crate) async fn output_change(
        &self,
        snapshot: &Arc<Snapshot>,
        view: &Arc<TableDef>,
        plan: &ViewPlan,
        before: Before,
        change: StateChange,
    ) -> Result<Delta> {
        let schema = view.arrow_schema();
        let (old, new) = match change {
            StateChange::Delta {
                appended,
                lost,
                deleted: _,
            } if !plan.is_aggregating() => (lost, appended),
            StateChange::Delta {
                appended, deleted, ..
            } => {
                let deleted: HashSet<i64> = deleted.into_iter().collect();
                let kept: BooleanArray = before
                    .addresses
                    .iter()
                    .map(|a| Some(!deleted.contains(a)))
                    .collect();
                let kept = filter_record_batch(&before.rows, &kept)?;
                (before.rows, concat_batches(&schema, &[kept, appended])?)
            }
            StateChange::Whole(state) => {
                let old = self.read_table(snapshot, view).await?;
                (conform(&schema, &old)?, conform(&schema, &state)?)
            }
        };
        let read = plan.read_over_input(view);
        let out_schema = read.schema();
        let mut answered = Vec::new();
        for state in [new, old] {
            let out = self
                .run_query(read.clone(), snapshot.clone(), vec![state])
                .await?;
            answered.push(conform(&out_schema, &out)?);
        }
        let weights: Vec<i64> = std::iter::repeat_n(1, answered[0].num_rows())
            .chain(std::iter::repeat_n(-1, answered[1].num_rows()))
            .collect();
        let both = concat_batches(&out_schema, &answered)?;
        consolidated(&both, &weights)
    }
}

/// The view's state rows whose group columns lie within the ranges `touched`'s span, for the
/// columns with an order a scan prunes by (integers, dates and timestamps without NULLs); the
/// whole state when none has.
fn groups_range_plan(view: &Arc<TableDef>, touched: &RecordBatch, groups: usize) -> LogicalPlan {
    let schema = view.scan_schema(false, true);
    let scan = LogicalPlan::Scan {
        table: view.clone(),
        schema: schema.clone(),
    };
    let mut bounds = Vec::new();
    for index in 0..groups {
        let Some((least, greatest)) = value_range(touched.column(index)) else {
            continue;
        };
        let field = schema.field(index);
        let column = Expr::column(index, field.name(), field.data_type().clone());
        for (op, value) in [(BinaryOp::GtEq, least), (BinaryOp::LtEq, greatest)] {
            bounds.push(Expr::Binary {
                op,
                left: Box::new(column.clone()),
                right: Box::new(Expr::Literal(value)),
            });
        }
    }
    match Expr::and_all(bounds) {
        Some(predicate) => LogicalPlan::Filter {
            input: Box::new(scan),
            predicate,
        },
        None => scan,
    }
}

/// The least and greatest value of a column of an ordered fixed-width type without NULLs.
fn value_range(values: &ArrayRef) -> Option<(ScalarValue, ScalarValue)> {
    if values.null_count() > 0 || values.is_empty() {
        return None;
    }
    fn range<T: ArrowNumericType>(values: &ArrayRef) -> Option<(T::Native, T::Native)> {
        let values = values.as_primitive::<T>();
        arrow::compute::min(values).zip(arrow::compute::max(values))
    }
    match values.data_type() {
        DataType::Int32 => {
            range::<Int32Type>(values).map(|(l, g)| (ScalarValue::Int32(l), ScalarValue::Int32(g)))
        }
        DataType::Int64 => {
            range::<Int64Type>(values).map(|(l, g)| (ScalarValue::Int64(l), ScalarValue::Int64(g)))
        }
        DataType::Date32 => range::<Date32Type>(values)
            .map(|(l, g)| (ScalarValue::Date32(l), ScalarValue::Date32(g))),
        DataType::Timestamp(TimeUnit::Microsecond, None) => {
            range::<TimestampMicrosecondType>(values).map(|(l, g)| {
                (
                    ScalarValue::TimestampMicros(l),
                    ScalarValue::TimestampMicros(g),
                )
            })
        }
        _ => None,
    }
}
