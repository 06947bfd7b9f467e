//! The change of a view's stream through a commit (ADR 0054). A commit's rows enter at the
//! scans of its table and flow up: filters, projections and unnests run over them, UNION ALL
//! concatenates, each join applies the delta rule against the states of its two inputs,
//! which it reads for the touched keys only and changes in the same commit, and a window node
//! computes the partitions the change touches again, before and after it.

// hashbrown: its default hasher is several times faster than SipHash on row keys.
use hashbrown::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int64Array, RecordBatch, UInt32Array};
use arrow::compute::{concat_batches, take};
use arrow::datatypes::{Field, Int64Type, Schema, SchemaRef};
use pondra_catalog::{Change, Snapshot, TableDef};
use pondra_planner::{
    JoinKind, JoinStatePlan, LogicalPlan, StateExpiry, StreamPlan, WindowPartitionPlan,
    window_chain,
};

use crate::node::Node;
use crate::tables::keyed::matching_plan;
use crate::tables::rewrite::deletion_changes;
use crate::tables::state_expiry::{Expiring, at_or_above, join_state_expiring};
use crate::views::own_index::{SideStore, side_stores};
use crate::views::view_changes::{
    InputChange, KeyRows, RowKeys, address_column, conform, group_values, lost_track,
    without_address,
};
use crate::{NodeError, Result};

/// A change to the rows of a stream node: those it gains (weight +1 each) and those it loses.
pub(crate) struct Delta {
    pub gained: RecordBatch,
    pub lost: RecordBatch,
}

impl Delta {
    fn empty(schema: SchemaRef) -> Delta {
        Delta {
            gained: RecordBatch::new_empty(schema.clone()),
            lost: RecordBatch::new_empty(schema),
        }
    }

    fn is_empty(&self) -> bool {
        self.gained.num_rows() == 0 && self.lost.num_rows() == 0
    }
}

/// Weights for `positive` rows then `negative` ones.
fn signed(positive: usize, negative: usize) -> Vec<i64> {
    let weights = std::iter::repeat_n(1, positive).chain(std::iter::repeat_n(-1, negative));
    weights.collect()
}

/// How many joins and window nodes of a stream its walk has met, which numbers their states.
#[derive(Default)]
struct Visited {
    joins: usize,
    windows: usize,
}

/// What one commit feeds a view's stream: its changes to the tables and views the view
/// reads.
struct Feed<'a> {
    snapshot: &'a Arc<Snapshot>,
    view: &'a TableDef,
    stream: &'a StreamPlan,
    states: Vec<SideStore>,
    inputs: &'a [InputChange],
}

impl Feed<'_> {
    /// The commit's change to `table`, when it changes it.
    fn input_of(&self, table: &TableDef) -> Option<&InputChange> {
        self.inputs.iter().find(|i| i.table.id == table.id)
    }

    /// How the commit moves the bounds of the states of the join whose left state is at
    /// `position`.
    fn expiring(&self, position: usize) -> Result<[Option<Expiring>; 2]> {
        let mut expiring = [None, None];
        for (i, slot) in expiring.iter_mut().enumerate() {
            if let Some(expiry) = &self.stream.join_states[position + i].expiry {
                let added = self.input_of(&expiry.table).map_or(&[][..], |i| &i.added);
                *slot = join_state_expiring(self.snapshot, expiry, added)?;
            }
        }
        Ok(expiring)
    }

    /// `delta` without its rows late by the watermark `expiry` (the other state's) names,
    /// as the commit found it.
    fn not_late(&self, delta: Delta, expiry: Option<&StateExpiry>) -> Result<Delta> {
        let Some(expiry) = expiry else {
            return Ok(delta);
        };
        let table = self
            .snapshot
            .table(&expiry.table.name)
            .unwrap_or(&expiry.table);
        let Some(watermark) = self.snapshot.watermark(table) else {
            return Ok(delta);
        };
        let late_below = expiry.late_below(watermark);
        Ok(Delta {
            gained: at_or_above(&delta.gained, expiry.late_column, late_below)?,
            lost: at_or_above(&delta.lost, expiry.late_column, late_below)?,
        })
    }
}

type Boxed<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

impl Node {
    /// The change of `view`'s stream through a commit that makes `inputs`' changes, to any
    /// of the tables and views the stream reads at once (ADR 0057), with the commit's changes
    /// to the view's join states.
    pub(crate) async fn stream_change(
        &self,
        snapshot: &Arc<Snapshot>,
        view: &TableDef,
        stream: &StreamPlan,
        inputs: &[InputChange],
    ) -> Result<(Delta, Vec<Change>)> {
        let states = side_stores(snapshot, view, stream)?;
        let feed = Feed {
            snapshot,
            view,
            stream,
            states,
            inputs,
        };
        let mut visited = Visited::default();
        let mut changes = Vec::new();
        let delta = self
            .node_change(&feed, &stream.plan, &mut visited, &mut changes)
            .await?;
        assert_eq!(visited.joins * 2, feed.states.len(), "every join visited");
        assert_eq!(
            visited.windows,
            stream.windows.len(),
            "every window visited"
        );
        Ok((delta, changes))
    }

    /// The rows of each join state of materialized view `view`, in position order: for
    /// inspecting the state, which no query can name.
    pub async fn view_join_states(&self, view: &str) -> Result<Vec<Vec<RecordBatch>>> {
        let snapshot = self.snapshot();
        let mut states = Vec::new();
        for table in snapshot.join_states_of(view) {
            states.push(self.read_table(&snapshot, &table).await?);
        }
        Ok(states)
    }

    /// The join states of a view created over the rows its tables hold in `snapshot`.
    pub(crate) async fn create_join_states(
        &self,
        snapshot: &Arc<Snapshot>,
        view_name: &str,
        stream: &StreamPlan,
    ) -> Result<Vec<Change>> {
        let mut creates = Vec::new();
        for (position, state) in stream.join_states.iter().enumerate() {
            if state.own_index.is_some() {
                continue;
            }
            let name = pondra_catalog::join_state_name(view_name, position);
            if snapshot.tables.contains_key(&name) {
                return Err(pondra_catalog::CatalogError::TableExists(name).into());
            }
            let kind = pondra_catalog::TableKind::JoinState {
                view: view_name.to_string(),
                position,
            };
            let def = TableDef {
                key: state.key(),
                ..TableDef::new(name, state.columns.clone(), kind)
            };
            let mut rows = self
                .run_query(state.fill.clone(), snapshot.clone(), Vec::new())
                .await?;
            // Rows an interval join's bound has already passed are not kept (ADR 0056).
            if let Some(expiry) = &state.expiry {
                let table = snapshot.table(&expiry.table.name).unwrap_or(&expiry.table);
                if let Some(watermark) = snapshot.watermark(table) {
                    let bound = expiry.bound(watermark);
                    rows = rows
                        .iter()
                        .map(|b| at_or_above(b, expiry.column, bound))
                        .collect::<Result<_>>()?;
                }
            }
            let initial = match rows.iter().map(|b| b.num_rows()).sum::<usize>() {
                0 => None,
                _ => Some(self.segment(&def, &rows).await?),
            };
            creates.push(Change::CreateTable { def, initial });
        }
        Ok(creates)
    }

    fn node_change<'a>(
        &'a self,
        feed: &'a Feed<'a>,
        node: &'a LogicalPlan,
        visited: &'a mut Visited,
        changes: &'a mut Vec<Change>,
    ) -> Boxed<'a, Delta> {
        Box::pin(async move {
            let schema = node.schema();
            match node {
                LogicalPlan::Scan { table, .. } => match feed.input_of(table) {
                    Some(input) => Ok(Delta {
                        gained: conform(&schema, &input.added)?,
                        lost: conform(&schema, &input.removed)?,
                    }),
                    None => Ok(Delta::empty(schema)),
                },
                LogicalPlan::Filter { input, predicate } => {
                    let below = self.node_change(feed, input, visited, changes).await?;
                    let over = LogicalPlan::Filter {
                        input: Box::new(input_like(input)),
                        predicate: predicate.clone(),
                    };
                    self.map_delta(feed, over, below).await
                }
                LogicalPlan::Project {
                    input,
                    exprs,
                    schema,
                } => {
                    let below = self.node_change(feed, input, visited, changes).await?;
                    let over = LogicalPlan::Project {
                        input: Box::new(input_like(input)),
                        exprs: exprs.clone(),
                        schema: schema.clone(),
                    };
                    self.map_delta(feed, over, below).await
                }
                LogicalPlan::Unnest {
                    input,
                    array,
                    schema,
                } => {
                    let below = self.node_change(feed, input, visited, changes).await?;
                    let over = LogicalPlan::Unnest {
                        input: Box::new(input_like(input)),
                        array: array.clone(),
                        schema: schema.clone(),
                    };
                    self.map_delta(feed, over, below).await
                }
                LogicalPlan::Union { inputs, .. } => {
                    let mut gained = Vec::new();
                    let mut lost = Vec::new();
                    for input in inputs {
                        let below = self.node_change(feed, input, visited, changes).await?;
                        gained.push(conform(&schema, &[below.gained])?);
                        lost.push(conform(&schema, &[below.lost])?);
                    }
                    Ok(Delta {
                        gained: concat_batches(&schema, &gained)?,
                        lost: concat_batches(&schema, &lost)?,
                    })
                }
                LogicalPlan::Join {
                    left,
                    right,
                    kind,
                    filter,
                    ..
                } => {
                    let position = 2 * visited.joins;
                    visited.joins += 1;
                    let left = self.node_change(feed, left, visited, changes).await?;
                    let right = self.node_change(feed, right, visited, changes).await?;
                    let expiring = feed.expiring(position)?;
                    let expires = expiring.iter().flatten().any(|e| e.moves());
                    if left.is_empty() && right.is_empty() && !expires {
                        return Ok(Delta::empty(schema));
                    }
                    let join = JoinAt {
                        position,
                        kind: *kind,
                        schema: schema.clone(),
                        expiring,
                    };
                    let matched = self.join_change(feed, &join, left, right, changes).await?;
                    match filter {
                        None => Ok(matched),
                        Some(predicate) => {
                            let over = LogicalPlan::Filter {
                                input: Box::new(input_like(node)),
                                predicate: predicate.clone(),
                            };
                            self.map_delta(feed, over, matched).await
                        }
                    }
                }
                LogicalPlan::Window { .. } => {
                    let (over, base) = window_chain(node).expect("a window heads a chain");
                    let window = &feed.stream.windows[visited.windows];
                    visited.windows += 1;
                    let below = self.node_change(feed, base, visited, changes).await?;
                    if below.is_empty() {
                        return Ok(Delta::empty(schema));
                    }
                    self.window_change(feed, window, over, below).await
                }
                _ => Err(NodeError::Other(format!(
                    "materialized view {} has a plan its commits cannot follow; drop it and create it again",
                    feed.view.name
                ))),
            }
        })
    }

    /// The change of a window node (`over`, a chain of windows over the plan's `Input`) whose
    /// input changes by `below`: the window over the rows of the partitions the change
    /// touches after the commit, less the window over them before. Costs the rows of those
    /// partitions, read from the tables.
    async fn window_change(
        &self,
        feed: &Feed<'_>,
        window: &WindowPartitionPlan,
        over: LogicalPlan,
        below: Delta,
    ) -> Result<Delta> {
        let input_schema = below.gained.schema();
        let touched = concat_batches(&input_schema, [&below.gained, &below.lost])?;
        let touched = touched.project(&window.partition)?;
        let keys = RowKeys::new(&touched.schema(), touched.num_columns())?;
        let mut seen = HashSet::new();
        let mut partitions = Vec::new();
        for (key, values) in keys
            .of(&touched)?
            .into_iter()
            .zip(group_values(&touched, touched.num_columns()))
        {
            if seen.insert(key) {
                partitions.push(values);
            }
        }
        let Some(rows) = window.rows_of(&partitions, feed.snapshot)? else {
            return Err(NodeError::Other(format!(
                "materialized view {}: a window partition has a value without a constant form",
                feed.view.name
            )));
        };
        let before = self
            .run_query(rows, feed.snapshot.clone(), Vec::new())
            .await?;
        // The change below may carry NULL in the columns no one reads, where join states
        // below do not hold them (ADR 0083): those columns are NULL in every row here, for
        // the rows before and the change to consolidate.
        let before = without_unread(&conform(&input_schema, &before)?, &window.read)?;
        let below = Delta {
            gained: without_unread(&below.gained, &window.read)?,
            lost: without_unread(&below.lost, &window.read)?,
        };
        let (kept, lost) = (
            before.num_rows() + below.gained.num_rows(),
            below.lost.num_rows(),
        );
        let all = concat_batches(&input_schema, [&before, &below.gained, &below.lost])?;
        let after = consolidated(&all, &signed(kept, lost))?;
        if after.lost.num_rows() > 0 {
            return Err(lost_track(feed.view));
        }
        let old = self.run_over(feed, &over, before).await?;
        let new = self.run_over(feed, &over, after.gained).await?;
        let weights = signed(new.num_rows(), old.num_rows());
        consolidated(&concat_batches(&over.schema(), [&new, &old])?, &weights)
    }

    /// `over`, a plan over its `Input`, run over `rows`.
    async fn run_over(
        &self,
        feed: &Feed<'_>,
        over: &LogicalPlan,
        rows: RecordBatch,
    ) -> Result<RecordBatch> {
        let schema = over.schema();
        if rows.num_rows() == 0 {
            return Ok(RecordBatch::new_empty(schema));
        }
        let out = self
            .run_query(over.clone(), feed.snapshot.clone(), vec![rows])
            .await?;
        conform(&schema, &out)
    }

    /// `below` through `over`, a node whose input is the change.
    async fn map_delta(&self, feed: &Feed<'_>, over: LogicalPlan, below: Delta) -> Result<Delta> {
        let gained = self.run_over(feed, &over, below.gained).await?;
        let lost = self.run_over(feed, &over, below.lost).await?;
        Ok(Delta { gained, lost })
    }

    /// The delta rule at one join (ADR 0054): the matched rows ΔL⋈R + (L+ΔL)⋈ΔR, the rows an
    /// outer join pads that change, consolidated; and the changes to both join states.
    async fn join_change(
        &self,
        feed: &Feed<'_>,
        join: &JoinAt,
        left: Delta,
        right: Delta,
        changes: &mut Vec<Change>,
    ) -> Result<Delta> {
        let plans = &feed.stream.join_states[join.position..join.position + 2];
        let tables = &feed.states[join.position..join.position + 2];
        // A side's rows behind its watermark are late for an interval join that bounds the
        // other side's state by it (ADR 0056): the join takes none of them.
        let left = feed.not_late(left, plans[1].expiry.as_ref())?;
        let right = feed.not_late(right, plans[0].expiry.as_ref())?;
        let left_images = self.images(feed, &plans[0], left).await?;
        let right_images = self.images(feed, &plans[1], right).await?;
        let keys = RowKeys::new(&left_images.0.schema(), plans[0].key_count)?;
        // An inner join reads a side's stored rows for the keys the other side changes (the
        // delta rule joins them) and for those of the rows it loses (their stored copies lose
        // counts); the rows it only gains are appended as new entries without a lookup (ADR
        // 0083). An outer join also pads by each side's counts of its own changed keys.
        // Each image's keys are converted once: the lost images count for both sides.
        let keyed = |images: &(RecordBatch, RecordBatch)| -> Result<[KeyRows; 2]> {
            Ok([keys.keyed(&images.0)?, keys.keyed(&images.1)?])
        };
        let (left_keys, right_keys) = (keyed(&left_images)?, keyed(&right_images)?);
        // A side's touched keys: the other side's changes, its own losses, and its own gains
        // when the join pads.
        let touched = |own: (&(RecordBatch, RecordBatch), &[KeyRows; 2]),
                       other: (&(RecordBatch, RecordBatch), &[KeyRows; 2]),
                       gains: bool| {
            let own_gains = gains.then_some((&own.0.0, &own.1[0]));
            let images = [
                (&other.0.0, &other.1[0]),
                (&other.0.1, &other.1[1]),
                (&own.0.1, &own.1[1]),
            ];
            touched_keys(keys.width(), images.into_iter().chain(own_gains))
        };
        let pads = join.kind != JoinKind::Inner;
        let left_touched = touched(
            (&left_images, &left_keys),
            (&right_images, &right_keys),
            pads,
        )?;
        let right_touched = touched(
            (&right_images, &right_keys),
            (&left_images, &left_keys),
            pads,
        )?;
        let left_side = self
            .side(feed, &plans[0], &tables[0], &left_touched, left_images)
            .await?;
        let right_side = self
            .side(feed, &plans[1], &tables[1], &right_touched, right_images)
            .await?;
        for (i, side) in [&left_side, &right_side].into_iter().enumerate() {
            // A keyed table that is its own index changes by the commit itself.
            let Some(state) = tables[i].state() else {
                continue;
            };
            let expiring = join.expiring[i];
            let (mut deleted, appended) = self.fold_side(feed, state, side, expiring).await?;
            let appended = match (appended, expiring) {
                (Some(rows), Some(e)) => Some(at_or_above(&rows, e.column, e.to)?),
                (rows, _) => rows,
            };
            if let Some(expiring) = expiring.filter(|e| e.moves()) {
                let replaced: HashSet<i64> = deleted.iter().copied().collect();
                let expired = self
                    .expired_addresses(feed.snapshot, state, expiring)
                    .await?;
                deleted.extend(expired.into_iter().filter(|a| !replaced.contains(a)));
            }
            changes.extend(deletion_changes(feed.snapshot, state, &deleted));
            if let Some(rows) = appended.filter(|r| r.num_rows() > 0) {
                changes.push(self.append_change(state, &[rows]).await?);
            }
        }
        let pairs = delta_pairs(join.kind, &left_side, &right_side);
        let sides = [(&left_side, &plans[0]), (&right_side, &plans[1])];
        let rows = joined_rows(&join.schema, sides, &pairs)?;
        consolidated(&rows, &pairs.iter().map(|p| p.2).collect::<Vec<_>>())
    }

    /// The state rows (without their counts) of the rows a side gains and loses.
    async fn images(
        &self,
        feed: &Feed<'_>,
        plan: &JoinStatePlan,
        delta: Delta,
    ) -> Result<(RecordBatch, RecordBatch)> {
        let schema = image_schema(plan);
        let image = |rows: RecordBatch| {
            let schema = schema.clone();
            async move {
                if rows.num_rows() == 0 {
                    return Ok(RecordBatch::new_empty(schema));
                }
                let plan = plan.image.clone();
                let out = self
                    .run_query(plan, feed.snapshot.clone(), vec![rows])
                    .await?;
                conform(&schema, &out)
            }
        };
        let gained = image(delta.gained).await?;
        let lost = image(delta.lost).await?;
        Ok((gained, lost))
    }

    /// One side of a join for the touched keys: its stored rows of those keys with their
    /// counts and addresses, then the rows it gains (+1) and loses (-1).
    async fn side(
        &self,
        feed: &Feed<'_>,
        plan: &JoinStatePlan,
        store: &SideStore,
        touched: &Touched,
        images: (RecordBatch, RecordBatch),
    ) -> Result<Side> {
        let schema = image_schema(plan);
        let keys = RowKeys::new(&schema, plan.key_count)?;
        let mut parts = Vec::new();
        let mut weights = Vec::new();
        let mut addresses = Vec::new();
        if let (SideStore::Table { table, key_columns }, true) =
            (store, touched.batch.num_rows() > 0)
        {
            let found = self
                .own_index_rows(feed.snapshot, plan, (table, key_columns), &touched.batch)
                .await?;
            for rows in found {
                let rows = conform(&schema, &[rows])?;
                let keep: Vec<u32> = keys
                    .keyed(&rows)?
                    .iter()
                    .enumerate()
                    .filter(|(_, key)| touched.keys.contains(*key))
                    .map(|(i, _)| i as u32)
                    .collect();
                // A keyed table holds each key once: one copy of each row.
                weights.extend(std::iter::repeat_n(1, keep.len()));
                addresses.extend(std::iter::repeat_n(None, keep.len()));
                parts.push(take_rows(&rows, &keep)?);
            }
        }
        if let (SideStore::State(table), true) = (store, touched.batch.num_rows() > 0) {
            let indices: Vec<usize> = (0..plan.key_count).collect();
            let lookup = matching_plan(table, &indices, &touched.batch, false)?;
            for batch in self
                .run_query(lookup, feed.snapshot.clone(), Vec::new())
                .await?
            {
                let stored = conform(&table.arrow_schema(), &[without_address(&batch)])?;
                let found = address_column(&batch);
                let count = stored.num_columns() - 1;
                let counts = stored.column(count).as_primitive::<Int64Type>();
                let mut keep = Vec::new();
                for (i, key) in keys.keyed(&stored)?.iter().enumerate() {
                    if touched.keys.contains(key) {
                        keep.push(i as u32);
                        weights.push(counts.value(i));
                        addresses.push(Some(found.value(i)));
                    }
                }
                let rows = stored.project(&(0..count).collect::<Vec<_>>())?;
                parts.push(take_rows(&rows, &keep)?);
            }
        }
        let stored = weights.len();
        for (batch, weight) in [(images.0, 1), (images.1, -1)] {
            weights.extend(std::iter::repeat_n(weight, batch.num_rows()));
            addresses.extend(std::iter::repeat_n(None, batch.num_rows()));
            parts.push(batch);
        }
        let rows = concat_batches(&schema, &parts)?;
        let key_of = keys.keyed(&rows)?;
        let has_null_key: Vec<bool> = (0..rows.num_rows())
            .map(|i| (0..plan.key_count).any(|c| rows.column(c).is_null(i)))
            .collect();
        Ok(Side {
            rows,
            weights,
            addresses,
            stored,
            key_of,
            has_null_key,
        })
    }

    /// What folding a side's gained and lost rows into its stored counts does: a stored row
    /// whose count changes is deleted (its address returned) and appended with the new count
    /// (the rows returned), unless it reaches zero. A row below the bound `expiring` moves
    /// from is not held: the state neither gains nor loses it (ADR 0056).
    async fn fold_side(
        &self,
        feed: &Feed<'_>,
        table: &TableDef,
        side: &Side,
        expiring: Option<Expiring>,
    ) -> Result<(Vec<i64>, Option<RecordBatch>)> {
        if side.stored == side.rows.num_rows() {
            return Ok((Vec::new(), None));
        }
        let expired = expired_rows(side, expiring)?;
        let whole = RowKeys::new(&side.rows.schema(), side.rows.num_columns())?;
        let row_keys = whole.keyed(&side.rows)?;
        let row_keys = row_keys.slices();
        // A row may be held in several entries: rows gained are appended without a lookup
        // (ADR 0083). A row that changes is folded into one entry again.
        let mut stored_at: HashMap<&[u8], Vec<usize>> = HashMap::new();
        for (i, &key) in row_keys[..side.stored].iter().enumerate() {
            stored_at.entry(key).or_default().push(i);
        }
        // Per changed row: its first index, and its count after the commit.
        let mut changed: HashMap<&[u8], (usize, i64)> = HashMap::new();
        let mut order = Vec::new();
        for (i, &key) in row_keys.iter().enumerate().skip(side.stored) {
            let entry = changed.entry(key).or_insert_with(|| {
                order.push(key);
                let held = stored_at.get(key).map_or(0, |s| side.weight(s));
                (i, held)
            });
            entry.1 += side.weights[i];
        }
        let mut deleted = Vec::new();
        let mut kept = Vec::new();
        let mut counts = Vec::new();
        for key in order {
            let (first, count) = changed[key];
            let stored = stored_at.get(key);
            if expired.get(first).is_some_and(|&e| e) {
                assert!(stored.is_none(), "a join state holds no expired row");
                continue;
            }
            if count < 0 {
                return Err(lost_track(feed.view));
            }
            if stored.is_some_and(|s| s.len() == 1 && side.weights[s[0]] == count) {
                continue;
            }
            for &s in stored.into_iter().flatten() {
                deleted.push(side.addresses[s].expect("a stored row has an address"));
            }
            if count > 0 {
                kept.push(first as u32);
                counts.push(count);
            }
        }
        if kept.is_empty() {
            return Ok((deleted, None));
        }
        let rows = take_rows(&side.rows, &kept)?;
        let mut columns = rows.columns().to_vec();
        columns.push(Arc::new(Int64Array::from(counts)));
        let appended = RecordBatch::try_new(table.arrow_schema(), columns)?;
        Ok((deleted, Some(appended)))
    }
}

/// Per row of `side`, whether its time lies below the bound `expiring` moves from: rows
/// the state expired before the commit (none without a bound).
fn expired_rows(side: &Side, expiring: Option<Expiring>) -> Result<Vec<bool>> {
    let Some(Expiring {
        column,
        from: Some(from),
        ..
    }) = expiring
    else {
        return Ok(Vec::new());
    };
    let times = arrow::compute::cast(side.rows.column(column), &arrow::datatypes::DataType::Int64)?;
    let times = times.as_primitive::<Int64Type>();
    Ok((0..times.len())
        .map(|i| times.is_valid(i) && times.value(i) < from)
        .collect())
}

/// A join of a view's stream: the position of its left state, its kind and output columns,
/// and how the commit moves the bounds of its states, for an interval join (ADR 0056).
struct JoinAt {
    position: usize,
    kind: JoinKind,
    schema: SchemaRef,
    expiring: [Option<Expiring>; 2],
}

/// The keys a commit touches at one join, as a batch of key values (each once) and as bytes.
struct Touched {
    batch: RecordBatch,
    keys: HashSet<Vec<u8>>,
}

/// One input of a join, for the touched keys: `stored` rows first (with their counts as
/// weights and their addresses), then the rows the commit adds (+1) and removes (-1). Rows
/// are state rows without the count: the key values, then the input's columns.
struct Side {
    rows: RecordBatch,
    weights: Vec<i64>,
    addresses: Vec<Option<i64>>,
    stored: usize,
    key_of: KeyRows,
    has_null_key: Vec<bool>,
}

impl Side {
    /// The row indices per key that can match (no NULL in it): stored ones, then changes.
    fn by_key(&self) -> HashMap<&[u8], (Vec<usize>, Vec<usize>)> {
        let mut by_key: HashMap<&[u8], (Vec<usize>, Vec<usize>)> = HashMap::new();
        for i in 0..self.rows.num_rows() {
            if self.has_null_key[i] {
                continue;
            }
            let entry = by_key.entry(self.key_of.get(i)).or_default();
            match i < self.stored {
                true => entry.0.push(i),
                false => entry.1.push(i),
            }
        }
        by_key
    }

    fn weight(&self, rows: &[usize]) -> i64 {
        rows.iter().map(|&i| self.weights[i]).sum()
    }
}

/// A row of a join's change: a left row, a right row (either NULL-padded) and a weight.
type Pair = (Option<usize>, Option<usize>, i64);

/// The pairs of the join's change (ADR 0054).
fn delta_pairs(kind: JoinKind, left: &Side, right: &Side) -> Vec<Pair> {
    let pad_left = matches!(kind, JoinKind::Left | JoinKind::Full);
    let pad_right = matches!(kind, JoinKind::Right | JoinKind::Full);
    let left_keys = left.by_key();
    let right_keys = right.by_key();
    let empty = (Vec::new(), Vec::new());
    let mut all_keys: Vec<&[u8]> = left_keys.keys().copied().collect();
    all_keys.extend(right_keys.keys().filter(|k| !left_keys.contains_key(*k)));
    let mut pairs = Vec::new();
    for key in all_keys {
        let (l_old, l_new) = left_keys.get(key).unwrap_or(&empty);
        let (r_old, r_new) = right_keys.get(key).unwrap_or(&empty);
        for &l in l_new {
            for &r in r_old {
                pairs.push((Some(l), Some(r), left.weights[l] * right.weights[r]));
            }
        }
        for &l in l_old.iter().chain(l_new) {
            for &r in r_new {
                pairs.push((Some(l), Some(r), left.weights[l] * right.weights[r]));
            }
        }
        if pad_left {
            padded(
                &mut pairs,
                left,
                (l_old, l_new),
                right.weight(r_old),
                right.weight(r_new),
                false,
            );
        }
        if pad_right {
            padded(
                &mut pairs,
                right,
                (r_old, r_new),
                left.weight(l_old),
                left.weight(l_new),
                true,
            );
        }
    }
    // A row with a NULL in its key matches nothing: an outer join pads it.
    for (side, pad, on_right) in [(left, pad_left, false), (right, pad_right, true)] {
        if !pad {
            continue;
        }
        for i in side.stored..side.rows.num_rows() {
            if side.has_null_key[i] {
                pairs.push(pair(Some(i), on_right, side.weights[i]));
            }
        }
    }
    pairs
}

/// The change of one key's padded rows of `side` (kept where the other side has none), the
/// other side holding `before` rows of the key and `before + change` after.
fn padded(
    pairs: &mut Vec<Pair>,
    side: &Side,
    (old, new): (&Vec<usize>, &Vec<usize>),
    before: i64,
    change: i64,
    on_right: bool,
) {
    let after = before + change;
    let (rows, sign): (Vec<usize>, i64) = match (before == 0, after == 0) {
        (true, true) => (new.clone(), 1),
        (true, false) => (old.clone(), -1),
        (false, true) => (old.iter().chain(new).copied().collect(), 1),
        (false, false) => return,
    };
    for i in rows {
        pairs.push(pair(Some(i), on_right, sign * side.weights[i]));
    }
}

fn pair(row: Option<usize>, on_right: bool, weight: i64) -> Pair {
    match on_right {
        false => (row, None, weight),
        true => (None, row, weight),
    }
}

/// The joined rows of `pairs`, in the join's columns: each side's columns, NULL where padded
/// and where the side's state does not hold the column (the view does not read it, ADR 0083).
fn joined_rows(
    schema: &SchemaRef,
    sides: [(&Side, &JoinStatePlan); 2],
    pairs: &[Pair],
) -> Result<RecordBatch> {
    let mut columns: Vec<ArrayRef> = Vec::new();
    for (pick, (side, plan)) in sides.into_iter().enumerate() {
        let indices: UInt32Array = pairs
            .iter()
            .map(|p| match pick {
                0 => p.0,
                _ => p.1,
            })
            .map(|i| i.map(|i| i as u32))
            .collect();
        for column in 0..plan.side_width {
            let taken = match plan.state_column_of(column) {
                Some(held) => take(side.rows.column(held).as_ref(), &indices, None)?,
                None => {
                    let field = schema.field(columns.len());
                    arrow::array::new_null_array(field.data_type(), pairs.len())
                }
            };
            columns.push(taken);
        }
    }
    let batch = RecordBatch::try_new(unchecked(&columns), columns)?;
    conform(schema, &[batch])
}

/// The schema of `columns` as they are, every field nullable.
fn unchecked(columns: &[ArrayRef]) -> SchemaRef {
    let fields: Vec<arrow::datatypes::Field> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| arrow::datatypes::Field::new(format!("c_{i}"), c.data_type().clone(), true))
        .collect();
    Arc::new(Schema::new(fields))
}

/// `rows` with weights, equal rows summed: those above zero as gained copies, below as lost.
pub(crate) fn consolidated(rows: &RecordBatch, weights: &[i64]) -> Result<Delta> {
    let keys = RowKeys::new(&rows.schema(), rows.num_columns())?;
    let converted = keys.rows(rows)?;
    let key = |i: usize| -> &[u8] { converted.as_ref().map_or(&[], |r| r.row(i).data()) };
    let mut first: HashMap<&[u8], usize> = HashMap::with_capacity(rows.num_rows());
    let mut order = Vec::new();
    let mut sums: Vec<i64> = Vec::new();
    debug_assert_eq!(weights.len(), rows.num_rows(), "a weight per row");
    for (i, weight) in weights.iter().enumerate() {
        let slot = *first.entry(key(i)).or_insert_with(|| {
            order.push(i);
            sums.push(0);
            sums.len() - 1
        });
        sums[slot] += weight;
    }
    let mut gained = Vec::new();
    let mut lost = Vec::new();
    for (&row, &sum) in order.iter().zip(&sums) {
        let copies = std::iter::repeat_n(row as u32, sum.unsigned_abs() as usize);
        match sum > 0 {
            true => gained.extend(copies),
            false => lost.extend(copies),
        }
    }
    Ok(Delta {
        gained: take_rows(rows, &gained)?,
        lost: take_rows(rows, &lost)?,
    })
}

/// The keys of both sides' gained and lost images (each with its keys), each key once.
fn touched_keys<'a>(
    width: usize,
    images: impl IntoIterator<Item = (&'a RecordBatch, &'a KeyRows)>,
) -> Result<Touched> {
    let mut seen: HashSet<Vec<u8>> = HashSet::new();
    let mut parts = Vec::new();
    let mut schema = None;
    for (batch, keys) in images {
        let mut first = Vec::new();
        for i in 0..batch.num_rows() {
            let key = keys.get(i);
            if !seen.contains(key) {
                seen.insert(key.to_vec());
                first.push(i as u32);
            }
        }
        let key_columns: Vec<usize> = (0..width).collect();
        let batch = batch.project(&key_columns)?;
        let batch = conform(schema.get_or_insert_with(|| batch.schema()), &[batch])?;
        parts.push(take_rows(&batch, &first)?);
    }
    let schema = schema.expect("a side's batches");
    Ok(Touched {
        batch: concat_batches(&schema, &parts)?,
        keys: seen,
    })
}

/// `batch` with NULL in the columns `read` does not mark.
fn without_unread(batch: &RecordBatch, read: &[bool]) -> Result<RecordBatch> {
    debug_assert_eq!(read.len(), batch.num_columns());
    let columns = batch
        .columns()
        .iter()
        .zip(read)
        .map(|(column, &read)| match read {
            true => column.clone(),
            false => arrow::array::new_null_array(column.data_type(), batch.num_rows()),
        })
        .collect();
    Ok(RecordBatch::try_new(batch.schema(), columns)?)
}

/// The rows of `batch` at `indices`.
fn take_rows(batch: &RecordBatch, indices: &[u32]) -> Result<RecordBatch> {
    let indices = UInt32Array::from(indices.to_vec());
    let columns = batch
        .columns()
        .iter()
        .map(|c| take(c.as_ref(), &indices, None))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(RecordBatch::try_new_with_options(
        batch.schema(),
        columns,
        &arrow::array::RecordBatchOptions::new().with_row_count(Some(indices.len())),
    )?)
}

/// A join state's columns but its count: the rows it indexes.
fn image_schema(plan: &JoinStatePlan) -> SchemaRef {
    let width = plan.columns.len() - 1;
    let fields: Vec<Field> = plan.columns[..width]
        .iter()
        .map(|c| Field::new(&c.name, c.sql_type.to_arrow(), true))
        .collect();
    Arc::new(Schema::new(fields))
}

/// The change entering a node from `input`, as the node's input.
fn input_like(input: &LogicalPlan) -> LogicalPlan {
    LogicalPlan::Input {
        schema: input.schema(),
    }
}
