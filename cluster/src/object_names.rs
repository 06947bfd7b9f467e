//! Names of the objects a node writes into the lake, and when a log segment rides inside the
//! catalog commit instead of becoming an object of its own.

use std::sync::atomic::{AtomicU64, Ordering};

/// Log segments smaller than this ride inside the catalog commit; larger ones become objects.
pub const INLINE_SEGMENT_LIMIT: usize = 64 * 1024;

static OBJECT_SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// A name no other object of this lake has: time, process and a per-process sequence.
pub(crate) fn unique_name() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let sequence = OBJECT_SEQUENCE.fetch_add(1, Ordering::Relaxed);
    format!("{nanos:x}-{:x}-{sequence:x}", std::process::id())
}
