//! What the crate's tests share: a node on a new folder lake, rows of one INT column, and a
//! seeded generator for simulations.

use std::sync::Arc;

use arrow::array::{Int32Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};

use crate::node::{Node, NodeOptions};

/// A node on a new lake in a temporary folder (kept while the folder is), with `statements`
/// run on it.
pub(crate) async fn node_with(statements: &[&str]) -> (tempfile::TempDir, Arc<Node>) {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::open_folder(dir.path(), NodeOptions::default())
        .await
        .unwrap();
    for statement in statements {
        node.execute(statement).await.unwrap();
    }
    (dir, node)
}

/// A batch of one nullable INT column `v` holding `values`.
pub(crate) fn int_rows(values: impl IntoIterator<Item = i32>) -> RecordBatch {
    let schema = Schema::new(vec![Field::new("v", DataType::Int32, true)]);
    let values = Int32Array::from_iter_values(values);
    RecordBatch::try_new(Arc::new(schema), vec![Arc::new(values)]).unwrap()
}

/// SplitMix64: a seeded generator with no dependency, for the simulations.
pub(crate) struct Random(pub u64);

impl Random {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}
