//! The count tables of a view's mins and maxes (ADR 0052) and count(DISTINCT)s (ADR 0054):
//! every commit that feeds the view folds its rows' values into them (merge-on-write); a group
//! that lost its least or greatest value takes the new one from them instead of from the base
//! table, and a count(DISTINCT) changes by the values that appear or disappear.

// hashbrown: its default hasher is several times faster than SipHash on row keys.
use hashbrown::{HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Int64Array, RecordBatch, UInt32Array};
use arrow::compute::kernels::numeric::neg;
use arrow::compute::{SortOptions, cast, concat, filter_record_batch, sort_to_indices, take};
use arrow::datatypes::{DataType, Int64Type};
use pondra_catalog::{Change, Snapshot, TableDef, TableKind, value_counts_name};
use pondra_planner::{ScalarValue, ValueCountsPlan, ViewPlan};

use crate::Result;
use crate::node::Node;
use crate::tables::event_time::{closed_at_or_below, open_windows};
use crate::tables::keyed::matching_plan;
use crate::tables::rewrite::deletion_changes;
use crate::tables::state_expiry::Expiring;
use crate::views::view_changes::{RowKeys, address_column, conform, lost_track, without_address};

/// The widths of the value windows a search for a group's new extreme reads before it reads
/// the whole group: most extremes lie close to the one that went.
const WINDOWS: [i64; 2] = [1 << 12, 1 << 20];

/// What a commit does to one count table of a view.
pub(crate) struct CountsDelta {
    pub table: Arc<TableDef>,
    plan: ValueCountsPlan,
    /// Addresses of the stored counts the commit replaces (or removes, at zero).
    deleted: HashSet<i64>,
    /// The new count of each (group, value) the commit changes, where it stays above zero.
    appended: RecordBatch,
    /// Per group (its key bytes), how many values the commit made appear less how many it
    /// made disappear: the change of the group's count(DISTINCT).
    transitions: HashMap<Vec<u8>, i64>,
}

impl Node {
    /// The rows of each count table of materialized view `view`, in position order: for
    /// inspecting the ordered state, which no query can name.
    pub async fn view_value_counts(&self, view: &str) -> Result<Vec<Vec<RecordBatch>>> {
        let snapshot = self.snapshot();
        let mut tables = Vec::new();
        for table in snapshot.value_counts_of(view) {
            tables.push(self.read_table(&snapshot, &table).await?);
        }
        Ok(tables)
    }

    /// The count tables of a view created from the rows its base table holds (`existing`).
    pub(crate) async fn create_value_counts(
        &self,
        snapshot: &Arc<Snapshot>,
        view_name: &str,
        view: &ViewPlan,
        existing: &[RecordBatch],
    ) -> Result<Vec<Change>> {
        let mut creates = Vec::new();
        for (position, counts) in view.value_counts.iter().enumerate() {
            let kind = TableKind::ValueCounts {
                view: view_name.to_string(),
                position,
            };
            let name = value_counts_name(view_name, position);
            if snapshot.tables.contains_key(&name) {
                return Err(pondra_catalog::CatalogError::TableExists(name).into());
            }
            let def = TableDef {
                key: counts.key(),
                ..TableDef::new(name, counts.columns.clone(), kind)
            };
            let mut rows = self
                .run_query(counts.maintain.clone(), snapshot.clone(), existing.to_vec())
                .await?;
            // Windows already final keep no counts (ADR 0056).
            if let Some((end, closed)) = closed_at_or_below(snapshot, view) {
                let end = counts.first_group() + end;
                rows = rows
                    .iter()
                    .map(|b| open_windows(b, end, closed))
                    .collect::<Result<_>>()?;
            }
            let row_count: usize = rows.iter().map(|b| b.num_rows()).sum();
            let initial = match row_count {
                0 => None,
                _ => Some(self.segment(&def, &rows).await?),
            };
            creates.push(Change::CreateTable { def, initial });
        }
        Ok(creates)
    }

    /// What a commit that appends `added` base rows and removes `removed` ones does to the
    /// count tables of `view`; `None` when the view keeps none (no min or max, or created
    /// before they were kept). The counts of windows the commit `closing` makes final are
    /// dropped (ADR 0056).
    pub(crate) async fn count_values(
        &self,
        snapshot: &Arc<Snapshot>,
        view: &TableDef,
        plan: &ViewPlan,
        (added, removed): (&[RecordBatch], &[RecordBatch]),
        closing: Option<Expiring>,
    ) -> Result<Option<Vec<CountsDelta>>> {
        let tables = snapshot.value_counts_of(&view.name);
        if plan.value_counts.is_empty() || tables.len() != plan.value_counts.len() {
            return Ok(None);
        }
        // Count tables of an earlier layout (without `group_hash`) are left as they are: the
        // view's groups are then computed again from its tables.
        let layouts = tables.iter().zip(&plan.value_counts);
        if layouts
            .clone()
            .any(|(t, p)| t.columns.len() != p.columns.len())
        {
            return Ok(None);
        }
        let mut deltas = Vec::new();
        for (table, counts) in tables.into_iter().zip(&plan.value_counts) {
            let schema = table.arrow_schema();
            let image = |rows: &[RecordBatch]| {
                let plan = counts.maintain.clone();
                let rows = rows.to_vec();
                async move {
                    match rows.iter().all(|b| b.num_rows() == 0) {
                        true => Ok(Vec::new()),
                        false => self.run_query(plan, snapshot.clone(), rows).await,
                    }
                }
            };
            let gained = conform(&schema, &image(added).await?)?;
            let mut lost = conform(&schema, &image(removed).await?)?;
            let count = lost.num_columns() - 1;
            let mut columns = lost.columns().to_vec();
            columns[count] = neg(&columns[count])?;
            lost = RecordBatch::try_new(schema.clone(), columns)?;
            let mut changed = summed_per_key(&conform(&schema, &[gained, lost])?)?;
            // The counts of closed windows stay as they are (ADR 0055).
            if let Some((end, watermark)) = closed_at_or_below(snapshot, plan) {
                changed = open_windows(&changed, counts.first_group() + end, watermark)?;
            }
            let mut folded = self.fold_counts(snapshot, view, &table, changed).await?;
            let first = counts.first_group();
            if let Some(closing) = closing {
                let closing = Expiring {
                    column: first + closing.column,
                    ..closing
                };
                let open = open_windows(&folded.appended, closing.column, closing.to - 1)?;
                folded.appended = open;
                let expired = self.expired_addresses(snapshot, &table, closing).await?;
                folded.deleted.extend(expired);
            }
            let group_columns: Vec<usize> = (first..first + counts.group_count()).collect();
            let changed_groups = folded.changed.project(&group_columns)?;
            let groups = RowKeys::new(&changed_groups.schema(), counts.group_count())?;
            let keys = groups.of(&changed_groups)?;
            let mut transitions: HashMap<Vec<u8>, i64> = HashMap::new();
            for (key, (before, after)) in keys.into_iter().zip(folded.counts) {
                let appeared = i64::from(after > 0) - i64::from(before > 0);
                *transitions.entry(key).or_default() += appeared;
            }
            deltas.push(CountsDelta {
                table,
                plan: counts.clone(),
                deleted: folded.deleted,
                appended: folded.appended,
                transitions,
            });
        }
        Ok(Some(deltas))
    }

    /// Folds `changed` counts (one row per key) into those `table` holds.
    async fn fold_counts(
        &self,
        snapshot: &Arc<Snapshot>,
        view: &TableDef,
        table: &Arc<TableDef>,
        changed: RecordBatch,
    ) -> Result<Folded> {
        let schema = table.arrow_schema();
        let count = schema.fields().len() - 1;
        let keys = RowKeys::new(&schema, count)?;
        if changed.num_rows() == 0 {
            return Ok(Folded {
                deleted: HashSet::new(),
                appended: changed.clone(),
                changed,
                counts: Vec::new(),
            });
        }
        let wanted: HashMap<Vec<u8>, usize> = keys
            .of(&changed)?
            .into_iter()
            .enumerate()
            .map(|(i, key)| (key, i))
            .collect();
        let indices: Vec<usize> = (0..count).collect();
        let lookup = matching_plan(table, &indices, &changed, false)?;
        let mut counts: Vec<i64> = changed
            .column(count)
            .as_primitive::<Int64Type>()
            .values()
            .to_vec();
        let mut deleted = HashSet::new();
        for batch in self.run_query(lookup, snapshot.clone(), Vec::new()).await? {
            let stored = conform(&schema, &[without_address(&batch)])?;
            let held = stored.column(count).as_primitive::<Int64Type>();
            let addresses = address_column(&batch);
            for (r, key) in keys.of(&stored)?.iter().enumerate() {
                if let Some(&i) = wanted.get(key) {
                    counts[i] += held.value(r);
                    deleted.insert(addresses.value(r));
                }
            }
        }
        if counts.iter().any(|&n| n < 0) {
            return Err(lost_track(view));
        }
        let change = changed.column(count).as_primitive::<Int64Type>();
        let before_after = counts
            .iter()
            .zip(change.values())
            .map(|(&after, &change)| (after - change, after))
            .collect();
        let keep: BooleanArray = counts.iter().map(|&n| Some(n > 0)).collect();
        let mut columns = changed.columns().to_vec();
        columns[count] = Arc::new(Int64Array::from(counts));
        let folded = RecordBatch::try_new(schema, columns)?;
        Ok(Folded {
            deleted,
            appended: filter_record_batch(&folded, &keep)?,
            changed,
            counts: before_after,
        })
    }

    /// The changes the commit makes to the count tables.
    pub(crate) async fn counts_changes(
        &self,
        snapshot: &Snapshot,
        deltas: &[CountsDelta],
    ) -> Result<Vec<Change>> {
        let mut changes = Vec::new();
        for delta in deltas {
            let deleted: Vec<i64> = delta.deleted.iter().copied().collect();
            changes.extend(deletion_changes(snapshot, &delta.table, &deleted));
            if delta.appended.num_rows() > 0 {
                changes.push(
                    self.append_change(&delta.table, std::slice::from_ref(&delta.appended))
                        .await?,
                );
            }
        }
        Ok(changes)
    }

    /// The least (or, with `greatest`, the greatest) value group `group` holds in the count
    /// table of `delta` once the commit is applied: an array of one value, NULL when it holds
    /// none. `bound`, when known, is a value no stored value of the group lies beyond (below
    /// it for the least): the search reads windows of values from there before the whole
    /// group.
    pub(crate) async fn extreme_after(
        &self,
        snapshot: &Arc<Snapshot>,
        delta: &CountsDelta,
        group: &[ScalarValue],
        greatest: bool,
        bound: Option<i64>,
    ) -> Result<Option<ArrayRef>> {
        let appended = rows_of_group(delta, group)?;
        let value = delta.plan.value_index();
        let hash = group_hash(delta, group)?;
        let windows = match (bound, delta.plan.has_integer_values()) {
            (Some(bound), true) => WINDOWS
                .iter()
                .map(|&w| Some(window(bound, w, greatest)))
                .collect(),
            _ => Vec::new(),
        };
        for window in windows.into_iter().chain([None]) {
            let Some(plan) = delta
                .plan
                .rows_plan(&delta.table, &[(group.to_vec(), hash)], window)
            else {
                return Ok(None);
            };
            let mut candidates = vec![appended.column(value).clone()];
            for batch in self.run_query(plan, snapshot.clone(), Vec::new()).await? {
                let live: BooleanArray = address_column(&batch)
                    .values()
                    .iter()
                    .map(|a| Some(!delta.deleted.contains(a)))
                    .collect();
                let stored = filter_record_batch(&without_address(&batch), &live)?;
                candidates.push(cast(
                    stored.column(value),
                    appended.column(value).data_type(),
                )?);
            }
            let candidates: Vec<&dyn Array> = candidates.iter().map(|a| a.as_ref()).collect();
            let found = extreme_of(&concat(&candidates)?, greatest)?;
            let Some((least, most)) = window else {
                return Ok(Some(found));
            };
            // A value found within the window is the extreme: stored values beyond the
            // window's far end are further from the bound than it.
            let reached = cast(&found, &DataType::Int64)?;
            let reached = reached.as_primitive::<Int64Type>();
            if reached.is_valid(0) && (least..=most).contains(&reached.value(0)) {
                return Ok(Some(found));
            }
        }
        unreachable!("the last search reads the whole group")
    }
}

/// Changed counts folded into the stored ones.
struct Folded {
    /// Addresses of the stored counts replaced.
    deleted: HashSet<i64>,
    /// The new counts above zero.
    appended: RecordBatch,
    /// The changes folded, one row per key.
    changed: RecordBatch,
    /// Per row of `changed`, its count before the commit and after.
    counts: Vec<(i64, i64)>,
}

/// Gives each group's count(DISTINCT) partials of a commit (ADR 0054): in the first state row
/// of the group among the rows it gains (else among those it loses, where the value is
/// negated with the rest), the change in the group's number of values; zero elsewhere.
pub(crate) fn with_distinct_counts(
    plan: &ViewPlan,
    counts: &[CountsDelta],
    groups: usize,
    images: [RecordBatch; 2],
) -> Result<[RecordBatch; 2]> {
    let keys = RowKeys::new(&images[0].schema(), groups)?;
    let of = [keys.of(&images[0])?, keys.of(&images[1])?];
    let [mut gained, mut lost] = images;
    for &(position, c) in &plan.distincts {
        let transitions = &counts[c].transitions;
        let mut given = HashSet::new();
        let mut values: [Vec<i64>; 2] = [Vec::new(), Vec::new()];
        for (side, sign) in [(0, 1), (1, -1)] {
            for key in &of[side] {
                let change = match transitions.get(key) {
                    Some(&t) if given.insert(key.clone()) => sign * t,
                    _ => 0,
                };
                values[side].push(change);
            }
        }
        let [for_gained, for_lost] = values;
        gained = with_column(&gained, position, for_gained)?;
        lost = with_column(&lost, position, for_lost)?;
    }
    Ok([gained, lost])
}

/// `batch` with its column at `position` replaced by `values`, cast to its type.
fn with_column(batch: &RecordBatch, position: usize, values: Vec<i64>) -> Result<RecordBatch> {
    let mut columns = batch.columns().to_vec();
    let values: ArrayRef = Arc::new(Int64Array::from(values));
    columns[position] = cast(&values, batch.schema().field(position).data_type())?;
    Ok(RecordBatch::try_new(batch.schema(), columns)?)
}

/// The rows of `batch` folded per key (all columns but the last), the last summed; rows
/// whose sum is zero left out.
fn summed_per_key(batch: &RecordBatch) -> Result<RecordBatch> {
    let count = batch.num_columns() - 1;
    let keys = RowKeys::new(&batch.schema(), count)?;
    let values = batch.column(count).as_primitive::<Int64Type>();
    let mut first: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut order: Vec<u32> = Vec::new();
    let mut sums: Vec<i64> = Vec::new();
    for (i, key) in keys.of(batch)?.into_iter().enumerate() {
        let slot = *first.entry(key).or_insert_with(|| {
            order.push(i as u32);
            sums.push(0);
            sums.len() - 1
        });
        sums[slot] += values.value(i);
    }
    let indices = UInt32Array::from(order);
    let mut columns = batch
        .columns()
        .iter()
        .map(|c| take(c, &indices, None))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    columns[count] = Arc::new(Int64Array::from(sums.clone()));
    let summed = RecordBatch::try_new(batch.schema(), columns)?;
    let keep: BooleanArray = sums.iter().map(|&n| Some(n != 0)).collect();
    Ok(filter_record_batch(&summed, &keep)?)
}

/// The hash of `group`'s values as the count table of `delta` stores it (0 when it stores
/// none).
fn group_hash(delta: &CountsDelta, group: &[ScalarValue]) -> Result<i64> {
    if !delta.plan.is_hashed() {
        return Ok(0);
    }
    let schema = delta.table.arrow_schema();
    let first = delta.plan.first_group();
    let columns = group
        .iter()
        .enumerate()
        .map(|(j, value)| {
            Ok(cast(
                &value.to_array(1),
                schema.field(first + j).data_type(),
            )?)
        })
        .collect::<Result<Vec<ArrayRef>>>()?;
    Ok(pondra_exec::key_hashes(&columns)?.value(0))
}

/// The commit's new counts of one group.
fn rows_of_group(delta: &CountsDelta, group: &[ScalarValue]) -> Result<RecordBatch> {
    let appended = &delta.appended;
    let first = delta.plan.first_group();
    let mut keep = vec![true; appended.num_rows()];
    for (j, value) in group.iter().enumerate() {
        let column = appended.column(first + j);
        for (i, kept) in keep.iter_mut().enumerate() {
            *kept = *kept && ScalarValue::at(column.as_ref(), i) == *value;
        }
    }
    Ok(filter_record_batch(appended, &BooleanArray::from(keep))?)
}

/// The window of values `width` wide from `bound`, towards the other extreme.
fn window(bound: i64, width: i64, greatest: bool) -> (i64, i64) {
    match greatest {
        false => (bound, bound.saturating_add(width)),
        true => (bound.saturating_sub(width), bound),
    }
}

/// The least (or greatest) of `values` (none NULL), as an array of one; NULL when empty.
fn extreme_of(values: &ArrayRef, greatest: bool) -> Result<ArrayRef> {
    if values.is_empty() {
        return Ok(arrow::array::new_null_array(values.data_type(), 1));
    }
    let options = SortOptions {
        descending: greatest,
        nulls_first: false,
    };
    let first = sort_to_indices(values, Some(options), Some(1))?;
    Ok(take(values, &first, None)?)
}
