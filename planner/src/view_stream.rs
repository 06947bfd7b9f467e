//! The stream of a materialized view over joins (ADR 0054): what lies below the view's core (its
//! aggregate, or the whole plan of a view of rows) when it joins tables, unions them, unnests
//! rows or computes window functions by partition. A commit's change to a table flows up the
//! stream's nodes; each join keeps both of its inputs indexed by key in a hidden keyed table,
//! its *join state*, and a window node computes the partitions the change touches again.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema};
use pondra_catalog::{Column, Snapshot, TableDef};

use crate::expr::{AggregateCall, AggregateFunction, BinaryOp, Expr, JoinKind, WindowExpr};
use crate::interval_join::{StateExpiry, state_expiries};
use crate::logical::LogicalPlan;
use crate::scalar::ScalarValue;
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
    /// Each window node of the stream, in pre-order.
    pub windows: Vec<WindowPartitionPlan>,
}

/// A window node of a view's stream (window functions, a SESSION window, a top-N): its rows
/// of one partition depend on that partition's input rows only, so a commit's change is the
/// window over the touched partitions' rows after the commit less the window over them before.
#[derive(Clone, Debug)]
pub struct WindowPartitionPlan {
    /// The input columns every window expression of the node partitions by.
    pub partition: Vec<usize>,
    /// The input columns read above the node or by its expressions. The change reaching the
    /// node has NULL in the others where join states below do not hold them (ADR 0083).
    pub read: Vec<bool>,
    /// The rows of the node's input, over the tables (the views it reads expanded).
    rows: LogicalPlan,
}

impl WindowPartitionPlan {
    /// The input's rows of the given partitions, as `snapshot` holds them; `None` when a
    /// partition value cannot be written as a constant.
    pub fn rows_of(
        &self,
        partitions: &[Vec<ScalarValue>],
        snapshot: &Snapshot,
    ) -> Result<Option<LogicalPlan>> {
        let schema = self.rows.schema();
        let keys: Vec<Expr> = self
            .partition
            .iter()
            .map(|&i| Expr::column_of(&schema, i))
            .collect();
        let Some(predicate) = crate::view::groups_predicate(&keys, partitions) else {
            return Ok(None);
        };
        let plan = LogicalPlan::Filter {
            input: Box::new(self.within_windows(self.narrowed(partitions), partitions)),
            predicate,
        };
        Ok(Some(crate::optimizer::optimize(plan, snapshot)?))
    }

    /// `rows` read for the times the partitions' TUMBLE windows span, when a partition column
    /// is a window's start: a scan prunes by the time column, not by the start computed from it.
    fn within_windows(&self, rows: LogicalPlan, partitions: &[Vec<ScalarValue>]) -> LogicalPlan {
        let LogicalPlan::Project {
            input,
            exprs,
            schema,
        } = rows
        else {
            return rows;
        };
        let mut bounds = Vec::new();
        for (position, &index) in self.partition.iter().enumerate() {
            let Some((time, size)) = crate::binder::time_windows::tumble_start_of(&exprs[index])
            else {
                continue;
            };
            let starts = partitions.iter().map(|p| match p[position] {
                ScalarValue::TimestampMicros(start) => Some(start),
                _ => None,
            });
            let Some(starts) = starts.collect::<Option<Vec<i64>>>() else {
                continue;
            };
            let (Some(&first), Some(&last)) = (starts.iter().min(), starts.iter().max()) else {
                continue;
            };
            let at = |op, micros: i64| Expr::Binary {
                op,
                left: Box::new(time.clone()),
                right: Box::new(Expr::Literal(ScalarValue::TimestampMicros(micros))),
            };
            bounds.push(at(BinaryOp::GtEq, first));
            bounds.push(at(BinaryOp::Lt, last.saturating_add(size)));
        }
        let input = match Expr::and_all(bounds) {
            Some(predicate) => Box::new(LogicalPlan::Filter { input, predicate }),
            None => input,
        };
        LogicalPlan::Project {
            input,
            exprs,
            schema,
        }
    }

    /// The input's rows, where the input is a join whose left keys are partition columns
    /// with its right side read for those keys' values only (an ASOF join's right rows).
    fn narrowed(&self, partitions: &[Vec<ScalarValue>]) -> LogicalPlan {
        let LogicalPlan::Join {
            left,
            right,
            kind,
            on,
            filter,
            schema,
            estimate,
        } = &self.rows
        else {
            return self.rows.clone();
        };
        let (keys, positions): (Vec<Expr>, Vec<usize>) = on
            .iter()
            .filter_map(|(l, r)| match l {
                Expr::Column { index, .. } => {
                    let position = self.partition.iter().position(|p| p == index)?;
                    Some((r.clone(), position))
                }
                _ => None,
            })
            .unzip();
        let values: Vec<Vec<ScalarValue>> = partitions
            .iter()
            .map(|p| positions.iter().map(|&i| p[i].clone()).collect())
            .collect();
        let Some(predicate) =
            crate::view::groups_predicate(&keys, &values).filter(|_| !keys.is_empty())
        else {
            return self.rows.clone();
        };
        LogicalPlan::Join {
            left: left.clone(),
            right: Box::new(LogicalPlan::Filter {
                input: right.clone(),
                predicate,
            }),
            kind: *kind,
            on: on.clone(),
            filter: filter.clone(),
            schema: schema.clone(),
            estimate: *estimate,
        }
    }
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
    /// For a side of an interval join, when its rows expire (ADR 0056).
    pub expiry: Option<StateExpiry>,
    /// For a side that scans a keyed table on its whole key, the table, which serves as its
    /// own index: the side keeps no state.
    pub own_index: Option<OwnIndex>,
    /// The side's columns the state holds, ascending (ADR 0083): those the view reads above
    /// the join and its condition reads (keys are held as `key_` columns of their own). The
    /// others reach the join's output as NULL.
    pub held: Vec<usize>,
    /// How many columns the side has.
    pub side_width: usize,
    /// The side and its keys, to plan the state again holding every column, as a view
    /// created before ADR 0083 keeps it.
    side: Arc<(LogicalPlan, Vec<Expr>)>,
}

/// A keyed table a join side reads whole, joined on its key: lookups of keys read the table.
#[derive(Clone, Debug)]
pub struct OwnIndex {
    pub table: Arc<TableDef>,
    /// The table's column each join key is, in the order of the keys.
    pub key_columns: Vec<usize>,
}

/// The keyed table `side` is, when `keys` (over its columns) are its key's columns, each
/// once: a join state of it would copy the table.
fn own_index(side: &LogicalPlan, keys: &[Expr]) -> Option<OwnIndex> {
    let LogicalPlan::Scan { table, .. } = side else {
        return None;
    };
    if table.key.is_empty() || table.key.len() != keys.len() || table.is_materialized_view() {
        return None;
    }
    let mut key_columns = Vec::new();
    for key in keys {
        let Expr::Column { index, .. } = key else {
            return None;
        };
        let column = table.columns.get(*index)?;
        if !table.key.contains(&column.name) || key_columns.contains(index) {
            return None;
        }
        key_columns.push(*index);
    }
    Some(OwnIndex {
        table: table.clone(),
        key_columns,
    })
}

impl JoinStatePlan {
    /// The columns the state is keyed on: all but the count.
    pub fn key(&self) -> Vec<String> {
        let kept = &self.columns[..self.columns.len() - 1];
        kept.iter().map(|c| c.name.clone()).collect()
    }

    /// The state column holding the side's column `column`, if the state holds it.
    pub fn state_column_of(&self, column: usize) -> Option<usize> {
        let position = self.held.iter().position(|&h| h == column)?;
        Some(self.key_count + position)
    }

    /// This state holding every column of its side, as views created before ADR 0083 keep
    /// their states; `None` when it already does.
    fn holding_every_column(&self) -> Result<Option<JoinStatePlan>> {
        if self.held.len() == self.side_width {
            return Ok(None);
        }
        let (side, keys) = self.side.as_ref();
        let mut whole = join_state(side, keys.clone(), &vec![true; self.side_width])?;
        whole.own_index = self.own_index.clone();
        whole.expiry = self.expiry.clone().map(|mut expiry| {
            let column = self.held[expiry.column - self.key_count];
            expiry.column = self.key_count + column;
            expiry
        });
        Ok(Some(whole))
    }
}

impl StreamPlan {
    /// The stream with each join state planned as `stored` holds it: a state table created
    /// before ADR 0083 holds every column of its side. `stored` gives a position's state
    /// table's column names, if it has one. A state in neither form cannot be maintained by
    /// this plan: an error names `view`.
    pub fn as_stored(
        mut self,
        view: &str,
        stored: impl Fn(usize) -> Option<Vec<String>>,
    ) -> Result<StreamPlan> {
        for (position, state) in self.join_states.iter_mut().enumerate() {
            let Some(names) = stored(position) else {
                continue;
            };
            if state.columns.iter().map(|c| &c.name).eq(names.iter()) {
                continue;
            }
            match state.holding_every_column()? {
                Some(whole) if whole.columns.iter().map(|c| &c.name).eq(names.iter()) => {
                    *state = whole;
                }
                _ => {
                    return Err(crate::bind_err!(
                        "materialized view {view} keeps join state {position} in a form this \
                         build does not know; drop the view and create it again"
                    ));
                }
            }
        }
        Ok(self)
    }
}

/// The stream of a view whose core reads `plan`, when `plan` joins tables, unions them or
/// unnests rows (a HOP window); `None` when it reads one table through filters and
/// projections (the direct path).
/// `used` marks the columns of `plan` its reader (the view's aggregate, or the view) reads.
pub(crate) fn plan_stream(
    plan: &LogicalPlan,
    used: &[bool],
    snapshot: &Snapshot,
) -> Result<Option<StreamPlan>> {
    if !needs_stream(plan) {
        return Ok(None);
    }
    debug_assert_eq!(used.len(), plan.schema().fields().len());
    let mut stream = StreamPlan {
        plan: plan.clone(),
        rows: expand_leaves(plan.clone(), snapshot)?,
        tables: Vec::new(),
        join_states: Vec::new(),
        windows: Vec::new(),
    };
    walk(plan, used, &mut stream, snapshot)?;
    // A state expires by the watermark of a table the view reads itself, so that every
    // commit that moves it maintains the view and expires the state (ADR 0056).
    for state in &mut stream.join_states {
        let read = |e: &StateExpiry| stream.tables.iter().any(|t| t.id == e.table.id);
        if !state.expiry.as_ref().is_some_and(read) {
            state.expiry = None;
        }
    }
    for window in &mut stream.windows {
        let rows = std::mem::replace(&mut window.rows, LogicalPlan::empty());
        window.rows = expand_leaves(rows, snapshot)?;
    }
    for state in &mut stream.join_states {
        let fill = std::mem::replace(&mut state.fill, LogicalPlan::empty());
        state.fill = expand_leaves(fill, snapshot)?;
    }
    Ok(Some(stream))
}

fn needs_stream(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::Join { .. }
        | LogicalPlan::Union { .. }
        | LogicalPlan::Unnest { .. }
        | LogicalPlan::Window { .. } => true,
        LogicalPlan::Filter { input, .. } | LogicalPlan::Project { input, .. } => {
            needs_stream(input)
        }
        _ => false,
    }
}

/// Checks that the stream holds only nodes whose change is derived, gathering its tables and
/// join states in pre-order. `used` marks the columns of `plan` read above it.
fn walk(
    plan: &LogicalPlan,
    used: &[bool],
    stream: &mut StreamPlan,
    snapshot: &Snapshot,
) -> Result<()> {
    let every = |input: &LogicalPlan| vec![true; input.schema().fields().len()];
    match plan {
        LogicalPlan::Scan { table, .. } => {
            crate::view::check_readable(table)?;
            if !stream.tables.iter().any(|t| t.id == table.id) {
                stream.tables.push(table.clone());
            }
            Ok(())
        }
        LogicalPlan::Filter { input, predicate } => {
            let mut needed = used.to_vec();
            predicate.mark_columns(&mut needed);
            walk(input, &needed, stream, snapshot)
        }
        LogicalPlan::Project { input, exprs, .. } => {
            let mut needed = vec![false; input.schema().fields().len()];
            for (expr, _) in exprs.iter().zip(used).filter(|(_, u)| **u) {
                expr.mark_columns(&mut needed);
            }
            walk(input, &needed, stream, snapshot)
        }
        LogicalPlan::Unnest { input, .. } => walk(input, &every(input), stream, snapshot),
        LogicalPlan::Union { inputs, .. } => inputs
            .iter()
            .try_for_each(|i| walk(i, used, stream, snapshot)),
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
            let left_width = left.schema().fields().len();
            let mut needed = used.to_vec();
            // The state holds the keys as `key_` columns of their own.
            if let Some(filter) = filter {
                filter.mark_columns(&mut needed);
            }
            let (left_used, right_used) = needed.split_at(left_width);
            let mut states = [
                join_state(left, left_keys.clone(), left_used)?,
                join_state(right, right_keys.clone(), right_used)?,
            ];
            if let (JoinKind::Inner, Some(filter)) = (kind, filter) {
                let key_counts = [states[0].key_count, states[1].key_count];
                let expiries = state_expiries(left, right, filter, key_counts, snapshot);
                for (state, expiry) in states.iter_mut().zip(expiries) {
                    // The condition reads the time column, so the state holds it.
                    state.expiry = expiry.map(|mut expiry| {
                        let column = expiry.column - state.key_count;
                        expiry.column = state
                            .state_column_of(column)
                            .expect("a state holds the columns its join's condition reads");
                        expiry
                    });
                }
            }
            // A keyed table joined on its key is its own index (ADR 0054); a state that
            // expires is the view's to delete from, so it stays a state.
            for (state, (side, keys)) in states
                .iter_mut()
                .zip([(left, &left_keys), (right, &right_keys)])
            {
                if state.expiry.is_none() {
                    state.own_index = own_index(side, keys);
                }
            }
            stream.join_states.extend(states);
            // The sides compute the keys from their rows, so the rows below carry them.
            let mut below = needed.clone();
            for (l, r) in on {
                l.mark_columns(&mut below[..left_width]);
                r.mark_columns(&mut below[left_width..]);
            }
            let (left_below, right_below) = below.split_at(left_width);
            walk(left, left_below, stream, snapshot)?;
            walk(right, right_below, stream, snapshot)
        }
        LogicalPlan::Aggregate { .. } => Err(unsupported!(
            "an aggregate below a join or a UNION in a materialized view"
        )),
        LogicalPlan::Window { .. } => {
            let (_, base) = window_chain(plan).expect("a window");
            let mut exprs = Vec::new();
            let mut node = plan;
            while let LogicalPlan::Window {
                input, exprs: more, ..
            } = node
            {
                exprs.extend(more.iter().cloned());
                node = input;
            }
            let Some(partition) = shared_partition(&exprs) else {
                return Err(unsupported!(
                    "window functions without a PARTITION BY they all share (and SESSION windows without keys) in a materialized view"
                ));
            };
            // A window node keeps its input's columns in place, then adds its own.
            let mut needed = used[..base.schema().fields().len()].to_vec();
            for expr in &exprs {
                for e in expr.partition_by.iter().chain(&expr.args) {
                    e.mark_columns(&mut needed);
                }
                for key in &expr.order_by {
                    key.expr.mark_columns(&mut needed);
                }
            }
            stream.windows.push(WindowPartitionPlan {
                partition,
                read: needed.clone(),
                rows: base.clone(),
            });
            walk(base, &needed, stream, snapshot)
        }
        LogicalPlan::Sort { .. } | LogicalPlan::Limit { .. } => Err(unsupported!(
            "ORDER BY or LIMIT below a join in a materialized view"
        )),
        _ => Err(unsupported!(
            "a materialized view over joins may read tables through WHERE, joins and UNION ALL only"
        )),
    }
}

/// For a window node, the chain of window nodes it heads with their lowest input replaced by
/// the plan's `Input`, and that input: a chain is one node of a view's stream, as a SESSION
/// window's three are. A window node keeps its input's columns in place, so the partition
/// columns of every node of the chain are columns of its lowest input. `None` for any other node.
pub fn window_chain(node: &LogicalPlan) -> Option<(LogicalPlan, &LogicalPlan)> {
    let LogicalPlan::Window {
        input,
        exprs,
        schema,
    } = node
    else {
        return None;
    };
    let (over, base) = match window_chain(input) {
        Some((over, base)) => (over, base),
        None => {
            let schema = input.schema();
            (LogicalPlan::Input { schema }, input.as_ref())
        }
    };
    let chain = LogicalPlan::Window {
        input: Box::new(over),
        exprs: exprs.clone(),
        schema: schema.clone(),
    };
    Some((chain, base))
}

/// The input columns that every one of `exprs` partitions by; `None` when there are none.
fn shared_partition(exprs: &[WindowExpr]) -> Option<Vec<usize>> {
    let columns = |e: &WindowExpr| -> Vec<usize> {
        let columns = e.partition_by.iter().filter_map(|p| match p {
            Expr::Column { index, .. } => Some(*index),
            _ => None,
        });
        columns.collect()
    };
    let mut shared = columns(exprs.first()?);
    for expr in &exprs[1..] {
        let theirs = columns(expr);
        shared.retain(|c| theirs.contains(c));
    }
    shared.dedup();
    (!shared.is_empty()).then_some(shared)
}

/// The state of one join input, `side`, indexed by `keys` (over the input's columns), holding
/// the side's columns `used` marks.
fn join_state(side: &LogicalPlan, keys: Vec<Expr>, used: &[bool]) -> Result<JoinStatePlan> {
    let schema = side.schema();
    let held: Vec<usize> = (0..schema.fields().len()).filter(|&i| used[i]).collect();
    let mut columns = Vec::new();
    let mut exprs = keys.clone();
    let mut names = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        names.push(format!("key_{i}"));
        columns.push(state_column(format!("key_{i}"), &key.data_type())?);
    }
    for &i in &held {
        let field = schema.field(i);
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
        expiry: None,
        own_index: None,
        held,
        side_width: schema.fields().len(),
        side: Arc::new((side.clone(), keys)),
    })
}
