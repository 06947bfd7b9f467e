//! A table's rows by offset (ADR 0077): what Kafka's Fetch and ListOffsets read. Each appended
//! row has an offset, given in commit order as commits apply; a log segment's rows hold the
//! offsets from its first on, a data file stores each row's or (loaded in bulk) holds a range.

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::DataType;
use pondra_catalog::{OFFSET, Snapshot, TableDef};
use pondra_planner::{BinaryOp, Expr, LogicalPlan, ScalarValue, SortKey};

use crate::Result;
use crate::node::Node;

/// Where a table's offsets stand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffsetBounds {
    /// The least offset a live container may hold (Kafka's log start offset).
    pub earliest: u64,
    /// The offset the next appended row takes (Kafka's high watermark).
    pub next: u64,
}

/// The offsets `table` holds in `snapshot`, from its containers' ranges.
pub fn offset_bounds(snapshot: &Snapshot, table: &TableDef) -> OffsetBounds {
    let next = snapshot.next_offsets.get(&table.id).copied().unwrap_or(0);
    let files = snapshot
        .files(table.id)
        .iter()
        .filter_map(|f| f.offsets.map(|o| o.0));
    let segments = snapshot
        .segments(table.id)
        .iter()
        .filter_map(|s| s.first_offset);
    let earliest = files.chain(segments).min().unwrap_or(next);
    OffsetBounds {
        earliest: earliest.min(next),
        next,
    }
}

impl Node {
    /// Up to `limit` live rows of `table` from offset `from` on, in offset order, as the
    /// table's columns followed by `_commit_timestamp` and `_offset`: those of the window of
    /// `limit` offsets from `from` (fewer where deleted rows left gaps), the window widened
    /// while it holds none. Reads only the containers, row groups and pages that reach it.
    pub async fn rows_from_offset(
        &self,
        table: &Arc<TableDef>,
        from: u64,
        limit: usize,
    ) -> Result<Vec<RecordBatch>> {
        assert!(limit > 0, "a read of rows by offset asks for some");
        let snapshot = self.snapshot();
        let next = offset_bounds(&snapshot, table).next;
        let mut window = limit as u64;
        loop {
            let until = from.saturating_add(window);
            let pruned = Arc::new(within_offsets(&snapshot, table, from, until));
            let rows = self
                .run_query(rows_plan(table, from, until, limit), pruned, Vec::new())
                .await?;
            if rows.iter().any(|b| b.num_rows() > 0) || until >= next {
                return Ok(rows);
            }
            window = window.saturating_mul(4);
        }
    }
}

impl Node {
    /// Commits the offsets a Kafka consumer group committed (ADR 0077), durably.
    pub async fn commit_consumer_offsets(
        &self,
        offsets: Vec<pondra_catalog::ConsumerOffset>,
    ) -> Result<()> {
        let change = pondra_catalog::Change::ConsumerOffsets { offsets };
        self.catalog.commit(vec![change]).await?;
        Ok(())
    }
}

/// `snapshot` with `table`'s containers cut to those that may hold offsets in `from..until`.
fn within_offsets(snapshot: &Snapshot, table: &TableDef, from: u64, until: u64) -> Snapshot {
    let mut pruned = snapshot.clone();
    let overlaps = |(least, greatest): (u64, u64)| least < until && greatest >= from;
    let files: Vec<_> = snapshot
        .files(table.id)
        .iter()
        .filter(|f| f.offsets.is_some_and(overlaps))
        .cloned()
        .collect();
    pruned.files.insert(table.id, Arc::new(files));
    let segments: pondra_catalog::SegmentLog = snapshot
        .segments(table.id)
        .iter()
        .filter(|s| {
            let range = s
                .first_offset
                .map(|first| (first, first + s.rows.max(1) - 1));
            range.is_some_and(overlaps)
        })
        .cloned()
        .collect();
    pruned.segments.insert(table.id, segments);
    pruned
}

/// `SELECT *, _commit_timestamp, _offset FROM table WHERE _offset >= from AND _offset < until
/// ORDER BY _offset LIMIT limit`: the bounds let the scan skip the row groups and pages of a
/// data file outside them.
fn rows_plan(table: &Arc<TableDef>, from: u64, until: u64, limit: usize) -> LogicalPlan {
    let schema = table.scan_schema_hidden(true, false, false, true);
    let width = table.columns.len();
    let offset_at = schema.index_of(OFFSET).expect("the scan has offsets");
    let time_at = width + 1;
    let offset = Expr::column(offset_at, OFFSET, DataType::Int64);
    let scan = LogicalPlan::Scan {
        table: table.clone(),
        schema: schema.clone(),
    };
    let bound = |op, value: u64| Expr::Binary {
        op,
        left: Box::new(offset.clone()),
        right: Box::new(Expr::Literal(ScalarValue::Int64(
            i64::try_from(value).unwrap_or(i64::MAX),
        ))),
    };
    let filtered = LogicalPlan::Filter {
        input: Box::new(scan),
        predicate: Expr::Binary {
            op: BinaryOp::And,
            left: Box::new(bound(BinaryOp::GtEq, from)),
            right: Box::new(bound(BinaryOp::Lt, until)),
        },
    };
    let sorted = LogicalPlan::Sort {
        input: Box::new(filtered),
        keys: vec![SortKey {
            expr: offset,
            descending: false,
            nulls_first: false,
        }],
        fetch: Some(limit),
    };
    let kept: Vec<usize> = (0..width).chain([time_at, offset_at]).collect();
    let exprs = kept.iter().map(|&i| Expr::column_of(&schema, i)).collect();
    let names = kept
        .iter()
        .map(|&i| schema.field(i).name().clone())
        .collect();
    sorted.project(exprs, names)
}

#[cfg(test)]
mod tests {
    use arrow::array::{AsArray, Int32Array};
    use arrow::datatypes::{Int64Type, Schema};

    use super::*;
    use crate::node::NodeOptions;

    fn batch(values: std::ops::Range<i32>) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![arrow::datatypes::Field::new(
            "v",
            DataType::Int32,
            true,
        )]));
        let values = Int32Array::from_iter_values(values);
        RecordBatch::try_new(schema, vec![Arc::new(values)]).unwrap()
    }

    /// (v, offset) of the rows read from `from`.
    async fn read(node: &Node, from: u64, limit: usize) -> Vec<(i32, i64)> {
        let table = node.snapshot().table("t").unwrap().clone();
        let rows = node.rows_from_offset(&table, from, limit).await.unwrap();
        rows.iter()
            .flat_map(|b| {
                let values = b.column(0).as_primitive::<arrow::datatypes::Int32Type>();
                let offsets = b.column(2).as_primitive::<Int64Type>();
                (0..b.num_rows()).map(move |i| (values.value(i), offsets.value(i)))
            })
            .collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn offsets_are_dense_in_commit_order_through_tiering_deletes_and_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open_folder(dir.path(), NodeOptions::default())
            .await
            .unwrap();
        node.execute("CREATE TABLE t (v INT)").await.unwrap();
        for start in [0, 10, 20] {
            node.append("t", &[batch(start..start + 10)], None)
                .await
                .unwrap();
        }
        let table = node.snapshot().table("t").unwrap().clone();
        let bounds = offset_bounds(&node.snapshot(), &table);
        assert_eq!(
            bounds,
            OffsetBounds {
                earliest: 0,
                next: 30
            }
        );
        let expected: Vec<(i32, i64)> = (5..12).map(|v| (v, v as i64)).collect();
        assert_eq!(read(&node, 5, 7).await, expected);

        // Tiered into a file, the rows keep their offsets; deleted ones leave a gap.
        node.checkpoint().await.unwrap();
        assert!(node.snapshot().segments(table.id).is_empty());
        node.execute("DELETE FROM t WHERE v BETWEEN 12 AND 14")
            .await
            .unwrap();
        node.append("t", &[batch(30..32)], None).await.unwrap();
        // A read returns the rows of its window: fewer where deletes left gaps.
        assert_eq!(read(&node, 11, 4).await, vec![(11, 11)]);
        assert_eq!(read(&node, 12, 4).await, vec![(15, 15)]);
        // A window of deleted rows only is widened until it finds some.
        assert_eq!(read(&node, 12, 2).await, vec![(15, 15), (16, 16)]);
        let tail = read(&node, 29, 10).await;
        assert_eq!(tail, vec![(29, 29), (30, 30), (31, 31)]);
        node.close().await.unwrap();
        drop(node);

        let node = Node::open_folder(dir.path(), NodeOptions::default())
            .await
            .unwrap();
        node.append("t", &[batch(32..33)], None).await.unwrap();
        let table = node.snapshot().table("t").unwrap().clone();
        assert_eq!(offset_bounds(&node.snapshot(), &table).next, 33);
        assert_eq!(read(&node, 32, 1).await, vec![(32, 32)]);
        node.close().await.unwrap();
    }
}
