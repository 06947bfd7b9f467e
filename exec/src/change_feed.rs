//! What the change records of a table say of a range of commits (ADR 0048), for
//! `table_changes`: each record in the range whole, at its commit; and, from every record, the
//! rows it removed that a commit in the range had inserted without a record of its own (a plain
//! insert), as that commit's insertions.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{
    Array, AsArray, BooleanArray, Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use arrow::compute::filter_record_batch;
use arrow::datatypes::{Int64Type, SchemaRef};
use pondra_catalog::TableDef;

use crate::Result;
use crate::pipeline::ExecContext;
use crate::scan::{Morsel, read_morsel};

/// The rows of `table`'s change records that tell of commits `from..=to`, as batches of
/// `schema` (the table's change record schema).
pub fn change_record_rows(
    table: &TableDef,
    (from, to): (u64, u64),
    schema: &SchemaRef,
    ctx: &ExecContext,
) -> Result<Vec<RecordBatch>> {
    let records = ctx.snapshot.change_records(table.id);
    let recorded: HashSet<u64> = records.iter().map(|r| r.commit).collect();
    let width = table.columns.len();
    let in_range = |commit: u64| (from..=to).contains(&commit);
    let mut out = Vec::new();
    for record in records {
        let morsel = Morsel::of_segment(record, table);
        for batch in read_morsel(&ctx.lake, &ctx.runtime, &morsel, schema, None)? {
            let rows = batch.num_rows();
            if in_range(record.commit) {
                let mut columns = batch.columns()[..=width].to_vec();
                let micros = record.committed_at_ms as i64 * 1000;
                columns.push(Arc::new(Int64Array::from_value(record.commit as i64, rows)));
                columns.push(Arc::new(TimestampMicrosecondArray::from_value(
                    micros, rows,
                )));
                out.push(RecordBatch::try_new(schema.clone(), columns)?);
            }
            // A removed row keeps the version of the commit that wrote it; added rows have none.
            let versions = batch.column(width + 1).as_primitive::<Int64Type>();
            let inserted_in_range: BooleanArray = (0..rows)
                .map(|i| {
                    let version = versions.is_valid(i).then(|| versions.value(i) as u64);
                    Some(version.is_some_and(|v| in_range(v) && !recorded.contains(&v)))
                })
                .collect();
            let inserted = filter_record_batch(&batch, &inserted_in_range)?;
            if inserted.num_rows() > 0 {
                let mut columns = inserted.columns().to_vec();
                let labels = std::iter::repeat_n("insert", inserted.num_rows());
                columns[width] = Arc::new(StringArray::from_iter_values(labels));
                out.push(RecordBatch::try_new(schema.clone(), columns)?);
            }
        }
    }
    Ok(out)
}
