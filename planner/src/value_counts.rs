//! The ordered state of a view's mins and maxes (ADR 0052): per distinct (argument, FILTER),
//! a keyed table counting, per group, the rows that hold each value. A group whose least (or
//! greatest) value a commit removed takes its new one from these counts, without reading the
//! base table.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema};
use pondra_catalog::{Column, TableDef};

use crate::Result;
use crate::expr::{AggregateCall, AggregateFunction, BinaryOp, Expr};
use crate::logical::LogicalPlan;
use crate::scalar::ScalarValue;
use crate::view::{groups_predicate, state_column};

/// The name of the column holding a counted value.
pub const VALUE: &str = "value";
/// The name of the column holding how many rows hold the value.
pub const COUNT: &str = "row_count";

/// The plans of one count table of a view.
#[derive(Clone, Debug)]
pub struct ValueCountsPlan {
    /// The table's columns: the group keys, then `value`, then `row_count`.
    pub columns: Vec<Column>,
    /// From a batch of base rows (the plan's `Input`) to one row per (group, value) held by
    /// one of its rows, with how many hold it.
    pub maintain: LogicalPlan,
    group_count: usize,
}

impl ValueCountsPlan {
    /// The columns the table is keyed on: the group keys and the value.
    pub fn key(&self) -> Vec<String> {
        self.columns[..=self.group_count]
            .iter()
            .map(|c| c.name.clone())
            .collect()
    }

    pub fn group_count(&self) -> usize {
        self.group_count
    }

    /// The plan reading the stored counts of the given groups from `table`, with their row
    /// addresses last; with `window`, only values within it (inclusive). `None` when a group
    /// value cannot be written as a constant.
    pub fn rows_plan(
        &self,
        table: &Arc<TableDef>,
        groups: &[Vec<ScalarValue>],
        window: Option<(i64, i64)>,
    ) -> Option<LogicalPlan> {
        let schema = table.scan_schema(false, true);
        let column = |i: usize| {
            let f = schema.field(i);
            Expr::column(i, f.name(), f.data_type().clone())
        };
        let keys: Vec<Expr> = (0..self.group_count).map(column).collect();
        let mut parts = vec![groups_predicate(&keys, groups)?];
        if let Some((least, greatest)) = window {
            let value = column(self.group_count).cast(&DataType::Int64);
            let bound = |op, limit: i64| Expr::Binary {
                op,
                left: Box::new(value.clone()),
                right: Box::new(Expr::Literal(ScalarValue::Int64(limit))),
            };
            parts.push(bound(BinaryOp::GtEq, least));
            parts.push(bound(BinaryOp::LtEq, greatest));
        }
        Some(LogicalPlan::Filter {
            input: Box::new(LogicalPlan::Scan {
                table: table.clone(),
                schema,
            }),
            predicate: Expr::and_all(parts).expect("a group predicate"),
        })
    }

    /// Whether values can be read by a window of integers (which the page index prunes).
    pub fn has_integer_values(&self) -> bool {
        matches!(
            self.columns[self.group_count].sql_type.to_arrow(),
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64
        )
    }
}

/// The count tables of an aggregating view, from what its aggregate reads (`source`, over the
/// base table), its group keys and its aggregates; and for each aggregate, the count table of
/// its values when it is a min, a max or a count(DISTINCT) (ADR 0054).
pub(crate) fn plan_value_counts(
    source: &LogicalPlan,
    group: &[Expr],
    aggregates: &[AggregateCall],
) -> Result<(Vec<ValueCountsPlan>, Vec<Option<usize>>)> {
    let mut counted: Vec<(Expr, Option<Expr>)> = Vec::new();
    let mut sources = Vec::new();
    for call in aggregates {
        let counted_kinds = [
            AggregateFunction::Min,
            AggregateFunction::Max,
            AggregateFunction::CountDistinct,
        ];
        if !counted_kinds.contains(&call.func) {
            sources.push(None);
            continue;
        }
        let arg = call
            .arg
            .clone()
            .expect("min, max and count(DISTINCT) have an argument");
        let filter = call.filter.clone();
        let position = match counted.iter().position(|(a, f)| *a == arg && *f == filter) {
            Some(position) => position,
            None => {
                counted.push((arg, filter));
                counted.len() - 1
            }
        };
        sources.push(Some(position));
    }
    let plans = counted
        .into_iter()
        .map(|(arg, filter)| counts_plan(source, group, arg, filter))
        .collect::<Result<_>>()?;
    Ok((plans, sources))
}

fn counts_plan(
    source: &LogicalPlan,
    group: &[Expr],
    arg: Expr,
    filter: Option<Expr>,
) -> Result<ValueCountsPlan> {
    let mut columns = Vec::new();
    for (i, g) in group.iter().enumerate() {
        columns.push(state_column(format!("group_{i}"), &g.data_type())?);
    }
    columns.push(state_column(VALUE.into(), &arg.data_type())?);
    columns.push(state_column(COUNT.into(), &DataType::Int64)?);
    let fields: Vec<Field> = columns
        .iter()
        .map(|c| Field::new(&c.name, c.sql_type.to_arrow(), true))
        .collect();
    // Min and max skip NULLs, and rows outside the aggregate's FILTER.
    let mut kept = vec![Expr::IsNotNull(Box::new(arg.clone()))];
    kept.extend(filter);
    let input = LogicalPlan::Filter {
        input: Box::new(crate::view::with_input(source)),
        predicate: Expr::and_all(kept).expect("a condition"),
    };
    let mut keys = group.to_vec();
    keys.push(arg);
    let maintain = LogicalPlan::Aggregate {
        input: Box::new(input),
        group: keys,
        aggregates: vec![AggregateCall::new(AggregateFunction::CountStar, None)],
        schema: Arc::new(Schema::new(fields)),
    };
    Ok(ValueCountsPlan {
        columns,
        maintain,
        group_count: group.len(),
    })
}
