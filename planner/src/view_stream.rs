//! The stream of a materialized view over joins (ADR 0054): what lies below the view's core (its
//! aggregate, or the whole plan of a view of rows) when it joins tables, unions them or unnests
//! rows. A commit's change to a
//! table flows up the stream's nodes, and each join keeps both of its inputs indexed by key in
//! a hidden keyed table, its *join state*.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema};
use pondra_catalog::{Column, Snapshot, TableDef};

use crate::expr::{AggregateCall, AggregateFunction, Expr, JoinKind};
use crate::logical::LogicalPlan;
use crate::view::{expand_leaves, state_column};
use crate::{Result, unsupported};

/// The name of the column holding how many copies of a row a join state holds.
pub const COPIES: &str = "row_count";

/// The stream of a view that joins tables.
#[derive(Clone, Debug)]
pub struct StreamPlan {
    /// Scans, filters, projections, UNION ALL and joins, over the tables (a materialized view
    /// read is a leaf scan of its rows).
    pub plan: LogicalPlan,
    /// `plan` with the views it reads expanded: what runs over the rows its leaves hold.
    pub rows: LogicalPlan,
    /// Every table (or materialized view) the stream scans, each once, in the order first
    /// scanned.
    pub tables: Vec<Arc<TableDef>>,
    /// The state of each join side, in position order: 2j and 2j+1 for the left and right
    /// inputs of the j-th join met in pre-order (the join, then its left, then its right).
    pub join_states: Vec<JoinStatePlan>,
}

/// The state of one input of a join: its rows indexed by their key values.
#[derive(Clone, Debug)]
pub struct JoinStatePlan {
    /// `key_0..`, then the input's columns as `c_0..`, then `row_count`.
    pub columns: Vec<Column>,
    /// How many columns of the state are key values.
    pub key_count: usize,
    /// From rows of the input (the plan's `Input`) to state rows without their count: the key
    /// values, then the row.
    pub image: LogicalPlan,
    /// Over the rows the tables hold: the input's rows counted per state row, which fills the
    /// state.
    pub fill: LogicalPlan,
}

impl JoinStatePlan {
    /// The columns the state is keyed on: all but the count.
    pub fn key(&self) -> Vec<String> {
        let kept = &self.columns[..self.columns.len() - 1];
        kept.iter().map(|c| c.name.clone()).collect()
    }
}

/// The stream of a view whose core reads `plan`, when `plan` joins tables, unions them or
/// unnests rows (a HOP window); `None` when it reads one table through filters and
/// projections (the direct path).
pub(crate) fn plan_stream(plan: &LogicalPlan, snapshot: &Snapshot) -> Result<Option<StreamPlan>> {
    if !needs_stream(plan) {
        return Ok(None);
    }
    let mut stream = StreamPlan {
        plan: plan.clone(),
        rows: expand_leaves(plan.clone(), snapshot)?,
        tables: Vec::new(),
        join_states: Vec::new(),
    };
    walk(plan, &mut stream)?;
    for state in &mut stream.join_states {
        let fill = std::mem::replace(&mut state.fill, LogicalPlan::empty());
        state.fill = expand_leaves(fill, snapshot)?;
    }
    Ok(Some(stream))
}

fn needs_stream(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::Join { .. } | LogicalPlan::Union { .. } | LogicalPlan::Unnest { .. } => true,
        LogicalPlan::Filter { input, .. } | LogicalPlan::Project { input, .. } => {
            needs_stream(input)
        }
        _ => false,
    }
}

/// Checks that the stream holds only nodes whose change is derived, gathering its tables and
/// join states in pre-order.
fn walk(plan: &LogicalPlan, stream: &mut StreamPlan) -> Result<()> {
    match plan {
        LogicalPlan::Scan { table, .. } => {
            crate::view::check_readable(table)?;
            if !stream.tables.iter().any(|t| t.id == table.id) {
                stream.tables.push(table.clone());
            }
            Ok(())
        }
        LogicalPlan::Filter { input, .. }
        | LogicalPlan::Project { input, .. }
        | LogicalPlan::Unnest { input, .. } => walk(input, stream),
        LogicalPlan::Union { inputs, .. } => inputs.iter().try_for_each(|i| walk(i, stream)),
        LogicalPlan::Join {
            left,
            right,
            kind,
            on,
            filter,
            ..
        } => {
            match kind {
                JoinKind::Inner => {}
                JoinKind::Left | JoinKind::Right | JoinKind::Full if filter.is_none() => {}
                JoinKind::Left | JoinKind::Right | JoinKind::Full => {
                    return Err(unsupported!(
                        "an outer join whose condition is more than equal keys, in a materialized view"
                    ));
                }
                _ => {
                    return Err(unsupported!(
                        "EXISTS, IN and NOT IN subqueries (semi and anti joins) in a materialized view"
                    ));
                }
            }
            let left_keys: Vec<Expr> = on.iter().map(|(l, _)| l.clone()).collect();
            let right_keys: Vec<Expr> = on
                .iter()
                .map(|(l, r)| r.clone().cast(&l.data_type()))
                .collect();
            stream.join_states.push(join_state(left, left_keys)?);
            stream.join_states.push(join_state(right, right_keys)?);
            walk(left, stream)?;
            walk(right, stream)
        }
        LogicalPlan::Aggregate { .. } => Err(unsupported!(
            "an aggregate below a join or a UNION in a materialized view"
        )),
        LogicalPlan::Window { .. } => Err(unsupported!(
            "window functions and SESSION windows in a materialized view"
        )),
        LogicalPlan::Sort { .. } | LogicalPlan::Limit { .. } => Err(unsupported!(
            "ORDER BY or LIMIT below a join in a materialized view"
        )),
        _ => Err(unsupported!(
            "a materialized view over joins may read tables through WHERE, joins and UNION ALL only"
        )),
    }
}

/// The state of one join input, `side`, indexed by `keys` (over the input's columns).
fn join_state(side: &LogicalPlan, keys: Vec<Expr>) -> Result<JoinStatePlan> {
    let schema = side.schema();
    let mut columns = Vec::new();
    let mut exprs = keys.clone();
    let mut names = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        names.push(format!("key_{i}"));
        columns.push(state_column(format!("key_{i}"), &key.data_type())?);
    }
    for (i, field) in schema.fields().iter().enumerate() {
        names.push(format!("c_{i}"));
        columns.push(state_column(format!("c_{i}"), field.data_type())?);
        exprs.push(Expr::column(i, field.name(), field.data_type().clone()));
    }
    let input = LogicalPlan::Input {
        schema: schema.clone(),
    };
    let image = input.project(exprs.clone(), names.clone());
    let rows = side.clone().project(exprs, names);
    let rows_schema = rows.schema();
    let group: Vec<Expr> = rows_schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| Expr::column(i, f.name(), f.data_type().clone()))
        .collect();
    columns.push(state_column(COPIES.into(), &DataType::Int64)?);
    let mut fields: Vec<Field> = rows_schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone().with_nullable(true))
        .collect();
    fields.push(Field::new(COPIES, DataType::Int64, true));
    let fill = LogicalPlan::Aggregate {
        input: Box::new(rows),
        group,
        aggregates: vec![AggregateCall::new(AggregateFunction::CountStar, None)],
        schema: Arc::new(Schema::new(fields)),
    };
    Ok(JoinStatePlan {
        columns,
        key_count: keys.len(),
        image,
        fill,
    })
}
