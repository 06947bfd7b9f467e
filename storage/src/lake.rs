use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use bytes::Bytes;
use futures::TryStreamExt;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::prefix::PrefixStore;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion};

use crate::cache::ObjectCache;
use crate::decoded_segments::DecodedSegments;
use crate::file_source::FileSource;
use crate::footers::FooterCache;
use crate::location::Location;
use crate::parquet_file::{ParquetFooter, parquet_footer};
use crate::{Result, StorageError};

/// A suffix no other probe of this process has.
fn unique_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The lake: one object store (a folder, or a prefix of a bucket) holding every byte of state.
///
/// Paths are relative to the lake's root: `catalog/`, `log/`, `data/<table>/`, `cluster/term/N`.
#[derive(Clone, Debug)]
pub struct Lake {
    store: Arc<dyn ObjectStore>,
    description: String,
    /// Whether the store is a local folder (no `PutMode::Update`, and nothing to cache).
    folder: bool,
    /// Local copies of a remote lake's immutable objects.
    cache: Option<Arc<ObjectCache>>,
    /// The folder, for a lake in one: its data files are mapped, not read.
    root: Option<PathBuf>,
    footers: Arc<FooterCache>,
    segments: Arc<DecodedSegments>,
}

impl Lake {
    /// Opens the lake at a path or a URL (ADR 0046), with `cache` for a remote one's
    /// immutable objects. A remote store that cannot create an object only if it is absent is
    /// refused: the lake's election and the catalog's fencing stand on it.
    pub async fn open(location: &str, cache: Option<Arc<ObjectCache>>) -> Result<Lake> {
        match Location::parse(location)? {
            Location::Folder(path) => Lake::open_folder(&path),
            Location::Remote { store, prefix, url } => {
                let store: Arc<dyn ObjectStore> = match prefix.as_ref().is_empty() {
                    true => store,
                    false => Arc::new(PrefixStore::new(store, prefix)),
                };
                Lake::open_store(store, url, cache).await
            }
        }
    }

    /// Opens the lake in a remote store, refused when the store lacks conditional writes.
    async fn open_store(
        store: Arc<dyn ObjectStore>,
        description: String,
        cache: Option<Arc<ObjectCache>>,
    ) -> Result<Lake> {
        let lake = Lake {
            cache,
            ..Lake::from_store(store, description)
        };
        lake.check_conditional_writes().await?;
        Ok(lake)
    }

    /// Creates a probe object twice with `PutMode::Create`, where the second must fail; then
    /// overwrites it over its version twice, where the second, over a version no longer
    /// there, must fail.
    async fn check_conditional_writes(&self) -> Result<()> {
        let path = format!("cluster/probe/{}-{}", std::process::id(), unique_suffix());
        let body = Bytes::from_static(b"probe");
        self.put_if_absent(&path, body.clone()).await?;
        let second = self.put_if_absent(&path, body).await;
        let overwrites = match second {
            Err(StorageError::AlreadyExists(_)) => {
                Some(self.overwrites_only_unchanged(&path).await)
            }
            _ => None,
        };
        let _ = self.delete(&path).await;
        let lacking = |what: &str| StorageError::Location {
            location: self.description.clone(),
            message: format!(
                "this store does not {what}, which the lake's election and the catalog's \
                 fencing need: use a store that does (S3, GCS, Azure, R2 and MinIO do)"
            ),
        };
        match (second, overwrites) {
            (Err(StorageError::AlreadyExists(_)), Some(Ok(true))) => Ok(()),
            (_, Some(Ok(false))) => Err(lacking(
                "overwrite objects only if they are unchanged (If-Match)",
            )),
            (_, Some(Err(e))) => Err(e),
            (Err(e), _) => Err(e),
            (Ok(()), _) => Err(lacking("create objects only if they are absent")),
        }
    }

    /// Whether an overwrite of the object at `path` over its version succeeds, and a second
    /// over that same version, no longer there, is refused.
    async fn overwrites_only_unchanged(&self, path: &str) -> Result<bool> {
        let (_, first) = self.get_versioned(path).await?;
        let second = Bytes::from_static(b"second");
        if self.put_over(path, second, Some(&first)).await?.is_none() {
            return Ok(false);
        }
        let third = Bytes::from_static(b"third");
        match self.put_over(path, third, Some(&first)).await {
            Err(StorageError::Changed(_)) => Ok(true),
            Ok(_) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Whether the lake is a local folder.
    pub fn is_folder(&self) -> bool {
        self.folder
    }

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
            folder: true,
            cache: None,
            root: Some(dir),
            footers: Arc::default(),
            segments: Arc::default(),
        })
    }

    /// Wraps any object store (an in-memory one in tests, a bucket in production).
    pub fn from_store(store: Arc<dyn ObjectStore>, description: impl Into<String>) -> Lake {
        Lake {
            store,
            description: description.into(),
            folder: false,
            cache: None,
            root: None,
            footers: Arc::default(),
            segments: Arc::default(),
        }
    }

    /// The lake with local copies of its immutable objects kept in `cache`.
    pub fn with_cache(mut self, cache: Option<Arc<ObjectCache>>) -> Lake {
        self.cache = cache;
        self
    }

    /// The underlying object store, for components (the catalog's SlateDB) that speak to it directly.
    pub fn store(&self) -> Arc<dyn ObjectStore> {
        self.store.clone()
    }

    /// Where the lake lives, for messages.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The URL of `path` in the lake, for other engines that find files by absolute URL
    /// (Iceberg's metadata, ADR 0058): `file:///...` in a folder, the bucket's URL otherwise.
    pub fn url_of(&self, path: &str) -> String {
        match &self.root {
            Some(root) => format!("file://{}/{path}", root.display()),
            None => format!("{}/{path}", self.description.trim_end_matches('/')),
        }
    }

    /// An object's bytes; a remote lake's immutable objects through the local cache.
    pub async fn get(&self, path: &str) -> Result<Bytes> {
        let cache = self.cache.as_ref().filter(|_| ObjectCache::holds(path));
        // Lakes of one process share its cache, so a copy is named by its lake too.
        let key = || format!("{}/{path}", self.description);
        if let Some(bytes) = cache.and_then(|c| c.get(&key())) {
            return Ok(bytes);
        }
        let result = self.store.get(&Path::from(path)).await?;
        let bytes = result.bytes().await?;
        if let Some(cache) = cache {
            cache.put(&key(), &bytes);
        }
        Ok(bytes)
    }

    /// A Parquet data file of the lake with its parsed footer, to read row group by row
    /// group: mapped in a folder; through the local cache, or by ranged reads without one, in
    /// a bucket.
    pub async fn data_file(&self, path: &str) -> Result<(FileSource, ParquetFooter)> {
        let source = match (&self.root, &self.cache) {
            (Some(root), _) => FileSource::Local(root.join(path)),
            (None, Some(_)) => FileSource::Held {
                name: format!("{}/{path}", self.description),
                bytes: self.get(path).await?,
            },
            (None, None) => {
                let meta = self.store.head(&Path::from(path)).await?;
                let url = format!("{}/{path}", self.description);
                FileSource::remote(self.store.clone(), meta, url)
            }
        };
        if let Some(footer) = self.footers.get(path) {
            return Ok((source, footer));
        }
        let footer = parquet_footer(&source)?;
        self.footers.put(path, footer.clone());
        Ok((source, footer))
    }

    /// The batches of a log segment riding inside its commit, decoded once per process.
    pub fn inline_segment(&self, bytes: &Bytes) -> Result<Vec<RecordBatch>> {
        self.segments.inline(bytes)
    }

    /// The batches of the log segment object at `path`, fetched and decoded once per
    /// process. Blocks on the store through `runtime`: it runs on an executor thread.
    pub fn segment_object(
        &self,
        path: &str,
        runtime: &tokio::runtime::Handle,
    ) -> Result<Vec<RecordBatch>> {
        self.segments
            .object(path, || runtime.block_on(self.get(path)))
    }

    /// Whether an object exists at `path`.
    pub async fn exists(&self, path: &str) -> Result<bool> {
        match self.store.head(&Path::from(path)).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
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

    /// Writes an object over its version `expected` (If-Match), or creates it when `expected`
    /// is none; returns the version written. Another version found is `Changed`, an object
    /// found where none was expected `AlreadyExists`. A store without conditional overwrites
    /// (a folder) writes unconditionally and returns no version.
    pub async fn put_over(
        &self,
        path: &str,
        bytes: Bytes,
        expected: Option<&UpdateVersion>,
    ) -> Result<Option<UpdateVersion>> {
        let mode = match expected {
            Some(version) => PutMode::Update(version.clone()),
            None => PutMode::Create,
        };
        let options = PutOptions {
            mode,
            ..Default::default()
        };
        let location = Path::from(path);
        let payload = PutPayload::from_bytes(bytes.clone());
        match self.store.put_opts(&location, payload, options).await {
            Ok(result) => Ok(Some(UpdateVersion {
                e_tag: result.e_tag,
                version: result.version,
            })),
            Err(object_store::Error::NotImplemented { .. }) => {
                self.put(path, bytes).await?;
                Ok(None)
            }
            Err(object_store::Error::AlreadyExists { .. }) => {
                Err(StorageError::AlreadyExists(path.to_string()))
            }
            Err(object_store::Error::Precondition { .. }) => {
                Err(StorageError::Changed(path.to_string()))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// An object's bytes with its version, for a conditional overwrite (`put_over`).
    pub async fn get_versioned(&self, path: &str) -> Result<(Bytes, UpdateVersion)> {
        let result = self.store.get(&Path::from(path)).await?;
        let version = UpdateVersion {
            e_tag: result.meta.e_tag.clone(),
            version: result.meta.version.clone(),
        };
        Ok((result.bytes().await?, version))
    }

    /// Deletes an object; deleting one that is already gone is not an error.
    pub async fn delete(&self, path: &str) -> Result<()> {
        self.footers.remove(path);
        self.segments.remove_object(path);
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

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use futures::stream::BoxStream;
    use object_store::memory::InMemory;
    use object_store::{
        CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta,
        PutMultipartOptions, PutResult,
    };

    /// A store that overwrites where it was asked to write only if absent (or, with
    /// `creates`, only where it was asked to overwrite an unchanged object), as some
    /// S3-compatible servers do.
    #[derive(Debug)]
    struct WithoutConditionalWrites {
        store: InMemory,
        creates: bool,
    }

    impl std::fmt::Display for WithoutConditionalWrites {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("without conditional writes")
        }
    }

    #[async_trait::async_trait]
    impl ObjectStore for WithoutConditionalWrites {
        async fn put_opts(
            &self,
            location: &Path,
            payload: PutPayload,
            options: PutOptions,
        ) -> object_store::Result<PutResult> {
            let honoured = match options.mode {
                PutMode::Create if self.creates => PutOptions {
                    mode: PutMode::Create,
                    ..Default::default()
                },
                _ => PutOptions::default(),
            };
            self.store.put_opts(location, payload, honoured).await
        }
        async fn put_multipart_opts(
            &self,
            location: &Path,
            opts: PutMultipartOptions,
        ) -> object_store::Result<Box<dyn MultipartUpload>> {
            self.store.put_multipart_opts(location, opts).await
        }
        async fn get_opts(
            &self,
            location: &Path,
            options: GetOptions,
        ) -> object_store::Result<GetResult> {
            self.store.get_opts(location, options).await
        }
        fn delete_stream(
            &self,
            locations: BoxStream<'static, object_store::Result<Path>>,
        ) -> BoxStream<'static, object_store::Result<Path>> {
            self.store.delete_stream(locations)
        }
        fn list(
            &self,
            prefix: Option<&Path>,
        ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
            self.store.list(prefix)
        }
        async fn list_with_delimiter(
            &self,
            prefix: Option<&Path>,
        ) -> object_store::Result<ListResult> {
            self.store.list_with_delimiter(prefix).await
        }
        async fn copy_opts(
            &self,
            from: &Path,
            to: &Path,
            options: CopyOptions,
        ) -> object_store::Result<()> {
            self.store.copy_opts(from, to, options).await
        }
    }

    #[tokio::test]
    async fn a_store_without_conditional_writes_is_refused_and_one_with_them_opens() {
        for (creates, lacking) in [
            (false, "does not create objects only if they are absent"),
            (
                true,
                "does not overwrite objects only if they are unchanged (If-Match)",
            ),
        ] {
            let store = WithoutConditionalWrites {
                store: InMemory::new(),
                creates,
            };
            let store = Arc::new(store);
            let refused = Lake::open_store(store.clone(), "s3://lacking".into(), None).await;
            let message = refused.unwrap_err().to_string();
            assert!(message.contains(lacking), "{message}");
            // The probe leaves nothing behind.
            assert!(store.list(None).next().await.is_none());
        }
        let able = Arc::new(InMemory::new());
        let lake = Lake::open_store(able, "s3://able".into(), None)
            .await
            .unwrap();
        assert!(lake.list("cluster/").await.unwrap().is_empty());
    }
}
