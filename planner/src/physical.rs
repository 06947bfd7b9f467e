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
    },
    Input {
        schema: SchemaRef,
    },
    ParquetScan {
        table: Arc<ExternalTable>,
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
            PhysicalPlan::ParquetScan { table } => table.schema.clone(),
            PhysicalPlan::Filter { input, .. }
            | PhysicalPlan::Sort { input, .. }
            | PhysicalPlan::Limit { input, .. } => input.schema(),
            PhysicalPlan::RecursiveCte { anchor, .. } => anchor.schema(),
        }
    }
}

/// Chooses the physical operators for a logical plan.
pub fn create_physical_plan(plan: &LogicalPlan) -> PhysicalPlan {
    let child = |input: &LogicalPlan| Box::new(create_physical_plan(input));
    match plan {
        LogicalPlan::Scan { table, schema } => PhysicalPlan::TableScan {
            table: table.clone(),
            schema: schema.clone(),
        },
        LogicalPlan::Window {
            input,
            exprs,
            schema,
        } => PhysicalPlan::Window {
            input: child(input),
            exprs: exprs.clone(),
            schema: schema.clone(),
        },
        LogicalPlan::Union { inputs, schema } => PhysicalPlan::Union {
            inputs: inputs.iter().map(create_physical_plan).collect(),
            schema: schema.clone(),
        },
        LogicalPlan::ParquetScan { table } => PhysicalPlan::ParquetScan {
            table: table.clone(),
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
            anchor: child(anchor),
            step: child(step),
            id: *id,
            distinct: *distinct,
        },
        LogicalPlan::Values { schema, rows } => PhysicalPlan::Values {
            schema: schema.clone(),
            rows: rows.clone(),
        },
        LogicalPlan::Filter { input, predicate } => PhysicalPlan::Filter {
            input: child(input),
            predicate: predicate.clone(),
        },
        LogicalPlan::Project {
            input,
            exprs,
            schema,
        } => PhysicalPlan::Projection {
            input: child(input),
            exprs: exprs.clone(),
            schema: schema.clone(),
        },
        LogicalPlan::Aggregate {
            input,
            group,
            aggregates,
            schema,
        } => PhysicalPlan::HashAggregate {
            input: child(input),
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
            left: child(left),
            right: child(right),
            kind: *kind,
            left_keys: on.iter().map(|(l, _)| l.clone()).collect(),
            right_keys: on.iter().map(|(_, r)| r.clone()).collect(),
            filter: filter.clone(),
            schema: schema.clone(),
        },
        LogicalPlan::Sort { input, keys } => PhysicalPlan::Sort {
            input: child(input),
            keys: keys.clone(),
            fetch: None,
        },
        LogicalPlan::Limit { input, skip, fetch } => match (input.as_ref(), fetch) {
            // A sort under a limit only has to keep the rows the limit lets through.
            (LogicalPlan::Sort { input, keys }, Some(fetch)) => PhysicalPlan::Limit {
                input: Box::new(PhysicalPlan::Sort {
                    input: child(input),
                    keys: keys.clone(),
                    fetch: Some(skip + fetch),
                }),
                skip: *skip,
                fetch: Some(*fetch),
            },
            _ => PhysicalPlan::Limit {
                input: child(input),
                skip: *skip,
                fetch: *fetch,
            },
        },
    }
}
