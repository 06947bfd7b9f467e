use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use pondra_catalog::TableDef;

use crate::cardinality::JoinEstimate;
use crate::expr::{AggregateCall, AggregateFunction, Expr, JoinKind, SortKey, WindowExpr};
use crate::external::ExternalTable;
use crate::logical::LogicalPlan;
use crate::repeated_scans::RepeatedScan;
use crate::scalar::ScalarValue;
use crate::tree::{PlanNode, TreeNode};

pub use crate::nearest::Nearest;

/// The plan `exec` runs: operators chosen for each logical node.
#[derive(Clone, Debug)]
pub enum PhysicalPlan {
    TableScan {
        table: Arc<TableDef>,
        /// The table's schema, with the columns not read typed NULL.
        schema: SchemaRef,
        /// The columns the plan reads, when not all: the others are NULL columns of type NULL
        /// in the scan's rows, which hold no buffers.
        columns: Option<Vec<usize>>,
        /// The rows the scan keeps: a filter right above it, applied as its Parquet files are
        /// read (its columns first, ADR 0020) and used to skip files, row groups and pages
        /// (ADR 0025, 0043).
        filter: Option<Expr>,
        /// What the scan shares with the query's other scans of the table (ADR 0034).
        repeat: Option<RepeatedScan>,
        /// The part of the table's scan units this scan reads, in a spread plan (ADR 0076);
        /// `None` for all of them.
        slice: Option<Slice>,
        /// For the scan under `ORDER BY distance LIMIT k`, the rows its vector index finds
        /// near (ADR 0082): the scan reads only those of the files with a graph.
        nearest: Option<Arc<Nearest>>,
    },
    Input {
        schema: SchemaRef,
    },
    ParquetScan {
        table: Arc<ExternalTable>,
        /// As for `TableScan`.
        schema: SchemaRef,
        columns: Option<Vec<usize>>,
        filter: Option<Expr>,
        repeat: Option<RepeatedScan>,
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
    /// See `LogicalPlan::Unnest`.
    Unnest {
        input: Box<PhysicalPlan>,
        array: Expr,
        schema: SchemaRef,
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
        /// For an aggregation that the query computes more than once (a view read twice), the
        /// number all its occurrences share: the first to run keeps its rows for the others
        /// (ADR 0019).
        shared: Option<usize>,
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
        key: Option<Vec<usize>>,
        finalize: Option<Box<PhysicalPlan>>,
    },
    /// See `LogicalPlan::WorkingTable`.
    WorkingTable {
        id: usize,
        schema: SchemaRef,
        rows: crate::logical::WorkingRows,
    },
    /// As `LogicalPlan::ChangeRecords`.
    ChangeRecords {
        table: Arc<TableDef>,
        from: u64,
        to: u64,
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
        /// What join ordering expected of this join (see `LogicalPlan::Join`).
        estimate: Option<JoinEstimate>,
    },
    /// The rows of `fragment` run on each of `parts` slices of its sliced scan, one part per
    /// node, concatenated in part order (ADR 0076). A source: the fragment runs elsewhere.
    Gather {
        fragment: Box<PhysicalPlan>,
        parts: usize,
        /// The nodes that run the parts, in part order, as EXPLAIN names them.
        nodes: Vec<String>,
    },
    /// Inside a fragment: `input` runs on every part and each row goes to the part its keys
    /// hash to; this part's rows from every part, in sending part order (ADR 0076). `id`
    /// numbers the fragment's exchanges in plan order.
    Exchange {
        input: Box<PhysicalPlan>,
        keys: Vec<Expr>,
        parts: usize,
        id: usize,
    },
}

/// Which of a scan's units a sliced scan reads: those whose place among the table's containers
/// (plus its row group's number, in a data file) is `part` modulo `parts` (ADR 0076).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    pub part: usize,
    pub parts: usize,
}

impl PhysicalPlan {
    /// A scan of Parquet or CSV files read in place, reading `columns` (all when `None`).
    pub fn parquet_scan(table: Arc<ExternalTable>, columns: Option<Vec<usize>>) -> PhysicalPlan {
        PhysicalPlan::ParquetScan {
            schema: read_schema(&table.schema, columns.as_deref()),
            table,
            columns,
            filter: None,
            repeat: None,
        }
    }

    /// Scan `self` reading `columns` (all when `None`) instead, with the same filter.
    pub fn scan_reading(&self, columns: Option<Vec<usize>>) -> PhysicalPlan {
        let mut scan = match self {
            PhysicalPlan::TableScan { table, schema, .. } => PhysicalPlan::TableScan {
                schema: read_schema(&scan_schema_like(table, schema), columns.as_deref()),
                table: table.clone(),
                columns,
                filter: None,
                repeat: None,
                slice: None,
                nearest: None,
            },
            PhysicalPlan::ParquetScan { table, .. } => {
                PhysicalPlan::parquet_scan(table.clone(), columns)
            }
            _ => panic!("only a scan reads other columns"),
        };
        if let (Some(filter), Some(own)) = (scan.scan_filter_mut(), self.scan_filter()) {
            *filter = Some(own.clone());
        }
        scan
    }

    /// What a scan shares with the query's other scans of its table, if anything.
    pub fn scan_repeat(&self) -> Option<&RepeatedScan> {
        match self {
            PhysicalPlan::TableScan { repeat, .. } | PhysicalPlan::ParquetScan { repeat, .. } => {
                repeat.as_ref()
            }
            _ => None,
        }
    }

    /// Calls `f` on every node of the plan and of the plans of the scalar subqueries in its
    /// expressions, nested ones too, each node before the nodes under it, in the same order
    /// every time.
    pub fn for_each_with_subqueries(&mut self, f: &mut dyn FnMut(&mut PhysicalPlan)) {
        let Ok(()) = self.transform_down(&mut |node| {
            f(node);
            for expr in node.exprs_mut() {
                expr.transform_up(&mut |e| {
                    if let Expr::ScalarSubquery(subquery) = e
                        && let Some(physical) = &mut subquery.physical
                    {
                        Arc::make_mut(physical).for_each_with_subqueries(f);
                    }
                    Ok::<_, std::convert::Infallible>(())
                })?;
            }
            Ok::<_, std::convert::Infallible>(())
        });
    }

    /// The filter of a scan, if it has one.
    pub fn scan_filter(&self) -> Option<&Expr> {
        match self {
            PhysicalPlan::TableScan { filter, .. } | PhysicalPlan::ParquetScan { filter, .. } => {
                filter.as_ref()
            }
            _ => None,
        }
    }

    /// The filter slot of a scan; `None` if `self` is not a scan.
    fn scan_filter_mut(&mut self) -> Option<&mut Option<Expr>> {
        match self {
            PhysicalPlan::TableScan { filter, .. } | PhysicalPlan::ParquetScan { filter, .. } => {
                Some(filter)
            }
            _ => None,
        }
    }

    pub fn schema(&self) -> SchemaRef {
        match self {
            PhysicalPlan::TableScan { schema, .. }
            | PhysicalPlan::Input { schema }
            | PhysicalPlan::WorkingTable { schema, .. }
            | PhysicalPlan::ChangeRecords { schema, .. }
            | PhysicalPlan::Values { schema, .. }
            | PhysicalPlan::Projection { schema, .. }
            | PhysicalPlan::HashAggregate { schema, .. }
            | PhysicalPlan::HashJoin { schema, .. }
            | PhysicalPlan::Union { schema, .. }
            | PhysicalPlan::Window { schema, .. }
            | PhysicalPlan::Unnest { schema, .. }
            | PhysicalPlan::ParquetScan { schema, .. } => schema.clone(),
            PhysicalPlan::Filter { input, .. }
            | PhysicalPlan::Sort { input, .. }
            | PhysicalPlan::Limit { input, .. }
            | PhysicalPlan::Exchange { input, .. } => input.schema(),
            PhysicalPlan::RecursiveCte {
                anchor, finalize, ..
            } => finalize.as_ref().unwrap_or(anchor).schema(),
            PhysicalPlan::Gather { fragment, .. } => fragment.schema(),
        }
    }
}

/// Chooses the physical operators for a logical plan. Scans read only the columns the plan
/// above them uses.
pub fn create_physical_plan(plan: &LogicalPlan) -> PhysicalPlan {
    let mut physical = plan_with_subqueries(plan);
    crate::shared_aggregates::number_repeated_aggregates(&mut physical);
    crate::nearest::use_vector_indexes(&mut physical);
    crate::repeated_scans::mark_repeated_scans(&mut physical);
    physical
}

/// The physical plan of `plan` and of the scalar subqueries in it.
fn plan_with_subqueries(plan: &LogicalPlan) -> PhysicalPlan {
    let all = vec![true; plan.schema().fields().len()];
    let mut physical = build(plan, &all);
    plan_subqueries(&mut physical);
    physical
}

/// Plans the scalar subqueries in the expressions of `plan` (and theirs, in turn), so that
/// running it plans nothing.
fn plan_subqueries(plan: &mut PhysicalPlan) {
    let Ok(()) = plan.transform_up(&mut |node| {
        for expr in node.exprs_mut() {
            expr.transform_up(&mut |e| {
                if let Expr::ScalarSubquery(subquery) = e
                    && subquery.physical.is_none()
                {
                    subquery.physical = Some(Arc::new(plan_with_subqueries(&subquery.plan)));
                }
                Ok::<_, std::convert::Infallible>(())
            })?;
        }
        Ok::<_, std::convert::Infallible>(())
    });
}

fn marked(width: usize, exprs: &[&Expr]) -> Vec<bool> {
    let mut used = vec![false; width];
    for e in exprs {
        e.mark_columns(&mut used);
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
        LogicalPlan::JoinBlock { .. } | LogicalPlan::Subquery { .. } => {
            unreachable!("the optimizer plans every join block and subquery: {plan}")
        }
        LogicalPlan::Scan { table, schema } => {
            let columns = scan_columns(used);
            PhysicalPlan::TableScan {
                table: table.clone(),
                schema: read_schema(schema, columns.as_deref()),
                columns,
                filter: None,
                repeat: None,
                slice: None,
                nearest: None,
            }
        }
        LogicalPlan::Window {
            input,
            exprs,
            schema,
        } => {
            let mut needed = used[..width(input)].to_vec();
            for w in exprs {
                for e in w.args.iter().chain(&w.partition_by) {
                    e.mark_columns(&mut needed);
                }
                for k in &w.order_by {
                    k.expr.mark_columns(&mut needed);
                }
            }
            let input = child(input, &needed);
            let schema = with_null_columns(schema, &[input.schema()]);
            PhysicalPlan::Window {
                input,
                exprs: exprs.clone(),
                schema,
            }
        }
        LogicalPlan::Union { inputs, schema } => PhysicalPlan::Union {
            inputs: inputs.iter().map(|i| build(i, used)).collect(),
            schema: prune(schema, |i| used[i]),
        },
        LogicalPlan::ParquetScan { table } => {
            PhysicalPlan::parquet_scan(table.clone(), scan_columns(used))
        }
        LogicalPlan::Input { schema } => PhysicalPlan::Input {
            schema: schema.clone(),
        },
        LogicalPlan::ChangeRecords {
            table,
            from,
            to,
            schema,
        } => PhysicalPlan::ChangeRecords {
            table: table.clone(),
            from: *from,
            to: *to,
            schema: schema.clone(),
        },
        LogicalPlan::WorkingTable { id, schema, rows } => PhysicalPlan::WorkingTable {
            id: *id,
            schema: schema.clone(),
            rows: *rows,
        },
        LogicalPlan::RecursiveCte {
            anchor,
            step,
            id,
            distinct,
            key,
            finalize,
        } => PhysicalPlan::RecursiveCte {
            anchor: child(anchor, &all_of(anchor)),
            step: child(step, &all_of(step)),
            id: *id,
            distinct: *distinct,
            key: key.clone(),
            finalize: finalize.as_ref().map(|f| child(f, &all_of(f))),
        },
        LogicalPlan::Values { schema, rows } => PhysicalPlan::Values {
            schema: schema.clone(),
            rows: rows.clone(),
        },
        LogicalPlan::Filter { input, predicate } => {
            let mut needed = used.to_vec();
            predicate.mark_columns(&mut needed);
            let mut input = child(input, &needed);
            // A scan applies the filter right above it as it reads.
            if let Some(slot @ None) = input.scan_filter_mut() {
                *slot = Some(predicate.clone());
                return *input;
            }
            PhysicalPlan::Filter {
                input,
                predicate: predicate.clone(),
            }
        }
        LogicalPlan::Unnest {
            input,
            array,
            schema,
        } => {
            let mut needed = used[..width(input)].to_vec();
            array.mark_columns(&mut needed);
            let input = child(input, &needed);
            // The input's unread columns are NULL columns now.
            let element = schema
                .fields()
                .last()
                .expect("the element")
                .as_ref()
                .clone();
            PhysicalPlan::Unnest {
                schema: crate::types::schema_with(&input.schema(), [element]),
                input,
                array: array.clone(),
            }
        }
        LogicalPlan::Project {
            input,
            exprs,
            schema,
        } => {
            // A column or constant nothing above reads is left out (a NULL column); any other
            // expression is computed, used above or not, so that its errors surface.
            let dropped =
                |i: usize| !used[i] && matches!(exprs[i], Expr::Column { .. } | Expr::Literal(_));
            let exprs: Vec<Expr> = (0..exprs.len())
                .map(|i| match dropped(i) {
                    true => Expr::Literal(ScalarValue::Null),
                    false => exprs[i].clone(),
                })
                .collect();
            let needed = marked(width(input), &exprs.iter().collect::<Vec<_>>());
            PhysicalPlan::Projection {
                input: child(input, &needed),
                exprs,
                schema: prune(schema, |i| !dropped(i)),
            }
        }
        LogicalPlan::Aggregate {
            input,
            group,
            aggregates,
            schema,
        } => {
            let input = child(
                input,
                &marked(
                    width(input),
                    &group
                        .iter()
                        .chain(aggregates.iter().flat_map(AggregateCall::exprs))
                        .collect::<Vec<_>>(),
                ),
            );
            match counted_distinct(aggregates)
                .filter(|counted| !counted_in_one_step(group, counted))
            {
                Some(counted) => {
                    count_distinct_in_two_steps(input, group, aggregates, counted, schema)
                }
                None => PhysicalPlan::HashAggregate {
                    input,
                    group: group.clone(),
                    aggregates: aggregates.clone(),
                    schema: schema.clone(),
                    shared: None,
                },
            }
        }
        LogicalPlan::Join {
            left,
            right,
            kind,
            on,
            filter,
            schema,
            estimate,
        } => {
            // The output's columns as if it had both sides' (a right semi join has only the
            // right's).
            let both: Vec<bool> = match kind.right_only() {
                true => std::iter::repeat_n(false, width(left))
                    .chain(used.iter().copied())
                    .collect(),
                false => used.to_vec(),
            };
            let (kept, on_left, on_right) = split_join_filter(*kind, filter, width(left));
            let (left, right) = (
                filtered_child(
                    left,
                    &join_side_columns(&both, on, &kept, left, right, true),
                    on_left,
                ),
                filtered_child(
                    right,
                    &join_side_columns(&both, on, &kept, left, right, false),
                    on_right,
                ),
            );
            // The output's columns are the probe's, then the build's, except after a mark or
            // a semi join.
            let sides = match kind {
                JoinKind::Inner
                | JoinKind::Left
                | JoinKind::Full
                | JoinKind::Right
                | JoinKind::Single => {
                    vec![left.schema(), right.schema()]
                }
                JoinKind::Semi
                | JoinKind::Anti
                | JoinKind::NullAwareAnti
                | JoinKind::Mark
                | JoinKind::MarkIn => vec![left.schema()],
                JoinKind::RightSemi | JoinKind::RightAnti => vec![right.schema()],
            };
            PhysicalPlan::HashJoin {
                left,
                right,
                kind: *kind,
                left_keys: on.iter().map(|(l, _)| l.clone()).collect(),
                right_keys: on.iter().map(|(_, r)| r.clone()).collect(),
                filter: kept,
                // Columns nothing above reads are NULL: a join's output would otherwise carry
                // a column its inputs needed only below it (a filter's, a key's).
                schema: prune(&with_null_columns(schema, &sides), |i| {
                    used.get(i).copied().unwrap_or(true)
                }),
                estimate: *estimate,
            }
        }
        LogicalPlan::Sort { input, keys, fetch } => PhysicalPlan::Sort {
            input: child(input, &with_sort_keys(used, keys)),
            keys: keys.clone(),
            fetch: *fetch,
        },
        LogicalPlan::Limit { input, skip, fetch } => PhysicalPlan::Limit {
            input: child(input, used),
            skip: *skip,
            fetch: *fetch,
        },
    }
}

/// The argument of aggregates that are all `count(DISTINCT x)` of one `x`, without FILTER.
fn counted_distinct(aggregates: &[AggregateCall]) -> Option<&Expr> {
    let arg = aggregates.first()?.arg.as_ref()?;
    aggregates
        .iter()
        .all(|a| {
            a.func == AggregateFunction::CountDistinct
                && a.arg.as_ref() == Some(arg)
                && a.filter.is_none()
        })
        .then_some(arg)
}

/// Whether `count(DISTINCT counted) ... GROUP BY group` is counted in one aggregation, its
/// distinct values kept per group as words (ADR 0039): when the value is an integer or a date
/// and a group key is a string. Two steps would key the first by the string and the value,
/// encoded as bytes for every row, in a table of as many keys as distinct pairs.
fn counted_in_one_step(group: &[Expr], counted: &Expr) -> bool {
    pondra_catalog::is_exact_integer(&counted.data_type())
        && group.iter().any(|g| g.data_type() == DataType::Utf8)
}

/// `count(DISTINCT x) ... GROUP BY keys` as two plain aggregations: by the keys and `x`, then
/// `count(x)` by the keys. No set of values seen per group, and both steps merge partition
/// by partition across workers. A NULL `x` forms a group of its own, which `count` skips.
fn count_distinct_in_two_steps(
    input: Box<PhysicalPlan>,
    group: &[Expr],
    aggregates: &[AggregateCall],
    counted: &Expr,
    schema: &SchemaRef,
) -> PhysicalPlan {
    let mut distinct_group = group.to_vec();
    distinct_group.push(counted.clone());
    let fields: Vec<Field> = distinct_group
        .iter()
        .map(|g| Field::new(g.to_string(), g.data_type(), true))
        .collect();
    let distinct = PhysicalPlan::HashAggregate {
        input,
        group: distinct_group,
        aggregates: Vec::new(),
        schema: Arc::new(Schema::new(fields)),
        shared: None,
    };
    let keys = group
        .iter()
        .enumerate()
        .map(|(i, g)| Expr::column(i, g.to_string(), g.data_type()))
        .collect();
    let value = Expr::column(group.len(), "value", counted.data_type());
    let counts = aggregates
        .iter()
        .map(|a| AggregateCall {
            func: AggregateFunction::Count,
            arg: Some(value.clone()),
            ..a.clone()
        })
        .collect();
    PhysicalPlan::HashAggregate {
        input: Box::new(distinct),
        group: keys,
        aggregates: counts,
        schema: schema.clone(),
        shared: None,
    }
}

/// `schema` with the fields `keep` rejects typed NULL: nothing above reads them, so they travel
/// as NULL arrays, which hold no buffers and cost nothing to filter, take or concatenate.
fn prune(schema: &SchemaRef, keep: impl Fn(usize) -> bool) -> SchemaRef {
    let count = schema.fields().len();
    if (0..count).all(&keep) {
        return schema.clone();
    }
    let fields: Vec<Arc<Field>> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            if keep(i) || f.data_type() == &DataType::Null {
                f.clone()
            } else {
                Arc::new(Field::new(f.name(), DataType::Null, true))
            }
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// A scan's schema: the table's, with the columns it does not read typed NULL.
fn read_schema(schema: &SchemaRef, columns: Option<&[usize]>) -> SchemaRef {
    match columns {
        None => schema.clone(),
        Some(columns) => prune(schema, |i| columns.contains(&i)),
    }
}

/// `schema`, whose first columns are those of `inputs` side by side, with the columns the
/// inputs carry as NULL typed NULL too.
fn with_null_columns(schema: &SchemaRef, inputs: &[SchemaRef]) -> SchemaRef {
    let input_types: Vec<&DataType> = inputs
        .iter()
        .flat_map(|s| s.fields().iter().map(|f| f.data_type()))
        .collect();
    prune(schema, |i| input_types.get(i) != Some(&&DataType::Null))
}

/// Splits off the conjuncts of a join's filter that read one input only, where applying them
/// to that input first keeps the join's meaning: conditions on the side whose unmatched rows
/// are dropped anyway (the build side of a left, semi or anti join; either side of an inner
/// join; the probe side of a right semi or anti join) only decide which rows can match.
/// Returns what stays in the join, then the conditions on the left input and on the right
/// input (over its own columns).
fn split_join_filter(
    kind: JoinKind,
    filter: &Option<Expr>,
    left_width: usize,
) -> (Option<Expr>, Vec<Expr>, Vec<Expr>) {
    let Some(filter) = filter else {
        return (None, vec![], vec![]);
    };
    let (to_left, to_right) = match kind {
        JoinKind::Inner => (true, true),
        JoinKind::Left
        | JoinKind::Semi
        | JoinKind::Anti
        | JoinKind::Single
        | JoinKind::Mark
        | JoinKind::MarkIn => (false, true),
        JoinKind::Right | JoinKind::RightSemi | JoinKind::RightAnti => (true, false),
        JoinKind::Full | JoinKind::NullAwareAnti => (false, false),
    };
    let (mut on_left, mut on_right, mut kept) = (Vec::new(), Vec::new(), Vec::new());
    for conjunct in filter.clone().conjuncts() {
        let columns = conjunct.column_indices();
        if to_left && !columns.is_empty() && columns.iter().all(|c| *c < left_width) {
            on_left.push(conjunct);
        } else if to_right && !columns.is_empty() && columns.iter().all(|c| *c >= left_width) {
            on_right.push(conjunct.remap_columns(&|c| c - left_width));
        } else {
            kept.push(conjunct);
        }
    }
    (Expr::and_all(kept), on_left, on_right)
}

/// A join input that produces the `needed` columns, filtered first by `conjuncts`. Columns
/// only the filter reads are NULL after it, so the join does not carry them.
fn filtered_child(input: &LogicalPlan, needed: &[bool], conjuncts: Vec<Expr>) -> Box<PhysicalPlan> {
    let Some(predicate) = Expr::and_all(conjuncts) else {
        return Box::new(build(input, needed));
    };
    let mut reads = needed.to_vec();
    predicate.mark_columns(&mut reads);
    let filtered = PhysicalPlan::Filter {
        input: Box::new(build(input, &reads)),
        predicate,
    };
    if reads == needed {
        return Box::new(filtered);
    }
    let schema = filtered.schema();
    let exprs = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, field)| match needed[i] {
            true => Expr::column(i, field.name(), field.data_type().clone()),
            false => Expr::Literal(ScalarValue::Null),
        })
        .collect();
    Box::new(PhysicalPlan::Projection {
        input: Box::new(filtered),
        exprs,
        schema: prune(&schema, |i| needed[i]),
    })
}

fn with_sort_keys(used: &[bool], keys: &[crate::expr::SortKey]) -> Vec<bool> {
    let mut needed = used.to_vec();
    for k in keys {
        k.expr.mark_columns(&mut needed);
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
        (if left_side { l } else { r }).mark_columns(&mut needed);
    }
    if let Some(filter) = filter {
        let mut joined = vec![false; left_width + right_width];
        filter.mark_columns(&mut joined);
        for i in 0..width {
            needed[i] |= joined[offset + i];
        }
    }
    needed
}

/// The full schema of a scan of `table` whose schema (some columns typed NULL) is `schema`: with
/// the hidden columns it has.
fn scan_schema_like(table: &pondra_catalog::TableDef, schema: &SchemaRef) -> SchemaRef {
    let has = |name: &str| schema.fields().iter().any(|f| f.name() == name);
    let system = has(pondra_catalog::COMMIT_VERSION);
    let numbered = has(pondra_catalog::ROW_ID);
    let addressed = has(pondra_catalog::ROW_ADDRESS);
    table.scan_schema_hidden(system, numbered, addressed, has(pondra_catalog::OFFSET))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::Subquery;
    use crate::tree::PlanNode;

    /// `SELECT (SELECT <value>)`: one row, one column, the subquery's value.
    fn select_of(value: Expr) -> LogicalPlan {
        let one_row = LogicalPlan::Values {
            schema: Arc::new(Schema::empty()),
            rows: vec![vec![]],
        };
        one_row.project(vec![value], vec!["value".into()])
    }

    #[test]
    fn scalar_subqueries_are_planned_with_the_plan_that_holds_them() {
        let innermost = select_of(Expr::Literal(ScalarValue::Int64(7)));
        let inner = select_of(Expr::ScalarSubquery(Subquery::new(innermost)));
        let outer = select_of(Expr::ScalarSubquery(Subquery::new(inner)));
        let physical = create_physical_plan(&outer);
        let subqueries_of = |plan: &PhysicalPlan| {
            let mut planned = Vec::new();
            plan.visit_exprs(&mut |e| {
                if let Expr::ScalarSubquery(subquery) = e {
                    planned.push(subquery.physical.clone());
                }
            });
            planned
        };
        let planned = subqueries_of(&physical);
        assert_eq!(planned.len(), 1);
        let inner = planned[0].clone().expect("the subquery was planned");
        let planned = subqueries_of(&inner);
        assert_eq!(planned.len(), 1);
        assert!(planned[0].is_some(), "the nested subquery was planned too");
    }
}
