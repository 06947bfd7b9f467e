//! Answers kept for the console's grid to page through (ADR 0080): a cell's query runs once,
//! and the grid fetches the rows in view. Bounded in answers and bytes, least recently used
//! first out.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;

/// Answers kept at most.
const KEPT_ANSWERS: usize = 32;

/// Bytes of answers kept at most.
const KEPT_BYTES: usize = 256 << 20;

/// One query's answer.
pub(super) struct Answer {
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
    pub rows: usize,
    bytes: usize,
}

impl Answer {
    pub fn new(schema: SchemaRef, batches: Vec<RecordBatch>) -> Answer {
        let rows = batches.iter().map(RecordBatch::num_rows).sum();
        let bytes = batches.iter().map(RecordBatch::get_array_memory_size).sum();
        Answer {
            schema,
            batches,
            rows,
            bytes,
        }
    }

    /// Rows `offset..offset + limit` (fewer at the end), as slices of the batches.
    pub fn page(&self, offset: usize, limit: usize) -> Vec<RecordBatch> {
        let mut page = Vec::new();
        let (mut skip, mut left) = (offset, limit);
        for batch in &self.batches {
            if left == 0 {
                break;
            }
            if skip >= batch.num_rows() {
                skip -= batch.num_rows();
                continue;
            }
            let taken = (batch.num_rows() - skip).min(left);
            page.push(batch.slice(skip, taken));
            left -= taken;
            skip = 0;
        }
        page
    }
}

#[derive(Default)]
pub(super) struct Answers {
    kept: Mutex<VecDeque<(u64, std::sync::Arc<Answer>)>>,
    next_id: AtomicU64,
}

impl Answers {
    /// Keeps `answer`; returns its id. An answer larger than the cache is not kept (id 0).
    pub fn keep(&self, answer: std::sync::Arc<Answer>) -> u64 {
        if answer.bytes > KEPT_BYTES {
            return 0;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let mut kept = self.kept.lock().expect("answers lock");
        kept.push_back((id, answer));
        while kept.len() > KEPT_ANSWERS
            || kept.iter().map(|(_, a)| a.bytes).sum::<usize>() > KEPT_BYTES
        {
            kept.pop_front();
        }
        id
    }

    /// The answer kept under `id`, now the most recently used.
    pub fn get(&self, id: u64) -> Option<std::sync::Arc<Answer>> {
        let mut kept = self.kept.lock().expect("answers lock");
        let at = kept.iter().position(|(i, _)| *i == id)?;
        let entry = kept.remove(at).expect("found");
        let answer = entry.1.clone();
        kept.push_back(entry);
        Some(answer)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{AsArray, Int32Array};
    use arrow::datatypes::{DataType, Field, Int32Type, Schema};

    use super::*;

    /// An answer of one Int32 column, a batch for each range of values.
    fn answer(batches: &[std::ops::Range<i32>]) -> Answer {
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int32, false)]));
        let batches = batches
            .iter()
            .map(|r| {
                let values = Arc::new(Int32Array::from_iter_values(r.clone()));
                RecordBatch::try_new(schema.clone(), vec![values]).unwrap()
            })
            .collect();
        Answer::new(schema, batches)
    }

    fn values(page: &[RecordBatch]) -> Vec<i32> {
        page.iter()
            .flat_map(|b| b.column(0).as_primitive::<Int32Type>().values().to_vec())
            .collect()
    }

    #[test]
    fn pages_cross_batches_and_stop_at_the_end() {
        let answer = answer(&[0..5, 5..8, 8..20]);
        assert_eq!(answer.rows, 20);
        assert_eq!(values(&answer.page(3, 4)), [3, 4, 5, 6]);
        assert_eq!(values(&answer.page(18, 10)), [18, 19]);
        assert!(answer.page(25, 10).is_empty());
    }

    #[test]
    fn the_least_recently_used_answer_leaves_first() {
        let answers = Answers::default();
        let ids: Vec<u64> = (0..KEPT_ANSWERS)
            .map(|_| answers.keep(Arc::new(answer(&[0..1, 1..2]))))
            .collect();
        assert!(answers.get(ids[0]).is_some(), "used again, so kept");
        answers.keep(Arc::new(answer(&[0..1, 1..2])));
        assert!(answers.get(ids[0]).is_some());
        assert!(
            answers.get(ids[1]).is_none(),
            "the least recently used left"
        );
    }
}
