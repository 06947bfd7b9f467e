use std::fmt;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use pondra_catalog::TableDef;

use crate::cardinality::JoinEstimate;
use crate::external::ExternalTable;
use crate::tree::{PlanNode, TreeNode};

use crate::expr::{AggregateCall, Expr, JoinKind, SortKey, WindowExpr};

/// Which rows of a running recursive CTE a `WorkingTable` leaf reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WorkingRows {
    /// The rows the previous iteration made: the CTE's name in its step.
    Last,
    /// The result so far: `recurring.name` (ADR 0071).
    SoFar,
    /// Every row the anchor and the steps made, each with its arrival number: what a keyed
    /// CTE's payload aggregates are computed over.
    Candidates,
    /// The rows the RETURNING of an INSERT, UPDATE or DELETE in the statement's WITH gave
    /// (ADR 0074); `id` numbers the write, not a recursive CTE.
    Returned,
}

/// A relational plan over typed columns. Every node knows its output schema.
#[derive(Clone, Debug)]
pub enum LogicalPlan {
    /// Every stored row of a table (Parquet files and log tail at the query's snapshot).
    Scan {
        table: Arc<TableDef>,
        schema: SchemaRef,
    },
    /// The rows of every input, one after the other (UNION ALL); inputs have the same types.
    Union {
        inputs: Vec<LogicalPlan>,
        schema: SchemaRef,
    },
    /// The input's columns, then one column per window function.
    Window {
        input: Box<LogicalPlan>,
        exprs: Vec<WindowExpr>,
        schema: SchemaRef,
    },
    /// Every row of Parquet files read in place.
    ParquetScan { table: Arc<ExternalTable> },
    /// Rows supplied when the plan runs (a commit's batch, for view maintenance).
    Input { schema: SchemaRef },
    /// Constant rows; a SELECT without FROM is one row of no columns.
    Values {
        schema: SchemaRef,
        rows: Vec<Vec<Expr>>,
    },
    Filter {
        input: Box<LogicalPlan>,
        predicate: Expr,
    },
    /// Each input row once per element of its array `array`: the input's columns, then the
    /// element. A row whose array is empty or NULL gives no rows.
    Unnest {
        input: Box<LogicalPlan>,
        array: Expr,
        schema: SchemaRef,
    },
    Project {
        input: Box<LogicalPlan>,
        exprs: Vec<Expr>,
        schema: SchemaRef,
    },
    /// Output: the group keys, then the aggregates, in order.
    Aggregate {
        input: Box<LogicalPlan>,
        group: Vec<Expr>,
        aggregates: Vec<AggregateCall>,
        schema: SchemaRef,
    },
    /// The input's rows in the order of `keys`; with `fetch`, only the first `fetch` of them
    /// (top-N, set by the optimizer's `top_n` pass).
    Sort {
        input: Box<LogicalPlan>,
        keys: Vec<SortKey>,
        fetch: Option<usize>,
    },
    /// Joins two inputs on equal keys (`on`: left expression, right expression) and an optional
    /// filter over the joined row (left columns, then right columns).
    Join {
        left: Box<LogicalPlan>,
        right: Box<LogicalPlan>,
        kind: JoinKind,
        on: Vec<(Expr, Expr)>,
        filter: Option<Expr>,
        schema: SchemaRef,
        /// What join ordering expected of this join, when it chose it from statistics.
        estimate: Option<JoinEstimate>,
    },
    Limit {
        input: Box<LogicalPlan>,
        skip: usize,
        fetch: Option<usize>,
    },
    /// `WITH RECURSIVE`: the rows of `anchor`, then of `step` run again and again over the rows
    /// the previous run added (its `WorkingTable` leaves), until a run adds none. With
    /// `distinct` (UNION), rows seen before are not added. With a `key` (DuckDB's
    /// `USING KEY`, ADR 0071) the result holds one row per key, which later rows replace, and is
    /// emitted once at the end.
    RecursiveCte {
        anchor: Box<LogicalPlan>,
        step: Box<LogicalPlan>,
        id: usize,
        distinct: bool,
        key: Option<Vec<usize>>,
        /// With payload aggregates in the key (`USING KEY (k, min(v))`): the result as it
        /// stands, computed from every row the anchor and the steps made (the `Candidates`
        /// working table, with each row's arrival number last).
        finalize: Option<Box<LogicalPlan>>,
    },
    /// Rows of running recursive CTE `id`: see [`WorkingRows`].
    WorkingTable {
        id: usize,
        schema: SchemaRef,
        rows: WorkingRows,
    },
    /// What the change records of `table` say of the commits `from..=to` (ADR 0048): the rows
    /// they updated or deleted and their new versions, and the insertion of rows an earlier
    /// commit in the range added that a record has kept since. The rest of `table_changes`
    /// (rows inserted and not changed since) is a scan.
    ChangeRecords {
        table: Arc<TableDef>,
        from: u64,
        to: u64,
        schema: SchemaRef,
    },
    /// A block of inner joins as written: the relations (FROM items, the sides of INNER JOIN)
    /// and the conditions over their concatenated columns (WHERE and ON), in no order. The
    /// optimizer's `join_order` pass turns it into joins. Output: every relation's columns, in
    /// order.
    JoinBlock {
        relations: Vec<LogicalPlan>,
        predicates: Vec<Expr>,
        schema: SchemaRef,
    },
    /// A subquery asked of every row of `input` (EXISTS, IN or a value, its conditions reading
    /// the row's columns as outer columns). The optimizer's `decorrelate` pass turns it into a
    /// join.
    Subquery {
        input: Box<LogicalPlan>,
        subquery: Box<LogicalPlan>,
        kind: SubqueryKind,
        schema: SchemaRef,
    },
}

/// What a `Subquery` node makes of its subquery for each input row.
#[derive(Clone, Debug)]
pub enum SubqueryKind {
    /// Keeps the rows the subquery matches (`join` Semi: `EXISTS`, `IN`) or does not (Anti:
    /// `NOT EXISTS`; NullAwareAnti: `NOT IN`). `probe` is IN's left side, over the input.
    Filter { join: JoinKind, probe: Option<Expr> },
    /// Adds whether the subquery matches as a last BOOLEAN column: `EXISTS` or, with a probe,
    /// `IN` used as a value.
    Mark { probe: Option<Expr> },
    /// Adds the subquery's one value as a last column.
    Scalar,
    /// A LATERAL join (ADR 0070): the input's columns, then the subquery's, for every row of
    /// the subquery run for the input row, the pairs `on` (over that output) accepts; `join`
    /// `Left` keeps an input row nothing matches, with NULLs.
    Lateral { join: JoinKind, on: Option<Expr> },
}

impl LogicalPlan {
    /// No rows and no columns: what a rewrite leaves in a node's place while it moves the node.
    pub fn empty() -> LogicalPlan {
        LogicalPlan::Values {
            schema: Arc::new(Schema::empty()),
            rows: Vec::new(),
        }
    }

    pub fn schema(&self) -> SchemaRef {
        match self {
            LogicalPlan::Scan { schema, .. }
            | LogicalPlan::Input { schema }
            | LogicalPlan::WorkingTable { schema, .. }
            | LogicalPlan::ChangeRecords { schema, .. }
            | LogicalPlan::Values { schema, .. }
            | LogicalPlan::Project { schema, .. }
            | LogicalPlan::Aggregate { schema, .. }
            | LogicalPlan::Join { schema, .. }
            | LogicalPlan::Union { schema, .. }
            | LogicalPlan::Unnest { schema, .. }
            | LogicalPlan::JoinBlock { schema, .. }
            | LogicalPlan::Subquery { schema, .. }
            | LogicalPlan::Window { schema, .. } => schema.clone(),
            LogicalPlan::ParquetScan { table } => table.schema.clone(),
            LogicalPlan::Filter { input, .. }
            | LogicalPlan::Sort { input, .. }
            | LogicalPlan::Limit { input, .. } => input.schema(),
            LogicalPlan::RecursiveCte {
                anchor, finalize, ..
            } => finalize.as_ref().unwrap_or(anchor).schema(),
        }
    }

    /// True when the plan reads columns of an enclosing query (a correlated subquery).
    pub fn has_outer(&self) -> bool {
        self.any_expr(&mut |e| matches!(e, Expr::OuterColumn { .. }))
    }

    /// True when the plan reads a column of any query around it, however far out: whether a
    /// subquery is correlated.
    pub fn has_any_outer(&self) -> bool {
        self.any_expr(&mut |e| matches!(e, Expr::OuterColumn { .. } | Expr::DeepOuterColumn(_)))
    }

    /// A block of inner joins of `relations` under `predicates`; a lone relation without
    /// conditions is itself.
    pub fn join_block(mut relations: Vec<LogicalPlan>, predicates: Vec<Expr>) -> LogicalPlan {
        assert!(!relations.is_empty(), "a join block has relations");
        if relations.len() == 1 && predicates.is_empty() {
            return relations.pop().expect("one relation");
        }
        let fields: Vec<Field> = relations
            .iter()
            .flat_map(|r| {
                r.schema()
                    .fields()
                    .iter()
                    .map(|f| f.as_ref().clone())
                    .collect::<Vec<_>>()
            })
            .collect();
        LogicalPlan::JoinBlock {
            relations,
            predicates,
            schema: Arc::new(Schema::new(fields)),
        }
    }

    /// `subquery` asked of every row of `self`, as `kind` says.
    pub fn subquery(self, subquery: LogicalPlan, kind: SubqueryKind) -> LogicalPlan {
        let added = match &kind {
            SubqueryKind::Filter { .. } => None,
            SubqueryKind::Mark { .. } => Some(Field::new("mark", DataType::Boolean, true)),
            SubqueryKind::Scalar => {
                let value = subquery.schema().field(0).clone();
                Some(value.with_nullable(true))
            }
            SubqueryKind::Lateral { .. } => None,
        };
        let schema = match (added, &kind) {
            (_, SubqueryKind::Lateral { .. }) => {
                let added = subquery.schema();
                let fields = added.fields().iter();
                let fields = fields.map(|f| f.as_ref().clone().with_nullable(true));
                crate::types::schema_with(&self.schema(), fields.collect::<Vec<_>>())
            }
            (None, _) => self.schema(),
            (Some(field), _) => crate::types::schema_with(&self.schema(), [field]),
        };
        LogicalPlan::Subquery {
            input: Box::new(self),
            subquery: Box::new(subquery),
            kind,
            schema,
        }
    }

    /// The first `width` columns of this plan.
    pub fn first_columns(self, width: usize) -> LogicalPlan {
        let schema = self.schema();
        let (exprs, names): (Vec<Expr>, Vec<String>) = (0..width)
            .map(|i| {
                let f = schema.field(i);
                (
                    Expr::column(i, f.name(), f.data_type().clone()),
                    f.name().clone(),
                )
            })
            .unzip();
        self.project(exprs, names)
    }

    /// A projection of `exprs` named `names`.
    pub fn project(self, exprs: Vec<Expr>, names: Vec<String>) -> LogicalPlan {
        assert_eq!(
            exprs.len(),
            names.len(),
            "one name per projected expression"
        );
        let fields: Vec<Field> = exprs
            .iter()
            .zip(names)
            .map(|(e, name)| Field::new(name, e.data_type(), true))
            .collect();
        LogicalPlan::Project {
            input: Box::new(self),
            exprs,
            schema: Arc::new(Schema::new(fields)),
        }
    }

    /// Each row once per element of `array`'s value in it, the element a column named
    /// `element` after the row's.
    pub fn unnest(self, array: Expr, element: &str) -> LogicalPlan {
        let DataType::List(item) = array.data_type() else {
            panic!("unnest of {array}, which is no array");
        };
        let element = Field::new(element, item.data_type().clone(), true);
        LogicalPlan::Unnest {
            schema: crate::types::schema_with(&self.schema(), [element]),
            input: Box::new(self),
            array,
        }
    }

    /// A join of `left` and `right`; the schema follows from the kind.
    pub fn join(
        left: LogicalPlan,
        right: LogicalPlan,
        kind: JoinKind,
        on: Vec<(Expr, Expr)>,
        filter: Option<Expr>,
    ) -> LogicalPlan {
        if kind.right_only() {
            let schema = right.schema();
            return LogicalPlan::Join {
                left: Box::new(left),
                right: Box::new(right),
                kind,
                on,
                filter,
                schema,
                estimate: None,
            };
        }
        let left_schema = left.schema();
        let mut fields: Vec<Field> = left_schema
            .fields()
            .iter()
            .map(|f| {
                f.as_ref().clone().with_nullable(
                    f.is_nullable() || matches!(kind, JoinKind::Full | JoinKind::Right),
                )
            })
            .collect();
        if matches!(kind, JoinKind::Mark | JoinKind::MarkIn) {
            fields.push(Field::new(
                "mark",
                arrow::datatypes::DataType::Boolean,
                true,
            ));
        } else if !kind.left_only() {
            fields.extend(
                right
                    .schema()
                    .fields()
                    .iter()
                    .map(|f| f.as_ref().clone().with_nullable(true)),
            );
        }
        LogicalPlan::Join {
            left: Box::new(left),
            right: Box::new(right),
            kind,
            on,
            filter,
            schema: Arc::new(Schema::new(fields)),
            estimate: None,
        }
    }

    /// This join, recording what join ordering expected of it.
    pub fn with_join_estimate(mut self, expected: JoinEstimate) -> LogicalPlan {
        if let LogicalPlan::Join { estimate, .. } = &mut self {
            *estimate = Some(expected);
        }
        self
    }

    fn fmt_indent(&self, f: &mut fmt::Formatter<'_>, depth: usize) -> fmt::Result {
        let pad = "  ".repeat(depth);
        let list = |exprs: &[Expr]| {
            exprs
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            LogicalPlan::Scan { table, .. } => return writeln!(f, "{pad}Scan: {}", table.name),
            LogicalPlan::Input { .. } => return writeln!(f, "{pad}Input"),
            LogicalPlan::WorkingTable { id, rows, .. } => {
                return writeln!(f, "{pad}WorkingTable {id}: {rows:?}");
            }
            LogicalPlan::ChangeRecords { table, .. } => {
                return writeln!(f, "{pad}ChangeRecords: {}", table.name);
            }
            LogicalPlan::RecursiveCte {
                anchor,
                step,
                id,
                distinct,
                key,
                finalize,
            } => {
                let union = if *distinct { "UNION" } else { "UNION ALL" };
                let key = key
                    .as_ref()
                    .map(|k| format!(" USING KEY {k:?}"))
                    .unwrap_or_default();
                writeln!(f, "{pad}RecursiveCte {id}: {union}{key}")?;
                anchor.fmt_indent(f, depth + 1)?;
                step.fmt_indent(f, depth + 1)?;
                if let Some(finalize) = finalize {
                    finalize.fmt_indent(f, depth + 1)?;
                }
                return Ok(());
            }
            LogicalPlan::Union { inputs, .. } => {
                writeln!(f, "{pad}Union")?;
                for input in inputs {
                    input.fmt_indent(f, depth + 1)?;
                }
                return Ok(());
            }
            LogicalPlan::ParquetScan { table } => {
                return writeln!(
                    f,
                    "{pad}ParquetScan: {} ({} files)",
                    table.name,
                    table.files.len()
                );
            }
            LogicalPlan::Values { rows, .. } => {
                return writeln!(f, "{pad}Values: {} rows", rows.len());
            }
            LogicalPlan::Filter { predicate, .. } => writeln!(f, "{pad}Filter: {predicate}")?,
            LogicalPlan::Unnest { array, .. } => writeln!(f, "{pad}Unnest: {array}")?,
            LogicalPlan::Project { exprs, .. } => writeln!(f, "{pad}Project: {}", list(exprs))?,
            LogicalPlan::Aggregate {
                group, aggregates, ..
            } => {
                let aggs: Vec<String> = aggregates.iter().map(|a| a.to_string()).collect();
                writeln!(
                    f,
                    "{pad}Aggregate: group=[{}] aggregates=[{}]",
                    list(group),
                    aggs.join(", ")
                )?
            }
            LogicalPlan::Window { exprs, .. } => {
                writeln!(f, "{pad}Window: {} functions", exprs.len())?
            }
            LogicalPlan::Sort { keys, fetch, .. } => {
                writeln!(f, "{pad}{}", crate::explain::sort_text(keys, *fetch))?
            }
            LogicalPlan::Limit { skip, fetch, .. } => {
                writeln!(f, "{pad}Limit: skip={skip} fetch={fetch:?}")?
            }
            LogicalPlan::JoinBlock {
                relations,
                predicates,
                ..
            } => {
                writeln!(f, "{pad}JoinBlock: where=[{}]", list(predicates))?;
                for relation in relations {
                    relation.fmt_indent(f, depth + 1)?;
                }
                return Ok(());
            }
            LogicalPlan::Subquery {
                input,
                subquery,
                kind,
                ..
            } => {
                match kind {
                    SubqueryKind::Filter { join, probe: None } => {
                        writeln!(f, "{pad}Subquery {join:?}")?
                    }
                    SubqueryKind::Filter {
                        join,
                        probe: Some(probe),
                    } => writeln!(f, "{pad}Subquery {join:?}: {probe} IN")?,
                    SubqueryKind::Mark { probe: None } => writeln!(f, "{pad}Subquery Mark")?,
                    SubqueryKind::Mark { probe: Some(probe) } => {
                        writeln!(f, "{pad}Subquery Mark: {probe} IN")?
                    }
                    SubqueryKind::Scalar => writeln!(f, "{pad}Subquery Scalar")?,
                    SubqueryKind::Lateral { join, on: None } => {
                        writeln!(f, "{pad}Subquery Lateral {join:?}")?
                    }
                    SubqueryKind::Lateral { join, on: Some(on) } => {
                        writeln!(f, "{pad}Subquery Lateral {join:?}: {on}")?
                    }
                }
                input.fmt_indent(f, depth + 1)?;
                return subquery.fmt_indent(f, depth + 1);
            }
            LogicalPlan::Join {
                left,
                right,
                kind,
                on,
                filter,
                estimate,
                ..
            } => {
                let keys: Vec<String> = on.iter().map(|(l, r)| format!("{l} = {r}")).collect();
                write!(f, "{pad}Join {kind:?}: on=[{}]", keys.join(", "))?;
                if let Some(filter) = filter {
                    write!(f, " filter={filter}")?;
                }
                if let Some(estimate) = estimate {
                    write!(f, " {estimate}")?;
                }
                writeln!(f)?;
                left.fmt_indent(f, depth + 1)?;
                return right.fmt_indent(f, depth + 1);
            }
        }
        self.input()
            .expect("non-leaf node")
            .fmt_indent(f, depth + 1)
    }

    /// The single input of a node that reads one (not a join, a union or a recursive CTE).
    pub fn input(&self) -> Option<&LogicalPlan> {
        match self {
            LogicalPlan::Join { .. }
            | LogicalPlan::Union { .. }
            | LogicalPlan::JoinBlock { .. }
            | LogicalPlan::Subquery { .. }
            | LogicalPlan::RecursiveCte { .. } => None,
            _ => self.children().first().copied(),
        }
    }
}

impl fmt::Display for LogicalPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_indent(f, 0)
    }
}
