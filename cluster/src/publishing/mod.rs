//! Tables published for other engines (ADR 0058): Delta Lake logs and Iceberg metadata written
//! over the table's own Parquet files.

pub(crate) mod delta;
pub(crate) mod delta_checkpoint;
pub(crate) mod iceberg;
pub(crate) mod publish;
