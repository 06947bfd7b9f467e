//! The lakes a server holds: one (`--dir`), or one per database name under a folder
//! (`--lakes`), opened on first use.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use pondra_cluster::{Location, Node, NodeOptions};
use tokio::sync::Mutex;

pub struct Lakes {
    /// The one lake every database name opens, with `--dir`.
    single: Option<Arc<Node>>,
    /// The folder or URL under which each database name is a lake, with `--lakes`.
    root: Option<String>,
    open: Mutex<HashMap<String, Arc<Node>>>,
    options: NodeOptions,
    /// Background tiering and cleanup of each open lake.
    background: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Lakes {
    /// The one lake of `--dir`, opened as `node`.
    pub fn single(node: Arc<Node>, options: NodeOptions) -> Lakes {
        let lakes = Lakes {
            single: Some(node.clone()),
            root: None,
            open: Mutex::new(HashMap::new()),
            options,
            background: Default::default(),
        };
        lakes.start_background(&node);
        lakes
    }

    pub fn under(root: String, options: NodeOptions) -> Result<Lakes, String> {
        // A URL with a scheme no store knows is refused here, before any client arrives.
        match Location::parse(&root).map_err(|e| e.to_string())? {
            Location::Folder(path) => std::fs::create_dir_all(&path)
                .map_err(|e| format!("cannot create {}: {e}", path.display()))?,
            Location::Remote { .. } => {}
        }
        Ok(Lakes {
            single: None,
            root: Some(root),
            open: Mutex::new(HashMap::new()),
            options,
            background: Default::default(),
        })
    }

    fn start_background(&self, node: &Arc<Node>) {
        let period = self
            .options
            .tier_after
            .clamp(Duration::from_secs(1), Duration::from_secs(10));
        let handle = node.spawn_background(period);
        self.background
            .lock()
            .expect("background lock")
            .push(handle);
    }

    /// The one lake of `--dir`; none with `--lakes`.
    pub fn single_node(&self) -> Option<&Arc<Node>> {
        self.single.as_ref()
    }

    /// The lake a database name picks. With `--dir`, every name (and none) picks the one lake.
    pub async fn node(&self, database: Option<&str>) -> Result<Arc<Node>, String> {
        if let Some(node) = &self.single {
            return Ok(node.clone());
        }
        let root = self.root.as_ref().expect("a server has --dir or --lakes");
        let name = database
            .filter(|d| !d.is_empty())
            .ok_or("this server holds several lakes: name a database")?;
        if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(format!(
                "invalid database name {name:?}: use letters, digits, _ and -"
            ));
        }
        let mut open = self.open.lock().await;
        if let Some(node) = open.get(name) {
            return Ok(node.clone());
        }
        let dir = format!("{}/{name}", root.trim_end_matches('/'));
        let options = NodeOptions {
            database: Some(name.to_string()),
            ..self.options.clone()
        };
        let node = Node::open_at(&dir, options)
            .await
            .map_err(|e| format!("cannot open the lake of database {name}: {e}"))?;
        self.start_background(&node);
        open.insert(name.to_string(), node.clone());
        Ok(node)
    }

    /// Every open lake.
    pub async fn all(&self) -> Vec<(String, Arc<Node>)> {
        if let Some(node) = &self.single {
            return vec![("lake".to_string(), node.clone())];
        }
        let open = self.open.lock().await;
        open.iter().map(|(n, l)| (n.clone(), l.clone())).collect()
    }

    /// Stops background work and closes every lake; every acknowledged commit is already durable.
    pub async fn close(&self) {
        for handle in self.background.lock().expect("background lock").drain(..) {
            handle.abort();
        }
        for (name, node) in self.all().await {
            if let Err(e) = node.close().await {
                eprintln!("closing lake {name}: {e}");
            }
        }
    }
}
