//! Tables with constraints. A keyed table (a PRIMARY KEY) holds one row per key, and an INSERT
//! of a key it holds replaces that row. UNIQUE columns may not repeat a non-NULL value.
//!
//! Until keyed tables get their merge tree, a write to a constrained table reads the table
//! whole to check it, and an upsert that replaces rows rewrites the table, as UPDATE does
//! (ADR 0005); a write that only adds rows is still an append.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{Array, BooleanArray, RecordBatch};
use arrow::compute::filter_record_batch;
use arrow::row::{RowConverter, Rows, SortField};
use pondra_catalog::{Snapshot, TableDef};
use pondra_planner::LogicalPlan;

use crate::node::Node;
use crate::{NodeError, Result};

/// Fails if a NOT NULL column of `table` holds a NULL in `batch`.
pub(crate) fn check_not_null(table: &TableDef, batch: &RecordBatch) -> Result<()> {
    for (column, values) in table.columns.iter().zip(batch.columns()) {
        if column.not_null && values.null_count() > 0 {
            return Err(NodeError::Other(format!(
                "column {} of table {} cannot be NULL",
                column.name, table.name
            )));
        }
    }
    Ok(())
}

/// Whether writes to `table` must check it whole.
pub(crate) fn is_constrained(table: &TableDef) -> bool {
    !table.key.is_empty() || !table.unique.is_empty()
}

/// The values of `columns` in each row of `batch`, comparable as bytes, and whether each row
/// has a NULL among them.
fn values_of(
    table: &TableDef,
    columns: &[String],
    batch: &RecordBatch,
) -> Result<(Rows, Vec<bool>)> {
    let arrays: Vec<_> = columns
        .iter()
        .map(|name| {
            let index = table
                .columns
                .iter()
                .position(|c| &c.name == name)
                .expect("constraint columns are columns of the table");
            batch.column(index).clone()
        })
        .collect();
    let fields = arrays
        .iter()
        .map(|a| SortField::new(a.data_type().clone()))
        .collect();
    let rows = RowConverter::new(fields)?.convert_columns(&arrays)?;
    let has_null = (0..batch.num_rows())
        .map(|i| arrays.iter().any(|a| a.is_null(i)))
        .collect();
    Ok((rows, has_null))
}

/// Fails if two rows of `batches` agree on the key, or on the columns of a UNIQUE constraint
/// with no NULL among them.
pub(crate) fn check_unique(table: &TableDef, batches: &[RecordBatch]) -> Result<()> {
    let key = (!table.key.is_empty()).then_some(&table.key);
    for columns in key.into_iter().chain(&table.unique) {
        let mut seen = HashSet::new();
        let rows: Vec<(Rows, Vec<bool>)> = batches
            .iter()
            .map(|b| values_of(table, columns, b))
            .collect::<Result<_>>()?;
        for (values, has_null) in &rows {
            for (i, null) in has_null.iter().enumerate() {
                if !null && !seen.insert(values.row(i)) {
                    return Err(NodeError::Other(format!(
                        "two rows of {} would have the same {} ({})",
                        table.name,
                        if Some(columns) == key {
                            "key"
                        } else {
                            "UNIQUE value"
                        },
                        columns.join(", ")
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Keeps the last row of each key in `batch`.
fn last_per_key(table: &TableDef, batch: &RecordBatch) -> Result<RecordBatch> {
    let (rows, _) = values_of(table, &table.key, batch)?;
    let mut seen = HashSet::new();
    let mut keep = vec![false; batch.num_rows()];
    for i in (0..batch.num_rows()).rev() {
        keep[i] = seen.insert(rows.row(i));
    }
    Ok(filter_record_batch(batch, &BooleanArray::from(keep))?)
}

impl Node {
    /// Every row of a stored table as `snapshot` holds it, in its schema.
    async fn read_table(
        &self,
        snapshot: &Arc<Snapshot>,
        table: &Arc<TableDef>,
    ) -> Result<Vec<RecordBatch>> {
        let scan = LogicalPlan::Scan {
            table: table.clone(),
            schema: table.arrow_schema(),
        };
        self.run_query(scan, snapshot.clone(), Vec::new())
            .await?
            .into_iter()
            .map(|b| {
                Ok(RecordBatch::try_new(
                    table.arrow_schema(),
                    b.columns().to_vec(),
                )?)
            })
            .collect()
    }

    /// Checks `batch` against the constraints of `table` and what it holds in `snapshot`.
    /// Returns the rows to append, and, when an upsert replaced rows, every row the table then
    /// holds (it must then be rewritten).
    pub(crate) async fn constrained_rows(
        &self,
        snapshot: &Arc<Snapshot>,
        table: &Arc<TableDef>,
        batch: RecordBatch,
    ) -> Result<(RecordBatch, Option<Vec<RecordBatch>>)> {
        let existing = self.read_table(snapshot, table).await?;
        if table.key.is_empty() {
            let mut all = existing;
            all.push(batch.clone());
            check_unique(table, &all)?;
            return Ok((batch, None));
        }
        let batch = last_per_key(table, &batch)?;
        let (new_keys, _) = values_of(table, &table.key, &batch)?;
        let new_keys: HashSet<_> = (0..batch.num_rows()).map(|i| new_keys.row(i)).collect();
        let mut all = Vec::new();
        let mut replaced = false;
        for rows in existing {
            let (keys, _) = values_of(table, &table.key, &rows)?;
            let keep: BooleanArray = (0..rows.num_rows())
                .map(|i| Some(!new_keys.contains(&keys.row(i))))
                .collect();
            replaced |= keep.false_count() > 0;
            all.push(filter_record_batch(&rows, &keep)?);
        }
        all.push(batch.clone());
        check_unique(table, &all)?;
        Ok((batch, replaced.then_some(all)))
    }
}
