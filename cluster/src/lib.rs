//! A node: the process that opens a lake, takes the lead, runs statements, commits writes and
//! tiers the log tail into Parquet.

mod append;
mod bulk;
mod change_records;
mod compaction;
mod copy;
mod delta_checkpoint;
mod error;
mod event_time;
mod forwarded;
mod keyed;
mod leader;
mod lease;
mod merge_table;
mod node;
mod optimizer_setting;
mod own_index;
mod pg_parameters;
mod prepared;
mod publish;
mod publish_delta;
mod publish_iceberg;
mod rewrite;
mod roles;
mod session;
mod settings;
mod state_expiry;
mod subscription;
mod temporary;
mod tiering;
mod time_zone;
mod transaction;
mod value_counts;
mod view_cascade;
mod view_changes;
mod view_stream;
mod with_writes;
mod write;

pub use append::AppendOutcome;
pub use error::{NodeError, Result};
pub use leader::{
    BEAT_EVERY, Beat, Beating, LAPSE, Term, beat_of, highest_term, latest_beat, take_lead,
    take_term, term_beats,
};
pub use lease::{JITTER_MS, Lease, Step};
pub use node::{Node, NodeOptions, StatementResult};
pub use pg_parameters::parameters as pg_parameters;
pub use pondra_catalog::{
    CatalogError, CommitsAfter, ForwardedCommit, Leader, SqlType, StreamedCommit,
};
pub use pondra_exec::control::{running as running_statements, shut_down as stop_all_statements};
pub use pondra_exec::{
    DATE_INFINITY, MemoryPool, STATEMENT_STACK_BYTES, StatementControl, StopReason,
    TIMESTAMP_INFINITY, bounded_message, date_text, default_memory_limit, instant_text,
    interval_text, nested_as_text, nested_string, offset_in, parse_memory_size, time_text,
    timestamp_text, with_text_for_tables, with_timestamps_as_text, zone_name,
};
pub use pondra_parser::{
    ParsedStatement, Statement, StatementKind, parse_sql, placeholder_count, split_statements,
    substitute_placeholders,
};
pub use pondra_planner::{SERVER_VERSION, push_array_item};
pub use pondra_storage::{Lake, Location, ObjectCache, default_capacity as default_cache_capacity};
pub use session::{Session, TransactionStatus, is_session_setting, parse_timeout};
pub use settings::is_process_setting;
pub use subscription::{COMMIT_COLUMN, DIFF_COLUMN, Subscription};
pub use transaction::TransactionControl;
