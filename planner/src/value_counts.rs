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
    /// Whether `group_hash` (a stable hash of the group's values) leads the columns: for a
    /// group with a key that is not an integer, which scans cannot prune by (ADR 0054).
    hashed: bool,
}

/// The name of the column holding the hash of a count table's group.
pub const GROUP_HASH: &str = "group_hash";

/// Whether every group key is a type whose column ranges scans prune by (an integer or a
/// date, `is_exact_integer`).
fn prunable(group: &[Expr]) -> bool {
    group
        .iter()
        .all(|g| pondra_catalog::is_exact_integer(&g.data_type()))
}

impl ValueCountsPlan {
    /// The columns the table is keyed on: the group keys and the value.
    pub fn key(&self) -> Vec<String> {
        self.columns[..=self.value_index()]
            .iter()
            .map(|c| c.name.clone())
            .collect()
    }

    pub fn group_count(&self) -> usize {
        self.group_count
    }

    /// The position of the first group column (after `group_hash`, when there is one).
    pub fn first_group(&self) -> usize {
        usize::from(self.hashed)
    }

    /// The position of the `value` column.
    pub fn value_index(&self) -> usize {
        self.first_group() + self.group_count
    }

    /// Whether `group_hash` leads the columns.
    pub fn is_hashed(&self) -> bool {
        self.hashed
    }

    /// The plan reading the stored counts of the given groups from `table`, with their row
    /// addresses last; with `window`, only values within it (inclusive). `None` when a group
    /// value cannot be written as a constant.
    pub fn rows_plan(
        &self,
        table: &Arc<TableDef>,
        groups: &[(Vec<ScalarValue>, i64)],
        window: Option<(i64, i64)>,
    ) -> Option<LogicalPlan> {
        let schema = table.scan_schema(false, true);
        let column = |i: usize| {
            let f = schema.field(i);
            Expr::column(i, f.name(), f.data_type().clone())
        };
        let first = self.first_group();
        let keys: Vec<Expr> = (first..first + self.group_count).map(column).collect();
        let values: Vec<Vec<ScalarValue>> = groups.iter().map(|(g, _)| g.clone()).collect();
        let mut parts = vec![groups_predicate(&keys, &values)?];
        if self.hashed {
            let hashes = groups.iter().map(|(_, hash)| Expr::Binary {
                op: BinaryOp::Eq,
                left: Box::new(column(0)),
                right: Box::new(Expr::Literal(ScalarValue::Int64(*hash))),
            });
            parts.push(hashes.reduce(|l, r| Expr::Binary {
                op: BinaryOp::Or,
                left: Box::new(l),
                right: Box::new(r),
            })?);
        }
        if let Some((least, greatest)) = window {
            let value = column(self.value_index()).cast(&DataType::Int64);
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
            self.columns[self.value_index()].sql_type.to_arrow(),
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
    let hashed = !prunable(group);
    let mut columns = Vec::new();
    if hashed {
        columns.push(state_column(GROUP_HASH.into(), &DataType::Int64)?);
    }
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
    let mut keys = Vec::new();
    if hashed {
        keys.push(Expr::Function {
            func: crate::expr::ScalarFunction::KeyHash,
            args: group.to_vec(),
            data_type: DataType::Int64,
        });
    }
    keys.extend(group.iter().cloned());
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
        hashed,
    })
}
