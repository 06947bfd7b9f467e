//! What the crate's tests share: a node on a new folder lake, and rows of one INT column.

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
