//! Where a join side of a view holds its rows (ADR 0054): a hidden join state, or, for a side
//! that reads a keyed table on its whole key, the table itself, which serves as its own
//! index. Such a side keeps no state: the delta rule reads the touched keys' rows from the
//! table as the commit found it, and the commit's own change to the table is the side's.

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, new_null_array};
use arrow::compute::cast;
use pondra_catalog::{Snapshot, TableDef, TableKind};
use pondra_planner::{JoinStatePlan, StreamPlan};

use crate::Result;
use crate::node::Node;
use crate::tables::keyed::matching_plan;
use crate::views::view_changes::{conform, lost_track, without_address};

/// Where one side of a join holds its rows.
pub(crate) enum SideStore {
    /// Its hidden join state, with a count per row.
    State(Arc<TableDef>),
    /// The keyed table it reads whole on its key, `key_columns` the table's column of each
    /// join key.
    Table {
        table: Arc<TableDef>,
        key_columns: Vec<usize>,
    },
}

impl SideStore {
    /// The hidden state, for a side that keeps one.
    pub fn state(&self) -> Option<&Arc<TableDef>> {
        match self {
            SideStore::State(table) => Some(table),
            SideStore::Table { .. } => None,
        }
    }
}

/// Where each join side of `view`'s stream holds its rows, in position order. A view created
/// before keyed tables served as their own index keeps the states it has.
pub(crate) fn side_stores(
    snapshot: &Snapshot,
    view: &TableDef,
    stream: &StreamPlan,
) -> Result<Vec<SideStore>> {
    let mut states: Vec<Option<Arc<TableDef>>> = vec![None; stream.join_states.len()];
    for table in snapshot.join_states_of(&view.name) {
        let TableKind::JoinState { position, .. } = &table.kind else {
            unreachable!("join states are of kind JoinState");
        };
        let slot = states.get_mut(*position).ok_or_else(|| lost_track(view))?;
        *slot = Some(table);
    }
    let mut stores = Vec::new();
    for (plan, state) in stream.join_states.iter().zip(states) {
        let store = match (state, &plan.own_index) {
            (Some(state), _) => SideStore::State(state),
            (None, Some(index)) => SideStore::Table {
                table: snapshot
                    .tables
                    .get(&index.table.name)
                    .filter(|t| t.id == index.table.id)
                    .cloned()
                    .ok_or_else(|| lost_track(view))?,
                key_columns: index.key_columns.clone(),
            },
            (None, None) => return Err(lost_track(view)),
        };
        stores.push(store);
    }
    Ok(stores)
}

impl Node {
    /// The rows keyed table `table` holds in `snapshot` for the keys of `touched` (key values
    /// in join-key order), as state rows without their count (`plan`'s image of them). A scan
    /// pruned by the keys' ranges: it may return rows of other keys too.
    pub(crate) async fn own_index_rows(
        &self,
        snapshot: &Arc<Snapshot>,
        plan: &JoinStatePlan,
        (table, key_columns): (&Arc<TableDef>, &[usize]),
        touched: &RecordBatch,
    ) -> Result<Vec<RecordBatch>> {
        let schema = table.arrow_schema();
        // The touched keys in the table's columns, the others NULL: what a lookup reads.
        let mut columns: Vec<ArrayRef> = schema
            .fields()
            .iter()
            .map(|f| new_null_array(f.data_type(), touched.num_rows()))
            .collect();
        for (key, &column) in key_columns.iter().enumerate() {
            columns[column] = cast(touched.column(key), schema.field(column).data_type())?;
        }
        let keys = RecordBatch::try_new(schema.clone(), columns)?;
        let lookup = matching_plan(table, key_columns, &keys, false)?;
        let found = self.run_query(lookup, snapshot.clone(), Vec::new()).await?;
        let rows: Vec<RecordBatch> = found.iter().map(without_address).collect();
        let rows = conform(&schema, &rows)?;
        if rows.num_rows() == 0 {
            return Ok(Vec::new());
        }
        self.run_query(plan.image.clone(), snapshot.clone(), vec![rows])
            .await
    }
}
