//! The leader's background work on the lake: the log tail tiered into Parquet, files compacted
//! and rewritten, replaced objects deleted after the retention.

pub(crate) mod compaction;
pub(crate) mod indexing;
pub(crate) mod tiering;
