//! A local copy of a remote lake's immutable objects (ADR 0046): Parquet files under `data/` and
//! log segments under `log/` never change once written, so a copy read once serves every later
//! read, from local disk and mapped, until it is the least recently used and the cache is full.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

use crate::{Result, StorageError};

/// The name of a process's cache folder, before its process id.
const RUN_PREFIX: &str = "pondra-run-";

/// Removes the cache folders of processes that ended without removing their own.
fn remove_abandoned(parent: &std::path::Path) {
    let Ok(listing) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in listing.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(RUN_PREFIX))
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 sends nothing; it only asks whether the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if !alive {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// What the cache holds of one object.
struct Entry {
    file: PathBuf,
    bytes: u64,
    /// When it was last read, on the cache's own clock.
    used: u64,
}

/// A size-bounded folder of object copies.
pub struct ObjectCache {
    folder: PathBuf,
    capacity: u64,
    entries: Mutex<Entries>,
    clock: AtomicU64,
}

#[derive(Default)]
struct Entries {
    by_path: HashMap<String, Entry>,
    held: u64,
}

impl std::fmt::Debug for ObjectCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectCache")
            .field("folder", &self.folder)
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

impl ObjectCache {
    /// A cache of at most `capacity` bytes in a folder of its own under `parent` (made if
    /// missing). The folder is removed when the cache is dropped, and so are those of earlier
    /// processes that are no longer running: nothing else under `parent` is touched.
    pub fn new(parent: PathBuf, capacity: u64) -> Result<ObjectCache> {
        let fail = |e: std::io::Error| StorageError::Folder {
            path: parent.display().to_string(),
            message: e.to_string(),
        };
        std::fs::create_dir_all(&parent).map_err(fail)?;
        remove_abandoned(&parent);
        let folder = parent.join(format!("{RUN_PREFIX}{}", std::process::id()));
        if folder.exists() {
            std::fs::remove_dir_all(&folder).map_err(fail)?;
        }
        std::fs::create_dir_all(&folder).map_err(fail)?;
        Ok(ObjectCache {
            folder,
            capacity,
            entries: Mutex::new(Entries::default()),
            clock: AtomicU64::new(0),
        })
    }

    /// Whether objects at `path` can be cached: they never change.
    pub fn holds(path: &str) -> bool {
        path.starts_with("data/") || path.starts_with("log/")
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The cached copy of `path`, mapped, if there is one.
    pub fn get(&self, path: &str) -> Option<Bytes> {
        let file = {
            let mut entries = self.entries();
            let entry = entries.by_path.get_mut(path)?;
            entry.used = self.clock.fetch_add(1, Ordering::Relaxed);
            entry.file.clone()
        };
        let opened = std::fs::File::open(&file).ok()?;
        // SAFETY: the cache writes each copy once, under a fresh name, and removes it only when
        // evicted; a mapping keeps an evicted copy's pages until it is dropped.
        let map = unsafe { memmap2::Mmap::map(&opened) }.ok()?;
        Some(Bytes::from_owner(map))
    }

    /// Keeps a copy of `bytes` for `path`, evicting the least recently used copies past the
    /// capacity. A copy that cannot be written is left out: the cache is only a cache.
    pub fn put(&self, path: &str, bytes: &Bytes) {
        let size = bytes.len() as u64;
        if size > self.capacity / 2 {
            return;
        }
        let name = format!("{}", self.clock.fetch_add(1, Ordering::Relaxed));
        let file = self.folder.join(name);
        if std::fs::write(&file, bytes).is_err() {
            return;
        }
        let mut entries = self.entries();
        let used = self.clock.fetch_add(1, Ordering::Relaxed);
        if let Some(old) = entries.by_path.insert(
            path.to_string(),
            Entry {
                file,
                bytes: size,
                used,
            },
        ) {
            entries.held -= old.bytes;
            let _ = std::fs::remove_file(old.file);
        }
        entries.held += size;
        while entries.held > self.capacity {
            let Some(oldest) = entries
                .by_path
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(p, _)| p.clone())
            else {
                break;
            };
            let evicted = entries.by_path.remove(&oldest).expect("an entry");
            entries.held -= evicted.bytes;
            let _ = std::fs::remove_file(evicted.file);
        }
    }

    /// The bytes the cache holds now.
    pub fn held(&self) -> u64 {
        self.entries().held
    }
}

impl Drop for ObjectCache {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.folder);
    }
}

/// The default cache size: a tenth of the free space of `folder`'s disk, at least 1 GiB.
pub fn default_capacity(folder: &std::path::Path) -> u64 {
    let free = free_bytes(folder).unwrap_or(0);
    (free / 10).max(1 << 30)
}

fn free_bytes(folder: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let probe = folder
        .ancestors()
        .find(|p| p.exists())
        .unwrap_or(std::path::Path::new("/"));
    let path = std::ffi::CString::new(probe.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the struct it is given for a NUL-terminated path.
    unsafe {
        let mut stats: libc::statvfs = std::mem::zeroed();
        (libc::statvfs(path.as_ptr(), &mut stats) == 0)
            .then(|| stats.f_bavail as u64 * stats.f_frsize as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_kept_within_the_capacity_least_recently_used_first_out() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ObjectCache::new(dir.path().join("cache"), 300).unwrap();
        let object = |fill: u8| Bytes::from(vec![fill; 100]);
        cache.put("data/t/a.parquet", &object(1));
        cache.put("data/t/b.parquet", &object(2));
        assert_eq!(cache.get("data/t/a.parquet").unwrap()[0], 1);
        cache.put("data/t/c.parquet", &object(3));
        cache.put("data/t/d.parquet", &object(4));
        // b was used least recently.
        assert!(cache.get("data/t/b.parquet").is_none());
        assert_eq!(cache.get("data/t/a.parquet").unwrap()[0], 1);
        assert!(cache.held() <= 300);
        assert!(ObjectCache::holds("log/t/x.arrows"));
        assert!(!ObjectCache::holds("catalog/manifest"));
    }
}
