//! The catalog: every table, view, log segment and data file of a lake, kept in a SlateDB
//! database under `catalog/` inside the lake, and mirrored in memory as immutable snapshots.

mod answers;
mod catalog;
mod committer;
mod deletions;
mod error;
mod forwarding;
mod keys;
mod published;
mod secrets;
mod segment_log;
mod snapshot;
mod statistics;
mod tasks;
mod types;
mod vector_index;
mod wire;

pub use answers::{ANSWER_KEY_DIGITS, ModelAnswer, ModelAnswers, is_answer_key};
pub use catalog::{Catalog, Change, ConsumerOffset, now_ms};
pub use deletions::{
    Container, DeletionVector, ROW_ADDRESS, ROW_ID, decode_deletion_vector, encode_deletion_vector,
    row_address, split_row_address,
};
pub use error::{CatalogError, Result};
pub use forwarding::Leader;
pub use pondra_storage::{DECIMAL64_MAX_PRECISION, decimal_parts, decimal_type};
pub use published::{Applied, CommitsAfter, StreamedCommit};
pub use secrets::{
    SEAL_KEY_OBJECT, SEAL_KEY_VARIABLE, SealError, SealKey, SealedSecret, SecretOptions,
};
pub use segment_log::SegmentLog;
pub use snapshot::{Snapshot, TableStatistics};
pub use statistics::{
    ColumnStatistics, DistinctSketch, column_ranges, gather_statistics, is_exact_integer,
};
pub use tasks::TaskDef;
pub use types::{
    CHANGE_TYPE, COMMIT_FIELD_IDS, COMMIT_TIMESTAMP, COMMIT_VERSION, Column, DataFile, EventTime,
    FUNCTION_SUFFIX, Fold, FunctionLanguage, HIDDEN_COLUMN, Index, KafkaFormat, Layout, LogSegment,
    MAX_PARTITIONS, OFFSET, OFFSET_FIELD_ID, PARQUET_FIELD_ID, PARTITION_SHIFT, PROCEDURE_SUFFIX,
    SegmentPayload, Signature, SqlType, StructField, TableDef, TableFormat, TableKind, Ttl,
    Watermark, field_id, function_name, join_state_name, lake_offset, macro_name, map_type,
    partition_offset, procedure_name, system_fields, value_counts_name, vector_type,
};
pub use vector_index::{IndexGraph, IndexGraphs, VectorIndex, VectorMetric, graph_object};
pub use wire::ForwardedCommit;
