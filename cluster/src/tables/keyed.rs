//! Tables with constraints. A keyed table (a PRIMARY KEY) holds one row per key, and an INSERT
//! of a key it holds replaces that row. UNIQUE columns may not repeat a non-NULL value.
//!
//! A write to a constrained table looks up the rows holding its keys and UNIQUE values: an
//! upsert marks the rows it replaces deleted and appends their new versions (ADR 0048). The
//! lookup reads only the row groups and pages whose range of the first column may hold them.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch};
use arrow::compute::{cast, concat_batches, filter_record_batch};
use arrow::datatypes::{DataType, Int64Type, TimeUnit};
use arrow::row::{RowConverter, Rows, SortField};
use pondra_catalog::{Snapshot, TableDef};
use pondra_planner::{BinaryOp, Expr, LogicalPlan, ScalarValue};

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

/// `batch` as `table` keeps it: the text of its JSON columns checked to be JSON, that of its
/// UUID columns brought to the canonical form, its vectors checked for their length (ADR
/// 0082); an error names the column.
pub(crate) fn checked_text(table: &TableDef, batch: RecordBatch) -> Result<RecordBatch> {
    use pondra_catalog::SqlType;
    if !table.columns.iter().any(|c| {
        matches!(
            c.sql_type,
            SqlType::Json | SqlType::Uuid | SqlType::Vector(_)
        )
    }) {
        return Ok(batch);
    }
    let mut columns = batch.columns().to_vec();
    for (column, values) in table.columns.iter().zip(columns.iter_mut()) {
        let checked = match column.sql_type {
            SqlType::Json => pondra_exec::json_check(values),
            SqlType::Uuid => pondra_exec::uuid_text(values),
            SqlType::Vector(dimensions) => pondra_exec::vector_check(values, dimensions),
            _ => continue,
        };
        *values = checked.map_err(|e| {
            NodeError::Other(format!(
                "column {} of table {}: {e}",
                column.name, table.name
            ))
        })?;
    }
    // A vector checked may come back as the column's type from a list of other numbers.
    let schema = batch.schema();
    let fields: Vec<arrow::datatypes::Field> = schema
        .fields()
        .iter()
        .zip(&columns)
        .map(|(field, values)| {
            field
                .as_ref()
                .clone()
                .with_data_type(values.data_type().clone())
        })
        .collect();
    let schema = arrow::datatypes::Schema::new_with_metadata(fields, schema.metadata().clone());
    Ok(RecordBatch::try_new(std::sync::Arc::new(schema), columns)?)
}

/// Whether writes to `table` must check it whole.
pub(crate) fn is_constrained(table: &TableDef) -> bool {
    !table.key.is_empty() || !table.unique.is_empty()
}

/// The values of `columns` in each row of `batch`, comparable as bytes, and whether each row
/// has a NULL among them.
pub(crate) fn values_of(
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
pub(crate) fn last_per_key(table: &TableDef, batch: &RecordBatch) -> Result<RecordBatch> {
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
    pub(crate) async fn read_table(
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

    /// Fails unless `appended` may join the rows `table` holds in `after` (which no longer
    /// holds the rows the statement replaces): no key or UNIQUE value twice.
    pub(crate) async fn check_constraints(
        &self,
        after: &Arc<Snapshot>,
        table: &Arc<TableDef>,
        appended: &[RecordBatch],
    ) -> Result<()> {
        check_unique(table, appended)?;
        let batch = concat_batches(&table.arrow_schema(), appended)?;
        let key = (!table.key.is_empty()).then_some(&table.key);
        for columns in key.into_iter().chain(&table.unique) {
            if !self
                .rows_matching(after, table, columns, &batch)
                .await?
                .addresses
                .is_empty()
            {
                return Err(duplicate(table, columns));
            }
        }
        Ok(())
    }

    /// Checks `batch` against the constraints of `table` and what it holds in `snapshot`.
    /// Returns the rows to append (the last of each key) and the rows they replace: an INSERT
    /// into a keyed table replaces the rows of its keys (an upsert). With `fold`, the rows of a
    /// merge table's key are folded together and with the row it holds instead (ADR 0050).
    pub(crate) async fn constrained_rows(
        &self,
        snapshot: &Arc<Snapshot>,
        table: &Arc<TableDef>,
        batch: RecordBatch,
        fold: bool,
    ) -> Result<(RecordBatch, Matched)> {
        let (batch, replaced) = match table.key.is_empty() {
            true => (batch, Matched::default()),
            false => {
                let last = last_per_key(table, &batch)?;
                let batch = match fold && last.num_rows() < batch.num_rows() {
                    true => self.folded_per_key(snapshot, table, &batch, last).await?,
                    false => last,
                };
                let replaced = self
                    .rows_matching(snapshot, table, &table.key, &batch)
                    .await?;
                let batch = match fold {
                    true => crate::tables::merge_table::folded_with_held(table, &batch, &replaced)?,
                    false => batch,
                };
                (batch, replaced)
            }
        };
        let changes =
            crate::tables::rewrite::deletion_changes(snapshot, table, &replaced.addresses);
        let after = self
            .catalog
            .with_changes(snapshot, changes, snapshot.commit + 1)?;
        let after = Arc::new(after);
        check_unique(table, std::slice::from_ref(&batch))?;
        for columns in &table.unique {
            if !self
                .rows_matching(&after, table, columns, &batch)
                .await?
                .addresses
                .is_empty()
            {
                return Err(duplicate(table, columns));
            }
        }
        Ok((batch, replaced))
    }

    /// The rows of `table` in `snapshot` whose `columns` equal those of a row of `batch` (a row
    /// with a NULL among them equals none). The scan reads only rows whose
    /// first column lies between the least and greatest of `batch`'s, so that a write of a few
    /// keys reads only the row groups and pages that may hold them.
    async fn rows_matching(
        &self,
        snapshot: &Arc<Snapshot>,
        table: &Arc<TableDef>,
        columns: &[String],
        batch: &RecordBatch,
    ) -> Result<Matched> {
        let (wanted, has_null) = values_of(table, columns, batch)?;
        let wanted: HashSet<_> = (0..batch.num_rows())
            .filter(|&i| !has_null[i])
            .map(|i| wanted.row(i))
            .collect();
        let mut matched = Matched::default();
        if wanted.is_empty() {
            return Ok(matched);
        }
        let indices = column_indices(table, columns);
        let plan = matching_plan(table, &indices, batch, true)?;
        let width = table.columns.len();
        for result in self.run_query(plan, snapshot.clone(), Vec::new()).await? {
            let arrays = indices
                .iter()
                .map(|&i| cast(result.column(i), &table.columns[i].sql_type.to_arrow()))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            let fields = arrays
                .iter()
                .map(|a| SortField::new(a.data_type().clone()))
                .collect();
            let values = RowConverter::new(fields)?.convert_columns(&arrays)?;
            let found: BooleanArray = (0..result.num_rows())
                .map(|i| Some(wanted.contains(&values.row(i))))
                .collect();
            let result = filter_record_batch(&result, &found)?;
            let addresses = result.column(width + 2).as_primitive::<Int64Type>();
            matched.addresses.extend(addresses.values().iter().copied());
            matched.rows.push(result.columns()[..width + 2].to_vec());
        }
        Ok(matched)
    }
}

impl Matched {
    /// Whether each row of `batch` has the key of one of these rows (of a keyed table).
    pub fn replaced_by(&self, table: &TableDef, batch: &RecordBatch) -> Result<BooleanArray> {
        let width = table.columns.len();
        let mut keys = HashSet::new();
        let converted: Vec<Rows> = self
            .rows
            .iter()
            .map(|columns| {
                let batch = RecordBatch::try_new(table.arrow_schema(), columns[..width].to_vec())?;
                Ok(values_of(table, &table.key, &batch)?.0)
            })
            .collect::<Result<_>>()?;
        for rows in &converted {
            keys.extend(rows.iter());
        }
        let (new_keys, _) = values_of(table, &table.key, batch)?;
        Ok((0..batch.num_rows())
            .map(|i| Some(keys.contains(&new_keys.row(i))))
            .collect())
    }
}

/// Rows a write found by their key or UNIQUE values: their addresses, and their columns with
/// their commit version and time (for the change record).
#[derive(Default)]
pub(crate) struct Matched {
    pub addresses: Vec<i64>,
    pub rows: Vec<Vec<ArrayRef>>,
}

/// The error for a second row of the same key or UNIQUE value.
fn duplicate(table: &TableDef, columns: &[String]) -> NodeError {
    let what = match columns == table.key.as_slice() {
        true => "key",
        false => "UNIQUE value",
    };
    NodeError::Other(format!(
        "two rows of {} would have the same {what} ({})",
        table.name,
        columns.join(", ")
    ))
}

/// The positions of `columns` among the columns of `table`.
pub(crate) fn column_indices(table: &TableDef, columns: &[String]) -> Vec<usize> {
    columns
        .iter()
        .map(|name| {
            table
                .columns
                .iter()
                .position(|c| &c.name == name)
                .expect("constraint columns are columns of the table")
        })
        .collect()
}

/// Up to this many rows, a lookup names each row's values; past it, their ranges.
const MOST_POINT_LOOKUPS: usize = 32;

/// The plan that reads the rows of `table` with their address (after their commit version and
/// time, with `system`), of only the rows whose columns at `indices` may equal those of a row
/// of `batch`, as far as the integer columns without NULLs in `batch` tell: for a few rows,
/// each row's values (so that two keys far apart read two pages, not all between), else the
/// range of each column.
pub(crate) fn matching_plan(
    table: &Arc<TableDef>,
    indices: &[usize],
    batch: &RecordBatch,
    system: bool,
) -> Result<LogicalPlan> {
    let schema = table.scan_schema(system, true);
    let mut plan = LogicalPlan::Scan {
        table: table.clone(),
        schema: schema.clone(),
    };
    let mut columns = Vec::new();
    for &index in indices {
        let values = batch.column(index);
        // A time is compared as its table's type: only values of that type stand for it.
        let comparable = matches!(values.data_type(), DataType::Int32 | DataType::Int64)
            || values.data_type() == schema.field(index).data_type();
        if values.null_count() == 0 && comparable && range_as_integers(values)?.is_some() {
            columns.push((index, cast(values, &DataType::Int64)?));
        }
    }
    // Times and dates are compared as themselves, so that scans skip the segments and row
    // groups their ranges rule out; integers as BIGINT.
    let compared = |index: usize, op, value: i64| {
        let data_type = schema.field(index).data_type();
        let column = Expr::column(index, &table.columns[index].name, data_type.clone());
        let (column, value) = match data_type {
            DataType::Timestamp(TimeUnit::Microsecond, None) => {
                (column, ScalarValue::TimestampMicros(value))
            }
            DataType::Date32 => (column, ScalarValue::Date32(value as i32)),
            _ => (column.cast(&DataType::Int64), ScalarValue::Int64(value)),
        };
        Expr::Binary {
            op,
            left: Box::new(column),
            right: Box::new(Expr::Literal(value)),
        }
    };
    let predicate = match batch.num_rows() <= MOST_POINT_LOOKUPS {
        true => (0..batch.num_rows())
            .filter_map(|row| {
                let parts = columns.iter().map(|(index, values)| {
                    let value = values.as_primitive::<Int64Type>().value(row);
                    compared(*index, BinaryOp::Eq, value)
                });
                Expr::and_all(parts.collect())
            })
            .reduce(|l, r| Expr::Binary {
                op: BinaryOp::Or,
                left: Box::new(l),
                right: Box::new(r),
            }),
        false => {
            let mut bounds = Vec::new();
            for (index, values) in &columns {
                let values = values.as_primitive::<Int64Type>();
                let least = arrow::compute::min(values).expect("no NULLs");
                let greatest = arrow::compute::max(values).expect("no NULLs");
                bounds.push(compared(*index, BinaryOp::GtEq, least));
                bounds.push(compared(*index, BinaryOp::LtEq, greatest));
            }
            Expr::and_all(bounds)
        }
    };
    if let Some(predicate) = predicate {
        plan = LogicalPlan::Filter {
            input: Box::new(plan),
            predicate,
        };
    }
    // The scan's own columns.
    let exprs = Expr::columns_of(&schema);
    let names = schema.fields().iter().map(|f| f.name().clone()).collect();
    Ok(plan.project(exprs, names))
}

/// The least and greatest non-NULL value of a column of integers, dates or timestamps
/// without a zone (microseconds), as BIGINT; none for other types or when every value is
/// NULL.
fn range_as_integers(values: &ArrayRef) -> Result<Option<(i64, i64)>> {
    let values = match values.data_type() {
        DataType::Int32
        | DataType::Int64
        | DataType::Date32
        | DataType::Timestamp(TimeUnit::Microsecond, None) => cast(values, &DataType::Int64)?,
        _ => return Ok(None),
    };
    let values = values.as_primitive::<Int64Type>();
    Ok(arrow::compute::min(values).zip(arrow::compute::max(values)))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, RecordBatch, TimestampMicrosecondArray};
    use arrow::datatypes::{Field, Schema};
    use pondra_catalog::{Column, SqlType, TableDef, TableKind};
    use pondra_planner::{Expr, LogicalPlan, ScalarValue, TreeNode};

    use super::*;

    fn filter_of(plan: &LogicalPlan) -> Option<&Expr> {
        match plan {
            LogicalPlan::Filter { predicate, .. } => Some(predicate),
            LogicalPlan::Project { input, .. } => filter_of(input),
            _ => None,
        }
    }

    #[test]
    fn lookups_of_times_compare_the_column_with_times() {
        let column = Column {
            name: "starts".into(),
            sql_type: SqlType::Timestamp,
            not_null: false,
            id: 0,
        };
        let table = Arc::new(TableDef::new("t".into(), vec![column], TableKind::Table));
        let times: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![2_000_000, 4_000_000]));
        let schema = Arc::new(Schema::new(vec![Field::new(
            "starts",
            times.data_type().clone(),
            true,
        )]));
        let batch = RecordBatch::try_new(schema, vec![times]).unwrap();
        let plan = matching_plan(&table, &[0], &batch, false).unwrap();
        let predicate = filter_of(&plan).expect("a lookup of two times is filtered");
        let mut literals = Vec::new();
        predicate.visit(&mut |e| {
            if let Expr::Literal(value) = e {
                literals.push(value.clone());
            }
        });
        assert_eq!(
            literals,
            [
                ScalarValue::TimestampMicros(2_000_000),
                ScalarValue::TimestampMicros(4_000_000)
            ]
        );
    }
}
