//! A table's log tail as snapshots hold it: shared between snapshots in chunks, so that a
//! commit that appends copies one chunk, not the whole tail. A busy table's tail holds tens of
//! thousands of segments between tiering passes, and every commit makes a snapshot (ADR 0046).

use std::ops::Index;
use std::sync::Arc;

use crate::types::LogSegment;

/// Segments per chunk: a commit that appends copies at most this many.
const CHUNK: usize = 256;

/// Log segments in commit order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SegmentLog {
    /// Every chunk but the last holds exactly `CHUNK` segments; none is empty.
    chunks: Vec<Arc<Vec<LogSegment>>>,
    len: usize,
}

/// The log of a table with no segments.
pub(crate) static EMPTY: SegmentLog = SegmentLog {
    chunks: Vec::new(),
    len: 0,
};

impl SegmentLog {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &LogSegment> + Clone + '_ {
        self.chunks.iter().flat_map(|chunk| chunk.iter())
    }

    pub fn get(&self, position: usize) -> Option<&LogSegment> {
        self.chunks.get(position / CHUNK)?.get(position % CHUNK)
    }

    pub fn last(&self) -> Option<&LogSegment> {
        self.chunks.last()?.last()
    }

    /// Adds a segment after the others; it must not be older than the last.
    pub(crate) fn push(&mut self, segment: LogSegment) {
        debug_assert!(
            self.last().is_none_or(|last| last.commit <= segment.commit),
            "segments stay in commit order"
        );
        match self.chunks.last_mut() {
            Some(last) if last.len() < CHUNK => Arc::make_mut(last).push(segment),
            _ => {
                let mut chunk = Vec::with_capacity(CHUNK);
                chunk.push(segment);
                self.chunks.push(Arc::new(chunk));
            }
        }
        self.len += 1;
    }

    /// Removes the segments `remove` picks and returns them, keeping the others in order.
    pub(crate) fn remove_where(
        &mut self,
        mut remove: impl FnMut(&LogSegment) -> bool,
    ) -> Vec<LogSegment> {
        let (removed, kept): (Vec<LogSegment>, Vec<LogSegment>) =
            self.iter().cloned().partition(|segment| remove(segment));
        *self = kept.into_iter().collect();
        removed
    }
}

impl FromIterator<LogSegment> for SegmentLog {
    fn from_iter<I: IntoIterator<Item = LogSegment>>(segments: I) -> Self {
        let mut log = SegmentLog::default();
        for segment in segments {
            log.push(segment);
        }
        log
    }
}

impl Index<usize> for SegmentLog {
    type Output = LogSegment;

    fn index(&self, position: usize) -> &LogSegment {
        self.get(position)
            .unwrap_or_else(|| panic!("segment {position} of a log of {} segments", self.len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::SegmentPayload;

    fn segment(commit: u64) -> LogSegment {
        LogSegment {
            table_id: 1,
            commit,
            index: 0,
            rows: commit,
            first_offset: None,
            committed_at_ms: 0,
            payload: SegmentPayload::Object(format!("log/t/{commit}")),
            ranges: Vec::new(),
            column_ids: Vec::new(),
        }
    }

    #[test]
    fn a_copy_shares_every_full_chunk_and_sees_only_its_own_segments() {
        let mut log: SegmentLog = (0..(CHUNK as u64 * 3 + 10)).map(segment).collect();
        let before = log.clone();
        log.push(segment(10_000));
        assert_eq!(before.len() + 1, log.len());
        assert_eq!(before.iter().count(), before.len());
        assert!(Arc::ptr_eq(&before.chunks[2], &log.chunks[2]));
        assert!(!Arc::ptr_eq(&before.chunks[3], &log.chunks[3]));
        assert_eq!(log[CHUNK * 3 + 10].commit, 10_000);
        assert_eq!(log.get(log.len()), None);
        let commits: Vec<u64> = log.iter().rev().take(2).map(|s| s.commit).collect();
        assert_eq!(commits, [10_000, CHUNK as u64 * 3 + 9]);
    }

    #[test]
    fn removing_keeps_the_rest_in_order_and_in_full_chunks() {
        let mut log: SegmentLog = (0..(CHUNK as u64 * 2)).map(segment).collect();
        let removed = log.remove_where(|s| s.commit % 3 == 0);
        assert_eq!(removed.len(), (CHUNK * 2).div_ceil(3));
        assert!(log.iter().all(|s| s.commit % 3 != 0));
        assert!(log.iter().is_sorted_by_key(|s| s.commit));
        assert_eq!(log.chunks[0].len(), CHUNK);
        assert_eq!(log.len(), log.iter().count());
    }
}
