//! Decoded log segments, kept per process. A segment never changes once written, and a view's
//! join state or count table lives in the log tail until tiering: every commit that touches
//! it reads the same segments again, and decompressing them was most of such a commit's time.

use std::collections::HashMap;
use std::sync::Mutex;

use arrow::record_batch::RecordBatch;
use bytes::Bytes;

use crate::Result;
use crate::log_segment::decode_log_segment;

/// Bytes of decoded batches held at most; past it the least recently read segments go.
const BYTES_HELD: usize = 256 << 20;

/// What names a segment's bytes. An object's lake path is never reused. An inline segment's
/// bytes are named by their address and length: the entry holds a clone of them, so while it
/// lives no other segment's bytes can take that address, and bytes are never changed in place.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum SegmentName {
    Object(String),
    Inline { address: usize, len: usize },
}

#[derive(Debug)]
struct Decoded {
    batches: Vec<RecordBatch>,
    bytes: usize,
    last_read: u64,
    /// Pins an inline segment's bytes, which its name is the address of.
    _pinned: Option<Bytes>,
}

#[derive(Debug, Default)]
struct Segments {
    by_name: HashMap<SegmentName, Decoded>,
    bytes: usize,
    reads: u64,
}

/// Decoded segments by name, the least recently read dropped past [`BYTES_HELD`].
#[derive(Debug, Default)]
pub struct DecodedSegments {
    segments: Mutex<Segments>,
}

impl DecodedSegments {
    fn segments(&self) -> std::sync::MutexGuard<'_, Segments> {
        self.segments.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The batches of a segment that rides inside its commit.
    pub fn inline(&self, bytes: &Bytes) -> Result<Vec<RecordBatch>> {
        let name = SegmentName::Inline {
            address: bytes.as_ptr() as usize,
            len: bytes.len(),
        };
        self.read(name, Some(bytes), || decode_log_segment(bytes))
    }

    /// The batches of the segment object at `path`, fetched by `fetch` when not held.
    pub fn object(
        &self,
        path: &str,
        fetch: impl FnOnce() -> Result<Bytes>,
    ) -> Result<Vec<RecordBatch>> {
        let name = SegmentName::Object(path.to_string());
        self.read(name, None, || decode_log_segment(&fetch()?))
    }

    fn read(
        &self,
        name: SegmentName,
        pinned: Option<&Bytes>,
        decode: impl FnOnce() -> Result<Vec<RecordBatch>>,
    ) -> Result<Vec<RecordBatch>> {
        {
            let mut segments = self.segments();
            segments.reads += 1;
            let now = segments.reads;
            if let Some(held) = segments.by_name.get_mut(&name) {
                held.last_read = now;
                return Ok(held.batches.clone());
            }
        }
        // Decoded outside the lock: two threads may decode one segment at once, and the
        // second to finish replaces the first's equal batches.
        let batches = decode()?;
        let bytes = batches.iter().map(|b| b.get_array_memory_size()).sum();
        if bytes <= BYTES_HELD / 8 {
            self.hold(name, pinned, batches.clone(), bytes);
        }
        Ok(batches)
    }

    fn hold(
        &self,
        name: SegmentName,
        pinned: Option<&Bytes>,
        batches: Vec<RecordBatch>,
        bytes: usize,
    ) {
        let mut segments = self.segments();
        segments.reads += 1;
        let decoded = Decoded {
            batches,
            bytes,
            last_read: segments.reads,
            _pinned: pinned.cloned(),
        };
        if let Some(replaced) = segments.by_name.insert(name, decoded) {
            segments.bytes -= replaced.bytes;
        }
        segments.bytes += bytes;
        if segments.bytes > BYTES_HELD {
            segments.drop_least_recent();
        }
    }

    /// Forgets the segment object at `path`, deleted.
    pub fn remove_object(&self, path: &str) {
        let mut segments = self.segments();
        if let Some(removed) = segments
            .by_name
            .remove(&SegmentName::Object(path.to_string()))
        {
            segments.bytes -= removed.bytes;
        }
    }

    /// Bytes of decoded batches held.
    #[cfg(test)]
    fn bytes_held(&self) -> usize {
        self.segments().bytes
    }
}

impl Segments {
    /// Drops the least recently read segments until at most three quarters of the budget are
    /// held, so that a full cache sorts its entries once per many inserts rather than each.
    fn drop_least_recent(&mut self) {
        let mut by_age: Vec<(u64, SegmentName)> = self
            .by_name
            .iter()
            .map(|(name, held)| (held.last_read, name.clone()))
            .collect();
        by_age.sort_unstable_by_key(|(last_read, _)| *last_read);
        for (_, name) in by_age {
            if self.bytes <= BYTES_HELD / 4 * 3 {
                break;
            }
            let removed = self.by_name.remove(&name).expect("a listed entry");
            self.bytes -= removed.bytes;
        }
        debug_assert!(self.bytes <= BYTES_HELD);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::Int64Array;
    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;
    use crate::log_segment::encode_log_segment;

    fn segment(rows: i64) -> Bytes {
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, false)]));
        let values = Int64Array::from_iter_values(0..rows);
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(values)]).unwrap();
        encode_log_segment(&schema, &[batch]).unwrap()
    }

    #[test]
    fn a_segment_is_decoded_once_and_read_again_from_memory() {
        let cache = DecodedSegments::default();
        let bytes = segment(100);
        let mut fetches = 0;
        for _ in 0..3 {
            let batches = cache
                .object("log/1", || {
                    fetches += 1;
                    Ok(bytes.clone())
                })
                .unwrap();
            assert_eq!(batches[0].num_rows(), 100);
        }
        assert_eq!(fetches, 1);
        let inline = segment(7);
        assert_eq!(cache.inline(&inline).unwrap()[0].num_rows(), 7);
        assert_eq!(cache.inline(&inline).unwrap()[0].num_rows(), 7);
        assert_eq!(cache.segments().by_name.len(), 2);
        cache.remove_object("log/1");
        assert_eq!(cache.segments().by_name.len(), 1);
    }

    #[test]
    fn the_least_recently_read_segments_go_past_the_budget() {
        let cache = DecodedSegments::default();
        // Each segment decodes to 2 MB: the budget holds 128 of them.
        let bytes = segment(256 * 1024);
        for i in 0..200 {
            cache
                .object(&format!("log/{i}"), || Ok(bytes.clone()))
                .unwrap();
            // The first segment is read after every other, so it is never the least recent.
            cache.object("log/0", || panic!("log/0 is held")).unwrap();
        }
        assert!(cache.bytes_held() <= BYTES_HELD);
        let held = cache.segments();
        assert!(
            held.by_name
                .contains_key(&SegmentName::Object("log/0".into()))
        );
        assert!(
            !held
                .by_name
                .contains_key(&SegmentName::Object("log/1".into()))
        );
        assert!(
            held.by_name
                .contains_key(&SegmentName::Object("log/199".into()))
        );
    }
}
