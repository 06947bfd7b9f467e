//! Materialized views kept current on every commit.
//!
//! A view stores *state*, not answers. A view without aggregates stores its rows. An aggregating
//! view stores one partial aggregate per group per commit (count, sum, min, max; avg as a sum
//! and a count): the commit that appends a batch to the base table appends that batch's partial
//! aggregates to the view in the same catalog write. Reading the view merges the partials
//! (sum of counts, sum of sums, min of mins...) and applies what the query does above its
//! aggregate (HAVING, the select list); tiering merges them for good. The base table is never
//! read again.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema};
use pondra_catalog::{Column, Snapshot, SqlType, TableDef, TableKind};
use sqlparser::ast;

use crate::binder::{Binder, type_name};
use crate::expr::{AggregateCall, AggregateFunction, BinaryOp, Expr, ScalarFunction};
use crate::logical::LogicalPlan;
use crate::scalar::ScalarValue;
use crate::{Result, bind_err, unsupported};

/// How one aggregate of the view is kept as state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StateKind {
    Count,
    Sum,
    Min,
    Max,
    /// A sum column and a count column.
    Avg,
    /// Not kept incrementally yet: refused when the view is planned.
    Distinct,
}

/// The plans that keep a materialized view current and read it.
#[derive(Clone, Debug)]
pub struct ViewPlan {
    /// The table whose commits feed the view.
    pub base_table: Arc<TableDef>,
    /// The columns of the view's stored state.
    pub state_columns: Vec<Column>,
    /// From a batch of base rows (the plan's `Input`) to the state rows to append.
    pub maintain: LogicalPlan,
    /// What the view does with its state when read.
    read: ReadShape,
}

#[derive(Clone, Debug)]
enum ReadShape {
    /// The state rows are the view's rows.
    Rows,
    /// Merge the partial aggregates, then apply `upper` (the nodes above the aggregate).
    Merge {
        group_count: usize,
        kinds: Vec<StateKind>,
        aggregate_schema: Arc<Schema>,
        upper: LogicalPlan,
    },
}

/// Plans a materialized view over the query that defines it.
pub fn plan_view(snapshot: &Snapshot, query: &ast::Query) -> Result<ViewPlan> {
    if query.order_by.is_some() || query.limit_clause.is_some() {
        return Err(unsupported!(
            "ORDER BY or LIMIT in a materialized view (order the rows when you read it)"
        ));
    }
    let plan = crate::optimizer::optimize(Binder::new(snapshot).bind_query(query)?, snapshot)?;
    let core = find_core(&plan);
    match core {
        LogicalPlan::Aggregate {
            input,
            group,
            aggregates,
            schema,
        } => {
            let base_table = base_table_of(input)?;
            let kinds: Vec<StateKind> = aggregates.iter().map(state_kind).collect();
            if kinds.contains(&StateKind::Distinct) {
                return Err(unsupported!(
                    "count(DISTINCT ...), stddev, variance, string_agg, array_agg and GROUPING in a materialized view"
                ));
            }
            let mut partials = Vec::new();
            for (call, kind) in aggregates.iter().zip(&kinds) {
                partials.extend(partial_calls(call, *kind));
            }
            let mut columns = Vec::new();
            let mut fields = Vec::new();
            for (i, g) in group.iter().enumerate() {
                columns.push(state_column(format!("group_{i}"), &g.data_type())?);
            }
            for (i, p) in partials.iter().enumerate() {
                columns.push(state_column(format!("state_{i}"), &p.data_type)?);
            }
            for c in &columns {
                fields.push(Field::new(&c.name, c.sql_type.to_arrow(), true));
            }
            let maintain = LogicalPlan::Aggregate {
                input: Box::new(with_input(input)),
                group: group.clone(),
                aggregates: partials,
                schema: Arc::new(Schema::new(fields)),
            };
            Ok(ViewPlan {
                base_table,
                state_columns: columns,
                maintain,
                read: ReadShape::Merge {
                    group_count: group.len(),
                    kinds,
                    aggregate_schema: schema.clone(),
                    upper: plan.clone(),
                },
            })
        }
        _ => {
            let base_table = base_table_of(&plan)?;
            let schema = plan.schema();
            let columns = schema
                .fields()
                .iter()
                .map(|f| state_column(f.name().clone(), f.data_type()))
                .collect::<Result<Vec<_>>>()?;
            Ok(ViewPlan {
                base_table,
                state_columns: columns,
                maintain: with_input(&plan),
                read: ReadShape::Rows,
            })
        }
    }
}

impl ViewPlan {
    /// The plan that answers a read of the view stored as `view`.
    pub fn read_plan(&self, view: &Arc<TableDef>) -> LogicalPlan {
        assert!(matches!(view.kind, TableKind::MaterializedView { .. }));
        let scan = LogicalPlan::Scan {
            table: view.clone(),
            schema: view.arrow_schema(),
        };
        let ReadShape::Merge {
            group_count,
            kinds,
            aggregate_schema,
            upper,
        } = &self.read
        else {
            return scan;
        };
        let merged = merge(scan, *group_count, kinds);
        let merged_schema = merged.schema();
        let merged_column = |i: usize| {
            let f = merged_schema.field(i);
            Expr::column(i, f.name(), f.data_type().clone())
        };
        let mut finals: Vec<Expr> = (0..*group_count).map(merged_column).collect();
        let mut position = *group_count;
        for kind in kinds {
            let value = merged_column(position);
            finals.push(match kind {
                StateKind::Count => Expr::Function {
                    func: ScalarFunction::Coalesce,
                    args: vec![value, Expr::Literal(ScalarValue::Int64(0))],
                    data_type: DataType::Int64,
                },
                StateKind::Sum | StateKind::Min | StateKind::Max => value,
                StateKind::Distinct => unreachable!("refused when planned"),
                StateKind::Avg => {
                    position += 1;
                    let count = merged_column(position).cast(&DataType::Float64);
                    Expr::Binary {
                        op: BinaryOp::Divide,
                        left: Box::new(value.cast(&DataType::Float64)),
                        right: Box::new(Expr::Function {
                            func: ScalarFunction::NullIf,
                            args: vec![count, Expr::Literal(ScalarValue::Float64(0.0))],
                            data_type: DataType::Float64,
                        }),
                    }
                }
            });
            position += 1;
        }
        let finals: Vec<Expr> = finals
            .into_iter()
            .zip(aggregate_schema.fields())
            .map(|(e, f)| e.cast(f.data_type()))
            .collect();
        let names = aggregate_schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        let finalized = merged.project(finals, names);
        replace_core(upper, finalized)
    }

    /// For an aggregating view, the plan that merges state rows (its `Input`) into one row per
    /// group, with the same schema: what tiering stores. `None` when the state is plain rows.
    pub fn compact_plan(&self, view: &TableDef) -> Option<LogicalPlan> {
        let ReadShape::Merge {
            group_count, kinds, ..
        } = &self.read
        else {
            return None;
        };
        let input = LogicalPlan::Input {
            schema: view.arrow_schema(),
        };
        Some(merge(input, *group_count, kinds))
    }
}

/// Merges partial aggregates (state rows from `leaf`) per group; output has the state's schema.
fn merge(leaf: LogicalPlan, group_count: usize, kinds: &[StateKind]) -> LogicalPlan {
    let state = leaf.schema();
    let column = |i: usize| {
        let f = state.field(i);
        Expr::column(i, f.name(), f.data_type().clone())
    };
    let group: Vec<Expr> = (0..group_count).map(column).collect();
    let mut merges = Vec::new();
    let mut next = group_count;
    for kind in kinds {
        let functions: &[AggregateFunction] = match kind {
            StateKind::Count | StateKind::Sum => &[AggregateFunction::Sum],
            StateKind::Min => &[AggregateFunction::Min],
            StateKind::Max => &[AggregateFunction::Max],
            StateKind::Avg => &[AggregateFunction::Sum, AggregateFunction::Sum],
            StateKind::Distinct => unreachable!("refused when planned"),
        };
        for func in functions {
            let arg = column(next);
            merges.push(AggregateCall {
                func: *func,
                data_type: func.result_type(Some(&arg.data_type())),
                arg: Some(arg),
                separator: None,
                order: Vec::new(),
                filter: None,
            });
            next += 1;
        }
    }
    LogicalPlan::Aggregate {
        input: Box::new(leaf),
        group,
        aggregates: merges,
        schema: state,
    }
}

/// The plans of a stored materialized view, from its defining statement.
pub fn load_view(snapshot: &Snapshot, view: &TableDef) -> Result<ViewPlan> {
    let TableKind::MaterializedView { sql, .. } = &view.kind else {
        return Err(bind_err!("{} is not a materialized view", view.name));
    };
    let corrupt = || bind_err!("materialized view {} has a corrupt definition", view.name);
    let parsed = pondra_parser::parse_sql(sql)?;
    let Some(pondra_parser::Statement::Sql(statement)) = parsed.first().map(|p| &p.statement)
    else {
        return Err(corrupt());
    };
    let ast::Statement::CreateView(create) = statement.as_ref() else {
        return Err(corrupt());
    };
    plan_view(snapshot, &create.query)
}

fn state_kind(call: &AggregateCall) -> StateKind {
    match call.func {
        AggregateFunction::CountStar | AggregateFunction::Count => StateKind::Count,
        AggregateFunction::CountDistinct
        | AggregateFunction::SumDistinct
        | AggregateFunction::AvgDistinct
        | AggregateFunction::StddevSamp
        | AggregateFunction::StddevPop
        | AggregateFunction::VarSamp
        | AggregateFunction::VarPop
        | AggregateFunction::StringAgg
        | AggregateFunction::StringAggDistinct
        | AggregateFunction::ArrayAgg
        | AggregateFunction::GroupingId => StateKind::Distinct,
        AggregateFunction::Sum => StateKind::Sum,
        AggregateFunction::Min => StateKind::Min,
        AggregateFunction::Max => StateKind::Max,
        AggregateFunction::Avg => StateKind::Avg,
    }
}

/// The aggregates that compute one view aggregate's partial state over a batch.
fn partial_calls(call: &AggregateCall, kind: StateKind) -> Vec<AggregateCall> {
    match kind {
        StateKind::Avg => {
            let arg = call.arg.clone().expect("avg has an argument");
            vec![
                AggregateCall {
                    func: AggregateFunction::Sum,
                    arg: Some(arg.clone().cast(&DataType::Float64)),
                    data_type: DataType::Float64,
                    separator: None,
                    order: Vec::new(),
                    filter: None,
                },
                AggregateCall {
                    func: AggregateFunction::Count,
                    arg: Some(arg),
                    data_type: DataType::Int64,
                    separator: None,
                    order: Vec::new(),
                    filter: None,
                },
            ]
        }
        _ => vec![call.clone()],
    }
}

fn state_column(name: String, data_type: &DataType) -> Result<Column> {
    let sql_type = SqlType::from_arrow(data_type).ok_or_else(|| {
        bind_err!(
            "a materialized view cannot store a column of type {}",
            type_name(data_type)
        )
    })?;
    Ok(Column {
        name,
        sql_type,
        not_null: false,
    })
}

/// The view's aggregate, or its scan when it has none: what lies under HAVING and the select list.
fn find_core(plan: &LogicalPlan) -> &LogicalPlan {
    match plan {
        LogicalPlan::Aggregate { .. } => plan,
        LogicalPlan::Filter { input, .. } | LogicalPlan::Project { input, .. } => find_core(input),
        other => other,
    }
}

/// `plan` with its core (see [`find_core`]) replaced.
fn replace_core(plan: &LogicalPlan, replacement: LogicalPlan) -> LogicalPlan {
    match plan {
        LogicalPlan::Aggregate { .. } => replacement,
        LogicalPlan::Filter { input, predicate } => LogicalPlan::Filter {
            input: Box::new(replace_core(input, replacement)),
            predicate: predicate.clone(),
        },
        LogicalPlan::Project {
            input,
            exprs,
            schema,
        } => LogicalPlan::Project {
            input: Box::new(replace_core(input, replacement)),
            exprs: exprs.clone(),
            schema: schema.clone(),
        },
        _ => unreachable!("a view's core is an aggregate under filters and projections"),
    }
}

/// The one table a view reads, checking that nothing but filters and projections lie between.
fn base_table_of(plan: &LogicalPlan) -> Result<Arc<TableDef>> {
    match plan {
        LogicalPlan::Scan { table, .. } => match table.kind {
            TableKind::Table if table.ttl.is_some() => {
                Err(unsupported!("a materialized view over a table with a TTL"))
            }
            TableKind::Table => Ok(table.clone()),
            TableKind::MaterializedView { .. } => Err(unsupported!(
                "a materialized view over another materialized view"
            )),
            TableKind::View { .. } => Err(unsupported!("a materialized view over a view")),
        },
        LogicalPlan::Filter { input, .. } | LogicalPlan::Project { input, .. } => {
            base_table_of(input)
        }
        LogicalPlan::Aggregate { .. } => Err(unsupported!(
            "a materialized view over a materialized view or an aggregating subquery"
        )),
        _ => Err(unsupported!(
            "a materialized view must read one table (with WHERE and GROUP BY)"
        )),
    }
}

/// The plan with its table scan replaced by the rows of one commit.
fn with_input(plan: &LogicalPlan) -> LogicalPlan {
    match plan {
        LogicalPlan::Scan { schema, .. } => LogicalPlan::Input {
            schema: schema.clone(),
        },
        LogicalPlan::Filter { input, predicate } => LogicalPlan::Filter {
            input: Box::new(with_input(input)),
            predicate: predicate.clone(),
        },
        LogicalPlan::Project {
            input,
            exprs,
            schema,
        } => LogicalPlan::Project {
            input: Box::new(with_input(input)),
            exprs: exprs.clone(),
            schema: schema.clone(),
        },
        other => other.clone(),
    }
}
