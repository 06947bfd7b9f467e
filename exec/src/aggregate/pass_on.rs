//! Rows passed on unaggregated (ADR 0032). A worker's partial aggregation whose groups come
//! close to its rows (keys nearly all distinct, as in the first step of a `count(DISTINCT x)`)
//! reduces nothing for the merge, which interns every key again. Once such an aggregation has
//! seen enough rows to judge, it stops interning: it splits each later batch by the partition
//! its keys hash to, and the merge of each partition aggregates those rows directly.

use arrow::array::{RecordBatch, UInt32Array};

use crate::Result;
use crate::keys::GROUP_PARTITIONS;

/// Adds each row of `batch` to the rows passed on in its key's partition.
pub(super) fn pass_on(
    batch: &RecordBatch,
    partitions: &[u8],
    passed: &mut [Vec<RecordBatch>],
) -> Result<()> {
    let mut rows: Vec<Vec<u32>> = vec![Vec::new(); GROUP_PARTITIONS];
    for (row, &partition) in partitions.iter().enumerate() {
        rows[partition as usize].push(row as u32);
    }
    for (partition, rows) in rows.into_iter().enumerate() {
        if rows.is_empty() {
            continue;
        }
        let rows = UInt32Array::from(rows);
        passed[partition].push(arrow::compute::take_record_batch(batch, &rows)?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use arrow::array::{Array, AsArray, Int64Array};
    use arrow::datatypes::{DataType, Field, Int64Type, Schema};
    use pondra_planner::{AggregateCall, AggregateFunction, Expr};

    use super::super::HashAggregateSink;
    use super::*;

    fn column(index: usize, name: &str) -> Expr {
        Expr::Column {
            index,
            name: name.into(),
            data_type: DataType::Int64,
        }
    }

    fn call(func: AggregateFunction, arg: Option<Expr>) -> AggregateCall {
        AggregateCall {
            func,
            arg,
            data_type: DataType::Int64,
            separator: None,
            order: Vec::new(),
            filter: None,
        }
    }

    const SPREAD: i64 = 1_000_003;

    /// `SELECT k, sum(v), count(*) ... GROUP BY k` over `parts`, each part aggregated by its
    /// own partial aggregation, then merged; as key to (sum, count), and whether any part
    /// passed rows on.
    fn aggregate(parts: &[Vec<(i64, i64)>]) -> (BTreeMap<i64, (i64, i64)>, bool) {
        let input = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("v", DataType::Int64, true),
        ]));
        let output = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("s", DataType::Int64, true),
            Field::new("c", DataType::Int64, false),
        ]));
        let calls = [
            call(AggregateFunction::Sum, Some(column(1, "v"))),
            call(AggregateFunction::CountStar, None),
        ];
        let template = HashAggregateSink::new(&[column(0, "k")], &calls, output).unwrap();
        let mut partials = Vec::new();
        for rows in parts {
            let mut partial = template.empty_like().unwrap();
            for chunk in rows.chunks(8192) {
                // Keys spread wider than ids looked up by value span, which never pass on.
                let keys = Int64Array::from_iter_values(chunk.iter().map(|r| r.0 * SPREAD));
                let values = Int64Array::from_iter_values(chunk.iter().map(|r| r.1));
                let batch =
                    RecordBatch::try_new(input.clone(), vec![Arc::new(keys), Arc::new(values)])
                        .unwrap();
                partial.sink(&batch).unwrap();
            }
            partials.push(partial);
        }
        let passed = partials.iter().any(|p| p.passed.is_some());
        let mut merged = partials.remove(0);
        for partial in partials {
            merged.merge(partial).unwrap();
        }
        let mut groups = BTreeMap::new();
        for batch in merged.finish().unwrap() {
            let keys = batch.column(0).as_primitive::<Int64Type>();
            let keys = Int64Array::from_iter_values(keys.values().iter().map(|k| k / SPREAD));
            let sums = batch.column(1).as_primitive::<Int64Type>();
            let counts = batch.column(2).as_primitive::<Int64Type>();
            for row in 0..batch.num_rows() {
                let previous = groups.insert(keys.value(row), (sums.value(row), counts.value(row)));
                assert!(previous.is_none(), "key {} output twice", keys.value(row));
                assert!(sums.is_valid(row));
            }
        }
        (groups, passed)
    }

    /// The groups `aggregate` should give, computed row by row.
    fn expected(parts: &[Vec<(i64, i64)>]) -> BTreeMap<i64, (i64, i64)> {
        let mut groups = BTreeMap::new();
        for &(key, value) in parts.iter().flatten() {
            let group = groups.entry(key).or_insert((0, 0));
            group.0 += value;
            group.1 += 1;
        }
        groups
    }

    #[test]
    fn distinct_keys_are_passed_on_and_merged_once() {
        // Two parts of 200,000 rows: keys nearly all distinct within a part, and each key of
        // the first half of the second part also in the first part (after the check).
        let first: Vec<(i64, i64)> = (0..200_000).map(|k| (k, 1)).collect();
        let second: Vec<(i64, i64)> = (100_000..300_000).map(|k| (k, k % 7)).collect();
        let parts = vec![first, second];
        let (groups, passed) = aggregate(&parts);
        assert!(passed, "nearly distinct keys should be passed on");
        assert_eq!(groups.len(), 300_000);
        assert_eq!(groups, expected(&parts));
    }

    #[test]
    fn keys_looked_up_by_value_are_not_passed_on() {
        let input = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, true)]));
        let output = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("c", DataType::Int64, false),
        ]));
        let calls = [call(AggregateFunction::CountStar, None)];
        let mut sink = HashAggregateSink::new(&[column(0, "k")], &calls, output).unwrap();
        for first in (0..150_000).step_by(8192) {
            let keys = Int64Array::from_iter_values(first..(first + 8192).min(150_000));
            let batch = RecordBatch::try_new(input.clone(), vec![Arc::new(keys)]).unwrap();
            sink.sink(&batch).unwrap();
        }
        assert!(
            sink.passed.is_none(),
            "distinct keys within a span are looked up by value"
        );
    }

    #[test]
    fn keys_that_reduce_are_aggregated_first() {
        let part: Vec<(i64, i64)> = (0..200_000).map(|r| (r % 1000, r)).collect();
        let parts = vec![part.clone(), part];
        let (groups, passed) = aggregate(&parts);
        assert!(!passed, "1,000 keys over 200,000 rows reduce them");
        assert_eq!(groups, expected(&parts));
    }

    #[test]
    fn one_part_passing_rows_on_finishes_alone() {
        let part: Vec<(i64, i64)> = (0..150_000).map(|k| (k % 140_000, 2)).collect();
        let parts = vec![part];
        let (groups, passed) = aggregate(&parts);
        assert!(passed);
        assert_eq!(groups, expected(&parts));
    }
}
