//! The console's notebooks (ADR 0080): JSON documents kept in the catalog by name, saved and
//! dropped by commits like any other change, so every node of the cluster reads them.

use std::sync::Arc;

use pondra_catalog::Change;

use crate::node::Node;
use crate::{NodeError, Result};

/// The longest notebook name, in characters.
pub const MAX_NOTEBOOK_NAME: usize = 200;

/// The largest notebook, in bytes of JSON.
pub const MAX_NOTEBOOK_BYTES: usize = 4 << 20;

impl Node {
    /// The notebooks' names, in order.
    pub fn notebook_names(&self) -> Vec<String> {
        self.snapshot().notebooks.keys().cloned().collect()
    }

    /// The notebook `name`, if saved.
    pub fn notebook(&self, name: &str) -> Option<Arc<str>> {
        self.snapshot().notebooks.get(name).cloned()
    }

    /// Saves `body` (a JSON document) as the notebook `name`, durably, replacing one saved
    /// before under that name.
    pub async fn save_notebook(&self, name: &str, body: String) -> Result<()> {
        check_name(name)?;
        if body.len() > MAX_NOTEBOOK_BYTES {
            return Err(NodeError::Other(format!(
                "a notebook holds at most {MAX_NOTEBOOK_BYTES} bytes, not {}",
                body.len()
            )));
        }
        if let Err(e) = serde_json::from_str::<serde_json::Value>(&body) {
            return Err(NodeError::Other(format!("a notebook is JSON: {e}")));
        }
        let name = name.to_string();
        self.catalog
            .commit(vec![Change::SaveNotebook { name, body }])
            .await?;
        Ok(())
    }

    /// Removes the notebook `name`.
    pub async fn drop_notebook(&self, name: &str) -> Result<()> {
        let name = name.to_string();
        self.catalog
            .commit(vec![Change::DropNotebook { name }])
            .await?;
        Ok(())
    }
}

/// A notebook's name: 1 to 200 characters, none of them a control character or `/`.
fn check_name(name: &str) -> Result<()> {
    let length = name.chars().count();
    let bad = name.chars().any(|c| c.is_control() || c == '/');
    if length == 0 || length > MAX_NOTEBOOK_NAME || bad {
        return Err(NodeError::Other(format!(
            "a notebook's name is 1 to {MAX_NOTEBOOK_NAME} characters without '/' or control \
             characters: {name:?}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::NodeOptions;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn notebooks_are_saved_replaced_dropped_and_reopened() {
        let (dir, node) = crate::test_support::node_with(&[]).await;
        node.save_notebook("daily", r#"{"cells":[]}"#.into())
            .await
            .unwrap();
        node.save_notebook(
            "daily",
            r#"{"cells":[{"kind":"sql","source":"SELECT 1"}]}"#.into(),
        )
        .await
        .unwrap();
        node.save_notebook("scratch", "{}".into()).await.unwrap();
        assert!(node.save_notebook("bad", "{".into()).await.is_err());
        assert!(node.save_notebook("a/b", "{}".into()).await.is_err());
        assert!(node.save_notebook("", "{}".into()).await.is_err());
        let missing = node.drop_notebook("missing").await.unwrap_err();
        assert!(missing.to_string().contains("does not exist"), "{missing}");
        node.drop_notebook("scratch").await.unwrap();
        node.close().await.unwrap();
        drop(node);

        let node = Node::open_folder(dir.path(), NodeOptions::default())
            .await
            .unwrap();
        assert_eq!(node.notebook_names(), ["daily"]);
        let body = node.notebook("daily").unwrap();
        assert!(body.contains("SELECT 1"), "{body}");
        node.close().await.unwrap();
    }
}
