//! A table's rows by offset (ADR 0077): what Kafka's Fetch and ListOffsets read. Each appended
//! row has an offset in its Kafka partition, given in commit order as commits apply; a log
//! segment's rows hold the offsets from its first on, a data file stores each row's or (loaded
//! in bulk) holds a range. Offsets are kept as lake offsets, the partition in their high bits
//! (ADR 0079); what this module answers is offsets within a partition.

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::DataType;
use pondra_catalog::{OFFSET, PARTITION_SHIFT, Snapshot, TableDef, lake_offset, partition_offset};
use pondra_planner::{BinaryOp, Expr, LogicalPlan, ScalarValue, SortKey};

use crate::Result;
use crate::node::Node;

/// Where a partition's offsets stand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffsetBounds {
    /// The least offset a live container may hold (Kafka's log start offset).
    pub earliest: u64,
    /// The offset the next appended row takes (Kafka's high watermark).
    pub next: u64,
}

/// The offsets partition `partition` of `table` holds in `snapshot`, from its containers'
/// ranges. A file whose range spans the partition from a lower one may hold its offsets from 0.
pub fn offset_bounds(snapshot: &Snapshot, table: &TableDef, partition: u16) -> OffsetBounds {
    let next = next_offset(snapshot, table, partition);
    let within = |least: u64, greatest: u64| {
        let (from, at) = partition_offset(least);
        let until = partition_offset(greatest).0;
        match from == partition {
            true => Some(at),
            false => (from < partition && partition <= until).then_some(0),
        }
    };
    let files = snapshot.files(table.id).iter().filter_map(|f| {
        f.offsets
            .and_then(|(least, greatest)| within(least, greatest))
    });
    let segments = snapshot
        .segments(table.id)
        .iter()
        .filter_map(|s| s.first_offset.and_then(|first| within(first, first)));
    let earliest = files.chain(segments).min().unwrap_or(next);
    OffsetBounds {
        earliest: earliest.min(next),
        next,
    }
}

/// The offset the next row appended to partition `partition` of `table` takes.
pub fn next_offset(snapshot: &Snapshot, table: &TableDef, partition: u16) -> u64 {
    let place = (table.id, partition);
    snapshot.next_offsets.get(&place).copied().unwrap_or(0)
}

impl Node {
    /// Up to `limit` live rows of partition `partition` of `table` from offset `from` on, in
    /// offset order, as the table's columns followed by `_commit_timestamp` and `_offset` (the
    /// offset within the partition): those of the window of `limit` offsets from `from` (fewer
    /// where deleted rows left gaps), the window widened while it holds none. Reads only the
    /// containers, row groups and pages that reach it.
    pub async fn rows_from_offset(
        &self,
        table: &Arc<TableDef>,
        partition: u16,
        from: u64,
        limit: usize,
    ) -> Result<Vec<RecordBatch>> {
        assert!(limit > 0, "a read of rows by offset asks for some");
        let snapshot = self.snapshot();
        let next = next_offset(&snapshot, table, partition);
        let mut window = limit as u64;
        loop {
            let until = from.saturating_add(window).min(1 << PARTITION_SHIFT);
            let lake = (
                lake_offset(partition, from),
                lake_offset(partition, 0) + until,
            );
            let pruned = Arc::new(within_offsets(&snapshot, table, lake.0, lake.1));
            let plan = rows_plan(table, partition, lake, limit);
            let rows = self.run_query(plan, pruned, Vec::new()).await?;
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

/// `SELECT *, _commit_timestamp, _offset - base FROM table WHERE _offset >= from AND _offset <
/// until ORDER BY _offset LIMIT limit`, `base` the partition's first lake offset: the bounds
/// let the scan skip the row groups and pages of a data file outside them.
fn rows_plan(
    table: &Arc<TableDef>,
    partition: u16,
    (from, until): (u64, u64),
    limit: usize,
) -> LogicalPlan {
    let schema = table.scan_schema_hidden(true, false, false, true);
    let width = table.columns.len();
    let offset_at = schema.index_of(OFFSET).expect("the scan has offsets");
    let time_at = width + 1;
    let offset = Expr::column(offset_at, OFFSET, DataType::Int64);
    let scan = LogicalPlan::Scan {
        table: table.clone(),
        schema: schema.clone(),
    };
    let literal = |value: u64| {
        let value = i64::try_from(value).expect("lake offsets are below 2^58");
        Box::new(Expr::Literal(ScalarValue::Int64(value)))
    };
    let bound = |op, value: u64| Expr::Binary {
        op,
        left: Box::new(offset.clone()),
        right: literal(value),
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
            expr: offset.clone(),
            descending: false,
            nulls_first: false,
        }],
        fetch: Some(limit),
    };
    let kept: Vec<usize> = (0..width).chain([time_at]).collect();
    let mut exprs: Vec<Expr> = kept.iter().map(|&i| Expr::column_of(&schema, i)).collect();
    let mut names: Vec<String> = kept
        .iter()
        .map(|&i| schema.field(i).name().clone())
        .collect();
    exprs.push(Expr::Binary {
        op: BinaryOp::Minus,
        left: Box::new(offset),
        right: literal(lake_offset(partition, 0)),
    });
    names.push(OFFSET.to_string());
    sorted.project(exprs, names)
}

#[cfg(test)]
mod tests {
    use arrow::array::AsArray;
    use arrow::datatypes::Int64Type;

    use super::*;
    use crate::node::NodeOptions;
    use crate::test_support::node_with;

    fn batch(values: std::ops::Range<i32>) -> RecordBatch {
        crate::test_support::int_rows(values)
    }

    /// (v, offset) of the rows read from `from`.
    async fn read(node: &Node, from: u64, limit: usize) -> Vec<(i32, i64)> {
        read_partition(node, 0, from, limit).await
    }

    /// (v, offset) of the rows of partition `partition` read from `from`.
    async fn read_partition(
        node: &Node,
        partition: u16,
        from: u64,
        limit: usize,
    ) -> Vec<(i32, i64)> {
        let table = node.snapshot().table("t").unwrap().clone();
        let rows = node
            .rows_from_offset(&table, partition, from, limit)
            .await
            .unwrap();
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
        let (dir, node) = node_with(&["CREATE TABLE t (v INT)"]).await;
        for start in [0, 10, 20] {
            node.append("t", &[batch(start..start + 10)], None)
                .await
                .unwrap();
        }
        let table = node.snapshot().table("t").unwrap().clone();
        let bounds = offset_bounds(&node.snapshot(), &table, 0);
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
        assert_eq!(offset_bounds(&node.snapshot(), &table, 0).next, 33);
        assert_eq!(read(&node, 32, 1).await, vec![(32, 32)]);
        node.close().await.unwrap();
    }

    /// Appends `values` to partition `partition` of `t`; answers the offset they start at.
    async fn append_to(node: &Node, partition: u16, values: std::ops::Range<i32>) -> u64 {
        let rows = [batch(values)];
        let appended = node.append_to_partition("t", partition, &rows, None, None);
        appended
            .await
            .unwrap()
            .1
            .expect("the node holds the segment")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn each_partition_has_dense_offsets_of_its_own_through_tiering_and_reopening() {
        let (dir, node) = node_with(&["CREATE TABLE t (v INT) WITH (partitions = 3)"]).await;
        assert_eq!(append_to(&node, 2, 0..5).await, 0);
        assert_eq!(append_to(&node, 0, 100..103).await, 0);
        assert_eq!(append_to(&node, 2, 5..8).await, 5);
        // Rows written other than to a partition are partition 0's.
        node.execute("INSERT INTO t VALUES (103)").await.unwrap();
        assert_eq!(append_to(&node, 1, 200..202).await, 0);
        let rows = [batch(0..1)];
        let refused = node.append_to_partition("t", 3, &rows, None, None);
        let error = refused.await.unwrap_err().to_string();
        assert!(error.contains("no partition 3"), "{error}");

        let table = node.snapshot().table("t").unwrap().clone();
        let nexts: Vec<u64> = (0..3)
            .map(|p| offset_bounds(&node.snapshot(), &table, p).next)
            .collect();
        assert_eq!(nexts, [4, 2, 8]);
        let expect = |values: std::ops::Range<i32>, first: i64| -> Vec<(i32, i64)> {
            values.zip(first..).collect()
        };
        assert_eq!(read_partition(&node, 2, 3, 10).await, expect(3..8, 3));
        assert_eq!(read_partition(&node, 0, 0, 10).await, expect(100..104, 0));
        assert_eq!(read_partition(&node, 1, 0, 10).await, expect(200..202, 0));

        // Tiered together into one file, each partition keeps its rows and offsets.
        node.checkpoint().await.unwrap();
        assert!(node.snapshot().segments(table.id).is_empty());
        assert_eq!(read_partition(&node, 2, 0, 10).await, expect(0..8, 0));
        assert_eq!(read_partition(&node, 1, 1, 10).await, expect(201..202, 1));
        let earliest: Vec<u64> = (0..3)
            .map(|p| offset_bounds(&node.snapshot(), &table, p).earliest)
            .collect();
        assert_eq!(earliest, [0, 0, 0]);
        // SQL reads a row's partition in the high bits of `_offset`.
        let results = node
            .execute("SELECT v FROM t WHERE _offset >> 48 = 2 AND _offset % 65536 = 6")
            .await
            .unwrap();
        let crate::StatementResult::Rows { batches, .. } = &results[0] else {
            panic!("a query answers rows");
        };
        let values = batches[0]
            .column(0)
            .as_primitive::<arrow::datatypes::Int32Type>();
        assert_eq!(values.values().to_vec(), [6]);
        node.close().await.unwrap();
        drop(node);

        let node = Node::open_folder(dir.path(), NodeOptions::default())
            .await
            .unwrap();
        assert_eq!(append_to(&node, 2, 8..9).await, 8);
        assert_eq!(append_to(&node, 1, 202..203).await, 2);
        assert_eq!(read_partition(&node, 2, 7, 10).await, expect(7..9, 7));
        node.execute("DROP TABLE t").await.unwrap();
        assert!(
            node.snapshot().next_offsets.is_empty(),
            "dropped with the table"
        );
        node.close().await.unwrap();
    }
}
