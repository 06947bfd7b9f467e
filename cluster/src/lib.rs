//! A node: the process that opens a lake, takes the lead, runs statements, commits writes and
//! tiers the log tail into Parquet.

mod error;
mod lead;
mod maintenance;
mod models;
mod node;
mod object_names;
mod publishing;
mod sessions;
mod spread;
mod statement_result;
mod tables;
mod tasks;
#[cfg(test)]
mod test_support;
mod views;
mod writes;

pub use error::{NodeError, Result};
pub use lead::leader::{
    BEAT_EVERY, Beat, Beating, LAPSE, Term, beat_of, highest_term, latest_beat, take_lead,
    take_term, term_beats,
};
pub use lead::lease::{JITTER_MS, Lease, Step};
pub use node::{Node, NodeOptions};
pub use pondra_catalog::{
    CatalogError, CommitsAfter, ConsumerOffset, ForwardedCommit, KafkaFormat, Leader,
    MAX_PARTITIONS, PARTITION_SHIFT, SqlType, StreamedCommit, TableDef, TableKind, lake_offset,
};
pub use pondra_exec::control::{running as running_statements, shut_down as stop_all_statements};
pub use pondra_exec::{
    DATE_INFINITY, MemoryPool, STATEMENT_STACK_BYTES, StatementControl, StopReason,
    TIMESTAMP_INFINITY, bounded_message, date_text, default_memory_limit, instant_text,
    interval_text, nested_as_text, nested_string, offset_in, parse_memory_size, process_threads,
    time_text, timestamp_text, with_text_for_tables, with_timestamps_as_text, zone_name,
};
pub use pondra_parser::{
    ParsedStatement, Statement, StatementKind, parse_sql, placeholder_count, quoted_name,
    split_statements, substitute_placeholders,
};
pub use pondra_planner::{SERVER_VERSION, SpreadMode, push_array_item};
pub use pondra_storage::{Lake, Location, ObjectCache, default_capacity as default_cache_capacity};
pub use sessions::pg_parameters::parameters as pg_parameters;
pub use sessions::procedures::PythonRunner;
pub use sessions::session::{Session, TransactionStatus, is_session_setting, parse_timeout};
pub use sessions::settings::is_process_setting;
pub use sessions::transaction::TransactionControl;
pub use spread::{Delivery, PartRequest, Peer, Peers, SpreadStats};
pub use statement_result::StatementResult;
pub use tables::change_events::{
    ChangeEvent, ChangeEvents, ChangeOp, ChangeWindow, change_offset, change_position,
    next_change_offset,
};
pub use tables::offsets::{OffsetBounds, next_offset, offset_bounds};
pub use views::subscription::{COMMIT_COLUMN, DIFF_COLUMN, Subscription};
pub use writes::append::AppendOutcome;
pub use writes::producer_lines::LinePlace;
