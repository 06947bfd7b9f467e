//! Materialized views through commits that remove rows (ADR 0049). The rows a commit removes
//! from a table are retracted from the views over it; a point change never computes a view
//! whole.
//!
//! - A view of rows loses, for each removed row, one stored row equal to the removed row's
//!   image in the view, marked deleted in the view's deletion vectors.
//! - An aggregating view gains the removed rows' partials with counts and sums negated (their
//!   weight is -1). A group whose min (or max) a removed value equalled or beat has its state
//!   computed again from the base table, alone: its stored rows are marked deleted and one
//!   fresh row is appended.

// hashbrown: its default hasher is several times faster than SipHash on row keys.
use hashbrown::{HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch, new_null_array};
use arrow::compute::kernels::cmp::{gt_eq, lt_eq};
use arrow::compute::kernels::numeric::neg;
use arrow::compute::{cast, concat_batches, filter_record_batch};
use arrow::datatypes::{DataType, Int64Type, SchemaRef};
use arrow::row::{RowConverter, SortField};
use pondra_catalog::{Change, Snapshot, TableDef, TableKind};
use pondra_planner::{ScalarValue, StateRole, ViewPlan, load_view};

use crate::node::Node;
use crate::tables::event_time::{closed_at_or_below, closing, open_windows};
use crate::tables::keyed::matching_plan;
pub(crate) use crate::tables::rewrite::address_column;
use crate::tables::rewrite::deletion_changes;
use crate::views::value_counts::CountsDelta;
use crate::views::view_stream::Delta;
use crate::{NodeError, Result};

/// Above this many removed groups a commit computes the view whole: it is no point change,
/// and a predicate per group would cost more than one pass over the table.
const MOST_GROUPS_COMPUTED_AGAIN: usize = 256;

/// What a commit does to one view: state rows appended, and addresses of state rows deleted.
struct ViewDelta {
    appended: RecordBatch,
    deleted: Vec<i64>,
}

impl Node {
    /// The changes that keep the materialized views over `table` current through a commit
    /// that appends `added` rows and removes `removed` ones (both in the table's columns);
    /// `own` are the commit's changes to the table.
    pub(crate) async fn maintain_views(
        &self,
        snapshot: &Arc<Snapshot>,
        table: &Arc<TableDef>,
        added: &[RecordBatch],
        removed: &[RecordBatch],
        own: &[Change],
    ) -> Result<Vec<Change>> {
        let views = snapshot.views_over(&table.name);
        if views.is_empty() {
            return Ok(Vec::new());
        }
        let input = InputChange {
            table: table.clone(),
            added: added.to_vec(),
            removed: removed.to_vec(),
        };
        self.maintain_reached(snapshot, views, input, own).await
    }

    /// The changes that keep `views` (views over `input`'s table) and every view they reach
    /// current through a commit that makes `input`'s change, after `own` changes: each view
    /// once, after the views it reads, with the changes of all its inputs (ADR 0057).
    pub(crate) async fn maintain_reached(
        &self,
        snapshot: &Arc<Snapshot>,
        views: Vec<Arc<TableDef>>,
        input: InputChange,
        own: &[Change],
    ) -> Result<Vec<Change>> {
        let mut pending: HashMap<String, Vec<InputChange>> = HashMap::new();
        for view in &views {
            pending.insert(view.name.clone(), vec![input.clone()]);
        }
        let mut changes = Vec::new();
        for view in in_dependency_order(snapshot, views) {
            let Some(inputs) = pending.remove(&view.name) else {
                continue;
            };
            let plan = load_view(snapshot, &view)?;
            let mut so_far = own.to_vec();
            so_far.extend(changes.iter().cloned());
            let (made, out) = self
                .maintain_view(snapshot, &view, &plan, &inputs, &so_far)
                .await?;
            changes.extend(made);
            let Some(out) = out else {
                continue;
            };
            for dependent in snapshot.views_over(&view.name) {
                pending
                    .entry(dependent.name.clone())
                    .or_default()
                    .push(InputChange {
                        table: view.clone(),
                        added: vec![out.gained.clone()],
                        removed: vec![out.lost.clone()],
                    });
            }
        }
        assert!(
            pending.is_empty(),
            "every view a commit reaches is maintained"
        );
        Ok(changes)
    }

    /// The changes that keep one view current through a commit that makes `inputs`' changes
    /// to the tables and views it reads, and the change of the view's rows when views read
    /// it. A view over joins first derives its stream's change (ADR 0054).
    async fn maintain_view(
        &self,
        snapshot: &Arc<Snapshot>,
        view: &Arc<TableDef>,
        plan: &ViewPlan,
        inputs: &[InputChange],
        own: &[Change],
    ) -> Result<(Vec<Change>, Option<Delta>)> {
        assert!(!inputs.is_empty(), "a view maintained for a change");
        let mut changes = Vec::new();
        let streamed;
        let (added, removed) = match &plan.stream {
            None => {
                assert_eq!(inputs.len(), 1, "a view without a stream reads one input");
                (&inputs[0].added[..], &inputs[0].removed[..])
            }
            Some(stream) => {
                let (delta, state_changes) =
                    self.stream_change(snapshot, view, stream, inputs).await?;
                changes.extend(state_changes);
                streamed = [delta.gained, delta.lost];
                (&streamed[..1], &streamed[1..])
            }
        };
        let mut gained = self.view_image(snapshot, view, plan, added).await?;
        let mut lost = self.view_image(snapshot, view, plan, removed).await?;
        // A view that emits on window close takes no change to a closed window (ADR 0055).
        if let Some((end, watermark)) = closed_at_or_below(snapshot, plan) {
            gained = open_windows(&gained, end, watermark)?;
            lost = open_windows(&lost, end, watermark)?;
        }
        // Views over this view follow the change of its rows (ADR 0054), found from the state
        // rows of the groups the commit touches, read before they change.
        let dependents = snapshot.views_over(&view.name);
        let before = match dependents.is_empty() {
            true => None,
            false => Some(
                self.touched_state(snapshot, view, plan, [&gained, &lost])
                    .await?,
            ),
        };
        let lost_rows = lost.clone();
        // A view whose windows close reads one table (ADR 0055).
        let closing = closing(snapshot, plan, &inputs[0].table, &inputs[0].added)?;
        let counts = self
            .count_values(snapshot, view, plan, (added, removed), closing)
            .await?;
        if let Some(counts) = &counts {
            changes.extend(self.counts_changes(snapshot, counts).await?);
        }
        let (gained, lost) = match (&counts, plan.distincts.is_empty()) {
            (_, true) => (gained, lost),
            (None, false) => return Err(lost_track(view)),
            (Some(counts), false) => {
                let roles = plan.state_roles();
                let groups = roles.iter().filter(|r| **r == StateRole::Group).count();
                let [gained, lost] = crate::views::value_counts::with_distinct_counts(
                    plan,
                    counts,
                    groups,
                    [gained, lost],
                )?;
                (gained, lost)
            }
        };
        let delta = match plan.is_aggregating() {
            false => Some(ViewDelta {
                deleted: self.stored_rows_equal(snapshot, view, &lost).await?,
                appended: gained,
            }),
            true => {
                let images = Images { gained, lost };
                self.retract_partials(snapshot, own, view, plan, images, counts.as_deref())
                    .await?
            }
        };
        let state_change = match delta {
            None if plan.window_close.is_some() => {
                return Err(NodeError::Other(format!(
                    "view {} emits on window close, and this commit's removals would have it computed whole (more than {MOST_GROUPS_COMPUTED_AGAIN} groups to compute again, or a group without a constant form), which would change closed windows: remove the rows in smaller commits",
                    view.name
                )));
            }
            None => {
                let after = self.after(snapshot, own)?;
                let (change, state) = self.recompute_view(&after, view, plan).await?;
                changes.push(change);
                StateChange::Whole(state)
            }
            Some(delta) => {
                changes.extend(deletion_changes(snapshot, view, &delta.deleted));
                if delta.appended.num_rows() > 0 {
                    let appended = std::slice::from_ref(&delta.appended);
                    changes.push(self.append_change(view, appended).await?);
                }
                StateChange::Delta {
                    appended: delta.appended,
                    deleted: delta.deleted,
                    lost: lost_rows,
                }
            }
        };
        let out = match before {
            None => None,
            Some(before) => Some(
                self.output_change(snapshot, view, plan, before, state_change)
                    .await?,
            ),
        };
        Ok((changes, out))
    }

    /// `snapshot` with `own` changes applied: what the commit will leave.
    pub(crate) fn after(&self, snapshot: &Snapshot, own: &[Change]) -> Result<Arc<Snapshot>> {
        let after = self
            .catalog
            .with_changes(snapshot, own.to_vec(), snapshot.commit + 1)?;
        Ok(Arc::new(after))
    }

    /// What `rows` of the base table make in `view`'s state: its rows, or their partials.
    async fn view_image(
        &self,
        snapshot: &Arc<Snapshot>,
        view: &TableDef,
        plan: &ViewPlan,
        rows: &[RecordBatch],
    ) -> Result<RecordBatch> {
        let schema = view.arrow_schema();
        if rows.iter().all(|b| b.num_rows() == 0) {
            return Ok(RecordBatch::new_empty(schema));
        }
        let image = self
            .run_query(plan.maintain.clone(), snapshot.clone(), rows.to_vec())
            .await?;
        conform(&schema, &image)
    }

    /// The change that computes `view` again, whole, from the rows its tables hold in
    /// `after`, and the state it computes.
    async fn recompute_view(
        &self,
        after: &Arc<Snapshot>,
        view: &TableDef,
        plan: &ViewPlan,
    ) -> Result<(Change, Vec<RecordBatch>)> {
        let whole = plan.whole_plan(after)?;
        let state = self.run_query(whole, after.clone(), Vec::new()).await?;
        let change = Change::ReplaceAll {
            table_id: view.id,
            added: self.write_data_file(view, &state).await?,
        };
        Ok((change, state))
    }

    /// The addresses of stored rows of a view of rows equal to `lost`'s, one per row of `lost`
    /// (equal rows are interchangeable).
    async fn stored_rows_equal(
        &self,
        snapshot: &Arc<Snapshot>,
        view: &Arc<TableDef>,
        lost: &RecordBatch,
    ) -> Result<Vec<i64>> {
        if lost.num_rows() == 0 {
            return Ok(Vec::new());
        }
        let keys = RowKeys::new(&view.arrow_schema(), view.columns.len())?;
        let mut wanted: HashMap<Vec<u8>, usize> = HashMap::new();
        for key in keys.of(lost)? {
            *wanted.entry(key).or_default() += 1;
        }
        // The ranges of the view's columns prune the scan.
        let columns: Vec<usize> = (0..view.columns.len()).collect();
        let plan = matching_plan(view, &columns, lost, false)?;
        let mut addresses = Vec::new();
        for batch in self.run_query(plan, snapshot.clone(), Vec::new()).await? {
            let stored = conform(&view.arrow_schema(), &[without_address(&batch)])?;
            let found = address_column(&batch);
            for (i, key) in keys.of(&stored)?.into_iter().enumerate() {
                if let Some(count) = wanted.get_mut(&key).filter(|c| **c > 0) {
                    *count -= 1;
                    addresses.push(found.value(i));
                }
            }
        }
        if wanted.values().any(|&count| count > 0) {
            return Err(lost_track(view));
        }
        Ok(addresses)
    }

    /// For an aggregating view, what the commit appends to and deletes from its state; `None`
    /// when the view is better computed whole. `counts` are the commit's changes to the view's
    /// count tables, when it keeps them.
    async fn retract_partials(
        &self,
        snapshot: &Arc<Snapshot>,
        own: &[Change],
        view: &Arc<TableDef>,
        plan: &ViewPlan,
        images: Images,
        counts: Option<&[CountsDelta]>,
    ) -> Result<Option<ViewDelta>> {
        let Images { gained, lost } = images;
        let roles = plan.state_roles();
        let groups = roles.iter().filter(|r| **r == StateRole::Group).count();
        let keys = RowKeys::new(&view.arrow_schema(), groups)?;
        let has_extremes = roles
            .iter()
            .any(|r| matches!(r, StateRole::Least | StateRole::Greatest));
        let mut delta = ViewDelta {
            appended: RecordBatch::new_empty(view.arrow_schema()),
            deleted: Vec::new(),
        };
        let mut again = HashSet::new();
        if has_extremes && lost.num_rows() > 0 {
            if lost.num_rows() > MOST_GROUPS_COMPUTED_AGAIN {
                return Ok(None);
            }
            let Some(stored_plan) = plan.state_rows_plan(view, &group_values(&lost, groups)) else {
                return Ok(None);
            };
            let stored = self
                .run_query(stored_plan, snapshot.clone(), Vec::new())
                .await?;
            let state: Vec<RecordBatch> = stored.iter().map(without_address).collect();
            let state = conform(&view.arrow_schema(), &state)?;
            let addresses = stored
                .iter()
                .flat_map(|b| address_column(b).values().iter());
            let addresses: Vec<i64> = addresses.copied().collect();
            let compact = plan.compact_plan(view).expect("an aggregating view merges");
            let merged = self
                .run_query(compact, snapshot.clone(), vec![state.clone()])
                .await?;
            let merged = conform(&view.arrow_schema(), &merged)?;
            let redo = extremes_removed(&roles, &keys, &lost, &merged)?;
            if !redo.is_empty() {
                let lost_keys = keys.of(&lost)?;
                again = redo.iter().map(|&i| lost_keys[i].clone()).collect();
                let held = Held {
                    state: &state,
                    merged: &merged,
                };
                let images = Images {
                    gained: gained.clone(),
                    lost: lost.clone(),
                };
                let fresh = match counts {
                    Some(counts) => {
                        let redo = Redo {
                            keys: &keys,
                            again: &again,
                            counts,
                        };
                        self.regroup_from_counts(snapshot, view, plan, &redo, held, &images)
                            .await?
                    }
                    None => {
                        let lost_groups = group_values(&lost, groups);
                        let redo_groups: Vec<Vec<ScalarValue>> =
                            redo.iter().map(|&i| lost_groups[i].clone()).collect();
                        self.regroup_from_base(snapshot, own, view, plan, &redo_groups)
                            .await?
                    }
                };
                let Some(fresh) = fresh else {
                    return Ok(None);
                };
                delta.appended = fresh;
                for (key, address) in keys.of(&state)?.iter().zip(&addresses) {
                    if again.contains(key) {
                        delta.deleted.push(*address);
                    }
                }
            }
        }
        let gained = keys.excluding(&gained, &again)?;
        let lost = negated(&keys.excluding(&lost, &again)?, &roles)?;
        let parts = [gained, lost, delta.appended];
        delta.appended = concat_batches(&view.arrow_schema(), &parts)?;
        Ok(Some(delta))
    }

    /// The state of `groups` computed again from the base table as the commit leaves it (for
    /// a view without count tables); `None` when a group value has no constant form.
    async fn regroup_from_base(
        &self,
        snapshot: &Arc<Snapshot>,
        own: &[Change],
        view: &TableDef,
        plan: &ViewPlan,
        groups: &[Vec<ScalarValue>],
    ) -> Result<Option<RecordBatch>> {
        let after = self.after(snapshot, own)?;
        let Some(regroup) = plan.regroup_plan(&after, groups)? else {
            return Ok(None);
        };
        let fresh = self.run_query(regroup, after.clone(), Vec::new()).await?;
        Ok(Some(conform(&view.arrow_schema(), &fresh)?))
    }

    /// The state of the groups `redo` names as the commit leaves it (ADR 0052): their stored
    /// rows merged with the commit's partials, and each min or max taken from the view's
    /// count tables. `None` when a group value has no constant form.
    async fn regroup_from_counts(
        &self,
        snapshot: &Arc<Snapshot>,
        view: &TableDef,
        plan: &ViewPlan,
        redo: &Redo<'_>,
        held: Held<'_>,
        images: &Images,
    ) -> Result<Option<RecordBatch>> {
        let schema = view.arrow_schema();
        let roles = plan.state_roles();
        let groups = roles.iter().filter(|r| **r == StateRole::Group).count();
        let parts = [
            redo.keys.only(held.state, redo.again)?,
            redo.keys.only(&images.gained, redo.again)?,
            negated(&redo.keys.only(&images.lost, redo.again)?, &roles)?,
        ];
        let compact = plan.compact_plan(view).expect("an aggregating view merges");
        let rows = vec![concat_batches(&schema, &parts)?];
        let fresh = conform(
            &schema,
            &self.run_query(compact, snapshot.clone(), rows).await?,
        )?;
        let merged_at: HashMap<Vec<u8>, usize> = redo
            .keys
            .of(held.merged)?
            .into_iter()
            .enumerate()
            .map(|(i, key)| (key, i))
            .collect();
        let fresh_keys = redo.keys.of(&fresh)?;
        let fresh_groups = group_values(&fresh, groups);
        let mut columns = fresh.columns().to_vec();
        for &(position, c) in &plan.extremes {
            let greatest = roles[position] == StateRole::Greatest;
            let mut values = Vec::new();
            for (key, group) in fresh_keys.iter().zip(&fresh_groups) {
                let before = merged_at
                    .get(key)
                    .map(|&m| held.merged.column(position).slice(m, 1));
                let bound = before.map(|b| integer_value(&b)).transpose()?.flatten();
                let extreme = self
                    .extreme_after(snapshot, &redo.counts[c], group, greatest, bound)
                    .await?;
                let Some(extreme) = extreme else {
                    return Ok(None);
                };
                values.push(cast(&extreme, schema.field(position).data_type())?);
            }
            if !values.is_empty() {
                let values: Vec<&dyn Array> = values.iter().map(|a| a.as_ref()).collect();
                columns[position] = arrow::compute::concat(&values)?;
            }
        }
        Ok(Some(RecordBatch::try_new(schema, columns)?))
    }
}

/// The change a commit makes to one input of a view: the rows it appends to a table and
/// those it removes, in the table's columns, or the change of a view's rows.
#[derive(Clone)]
pub(crate) struct InputChange {
    pub table: Arc<TableDef>,
    pub added: Vec<RecordBatch>,
    pub removed: Vec<RecordBatch>,
}

/// `views` and every view they reach through views over them, each after the views it reads
/// among them.
fn in_dependency_order(snapshot: &Snapshot, views: Vec<Arc<TableDef>>) -> Vec<Arc<TableDef>> {
    let mut reached = views;
    let mut next = 0;
    while next < reached.len() {
        for dependent in snapshot.views_over(&reached[next].name) {
            if !reached.iter().any(|v| v.name == dependent.name) {
                reached.push(dependent);
            }
        }
        next += 1;
    }
    let reads = |view: &TableDef| -> Vec<String> {
        match &view.kind {
            TableKind::MaterializedView {
                base_table,
                also_reads,
                ..
            } => std::iter::once(base_table)
                .chain(also_reads)
                .cloned()
                .collect(),
            _ => Vec::new(),
        }
    };
    let mut ordered: Vec<Arc<TableDef>> = Vec::new();
    while ordered.len() < reached.len() {
        let before = ordered.len();
        for view in &reached {
            let done = |name: &String| ordered.iter().any(|o| &o.name == name);
            let waits = reads(view)
                .iter()
                .any(|name| !done(name) && reached.iter().any(|r| &r.name == name));
            if !done(&view.name) && !waits {
                ordered.push(view.clone());
            }
        }
        assert!(ordered.len() > before, "views read each other in a cycle");
    }
    ordered
}

/// What a commit does to a view's state rows.
pub(crate) enum StateChange {
    /// Appends `appended` and deletes the rows at `deleted`; `lost` are the rows a view of
    /// rows loses (the state rows at `deleted`).
    Delta {
        appended: RecordBatch,
        deleted: Vec<i64>,
        lost: RecordBatch,
    },
    /// Replaces the state with these rows.
    Whole(Vec<RecordBatch>),
}

/// The images in a view's state of the rows a commit appends and of those it removes.
struct Images {
    gained: RecordBatch,
    lost: RecordBatch,
}

/// A view's stored state rows of the groups a commit removed rows from, and those merged.
#[derive(Clone, Copy)]
struct Held<'a> {
    state: &'a RecordBatch,
    merged: &'a RecordBatch,
}

/// The groups a commit computes again, by key, and the commit's changes to the view's count
/// tables.
struct Redo<'a> {
    keys: &'a RowKeys,
    again: &'a HashSet<Vec<u8>>,
    counts: &'a [CountsDelta],
}

/// The value of a one-row integer array as an i64; none for NULL or another type.
fn integer_value(value: &ArrayRef) -> Result<Option<i64>> {
    if !matches!(
        value.data_type(),
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64
    ) || value.is_null(0)
    {
        return Ok(None);
    }
    let value = cast(value, &DataType::Int64)?;
    Ok(Some(value.as_primitive::<Int64Type>().value(0)))
}

/// The rows of `lost` (removed partials, one per group) whose group's min or max they may have
/// held: a removed value at least as small as the group's merged min (or as large as its max),
/// or a group the merged state lacks.
fn extremes_removed(
    roles: &[StateRole],
    keys: &RowKeys,
    lost: &RecordBatch,
    merged: &RecordBatch,
) -> Result<Vec<usize>> {
    let merged_rows: HashMap<Vec<u8>, usize> = keys
        .of(merged)?
        .into_iter()
        .enumerate()
        .map(|(i, key)| (key, i))
        .collect();
    let mut redo = Vec::new();
    for (i, key) in keys.of(lost)?.iter().enumerate() {
        let Some(&m) = merged_rows.get(key) else {
            redo.push(i);
            continue;
        };
        let removes_extreme = |(j, role): (usize, &StateRole)| -> Result<bool> {
            let removed = lost.column(j).slice(i, 1);
            let held = merged.column(j).slice(m, 1);
            let reached = match role {
                StateRole::Least => lt_eq(&removed, &held)?,
                StateRole::Greatest => gt_eq(&removed, &held)?,
                StateRole::Group | StateRole::Additive => return Ok(false),
            };
            Ok(removed.is_valid(0) && (held.is_null(0) || reached.value(0)))
        };
        let mut removes = false;
        for role in roles.iter().enumerate() {
            removes |= removes_extreme(role)?;
        }
        if removes {
            redo.push(i);
        }
    }
    Ok(redo)
}

/// Partials with weight -1: counts and sums negated; mins and maxes NULL, which merging skips.
fn negated(partials: &RecordBatch, roles: &[StateRole]) -> Result<RecordBatch> {
    let columns = partials
        .columns()
        .iter()
        .zip(roles)
        .map(|(column, role)| {
            Ok(match role {
                StateRole::Group => column.clone(),
                StateRole::Additive => neg(column)?,
                StateRole::Least | StateRole::Greatest => {
                    new_null_array(column.data_type(), column.len())
                }
            })
        })
        .collect::<Result<Vec<ArrayRef>>>()?;
    Ok(RecordBatch::try_new(partials.schema(), columns)?)
}

/// The group values of each row of a state batch.
pub(crate) fn group_values(state: &RecordBatch, groups: usize) -> Vec<Vec<ScalarValue>> {
    (0..state.num_rows())
        .map(|i| {
            (0..groups)
                .map(|j| ScalarValue::at(state.column(j).as_ref(), i))
                .collect()
        })
        .collect()
}

/// The keys of a batch's rows, held in one buffer (see [`RowKeys::keyed`]).
pub(crate) struct KeyRows {
    rows: Option<arrow::row::Rows>,
    len: usize,
}

impl KeyRows {
    /// Row `i`'s key; empty when there are no key columns.
    pub(crate) fn get(&self, i: usize) -> &[u8] {
        debug_assert!(i < self.len);
        self.rows.as_ref().map_or(&[], |rows| rows.row(i).data())
    }

    /// Every row's key, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &[u8]> {
        (0..self.len).map(|i| self.get(i))
    }

    /// Every row's key, in order, to index.
    pub(crate) fn slices(&self) -> Vec<&[u8]> {
        self.iter().collect()
    }
}

/// Comparable bytes of the first columns of a batch (NULL equal to NULL).
pub(crate) struct RowKeys {
    /// None when there are no columns to compare: every row has the same, empty key.
    converter: Option<RowConverter>,
    width: usize,
}

impl RowKeys {
    pub(crate) fn new(schema: &SchemaRef, width: usize) -> Result<RowKeys> {
        let fields: Vec<SortField> = schema.fields()[..width]
            .iter()
            .map(|f| SortField::new(f.data_type().clone()))
            .collect();
        let converter = match width {
            0 => None,
            _ => Some(RowConverter::new(fields)?),
        };
        Ok(RowKeys { converter, width })
    }

    /// How many leading columns make the key.
    pub(crate) fn width(&self) -> usize {
        self.width
    }

    /// The keys of `batch` in one buffer; `None` when there are no key columns.
    pub(crate) fn rows(&self, batch: &RecordBatch) -> Result<Option<arrow::row::Rows>> {
        let Some(converter) = &self.converter else {
            return Ok(None);
        };
        Ok(Some(
            converter.convert_columns(&batch.columns()[..self.width])?,
        ))
    }

    /// The keys of `batch` in one buffer, each row's key read as a slice of it: no copy
    /// per row, as the keys of a commit's every row are compared on hot paths.
    pub(crate) fn keyed(&self, batch: &RecordBatch) -> Result<KeyRows> {
        Ok(KeyRows {
            rows: self.rows(batch)?,
            len: batch.num_rows(),
        })
    }

    pub(crate) fn of(&self, batch: &RecordBatch) -> Result<Vec<Vec<u8>>> {
        let Some(converter) = &self.converter else {
            return Ok(vec![Vec::new(); batch.num_rows()]);
        };
        let rows = converter.convert_columns(&batch.columns()[..self.width])?;
        Ok(rows.iter().map(|row| row.as_ref().to_vec()).collect())
    }

    /// The rows of `batch` whose key is in `keys`.
    fn only(&self, batch: &RecordBatch, keys: &HashSet<Vec<u8>>) -> Result<RecordBatch> {
        let keep: BooleanArray = self
            .of(batch)?
            .iter()
            .map(|key| Some(keys.contains(key)))
            .collect();
        Ok(filter_record_batch(batch, &keep)?)
    }

    /// The rows of `batch` whose key is not in `keys`.
    fn excluding(&self, batch: &RecordBatch, keys: &HashSet<Vec<u8>>) -> Result<RecordBatch> {
        if keys.is_empty() {
            return Ok(batch.clone());
        }
        let keep: BooleanArray = self
            .of(batch)?
            .iter()
            .map(|key| Some(!keys.contains(key)))
            .collect();
        Ok(filter_record_batch(batch, &keep)?)
    }
}

/// `batches` as one batch of `schema`, each column cast to its type.
pub(crate) fn conform(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<RecordBatch> {
    let mut conformed = Vec::new();
    for batch in batches {
        assert_eq!(batch.num_columns(), schema.fields().len());
        let columns = batch
            .columns()
            .iter()
            .zip(schema.fields())
            .map(|(c, f)| cast(c, f.data_type()))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        conformed.push(RecordBatch::try_new(schema.clone(), columns)?);
    }
    Ok(concat_batches(schema, &conformed)?)
}

/// A scanned batch without its last column, the row address.
pub(crate) fn without_address(batch: &RecordBatch) -> RecordBatch {
    batch
        .project(&(0..batch.num_columns() - 1).collect::<Vec<_>>())
        .expect("the columns exist")
}

pub(crate) fn lost_track(view: &TableDef) -> NodeError {
    NodeError::Other(format!(
        "materialized view {} does not hold the rows a change removes from its table; \
         drop it and create it again",
        view.name
    ))
}
