use std::path::Path as FsPath;
use std::sync::Arc;

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use crate::{Result, StorageError};

/// The lake: one object store (a folder today, a bucket prefix later) holding every byte of state.
///
/// Paths are relative to the lake's root: `catalog/`, `log/`, `data/<table>/`, `cluster/term/N`.
#[derive(Clone, Debug)]
pub struct Lake {
    store: Arc<dyn ObjectStore>,
    description: String,
}

impl Lake {
    /// Opens (creating if missing) a lake in a local folder.
    ///
    /// The store fsyncs every object it writes: an acknowledged write must survive a power cut.
    pub fn open_folder(dir: &FsPath) -> Result<Lake> {
        std::fs::create_dir_all(dir).map_err(|e| StorageError::Folder {
            path: dir.display().to_string(),
            message: e.to_string(),
        })?;
        let dir = dir.canonicalize().map_err(|e| StorageError::Folder {
            path: dir.display().to_string(),
            message: e.to_string(),
        })?;
        let store = LocalFileSystem::new_with_prefix(&dir)?
            .with_fsync(true)
            .with_automatic_cleanup(true);
        Ok(Lake {
            store: Arc::new(store),
            description: dir.display().to_string(),
        })
    }

    /// Wraps any object store (an in-memory one in tests, a bucket in production).
    pub fn from_store(store: Arc<dyn ObjectStore>, description: impl Into<String>) -> Lake {
        Lake {
            store,
            description: description.into(),
        }
    }

    /// The underlying object store, for components (the catalog's SlateDB) that speak to it directly.
    pub fn store(&self) -> Arc<dyn ObjectStore> {
        self.store.clone()
    }

    /// Where the lake lives, for messages.
    pub fn description(&self) -> &str {
        &self.description
    }

    pub async fn get(&self, path: &str) -> Result<Bytes> {
        let result = self.store.get(&Path::from(path)).await?;
        Ok(result.bytes().await?)
    }

    pub async fn put(&self, path: &str, bytes: Bytes) -> Result<()> {
        self.store
            .put(&Path::from(path), PutPayload::from_bytes(bytes))
            .await?;
        Ok(())
    }

    /// Writes an object only if no object has that path; the primitive behind leader election.
    pub async fn put_if_absent(&self, path: &str, bytes: Bytes) -> Result<()> {
        let options = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        match self
            .store
            .put_opts(&Path::from(path), PutPayload::from_bytes(bytes), options)
            .await
        {
            Ok(_) => Ok(()),
            Err(object_store::Error::AlreadyExists { .. }) => {
                Err(StorageError::AlreadyExists(path.to_string()))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes an object; deleting one that is already gone is not an error.
    pub async fn delete(&self, path: &str) -> Result<()> {
        match self.store.delete(&Path::from(path)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// The paths of every object under a prefix.
    pub async fn list(&self, prefix: &str) -> Result<Vec<String>> {
        let prefix = Path::from(prefix);
        let objects: Vec<_> = self.store.list(Some(&prefix)).try_collect().await?;
        Ok(objects
            .into_iter()
            .map(|o| o.location.to_string())
            .collect())
    }
}
