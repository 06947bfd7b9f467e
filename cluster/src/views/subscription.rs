//! Live queries (ADR 0054): a subscription to a view or table yields its rows as they stand,
//! then, after each commit that changes them, what changed: rows with `_commit_version` (the
//! commit) and `_diff` (how many copies of the row the commit added, negative for removed),
//! as Materialize's SUBSCRIBE gives `mz_timestamp` and `mz_diff`. A commit is noticed as soon
//! as the node holds it (its own, or one streamed from the leader), and the relation read again
//! only when the commit changed its rows; the change is the difference of the two readings.

use hashbrown::HashMap;
use std::sync::Arc;
use std::time::Duration;

use arrow::array::{Int64Array, RecordBatch, UInt32Array};
use arrow::compute::{concat_batches, take};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::row::{RowConverter, SortField};
use pondra_catalog::{Snapshot, TableKind};
use pondra_planner::{Binder, Plan};

use crate::node::Node;
use crate::{NodeError, Result};

/// The columns a subscription adds before the relation's.
pub const COMMIT_COLUMN: &str = "_commit_version";
pub const DIFF_COLUMN: &str = "_diff";

/// How long a subscription waits for a commit before it looks again (the wait ends at once
/// when one arrives; this only bounds how stale a dropped client's task can be).
const PATIENCE: Duration = Duration::from_secs(1);

/// A live query over one relation.
pub struct Subscription {
    node: Arc<Node>,
    relation: String,
    /// The commit the rows held were read at; none before the first reading.
    read_at: Option<u64>,
    held: RecordBatch,
    schema: SchemaRef,
}

impl Node {
    /// A subscription to the rows of `relation` (a table or a view of any kind).
    pub fn subscribe(self: &Arc<Self>, relation: &str) -> Result<Subscription> {
        let snapshot = self.snapshot();
        let plan = self.relation_plan(&snapshot, relation)?;
        let schema = plan.schema();
        Ok(Subscription {
            node: self.clone(),
            relation: relation.to_string(),
            read_at: None,
            held: RecordBatch::new_empty(schema.clone()),
            schema,
        })
    }

    fn relation_plan(
        &self,
        snapshot: &Snapshot,
        relation: &str,
    ) -> Result<pondra_planner::LogicalPlan> {
        let sql = format!("SELECT * FROM {}", pondra_parser::quoted_name(relation));
        let parsed = pondra_parser::parse_sql(&sql)?;
        let bound = Binder::new(snapshot).bind_statement(&parsed[0])?;
        match bound {
            Plan::Query(plan) => Ok(plan),
            _ => Err(NodeError::Other(format!("cannot subscribe to {relation}"))),
        }
    }
}

impl Subscription {
    /// The schema of what `next` yields: `_commit_version`, `_diff`, then the relation's columns.
    pub fn schema(&self) -> SchemaRef {
        let mut fields = vec![
            Field::new(COMMIT_COLUMN, DataType::Int64, false),
            Field::new(DIFF_COLUMN, DataType::Int64, false),
        ];
        fields.extend(self.schema.fields().iter().map(|f| f.as_ref().clone()));
        Arc::new(Schema::new(fields))
    }

    /// The next change: the first call gives every row (each with its count as `_diff`), later
    /// ones wait for a commit that changes the rows and give what it changed (never empty).
    pub async fn next(&mut self) -> Result<RecordBatch> {
        loop {
            let snapshot = self.node.snapshot();
            let latest = snapshot.commit;
            let changed = match self.read_at {
                None => true,
                Some(at) if latest <= at => {
                    self.node.wait_for_commit_after(at, PATIENCE).await;
                    continue;
                }
                Some(at) => self.changed_since(&snapshot, at)?,
            };
            if !changed {
                self.read_at = Some(latest);
                continue;
            }
            let first = self.read_at.is_none();
            let plan = self.node.relation_plan(&snapshot, &self.relation)?;
            let rows = self
                .node
                .run_query(plan, snapshot.clone(), Vec::new())
                .await?;
            let rows = concat_batches(&self.schema, &rows)?;
            let change = difference(&self.held, &rows, latest, &self.schema())?;
            self.held = rows;
            self.read_at = Some(latest);
            if first || change.num_rows() > 0 {
                return Ok(change);
            }
        }
    }

    /// Whether a commit after `at` changed the rows of the relation or of what it reads.
    fn changed_since(&self, snapshot: &Snapshot, at: u64) -> Result<bool> {
        let name = self
            .relation
            .strip_prefix("public.")
            .unwrap_or(&self.relation);
        let Some(table) = snapshot.table(name) else {
            return Err(NodeError::Other(format!(
                "{} was dropped while subscribed to",
                self.relation
            )));
        };
        Ok(match &table.kind {
            // A plain view may read anything: read it again after every commit.
            TableKind::View { .. } => true,
            _ => snapshot.rows_changed_at(table.id) > at || snapshot.defined_at(&table.name) > at,
        })
    }
}

/// What turns `before` into `after` (both multisets of rows), in `schema`'s form: the commit,
/// the change in each distinct row's count, the row.
fn difference(
    before: &RecordBatch,
    after: &RecordBatch,
    commit: u64,
    schema: &SchemaRef,
) -> Result<RecordBatch> {
    let fields: Vec<SortField> = after
        .schema()
        .fields()
        .iter()
        .map(|f| SortField::new(f.data_type().clone()))
        .collect();
    let both = concat_batches(&after.schema(), [after, before])?;
    let mut counts: HashMap<Vec<u8>, (usize, i64)> = HashMap::new();
    let mut order = Vec::new();
    if !fields.is_empty() {
        let converter = RowConverter::new(fields)?;
        let rows = converter.convert_columns(both.columns())?;
        for (i, row) in rows.iter().enumerate() {
            let weight = if i < after.num_rows() { 1 } else { -1 };
            let entry = counts.entry(row.as_ref().to_vec()).or_insert_with(|| {
                order.push(row.as_ref().to_vec());
                (i, 0)
            });
            entry.1 += weight;
        }
    }
    let mut indices = Vec::new();
    let mut diffs = Vec::new();
    for key in order {
        let (first, diff) = counts[&key];
        if diff != 0 {
            indices.push(first as u32);
            diffs.push(diff);
        }
    }
    let indices = UInt32Array::from(indices);
    let mut columns: Vec<arrow::array::ArrayRef> = vec![
        Arc::new(Int64Array::from(vec![commit as i64; diffs.len()])),
        Arc::new(Int64Array::from(diffs)),
    ];
    for column in both.columns() {
        columns.push(take(column.as_ref(), &indices, None)?);
    }
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}
