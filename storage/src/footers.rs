//! Parsed footers of a lake's data files. A data file never changes once written, so a scan
//! parses each file's footer (and its page index) once per process rather than once per query.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::parquet_file::ParquetFooter;

/// Footers held at most: past it the cache starts over, which costs a parse per file again
/// and bounds what files replaced long ago (by other processes too) leave behind.
const FOOTERS_HELD: usize = 8192;

/// Footers by the lake path of their file.
#[derive(Debug, Default)]
pub struct FooterCache {
    footers: Mutex<HashMap<String, ParquetFooter>>,
}

impl FooterCache {
    fn footers(&self) -> std::sync::MutexGuard<'_, HashMap<String, ParquetFooter>> {
        self.footers.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn get(&self, path: &str) -> Option<ParquetFooter> {
        self.footers().get(path).cloned()
    }

    pub fn put(&self, path: &str, footer: ParquetFooter) {
        let mut footers = self.footers();
        if footers.len() >= FOOTERS_HELD {
            footers.clear();
        }
        footers.insert(path.to_string(), footer);
    }

    /// Forgets the footer of a file deleted.
    pub fn remove(&self, path: &str) {
        self.footers().remove(path);
    }
}
