//! The change of a view's rows, for the views that read it (ADR 0054). A view of rows changes
//! by the rows it stores and deletes. An aggregating view changes by whole groups: the rows a
//! read answers over the state rows of the groups a commit touched, after the commit less
//! before it.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{BooleanArray, RecordBatch};
use arrow::compute::{concat_batches, filter_record_batch};
use pondra_catalog::{Snapshot, TableDef};
use pondra_planner::{LogicalPlan, StateRole, ViewPlan};

use crate::Result;
use crate::node::Node;
use crate::view_changes::{StateChange, address_column, conform, group_values, without_address};
use crate::view_stream::{Delta, consolidated};

/// Above this many touched groups, the state is read whole rather than group by group.
const MOST_GROUPS_READ: usize = 256;

/// A view's state rows of the groups a commit touches, as they stand before it, with their
/// addresses: none for a view of rows, whose change is its rows.
pub(crate) struct Before {
    rows: RecordBatch,
    addresses: Vec<i64>,
}

impl Node {
    /// The state rows of the groups `images` (state rows of the commit's gained and lost
    /// rows) belong to, before the commit.
    pub(crate) async fn touched_state(
        &self,
        snapshot: &Arc<Snapshot>,
        view: &Arc<TableDef>,
        plan: &ViewPlan,
        images: [&RecordBatch; 2],
    ) -> Result<Before> {
        let schema = view.arrow_schema();
        if !plan.is_aggregating() {
            return Ok(Before {
                rows: RecordBatch::new_empty(schema),
                addresses: Vec::new(),
            });
        }
        let groups = plan
            .state_roles()
            .iter()
            .filter(|r| **r == StateRole::Group)
            .count();
        let mut touched = Vec::new();
        for image in images {
            for group in group_values(image, groups) {
                if !touched.contains(&group) {
                    touched.push(group);
                }
            }
        }
        let read = match touched.len() {
            0 => None,
            n if n > MOST_GROUPS_READ => None,
            _ => plan.state_rows_plan(view, &touched),
        };
        let read = read.unwrap_or_else(|| LogicalPlan::Scan {
            table: view.clone(),
            schema: view.scan_schema(false, true),
        });
        let stored = self.run_query(read, snapshot.clone(), Vec::new()).await?;
        let rows: Vec<RecordBatch> = stored.iter().map(without_address).collect();
        let addresses = stored
            .iter()
            .flat_map(|b| address_column(b).values().iter().copied())
            .collect();
        Ok(Before {
            rows: conform(&schema, &rows)?,
            addresses,
        })
    }

    /// The change of `view`'s rows through a commit that makes `change` to its state, whose
    /// touched groups held `before`.
    pub(crate) async fn output_change(
        &self,
        snapshot: &Arc<Snapshot>,
        view: &Arc<TableDef>,
        plan: &ViewPlan,
        before: Before,
        change: StateChange,
    ) -> Result<Delta> {
        let schema = view.arrow_schema();
        let (old, new) = match change {
            StateChange::Delta {
                appended,
                lost,
                deleted: _,
            } if !plan.is_aggregating() => (lost, appended),
            StateChange::Delta {
                appended, deleted, ..
            } => {
                let deleted: HashSet<i64> = deleted.into_iter().collect();
                let kept: BooleanArray = before
                    .addresses
                    .iter()
                    .map(|a| Some(!deleted.contains(a)))
                    .collect();
                let kept = filter_record_batch(&before.rows, &kept)?;
                (before.rows, concat_batches(&schema, &[kept, appended])?)
            }
            StateChange::Whole(state) => {
                let old = self.read_table(snapshot, view).await?;
                (conform(&schema, &old)?, conform(&schema, &state)?)
            }
        };
        let read = plan.read_over_input(view);
        let out_schema = read.schema();
        let mut answered = Vec::new();
        for state in [new, old] {
            let out = self
                .run_query(read.clone(), snapshot.clone(), vec![state])
                .await?;
            answered.push(conform(&out_schema, &out)?);
        }
        let weights: Vec<i64> = std::iter::repeat_n(1, answered[0].num_rows())
            .chain(std::iter::repeat_n(-1, answered[1].num_rows()))
            .collect();
        let both = concat_batches(&out_schema, &answered)?;
        consolidated(&both, &weights)
    }
}
