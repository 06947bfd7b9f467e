//! Materialized views kept current on every commit.
//!
//! A view stores *state*, not answers. A view without aggregates stores its rows. An aggregating
//! view stores partial aggregates per group per commit: the number of rows, and per aggregate
//! a count, a sum with the count of the values it summed, a min or a max (avg as a sum and a
//! count). The commit that appends a batch to the base table appends that batch's partials to
//! the view in the same catalog write; a commit that removes rows appends their partials with
//! the counts and sums negated (their weight is -1). Reading the view merges the partials (sum
//! of counts, sum of sums, min of mins...), drops the groups left with no rows, and applies
//! what the query does above its aggregate (HAVING, the select list); tiering merges them for
//! good. A min or max cannot be retracted by arithmetic: when a commit removes the least (or
//! greatest) value of a group, that group's min or max is taken again from the view's count
//! tables ([`ValueCountsPlan`], ADR 0052), or for a view created before them, its state is
//! computed again from the base table ([`ViewPlan::regroup_plan`]), and only that group's.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema};
use pondra_catalog::{Column, Snapshot, SqlType, TableDef, TableKind};
use sqlparser::ast;

use crate::binder::{Binder, type_name};
use crate::expr::{AggregateCall, AggregateFunction, BinaryOp, Expr, ScalarFunction};
use crate::logical::LogicalPlan;
use crate::optimizer::optimize;
use crate::scalar::ScalarValue;
use crate::tree::{PlanNode, TreeNode};
use crate::value_counts::{ValueCountsPlan, plan_value_counts};
use crate::view_stream::{StreamPlan, plan_stream};
use crate::{Result, bind_err, unsupported};

/// How one aggregate of the view is kept as state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StateKind {
    Count,
    /// A sum column and the count of the values summed (a sum of no values is NULL).
    Sum,
    Min,
    Max,
    /// A sum column and a count column.
    Avg,
    /// The number of distinct values, kept by their counts per group (a count table, as for
    /// min and max): a commit's partial is how many values it made appear less how many it
    /// made disappear (ADR 0054).
    CountDistinct,
    /// Not kept incrementally yet: refused when the view is planned.
    Distinct,
}

/// What a column of an aggregating view's state holds, which says how a retraction treats it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateRole {
    /// A group key.
    Group,
    /// A count or a sum: a retraction negates it.
    Additive,
    /// A min: a retraction that removes it computes its group again.
    Least,
    /// A max, likewise.
    Greatest,
}

/// The plans that keep a materialized view current and read it.
#[derive(Clone, Debug)]
pub struct ViewPlan {
    /// The table whose commits feed the view (the first, for a view over joins).
    pub base_table: Arc<TableDef>,
    /// For a view over joins or UNION ALL, what its core reads (ADR 0054): the change of a
    /// commit flows through it, and `maintain` reads that change.
    pub stream: Option<StreamPlan>,
    /// The columns of the view's stored state.
    pub state_columns: Vec<Column>,
    /// From a batch of base rows (the plan's `Input`) to the state rows to append.
    pub maintain: LogicalPlan,
    /// For an aggregating view, what its aggregate reads, over the base table: the rows whose
    /// groups [`ViewPlan::regroup_plan`] computes again.
    source: Option<LogicalPlan>,
    /// What the view does with its state when read.
    read: ReadShape,
    /// For an aggregating view with mins or maxes, the count tables of their values
    /// (ADR 0052).
    pub value_counts: Vec<ValueCountsPlan>,
    /// Each min or max state column's position, with the count table of its values.
    pub extremes: Vec<(usize, usize)>,
    /// Each count(DISTINCT) state column's position, with the count table of its values: the
    /// commit fills the column from the counts' changes (`maintain` leaves it 0).
    pub distincts: Vec<(usize, usize)>,
    /// The aggregates that compute the state from every row at once (count(DISTINCT) as
    /// itself): what creating the view and computing it whole run.
    whole_aggregates: Vec<AggregateCall>,
    /// For a view that emits on window close, how its windows close (ADR 0055).
    pub window_close: Option<WindowClose>,
}

/// How the windows of a view that emits on window close (ADR 0055), or takes an allowed
/// lateness (ADR 0056), become final: by the watermark of `table`, less the lateness, which
/// its `window_end` column is compared with.
#[derive(Clone, Debug)]
pub struct WindowClose {
    /// The watermarked table the view reads.
    pub table: Arc<TableDef>,
    /// Whether reads show final windows only (EMIT ON WINDOW CLOSE).
    pub emits: bool,
    /// How far behind the watermark a window stays open, in microseconds.
    pub lateness: i64,
    /// The position of `window_end` among the view's state columns (a group key of an
    /// aggregating view's state).
    pub state_column: usize,
    /// Its position among the view's columns.
    output_column: usize,
    /// What the column adds up to its window's end: 0 for `window_end`, the window's length
    /// for a view that keeps `window_start` alone, in microseconds.
    end_offset: i64,
}

impl WindowClose {
    /// The greatest value of the window column whose window a watermark closes: the window
    /// ends at or below the watermark less the lateness.
    pub fn closed_at_or_below(&self, watermark: i64) -> i64 {
        watermark
            .saturating_sub(self.lateness)
            .saturating_sub(self.end_offset)
    }
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
    // The optimizer orders joins and picks their sides from the tables' sizes; a view's plan
    // must not change as its tables grow, since its join states follow its joins (ADR 0054).
    let bound = Binder::for_view(snapshot).bind_query(query)?;
    let lateral = |node: &LogicalPlan| {
        matches!(
            node,
            LogicalPlan::Subquery {
                kind: crate::logical::SubqueryKind::Lateral { .. },
                ..
            }
        )
    };
    if crate::tree::TreeNode::exists(&bound, &mut |node| lateral(node)) {
        return Err(unsupported!("LATERAL joins in a materialized view"));
    }
    let plan = crate::optimizer::optimize(bound, &without_rows(snapshot))?;
    let core = find_core(&plan);
    match core {
        LogicalPlan::Aggregate {
            input,
            group,
            aggregates,
            schema,
        } => {
            // The stream's columns the aggregate reads: join states hold no others.
            let mut used = vec![false; input.schema().fields().len()];
            for expr in core.exprs() {
                expr.mark_columns(&mut used);
            }
            let stream = plan_stream(input, &used, snapshot)?;
            let (base_table, core_input) = match &stream {
                Some(stream) => (stream.tables[0].clone(), input_of(input)),
                None => (base_table_of(input)?, input.as_ref().clone()),
            };
            let kinds: Vec<StateKind> = aggregates.iter().map(state_kind).collect();
            if kinds.contains(&StateKind::Distinct) {
                return Err(unsupported!(
                    "sum(DISTINCT ...), avg(DISTINCT ...), stddev, variance, string_agg, array_agg and GROUPING in a materialized view"
                ));
            }
            let mut partials = vec![row_count_call()];
            let mut whole_aggregates = vec![row_count_call()];
            let (value_counts, sources) = plan_value_counts(&core_input, group, aggregates)?;
            let mut extremes = Vec::new();
            let mut distincts = Vec::new();
            for ((call, kind), source) in aggregates.iter().zip(&kinds).zip(sources) {
                let position = group.len() + partials.len();
                match (source, kind) {
                    (Some(counts), StateKind::CountDistinct) => distincts.push((position, counts)),
                    (Some(counts), _) => extremes.push((position, counts)),
                    (None, _) => {}
                }
                partials.extend(partial_calls(call, *kind));
                whole_aggregates.extend(match kind {
                    StateKind::CountDistinct => vec![call.clone()],
                    _ => partial_calls(call, *kind),
                });
            }
            let mut columns = Vec::new();
            let mut fields = Vec::new();
            for (i, g) in group.iter().enumerate() {
                columns.push(state_column(format!("group_{i}"), &g.data_type())?);
            }
            columns.push(state_column(ROW_COUNT.into(), &DataType::Int64)?);
            for (i, p) in partials.iter().enumerate().skip(1) {
                columns.push(state_column(format!("state_{}", i - 1), &p.data_type)?);
            }
            for c in &columns {
                fields.push(Field::new(&c.name, c.sql_type.to_arrow(), true));
            }
            let maintain = LogicalPlan::Aggregate {
                input: Box::new(with_input(&core_input)),
                group: group.clone(),
                aggregates: partials,
                schema: Arc::new(Schema::new(fields)),
            };
            Ok(ViewPlan {
                base_table,
                stream,
                state_columns: columns,
                maintain,
                source: Some(expand_leaves(input.as_ref().clone(), snapshot)?),
                read: ReadShape::Merge {
                    group_count: group.len(),
                    kinds,
                    aggregate_schema: schema.clone(),
                    upper: plan.clone(),
                },
                value_counts,
                extremes,
                distincts,
                whole_aggregates,
                window_close: None,
            })
        }
        _ => {
            let every = vec![true; plan.schema().fields().len()];
            let stream = plan_stream(&plan, &every, snapshot)?;
            let (base_table, maintain) = match &stream {
                Some(stream) => (stream.tables[0].clone(), input_of(&plan)),
                None => (base_table_of(&plan)?, with_input(&plan)),
            };
            let schema = plan.schema();
            let columns = schema
                .fields()
                .iter()
                .map(|f| state_column(f.name().clone(), f.data_type()))
                .collect::<Result<Vec<_>>>()?;
            Ok(ViewPlan {
                base_table,
                stream,
                state_columns: columns,
                maintain,
                source: None,
                read: ReadShape::Rows,
                value_counts: Vec::new(),
                extremes: Vec::new(),
                distincts: Vec::new(),
                whole_aggregates: Vec::new(),
                window_close: None,
            })
        }
    }
}

impl ViewPlan {
    /// For column `index` of an aggregating view's rows that is one of its group keys: the
    /// aggregate's input (over the tables) and the key's expression over it.
    pub(crate) fn group_key_of(&self, index: usize) -> Option<(&LogicalPlan, &Expr)> {
        let ReadShape::Merge {
            group_count, upper, ..
        } = &self.read
        else {
            return None;
        };
        let key = core_column(upper, index).filter(|g| g < group_count)?;
        let LogicalPlan::Aggregate { input, group, .. } = find_core(upper) else {
            return None;
        };
        Some((input, &group[key]))
    }

    /// The plan that answers a read of the view stored as `view` in `snapshot`: for a view
    /// that emits on window close, of the windows its table's watermark has closed there.
    pub fn read_plan(&self, view: &Arc<TableDef>, snapshot: &Snapshot) -> LogicalPlan {
        assert!(matches!(view.kind, TableKind::MaterializedView { .. }));
        let read = self.read_from(LogicalPlan::Scan {
            table: view.clone(),
            schema: view.arrow_schema(),
        });
        let Some(close) = self.window_close.as_ref().filter(|c| c.emits) else {
            return read;
        };
        let schema = read.schema();
        let end = schema.field(close.output_column);
        let end = Expr::column(close.output_column, end.name(), end.data_type().clone());
        let closed = match snapshot.watermark(&close.table) {
            Some(watermark) => Expr::Binary {
                op: BinaryOp::LtEq,
                left: Box::new(end.cast(&DataType::Int64)),
                right: Box::new(Expr::Literal(ScalarValue::Int64(
                    close.closed_at_or_below(watermark),
                ))),
            },
            None => Expr::Literal(ScalarValue::Boolean(false)),
        };
        LogicalPlan::Filter {
            input: Box::new(read),
            predicate: closed,
        }
    }

    /// What a read of the view answers over the state rows given as the plan's `Input`: how
    /// the change of the view's rows is found from the state rows of the groups a commit
    /// touched, before and after it (ADR 0054).
    pub fn read_over_input(&self, view: &TableDef) -> LogicalPlan {
        self.read_from(LogicalPlan::Input {
            schema: view.arrow_schema(),
        })
    }

    /// The read of the view's state rows from `scan`.
    fn read_from(&self, scan: LogicalPlan) -> LogicalPlan {
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
        let mut position = *group_count + 1;
        for kind in kinds {
            let value = merged_column(position);
            finals.push(match kind {
                StateKind::Count | StateKind::CountDistinct => Expr::Function {
                    func: ScalarFunction::Coalesce,
                    args: vec![value, Expr::Literal(ScalarValue::Int64(0))],
                    data_type: DataType::Int64,
                },
                StateKind::Sum => {
                    position += 1;
                    let summed = Expr::Binary {
                        op: BinaryOp::Gt,
                        left: Box::new(merged_column(position)),
                        right: Box::new(Expr::Literal(ScalarValue::Int64(0))),
                    };
                    let data_type = value.data_type();
                    Expr::Case {
                        branches: vec![(summed, value)],
                        otherwise: None,
                        data_type,
                    }
                }
                StateKind::Min | StateKind::Max => value,
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

    /// The tables whose commits feed the view.
    pub fn tables(&self) -> Vec<Arc<TableDef>> {
        match &self.stream {
            Some(stream) => stream.tables.clone(),
            None => vec![self.base_table.clone()],
        }
    }

    /// The plan computing the view's whole state from the tables it reads (`maintain` over
    /// every row rather than a commit's).
    pub fn whole_plan(&self, snapshot: &Snapshot) -> Result<LogicalPlan> {
        let rows = self.rows_plan(snapshot)?;
        Ok(match self.initial_plan() {
            LogicalPlan::Input { .. } => rows,
            initial => replace_input(&initial, rows),
        })
    }

    /// `maintain` with the aggregates that compute the state from every row at once: over the
    /// rows a view is created from.
    pub fn initial_plan(&self) -> LogicalPlan {
        match &self.maintain {
            LogicalPlan::Aggregate {
                input,
                group,
                schema,
                ..
            } => LogicalPlan::Aggregate {
                input: input.clone(),
                group: group.clone(),
                aggregates: self.whole_aggregates.clone(),
                schema: schema.clone(),
            },
            maintain => maintain.clone(),
        }
    }

    /// The plan reading every row the view's core reads: its stream, or its one table (or
    /// view), over the rows they hold.
    pub fn rows_plan(&self, snapshot: &Snapshot) -> Result<LogicalPlan> {
        match &self.stream {
            Some(stream) => Ok(stream.rows.clone()),
            None if self.base_table.is_materialized_view() => {
                let base = &self.base_table;
                Ok(load_view(snapshot, base)?.read_plan(base, snapshot))
            }
            None => Ok(LogicalPlan::Scan {
                table: self.base_table.clone(),
                schema: self.base_table.arrow_schema(),
            }),
        }
    }

    /// Whether the view's state is partial aggregates (else it is the view's rows).
    pub fn is_aggregating(&self) -> bool {
        matches!(self.read, ReadShape::Merge { .. })
    }

    /// What each state column of an aggregating view holds; empty for a view of rows.
    pub fn state_roles(&self) -> Vec<StateRole> {
        let ReadShape::Merge {
            group_count, kinds, ..
        } = &self.read
        else {
            return Vec::new();
        };
        let mut roles = vec![StateRole::Group; *group_count];
        roles.push(StateRole::Additive);
        for kind in kinds {
            match kind {
                StateKind::Count | StateKind::CountDistinct => roles.push(StateRole::Additive),
                StateKind::Sum | StateKind::Avg => roles.extend([StateRole::Additive; 2]),
                StateKind::Min => roles.push(StateRole::Least),
                StateKind::Max => roles.push(StateRole::Greatest),
                StateKind::Distinct => unreachable!("refused when planned"),
            }
        }
        assert_eq!(roles.len(), self.state_columns.len());
        roles
    }

    /// The plan computing the state of the given groups (each a value per group key) from
    /// the rows the base table holds in `snapshot`: one state row per group that has rows.
    /// `None` when a group value cannot be written as a constant.
    pub fn regroup_plan(
        &self,
        snapshot: &Snapshot,
        groups: &[Vec<ScalarValue>],
    ) -> Result<Option<LogicalPlan>> {
        let (
            Some(source),
            LogicalPlan::Aggregate {
                group,
                aggregates,
                schema,
                ..
            },
        ) = (&self.source, &self.maintain)
        else {
            return Ok(None);
        };
        let Some(predicate) = groups_predicate(group, groups) else {
            return Ok(None);
        };
        assert_eq!(aggregates.len(), self.whole_aggregates.len());
        let plan = LogicalPlan::Aggregate {
            input: Box::new(LogicalPlan::Filter {
                input: Box::new(source.clone()),
                predicate,
            }),
            group: group.clone(),
            aggregates: self.whole_aggregates.clone(),
            schema: schema.clone(),
        };
        Ok(Some(optimize(plan, snapshot)?))
    }

    /// The plan reading the state rows of `view` that hold the given groups, with their row
    /// addresses last. `None` when a group value cannot be written as a constant.
    pub fn state_rows_plan(
        &self,
        view: &Arc<TableDef>,
        groups: &[Vec<ScalarValue>],
    ) -> Option<LogicalPlan> {
        let ReadShape::Merge { group_count, .. } = &self.read else {
            return None;
        };
        let schema = view.scan_schema(false, true);
        let keys: Vec<Expr> = (0..*group_count)
            .map(|i| {
                let f = schema.field(i);
                Expr::column(i, f.name(), f.data_type().clone())
            })
            .collect();
        let scan = LogicalPlan::Scan {
            table: view.clone(),
            schema,
        };
        if keys.is_empty() {
            return Some(scan);
        }
        Some(LogicalPlan::Filter {
            input: Box::new(scan),
            predicate: groups_predicate(&keys, groups)?,
        })
    }

    /// For an aggregating view, the plan that merges state rows (its `Input`) into one row per
    /// group left with rows, with the same schema: what tiering stores. `None` when the state
    /// is plain rows.
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

/// Merges partial aggregates (state rows from `leaf`) per group, dropping the groups whose rows
/// were all retracted; output has the state's schema.
fn merge(leaf: LogicalPlan, group_count: usize, kinds: &[StateKind]) -> LogicalPlan {
    let state = leaf.schema();
    let column = |i: usize| {
        let f = state.field(i);
        Expr::column(i, f.name(), f.data_type().clone())
    };
    let group: Vec<Expr> = (0..group_count).map(column).collect();
    let mut merges = Vec::new();
    let mut next = group_count;
    let row_count: &[AggregateFunction] = &[AggregateFunction::Sum];
    for kind in std::iter::once(None).chain(kinds.iter().map(Some)) {
        let functions: &[AggregateFunction] = match kind {
            None => row_count,
            Some(StateKind::Count | StateKind::CountDistinct) => &[AggregateFunction::Sum],
            Some(StateKind::Sum | StateKind::Avg) => {
                &[AggregateFunction::Sum, AggregateFunction::Sum]
            }
            Some(StateKind::Min) => &[AggregateFunction::Min],
            Some(StateKind::Max) => &[AggregateFunction::Max],
            Some(StateKind::Distinct) => unreachable!("refused when planned"),
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
    let merged = LogicalPlan::Aggregate {
        input: Box::new(leaf),
        group,
        aggregates: merges,
        schema: state.clone(),
    };
    if group_count == 0 {
        // A query without GROUP BY answers one row even over no rows.
        return merged;
    }
    let has_rows = Expr::Binary {
        op: BinaryOp::Gt,
        left: Box::new(Expr::column(group_count, ROW_COUNT, DataType::Int64)),
        right: Box::new(Expr::Literal(ScalarValue::Int64(0))),
    };
    LogicalPlan::Filter {
        input: Box::new(merged),
        predicate: has_rows,
    }
}

/// The plans of the materialized view a `CREATE MATERIALIZED VIEW` statement (`sql`)
/// defines, over `snapshot`: how a view a statement nests is created (ADR 0057).
pub fn plan_view_statement(snapshot: &Snapshot, sql: &str) -> Result<ViewPlan> {
    let create = created_view(sql)?
        .ok_or_else(|| bind_err!("not a CREATE MATERIALIZED VIEW statement: {sql}"))?;
    plan_created_view(snapshot, &create)
}

/// The view statement `sql` holds; `None` when it holds another.
fn created_view(sql: &str) -> Result<Option<ast::CreateView>> {
    let parsed = pondra_parser::parse_sql(sql)?;
    let Some(pondra_parser::Statement::Sql(statement)) = parsed.first().map(|p| &p.statement)
    else {
        return Ok(None);
    };
    match statement.as_ref() {
        ast::Statement::CreateView(create) => Ok(Some(create.clone())),
        _ => Ok(None),
    }
}

/// The plans of a stored materialized view, from its defining statement.
pub fn load_view(snapshot: &Snapshot, view: &TableDef) -> Result<ViewPlan> {
    let TableKind::MaterializedView { sql, .. } = &view.kind else {
        return Err(bind_err!("{} is not a materialized view", view.name));
    };
    let create = created_view(sql)?
        .ok_or_else(|| bind_err!("materialized view {} has a corrupt definition", view.name))?;
    let mut plan = plan_created_view(snapshot, &create)?;
    // A view created before ADR 0083 keeps every column of each join side in its states.
    if let Some(stream) = plan.stream.take() {
        let stored = |position| {
            let name = pondra_catalog::join_state_name(&view.name, position);
            let state = snapshot.tables.get(&name)?;
            Some(state.columns.iter().map(|c| c.name.clone()).collect())
        };
        plan.stream = Some(stream.as_stored(&view.name, stored)?);
    }
    let stored: Vec<_> = view
        .columns
        .iter()
        .map(|c| (&c.name, &c.sql_type))
        .collect();
    let planned: Vec<_> = plan
        .state_columns
        .iter()
        .map(|c| (&c.name, &c.sql_type))
        .collect();
    if stored != planned {
        return Err(bind_err!(
            "materialized view {} keeps its state in an earlier form; drop it and create it again",
            view.name
        ));
    }
    Ok(plan)
}

fn state_kind(call: &AggregateCall) -> StateKind {
    match call.func {
        AggregateFunction::CountStar | AggregateFunction::Count => StateKind::Count,
        AggregateFunction::CountDistinct => StateKind::CountDistinct,
        AggregateFunction::SumDistinct
        | AggregateFunction::AvgDistinct
        | AggregateFunction::StddevSamp
        | AggregateFunction::StddevPop
        | AggregateFunction::VarSamp
        | AggregateFunction::VarPop
        | AggregateFunction::StringAgg
        | AggregateFunction::StringAggDistinct
        | AggregateFunction::ArrayAgg
        | AggregateFunction::GroupingId
        | AggregateFunction::Product
        | AggregateFunction::KahanSum => StateKind::Distinct,
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
                    filter: call.filter.clone(),
                },
                count_of(arg, call),
            ]
        }
        StateKind::Sum => {
            let arg = call.arg.clone().expect("sum has an argument");
            vec![call.clone(), count_of(arg, call)]
        }
        // Filled from the counts' changes by the commit: zero here.
        StateKind::CountDistinct => vec![AggregateCall {
            filter: Some(Expr::Literal(ScalarValue::Boolean(false))),
            ..row_count_call()
        }],
        _ => vec![call.clone()],
    }
}

/// True for the rows whose `keys` equal one of `groups` (NULL matching NULL); `None` when a
/// value cannot be written as a constant, or when there are no groups to match.
pub(crate) fn groups_predicate(keys: &[Expr], groups: &[Vec<ScalarValue>]) -> Option<Expr> {
    if keys.is_empty() {
        return Some(Expr::Literal(ScalarValue::Boolean(true)));
    }
    if let [key] = keys
        && !groups.is_empty()
        && groups.iter().all(|g| !matches!(g[0], ScalarValue::Null))
    {
        // One key: a list the scan prunes by and the executor probes by hash.
        let list = groups.iter().map(|values| {
            assert_eq!(values.len(), 1, "a value per group key");
            match &values[0] {
                ScalarValue::Single(_) | ScalarValue::Interval { .. } => None,
                value => Some(Expr::Literal(value.clone()).cast(&key.data_type())),
            }
        });
        return Some(Expr::InList {
            expr: Box::new(key.clone()),
            list: list.collect::<Option<Vec<_>>>()?,
            negated: false,
        });
    }
    let mut alternatives = Vec::new();
    for values in groups {
        assert_eq!(values.len(), keys.len(), "a value per group key");
        let mut parts = Vec::new();
        for (key, value) in keys.iter().zip(values) {
            parts.push(match value {
                ScalarValue::Null => Expr::IsNull(Box::new(key.clone())),
                ScalarValue::Single(_) | ScalarValue::Interval { .. } => return None,
                value => Expr::Binary {
                    op: BinaryOp::Eq,
                    left: Box::new(key.clone()),
                    right: Box::new(Expr::Literal(value.clone()).cast(&key.data_type())),
                },
            });
        }
        alternatives.push(Expr::and_all(parts).expect("a group has keys"));
    }
    balanced_or(alternatives)
}

/// The OR of `alternatives` as a balanced tree: its depth, which evaluation recurses through,
/// grows with the logarithm of their number.
fn balanced_or(mut alternatives: Vec<Expr>) -> Option<Expr> {
    while alternatives.len() > 1 {
        let mut paired = Vec::with_capacity(alternatives.len().div_ceil(2));
        let mut rest = alternatives.into_iter();
        while let Some(left) = rest.next() {
            paired.push(match rest.next() {
                Some(right) => Expr::Binary {
                    op: BinaryOp::Or,
                    left: Box::new(left),
                    right: Box::new(right),
                },
                None => left,
            });
        }
        alternatives = paired;
    }
    alternatives.pop()
}

/// The state column counting a group's rows, which retractions bring to zero.
const ROW_COUNT: &str = "row_count";

fn row_count_call() -> AggregateCall {
    AggregateCall::new(AggregateFunction::CountStar, None)
}

/// The count of the values `call` aggregates (under its FILTER).
fn count_of(arg: Expr, call: &AggregateCall) -> AggregateCall {
    AggregateCall {
        filter: call.filter.clone(),
        ..AggregateCall::new(AggregateFunction::Count, Some(arg))
    }
}

pub(crate) fn state_column(name: String, data_type: &DataType) -> Result<Column> {
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
        id: 0,
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

/// The aggregate's output column that column `index` of `plan` (the nodes above a view's
/// core) passes on unchanged, if any.
fn core_column(plan: &LogicalPlan, index: usize) -> Option<usize> {
    match plan {
        LogicalPlan::Aggregate { .. } => Some(index),
        LogicalPlan::Filter { input, .. } => core_column(input, index),
        LogicalPlan::Project { input, exprs, .. } => match exprs.get(index)? {
            Expr::Column { index, .. } => core_column(input, *index),
            _ => None,
        },
        _ => None,
    }
}

/// Plans the materialized view `create` defines, with its options: `emit = 'on_window_close'`
/// (`EMIT ON WINDOW CLOSE`, ADR 0055) and `allowed_lateness = INTERVAL '...'` (ADR 0056).
pub fn plan_created_view(snapshot: &Snapshot, create: &ast::CreateView) -> Result<ViewPlan> {
    let query = crate::view_ctes::inline_ctes(&create.query)?;
    let mut plan = plan_view(snapshot, &query)?;
    for table in plan.tables() {
        // The change a view passes on (ADR 0054) is of its state, which such a view's reads
        // filter.
        if table.is_materialized_view()
            && load_view(snapshot, &table)?
                .window_close
                .is_some_and(|c| c.emits)
        {
            return Err(unsupported!(
                "a view over {}, a view that emits on window close",
                table.name
            ));
        }
    }
    let options = view_options(&create.options)?;
    let what = match (options.emits, options.lateness) {
        (false, None) => return Ok(plan),
        (true, None) => "EMIT ON WINDOW CLOSE",
        (false, Some(_)) => "allowed_lateness",
        (true, Some(_)) => {
            return Err(bind_err!(
                "a view that emits on window close shows a window once and never changes it: it takes no allowed_lateness (its table's watermark delay is its lateness)"
            ));
        }
    };
    let mut close = window_close(&plan, what)?;
    close.emits = options.emits;
    close.lateness = options.lateness.unwrap_or(0);
    plan.window_close = Some(close);
    Ok(plan)
}

/// The options a materialized view takes.
struct ViewOptions {
    emits: bool,
    lateness: Option<i64>,
}

/// A view's options; options not known are refused.
fn view_options(options: &ast::CreateTableOptions) -> Result<ViewOptions> {
    let mut found = ViewOptions {
        emits: false,
        lateness: None,
    };
    let options = match options {
        ast::CreateTableOptions::None => return Ok(found),
        ast::CreateTableOptions::With(options) => options,
        other => return Err(unsupported!("the view options {other}")),
    };
    for option in options {
        match option {
            ast::SqlOption::KeyValue { key, value }
                if key.to_string().eq_ignore_ascii_case("emit")
                    && value.to_string().eq_ignore_ascii_case("'on_window_close'") =>
            {
                found.emits = true
            }
            ast::SqlOption::KeyValue { key, value }
                if key.to_string().eq_ignore_ascii_case("allowed_lateness") =>
            {
                let micros = crate::binder::interval_micros(value)
                    .filter(|&m| m >= 0)
                    .ok_or_else(|| bind_err!("allowed_lateness = {value}: the lateness is a constant interval of days, hours, minutes or seconds, not negative (INTERVAL '1' MINUTE)"))?;
                found.lateness = Some(micros);
            }
            other => return Err(unsupported!("the view option {other}")),
        }
    }
    Ok(found)
}

/// How the windows of `plan`, a view that emits on window close or takes an allowed lateness
/// (`what`), become final (ADR 0055, 0056).
fn window_close(plan: &ViewPlan, what: &str) -> Result<WindowClose> {
    // A HOP window's unnest makes a stream of one table; joins make state and other tables.
    if let Some(stream) = &plan.stream
        && (stream.tables.len() > 1 || !stream.join_states.is_empty())
    {
        return Err(unsupported!(
            "{what} in a view over joins or several tables"
        ));
    }
    let table = plan.base_table.clone();
    if table.is_materialized_view() {
        return Err(unsupported!("{what} in a view over another view"));
    }
    if table.watermark.is_none() {
        return Err(bind_err!(
            "{what} needs a table with a watermark, and {} has none (CREATE TABLE ... (..., WATERMARK FOR ts AS ts - INTERVAL '5' SECOND))",
            table.name
        ));
    }
    let missing = || {
        bind_err!(
            "{what}: the view must keep the window_end (or, grouping, the window_start) of a TUMBLE or HOP window over {} (as a group key, when it aggregates)",
            table.name
        )
    };
    let (output_column, state_column, end_offset) = match &plan.read {
        ReadShape::Rows => {
            let found = plan
                .state_columns
                .iter()
                .position(|c| c.name == "window_end");
            let found = found.ok_or_else(missing)?;
            (found, found, 0)
        }
        ReadShape::Merge {
            group_count, upper, ..
        } => {
            let schema = upper.schema();
            let group_of = |name: &str| {
                let output = schema.fields().iter().position(|f| f.name() == name)?;
                let group = core_column(upper, output).filter(|g| g < group_count)?;
                Some((output, group))
            };
            match group_of("window_end") {
                Some((output, group)) => (output, group, 0),
                // A TUMBLE or HOP window's end is its start and its length.
                None => {
                    let (output, group) = group_of("window_start").ok_or_else(missing)?;
                    let (input, key) = plan.group_key_of(output).ok_or_else(missing)?;
                    let length = window_length(input, key).ok_or_else(missing)?;
                    (output, group, length)
                }
            }
        }
    };
    Ok(WindowClose {
        table,
        emits: true,
        lateness: 0,
        state_column,
        output_column,
        end_offset,
    })
}

/// The length of the window whose start `key` (over `input`) is, when it is a TUMBLE or HOP
/// window's `window_start`: the start of a TUMBLE known by its form, or either found beside
/// the `window_end` the same projection computes from it.
fn window_length(input: &LogicalPlan, key: &Expr) -> Option<i64> {
    if let Some((_, size)) = crate::binder::time_windows::tumble_start_of(key) {
        return Some(size);
    }
    let (exprs, start) = defining_projection(input, key)?;
    let Expr::Cast { expr: start, .. } = start else {
        return None;
    };
    exprs.iter().find_map(|end| match end {
        Expr::Cast { expr, .. } => match expr.as_ref() {
            Expr::Binary {
                op: BinaryOp::Plus,
                left,
                right,
            } if left == start => match right.as_ref() {
                Expr::Literal(ScalarValue::Int64(length)) if *length > 0 => Some(*length),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    })
}

/// The projection that computes `expr` (a column of `plan`, read through other projections
/// and filters), and the expression it computes it with.
fn defining_projection<'a>(
    plan: &'a LogicalPlan,
    expr: &'a Expr,
) -> Option<(&'a [Expr], &'a Expr)> {
    let Expr::Column { index, .. } = expr else {
        return None;
    };
    match plan {
        LogicalPlan::Project { input, exprs, .. } => {
            let inner = exprs.get(*index)?;
            match inner {
                Expr::Column { .. } => defining_projection(input, inner),
                _ => Some((exprs, inner)),
            }
        }
        LogicalPlan::Filter { input, .. } => defining_projection(input, expr),
        _ => None,
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

/// `snapshot`'s definitions without its rows: what a view is planned over.
fn without_rows(snapshot: &Snapshot) -> Snapshot {
    Snapshot {
        commit: snapshot.commit,
        next_table_id: snapshot.next_table_id,
        tables: snapshot.tables.clone(),
        segments: Default::default(),
        files: Default::default(),
        deletions: Default::default(),
        change_records: Default::default(),
        garbage: Vec::new(),
        producers: Default::default(),
        event_times: Default::default(),
        next_offsets: Default::default(),
        consumer_offsets: Default::default(),
        notebooks: Default::default(),
        tasks: Default::default(),
        secrets: Default::default(),
        answers: Default::default(),
        index_graphs: Default::default(),
        rows_changed_at: Default::default(),
        defined_at: snapshot.defined_at.clone(),
        schemas: snapshot.schemas.clone(),
    }
}

/// Refuses a table a view cannot follow.
pub(crate) fn check_readable(table: &TableDef) -> Result<()> {
    match table.kind {
        TableKind::Table if table.ttl.is_some() => {
            Err(unsupported!("a materialized view over a table with a TTL"))
        }
        TableKind::Table | TableKind::MaterializedView { .. } => Ok(()),
        TableKind::ValueCounts { .. } | TableKind::JoinState { .. } => Err(bind_err!(
            "{} is internal state of a materialized view",
            table.name
        )),
        TableKind::Macro { .. } => Err(bind_err!("{} is a macro, not a table", table.name)),
        TableKind::Procedure { .. } => Err(bind_err!("{} is a procedure, not a table", table.name)),
        TableKind::View { .. } => Err(unsupported!("a materialized view over a view")),
    }
}

/// `plan` with each materialized view it reads as a leaf (ADR 0054) read through the view's
/// read plan: what runs over the rows the views hold.
pub(crate) fn expand_leaves(mut plan: LogicalPlan, snapshot: &Snapshot) -> Result<LogicalPlan> {
    plan.transform_up(&mut |node| {
        if let LogicalPlan::Scan { table, schema } = node
            && table.is_materialized_view()
        {
            let read = load_view(snapshot, table)?.read_plan(table, snapshot);
            assert_eq!(read.schema().fields().len(), schema.fields().len());
            *node = read;
        }
        Ok::<_, crate::PlanError>(())
    })?;
    Ok(plan)
}

/// The rows a commit's change to the stream `plan` gives (ADR 0054).
fn input_of(plan: &LogicalPlan) -> LogicalPlan {
    LogicalPlan::Input {
        schema: plan.schema(),
    }
}

/// `plan` with its `Input` leaf replaced by `rows`.
fn replace_input(plan: &LogicalPlan, rows: LogicalPlan) -> LogicalPlan {
    match plan {
        LogicalPlan::Input { .. } => rows,
        LogicalPlan::Filter { input, predicate } => LogicalPlan::Filter {
            input: Box::new(replace_input(input, rows)),
            predicate: predicate.clone(),
        },
        LogicalPlan::Project {
            input,
            exprs,
            schema,
        } => LogicalPlan::Project {
            input: Box::new(replace_input(input, rows)),
            exprs: exprs.clone(),
            schema: schema.clone(),
        },
        LogicalPlan::Aggregate {
            input,
            group,
            aggregates,
            schema,
        } => LogicalPlan::Aggregate {
            input: Box::new(replace_input(input, rows)),
            group: group.clone(),
            aggregates: aggregates.clone(),
            schema: schema.clone(),
        },
        _ => unreachable!(
            "a maintenance plan is filters, projections and an aggregate over its input"
        ),
    }
}

/// The one table a view reads, checking that nothing but filters and projections lie between.
fn base_table_of(plan: &LogicalPlan) -> Result<Arc<TableDef>> {
    match plan {
        LogicalPlan::Scan { table, .. } => {
            check_readable(table)?;
            Ok(table.clone())
        }
        LogicalPlan::Filter { input, .. } | LogicalPlan::Project { input, .. } => {
            base_table_of(input)
        }
        LogicalPlan::Aggregate { .. } => Err(unsupported!(
            "a materialized view over a materialized view or an aggregating subquery"
        )),
        LogicalPlan::Window { .. } => Err(unsupported!(
            "window functions and SESSION windows in a materialized view"
        )),
        _ => Err(unsupported!(
            "a materialized view must read one table (with WHERE and GROUP BY)"
        )),
    }
}

/// The plan with its table scan replaced by the rows of one commit.
pub(crate) fn with_input(plan: &LogicalPlan) -> LogicalPlan {
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
