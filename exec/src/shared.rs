//! The rows of aggregations that one query computes more than once (ADR 0019): physical
//! planning numbers them (`shared` on the plan's aggregation), and the first occurrence to run
//! keeps its rows here for the others.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow::array::RecordBatch;

#[derive(Default)]
pub struct SharedAggregates {
    rows: Mutex<HashMap<usize, Arc<Vec<RecordBatch>>>>,
}

impl SharedAggregates {
    pub fn get(&self, number: usize) -> Option<Arc<Vec<RecordBatch>>> {
        let rows = self.rows.lock().expect("shared rows lock");
        rows.get(&number).cloned()
    }

    pub fn put(&self, number: usize, rows: Arc<Vec<RecordBatch>>) {
        let mut shared = self.rows.lock().expect("shared rows lock");
        shared.insert(number, rows);
    }
}
