//! Files read in place wherever they are (ADR 0046): a local path, mapped; or an object of a
//! bucket or a web server, read by ranged GETs. A Parquet file in a bucket is read footer
//! first, then only the column chunks a read needs, several at once.

use std::io::Read;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::errors::ParquetError;
use parquet::file::reader::{ChunkReader, Length};

use crate::location::Location;
use crate::{Result, StorageError};

/// Where a file read in place lives.
#[derive(Clone, Debug)]
pub enum FileSource {
    Local(PathBuf),
    Remote(Arc<RemoteFile>),
    /// A file already in memory (mapped from a cache, or held), named for messages: a
    /// bucket lake's data files are read through its local cache this way.
    Held {
        name: String,
        bytes: Bytes,
    },
}

/// An object of a remote store, with its size (taken once, when it was named).
pub struct RemoteFile {
    store: Arc<dyn ObjectStore>,
    path: Path,
    size: u64,
    url: String,
}

impl std::fmt::Debug for RemoteFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.url)
    }
}

/// The bytes a remote read asks for at least: page headers are read a few bytes at a time.
const READ_AHEAD: u64 = 64 << 10;

/// The runtime remote reads run on: reads are made from threads of any kind (rayon's, a
/// tokio worker's, the shell's), which wait for them.
fn io_runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("pondra-io")
            .enable_all()
            .build()
            .expect("the I/O runtime starts")
    })
}

/// Runs `future` on the I/O runtime and waits for it.
pub fn block_on_io<T: Send + 'static>(
    future: impl Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    match futures::executor::block_on(io_runtime().spawn(future)) {
        Ok(result) => result,
        Err(e) => Err(StorageError::Location {
            location: "a remote read".into(),
            message: e.to_string(),
        }),
    }
}

impl FileSource {
    /// An object of `store`, as `head` described it, named `url` in messages.
    pub(crate) fn remote(
        store: Arc<dyn ObjectStore>,
        meta: object_store::ObjectMeta,
        url: String,
    ) -> FileSource {
        FileSource::Remote(Arc::new(RemoteFile {
            store,
            path: meta.location,
            size: meta.size,
            url,
        }))
    }

    /// The files a path, a URL or a glob (`*` and `?` in the last part) names, in name order.
    pub fn resolve(pattern: &str) -> Result<Vec<FileSource>> {
        let files = match Location::is_remote(pattern) {
            true => resolve_remote(pattern)?,
            false => resolve_local(pattern.strip_prefix("file://").unwrap_or(pattern))?,
        };
        match files.is_empty() {
            true => Err(StorageError::NoFileMatches(pattern.to_string())),
            false => Ok(files),
        }
    }

    /// The path or URL, for messages and for naming the file in plans.
    pub fn name(&self) -> String {
        match self {
            FileSource::Local(path) => path.display().to_string(),
            FileSource::Remote(file) => file.url.clone(),
            FileSource::Held { name, .. } => name.clone(),
        }
    }

    pub fn size(&self) -> Result<u64> {
        match self {
            FileSource::Local(path) => std::fs::metadata(path)
                .map(|m| m.len())
                .map_err(|e| local_error(path, e)),
            FileSource::Remote(file) => Ok(file.size),
            FileSource::Held { bytes, .. } => Ok(bytes.len() as u64),
        }
    }

    /// The whole file: mapped when local, one GET when remote.
    pub fn read_all(&self) -> Result<Bytes> {
        match self {
            FileSource::Local(path) => map_local(path),
            FileSource::Held { bytes, .. } => Ok(bytes.clone()),
            FileSource::Remote(file) => {
                let file = file.clone();
                block_on_io(async move {
                    let got = file.store.get(&file.path).await?;
                    Ok(got.bytes().await?)
                })
            }
        }
    }

    /// The file for a Parquet reader: mapped when local, read by ranges on demand when remote.
    pub(crate) fn chunks(&self) -> Result<FileChunks> {
        match self {
            FileSource::Local(path) => Ok(FileChunks::Mapped(map_local(path)?)),
            FileSource::Held { bytes, .. } => Ok(FileChunks::Mapped(bytes.clone())),
            FileSource::Remote(file) => Ok(FileChunks::Ranged(Arc::new(RangedFile {
                file: file.clone(),
                held: Mutex::new(Vec::new()),
            }))),
        }
    }
}

/// Whether a file name says JSON objects, one per line.
pub fn is_json_file(name: &str) -> bool {
    [".json", ".ndjson", ".jsonl"]
        .iter()
        .any(|e| name.ends_with(e))
}

/// Writes `bytes` to a local path or a URL as one object, replacing what was there.
pub fn write_file(location: &str, bytes: Bytes) -> Result<()> {
    match Location::parse(location)? {
        Location::Folder(path) => std::fs::write(&path, &bytes).map_err(|e| local_error(&path, e)),
        Location::Remote { store, prefix, .. } => block_on_io(async move {
            store.put(&prefix, bytes.into()).await?;
            Ok(())
        }),
    }
}

/// A local file's bytes, mapped into memory rather than read (ADR 0031): pages are
/// decompressed straight from the page cache, with no copy into fresh buffers.
fn map_local(path: &std::path::Path) -> Result<Bytes> {
    let file = std::fs::File::open(path).map_err(|e| local_error(path, e))?;
    // SAFETY: Parquet files are never changed in place: the lake writes each object once,
    // and a file read in place that is truncated while mapped is the one hazard, the same
    // as for any engine that maps its input.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| local_error(path, e))?;
    Ok(Bytes::from_owner(map))
}

fn local_error(path: &std::path::Path, error: std::io::Error) -> StorageError {
    StorageError::Location {
        location: path.display().to_string(),
        message: error.to_string(),
    }
}

fn has_wildcards(text: &str) -> bool {
    text.contains(['*', '?'])
}

/// Whether `name` matches `pattern`, where `*` matches any run of characters and `?` one.
pub fn glob_matches(pattern: &[u8], name: &[u8]) -> bool {
    match (pattern.first(), name.first()) {
        (None, None) => true,
        (Some(b'*'), _) => {
            glob_matches(&pattern[1..], name)
                || (!name.is_empty() && glob_matches(pattern, &name[1..]))
        }
        (Some(b'?'), Some(_)) => glob_matches(&pattern[1..], &name[1..]),
        (Some(p), Some(n)) if p == n => glob_matches(&pattern[1..], &name[1..]),
        _ => false,
    }
}

fn resolve_local(pattern: &str) -> Result<Vec<FileSource>> {
    let path = std::path::Path::new(pattern);
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if !has_wildcards(name) {
        return Ok(match path.exists() {
            true => vec![FileSource::Local(path.to_path_buf())],
            false => Vec::new(),
        });
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let listing = std::fs::read_dir(&dir).map_err(|e| local_error(&dir, e))?;
    let mut paths: Vec<PathBuf> = listing
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| glob_matches(name.as_bytes(), n.as_bytes()))
        })
        .collect();
    paths.sort();
    Ok(paths.into_iter().map(FileSource::Local).collect())
}

fn resolve_remote(pattern: &str) -> Result<Vec<FileSource>> {
    let (dir, name) = pattern.rsplit_once('/').unwrap_or((pattern, ""));
    if has_wildcards(dir) {
        return Err(StorageError::Location {
            location: pattern.to_string(),
            message: "wildcards are read in the last part of a URL only".into(),
        });
    }
    let wildcards = has_wildcards(name);
    let named = if wildcards { dir } else { pattern };
    let Location::Remote { store, prefix, .. } = Location::parse(named)? else {
        unreachable!("a URL that is not file:// names a remote store");
    };
    let remote = |meta, url| FileSource::remote(store.clone(), meta, url);
    if !wildcards {
        let found = block_on_io(head(store.clone(), prefix))?;
        return Ok(found
            .map(|meta| remote(meta, pattern.to_string()))
            .into_iter()
            .collect());
    }
    let base = &pattern[..pattern.len() - name.len()];
    let mut files: Vec<(String, object_store::ObjectMeta)> =
        block_on_io(list(store.clone(), prefix))?
            .into_iter()
            .filter_map(|meta| {
                let file = meta.location.filename()?.to_string();
                glob_matches(name.as_bytes(), file.as_bytes())
                    .then(|| (format!("{base}{file}"), meta))
            })
            .collect();
    files.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(files
        .into_iter()
        .map(|(url, meta)| remote(meta, url))
        .collect())
}

/// The object at `path`, if there is one.
async fn head(store: Arc<dyn ObjectStore>, path: Path) -> Result<Option<object_store::ObjectMeta>> {
    match store.head(&path).await {
        Ok(meta) => Ok(Some(meta)),
        Err(object_store::Error::NotFound { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The objects right under `prefix` (the whole store when it is empty).
async fn list(store: Arc<dyn ObjectStore>, prefix: Path) -> Result<Vec<object_store::ObjectMeta>> {
    let under = (!prefix.as_ref().is_empty()).then_some(&prefix);
    Ok(store.list_with_delimiter(under).await?.objects)
}

/// A Parquet file for the reader: a local file's mapped bytes, or a remote file read by ranges.
#[derive(Clone)]
pub(crate) enum FileChunks {
    Mapped(Bytes),
    Ranged(Arc<RangedFile>),
}

/// A remote file's ranges fetched so far; what is missing is fetched when asked for.
pub(crate) struct RangedFile {
    file: Arc<RemoteFile>,
    /// Fetched ranges by start; they may overlap.
    held: Mutex<Vec<(u64, Bytes)>>,
}

impl RangedFile {
    fn held(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Bytes)>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn find(&self, start: u64, length: usize) -> Option<Bytes> {
        let held = self.held();
        held.iter().find_map(|(at, bytes)| {
            let end = at + bytes.len() as u64;
            (*at <= start && start + length as u64 <= end).then(|| {
                let from = (start - at) as usize;
                bytes.slice(from..from + length)
            })
        })
    }

    fn keep(&self, ranges: &[Range<u64>], fetched: Vec<Bytes>) {
        let mut held = self.held();
        for (range, bytes) in ranges.iter().zip(fetched) {
            debug_assert_eq!(bytes.len() as u64, range.end - range.start);
            held.push((range.start, bytes));
        }
        held.sort_by_key(|(at, _)| *at);
    }

    /// Fetches `ranges` (those not held yet) with concurrent ranged GETs.
    pub(crate) fn prefetch(&self, ranges: impl IntoIterator<Item = Range<u64>>) -> Result<()> {
        let missing: Vec<Range<u64>> = ranges
            .into_iter()
            .filter(|r| r.end > r.start)
            .filter(|r| self.find(r.start, (r.end - r.start) as usize).is_none())
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let file = self.file.clone();
        let asked = missing.clone();
        let fetched =
            block_on_io(async move { Ok(file.store.get_ranges(&file.path, &asked).await?) })?;
        self.keep(&missing, fetched);
        Ok(())
    }

    fn bytes(&self, start: u64, length: usize) -> Result<Bytes> {
        if let Some(bytes) = self.find(start, length) {
            return Ok(bytes);
        }
        let size = self.file.size;
        let end = (start + (length as u64).max(READ_AHEAD)).min(size);
        if start + length as u64 > size {
            return Err(StorageError::Location {
                location: self.file.url.clone(),
                message: format!("a read past the end of the file ({size} bytes)"),
            });
        }
        self.prefetch(std::iter::once(start..end))?;
        self.find(start, length)
            .ok_or_else(|| StorageError::Location {
                location: self.file.url.clone(),
                message: "the store answered with fewer bytes than asked".into(),
            })
    }
}

impl FileChunks {
    /// Fetches what reading `leaves` (leaf column indices) of `row_group` needs, at once.
    pub(crate) fn prefetch_columns(
        &self,
        metadata: &parquet::file::metadata::ParquetMetaData,
        row_group: usize,
        leaves: impl Fn(usize) -> bool,
    ) -> Result<()> {
        let FileChunks::Ranged(file) = self else {
            return Ok(());
        };
        let group = metadata.row_group(row_group);
        let ranges: Vec<Range<u64>> = (0..group.num_columns())
            .filter(|leaf| leaves(*leaf))
            .map(|leaf| {
                let (start, length) = group.column(leaf).byte_range();
                start..start + length
            })
            .collect();
        file.prefetch(ranges)
    }

    /// Fetches the file's last bytes, where its footer is, in one GET.
    pub(crate) fn prefetch_footer(&self) -> Result<()> {
        if let FileChunks::Ranged(file) = self {
            let size = file.file.size;
            file.prefetch(std::iter::once(size.saturating_sub(READ_AHEAD)..size))?;
        }
        Ok(())
    }
}

impl Length for FileChunks {
    fn len(&self) -> u64 {
        match self {
            FileChunks::Mapped(bytes) => bytes.len() as u64,
            FileChunks::Ranged(file) => file.file.size,
        }
    }
}

fn parquet_error(error: StorageError) -> ParquetError {
    ParquetError::External(Box::new(error))
}

impl ChunkReader for FileChunks {
    type T = ChunkRead;

    fn get_read(&self, start: u64) -> parquet::errors::Result<ChunkRead> {
        Ok(ChunkRead {
            file: self.clone(),
            at: start,
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        match self {
            FileChunks::Mapped(bytes) => {
                let end = start as usize + length;
                if end > bytes.len() {
                    return Err(ParquetError::EOF(format!(
                        "a read of {length} bytes at {start} past the end ({})",
                        bytes.len()
                    )));
                }
                Ok(bytes.slice(start as usize..end))
            }
            FileChunks::Ranged(file) => file.bytes(start, length).map_err(parquet_error),
        }
    }
}

/// A reader from an offset of a file on to its end.
pub(crate) struct ChunkRead {
    file: FileChunks,
    at: u64,
}

impl Read for ChunkRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.file.len().saturating_sub(self.at);
        let length = (buf.len() as u64).min(left).min(READ_AHEAD) as usize;
        if length == 0 {
            return Ok(0);
        }
        let bytes = self
            .file
            .get_bytes(self.at, length)
            .map_err(std::io::Error::other)?;
        buf[..length].copy_from_slice(&bytes);
        self.at += length as u64;
        Ok(length)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_names() {
        assert!(glob_matches(b"*.parquet", b"part-1.parquet"));
        assert!(glob_matches(b"part-?.csv", b"part-1.csv"));
        assert!(!glob_matches(b"part-?.csv", b"part-10.csv"));
        assert!(!glob_matches(b"*.parquet", b"a.csv"));
    }

    #[test]
    fn ranged_reads_serve_what_was_fetched_and_fetch_what_was_not() {
        let store = Arc::new(object_store::memory::InMemory::new());
        let body: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let path = Path::from("f.bin");
        let (put_store, put_path, put_body) = (store.clone(), path.clone(), body.clone());
        block_on_io(async move {
            put_store.put(&put_path, put_body.into()).await?;
            Ok(())
        })
        .unwrap();
        let file = Arc::new(RemoteFile {
            store,
            path,
            size: body.len() as u64,
            url: "memory:///f.bin".into(),
        });
        let chunks = FileSource::Remote(file).chunks().unwrap();
        chunks.prefetch_footer().unwrap();
        let tail = chunks.get_bytes(199_990, 10).unwrap();
        assert_eq!(&tail[..], &body[199_990..]);
        let middle = chunks.get_bytes(70_000, 1_000).unwrap();
        assert_eq!(&middle[..], &body[70_000..71_000]);
        let mut read = Vec::new();
        chunks
            .get_read(150_000)
            .unwrap()
            .read_to_end(&mut read)
            .unwrap();
        assert_eq!(&read[..], &body[150_000..]);
        assert!(chunks.get_bytes(199_999, 2).is_err());
    }
}
