use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use pondra_catalog::TableDef;

use crate::expr::{AggregateCall, Expr, JoinKind, SortKey, WindowExpr};
use crate::external::ExternalTable;
use crate::logical::LogicalPlan;

/// The plan `exec` runs: operators chosen for each logical node.
#[derive(Clone, Debug)]
pub enum PhysicalPlan {
    TableScan {
        table: Arc<TableDef>,
        schema: SchemaRef,
        /// The columns the plan reads, when not all: the others are NULL in the scan's rows.
        columns: Option<Vec<usize>>,
    },
    Input {
        schema: SchemaRef,
    },
    ParquetScan {
        table: Arc<ExternalTable>,
        /// As for `TableScan`.
        columns: Option<Vec<usize>>,
    },
    /// Computes window functions over all input rows.
    Window {
        input: Box<PhysicalPlan>,
        exprs: Vec<WindowExpr>,
        schema: SchemaRef,
    },
    /// The rows of each input in turn.
    Union {
        inputs: Vec<PhysicalPlan>,
        schema: SchemaRef,
    },
    Values {
        schema: SchemaRef,
        rows: Vec<Vec<Expr>>,
    },
    Filter {
        input: Box<PhysicalPlan>,
        predicate: Expr,
    },
    Projection {
        input: Box<PhysicalPlan>,
        exprs: Vec<Expr>,
        schema: SchemaRef,
    },
    HashAggregate {
        input: Box<PhysicalPlan>,
        group: Vec<Expr>,
        aggregates: Vec<AggregateCall>,
        schema: SchemaRef,
    },
    /// A full sort; with `fetch`, only the first `fetch` rows are kept (top-N).
    Sort {
        input: Box<PhysicalPlan>,
        keys: Vec<SortKey>,
        fetch: Option<usize>,
    },
    Limit {
        input: Box<PhysicalPlan>,
        skip: usize,
        fetch: Option<usize>,
    },
    /// See `LogicalPlan::RecursiveCte`.
    RecursiveCte {
        anchor: Box<PhysicalPlan>,
        step: Box<PhysicalPlan>,
        id: usize,
        distinct: bool,
    },
    WorkingTable {
        id: usize,
        schema: SchemaRef,
    },
    /// A hash join: `right` is built into a hash table first, `left` streams through it.
    HashJoin {
        left: Box<PhysicalPlan>,
        right: Box<PhysicalPlan>,
        kind: JoinKind,
        left_keys: Vec<Expr>,
        right_keys: Vec<Expr>,
        filter: Option<Expr>,
        schema: SchemaRef,
    },
}

impl PhysicalPlan {
    pub fn schema(&self) -> SchemaRef {
        match self {
            PhysicalPlan::TableScan { schema, .. }
            | PhysicalPlan::Input { schema }
            | PhysicalPlan::WorkingTable { schema, .. }
            | PhysicalPlan::Values { schema, .. }
            | PhysicalPlan::Projection { schema, .. }
            | PhysicalPlan::HashAggregate { schema, .. }
            | PhysicalPlan::HashJoin { schema, .. }
            | PhysicalPlan::Union { schema, .. }
            | PhysicalPlan::Window { schema, .. } => schema.clone(),
            PhysicalPlan::ParquetScan { table, .. } => table.schema.clone(),
            PhysicalPlan::Filter { input, .. }
            | PhysicalPlan::Sort { input, .. }
            | PhysicalPlan::Limit { input, .. } => input.schema(),
            PhysicalPlan::RecursiveCte { anchor, .. } => anchor.schema(),
        }
    }
}

/// Chooses the physical operators for a logical plan. Scans read only the columns the plan
/// above them uses.
pub fn create_physical_plan(plan: &LogicalPlan) -> PhysicalPlan {
    let all = vec![true; plan.schema().fields().len()];
    build(plan, &all)
}

/// The columns of `expr`'s input it reads, marked in `used`.
fn mark_columns(expr: &Expr, used: &mut [bool]) {
    let cell = std::cell::RefCell::new(used);
    expr.any(&|e| {
        if let Expr::Column { index, .. } = e
            && let Some(slot) = cell.borrow_mut().get_mut(*index)
        {
            *slot = true;
        }
        false
    });
}

fn marked(width: usize, exprs: &[&Expr]) -> Vec<bool> {
    let mut used = vec![false; width];
    for e in exprs {
        mark_columns(e, &mut used);
    }
    used
}

/// The used columns of a scan of `width` columns, or `None` when it needs them all.
fn scan_columns(used: &[bool]) -> Option<Vec<usize>> {
    if used.iter().all(|u| *u) {
        return None;
    }
    let columns: Vec<usize> = (0..used.len()).filter(|i| used[*i]).collect();
    // A scan that reads no column still needs its row count: it reads the first.
    if columns.is_empty() && !used.is_empty() {
        return Some(vec![0]);
    }
    Some(columns)
}

/// `plan` as physical operators, where the plan above uses the output columns marked in `used`.
fn build(plan: &LogicalPlan, used: &[bool]) -> PhysicalPlan {
    let width = |p: &LogicalPlan| p.schema().fields().len();
    let all_of = |p: &LogicalPlan| vec![true; width(p)];
    let child = |input: &LogicalPlan, used: &[bool]| Box::new(build(input, used));
    match plan {
        LogicalPlan::Scan { table, schema } => PhysicalPlan::TableScan {
            table: table.clone(),
            schema: schema.clone(),
            columns: scan_columns(used),
        },
        LogicalPlan::Window {
            input,
            exprs,
            schema,
        } => {
            let mut needed = used[..width(input)].to_vec();
            for w in exprs {
                for e in w.args.iter().chain(&w.partition_by) {
                    mark_columns(e, &mut needed);
                }
                for k in &w.order_by {
                    mark_columns(&k.expr, &mut needed);
                }
            }
            PhysicalPlan::Window {
                input: child(input, &needed),
                exprs: exprs.clone(),
                schema: schema.clone(),
            }
        }
        LogicalPlan::Union { inputs, schema } => PhysicalPlan::Union {
            inputs: inputs.iter().map(|i| build(i, used)).collect(),
            schema: schema.clone(),
        },
        LogicalPlan::ParquetScan { table } => PhysicalPlan::ParquetScan {
            table: table.clone(),
            columns: scan_columns(used),
        },
        LogicalPlan::Input { schema } => PhysicalPlan::Input {
            schema: schema.clone(),
        },
        LogicalPlan::WorkingTable { id, schema } => PhysicalPlan::WorkingTable {
            id: *id,
            schema: schema.clone(),
        },
        LogicalPlan::RecursiveCte {
            anchor,
            step,
            id,
            distinct,
        } => PhysicalPlan::RecursiveCte {
            anchor: child(anchor, &all_of(anchor)),
            step: child(step, &all_of(step)),
            id: *id,
            distinct: *distinct,
        },
        LogicalPlan::Values { schema, rows } => PhysicalPlan::Values {
            schema: schema.clone(),
            rows: rows.clone(),
        },
        LogicalPlan::Filter { input, predicate } => {
            let mut needed = used.to_vec();
            mark_columns(predicate, &mut needed);
            PhysicalPlan::Filter {
                input: child(input, &needed),
                predicate: predicate.clone(),
            }
        }
        LogicalPlan::Project {
            input,
            exprs,
            schema,
        } => {
            // Every projected expression is computed, used above or not.
            let needed = marked(width(input), &exprs.iter().collect::<Vec<_>>());
            PhysicalPlan::Projection {
                input: child(input, &needed),
                exprs: exprs.clone(),
                schema: schema.clone(),
            }
        }
        LogicalPlan::Aggregate {
            input,
            group,
            aggregates,
            schema,
        } => PhysicalPlan::HashAggregate {
            input: child(
                input,
                &marked(
                    width(input),
                    &group
                        .iter()
                        .chain(aggregates.iter().filter_map(|a| a.arg.as_ref()))
                        .collect::<Vec<_>>(),
                ),
            ),
            group: group.clone(),
            aggregates: aggregates.clone(),
            schema: schema.clone(),
        },
        LogicalPlan::Join {
            left,
            right,
            kind,
            on,
            filter,
            schema,
        } => PhysicalPlan::HashJoin {
            left: child(
                left,
                &join_side_columns(used, on, filter, left, right, true),
            ),
            right: child(
                right,
                &join_side_columns(used, on, filter, left, right, false),
            ),
            kind: *kind,
            left_keys: on.iter().map(|(l, _)| l.clone()).collect(),
            right_keys: on.iter().map(|(_, r)| r.clone()).collect(),
            filter: filter.clone(),
            schema: schema.clone(),
        },
        LogicalPlan::Sort { input, keys } => PhysicalPlan::Sort {
            input: child(input, &with_sort_keys(used, keys)),
            keys: keys.clone(),
            fetch: None,
        },
        LogicalPlan::Limit { input, skip, fetch } => match (input.as_ref(), fetch) {
            // A sort under a limit only has to keep the rows the limit lets through.
            (LogicalPlan::Sort { input, keys }, Some(fetch)) => PhysicalPlan::Limit {
                input: Box::new(PhysicalPlan::Sort {
                    input: child(input, &with_sort_keys(used, keys)),
                    keys: keys.clone(),
                    fetch: Some(skip + fetch),
                }),
                skip: *skip,
                fetch: Some(*fetch),
            },
            _ => PhysicalPlan::Limit {
                input: child(input, used),
                skip: *skip,
                fetch: *fetch,
            },
        },
    }
}

fn with_sort_keys(used: &[bool], keys: &[crate::expr::SortKey]) -> Vec<bool> {
    let mut needed = used.to_vec();
    for k in keys {
        mark_columns(&k.expr, &mut needed);
    }
    needed
}

/// The columns one side of a join must produce: those used above that come from it, its
/// keys, and what the filter (over left columns, then right columns) reads of it.
fn join_side_columns(
    used: &[bool],
    on: &[(Expr, Expr)],
    filter: &Option<Expr>,
    left: &LogicalPlan,
    right: &LogicalPlan,
    left_side: bool,
) -> Vec<bool> {
    let left_width = left.schema().fields().len();
    let right_width = right.schema().fields().len();
    let (offset, width) = if left_side {
        (0, left_width)
    } else {
        (left_width, right_width)
    };
    let mut needed: Vec<bool> = (0..width)
        .map(|i| used.get(offset + i).copied().unwrap_or(false))
        .collect();
    for (l, r) in on {
        mark_columns(if left_side { l } else { r }, &mut needed);
    }
    if let Some(filter) = filter {
        let mut joined = vec![false; left_width + right_width];
        mark_columns(filter, &mut joined);
        for i in 0..width {
            needed[i] |= joined[offset + i];
        }
    }
    needed
}
