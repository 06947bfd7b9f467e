//! What a table does with the rows written to it beyond appending them: keys and constraints,
//! merge tables, rows rewritten by UPDATE, DELETE and MERGE with their change records, and
//! event time (watermarks, late rows, the state a watermark lets go), rows read by offset, and the change feed as events by offset.

pub(crate) mod change_events;
pub(crate) mod change_records;
pub(crate) mod event_time;
pub(crate) mod keyed;
pub(crate) mod merge_table;
pub(crate) mod offsets;
pub(crate) mod rewrite;
pub(crate) mod state_expiry;
