//! The executor: physical plans run as push-based pipelines of vectorized operators over Arrow
//! record batches.
//!
//! A pipeline is a source, a chain of streaming operators and a sink. Pipeline breakers (hash
//! aggregate, sort, limit) are sinks: the pipeline under them runs to completion first, and
//! their output is the source of the pipeline above. A pipeline whose source is a scan runs on
//! every thread of the pool: each worker takes the next morsel (a file, log segment or row
//! group), pushes it through the shared operators into a sink of its own, and the workers'
//! sinks are combined once at the end.

mod aggregate;
mod arrays;
mod blobs;
mod casts;
mod change_feed;
mod collected;
pub mod control;
mod date_makers;
mod date_parts;
mod decimal;
mod dense_keys;
mod dictionary_filter;
mod direct_ids;
mod eras;
mod error;
mod exchange;
mod expr;
mod float_equality;
mod functions;
mod gather;
mod in_set;
mod infinite_times;
mod interval_ops;
mod join;
mod join_rows;
mod join_spill;
mod join_table;
mod json;
mod key_hash;
mod keys;
mod lake_rows;
mod lambdas;
mod like;
mod list_functions;
mod list_picks;
mod maps;
mod math_functions;
mod memory;
mod models;
mod moments;
mod morsel;
mod nested_text;
mod ordered;
mod ordered_set;
mod pg_format;
mod pipeline;
mod printf;
mod profile;
mod prune;
mod python;
mod recursive_cte;
mod regexp_groups;
mod repeated_scans;
mod scan;
mod scan_filter;
mod select;
mod shared;
mod sink;
mod sort;
mod spill;
mod strptime;
mod structs;
mod subquery;
mod sums;
mod text_functions;
mod text_more;
mod unnest;
mod uuids;
mod vectors;
mod window;
mod word_slots;
mod zoned_times;

pub use casts::{
    interval_text, time_text, timestamp_text, with_text_for_tables, with_timestamps_as_text,
};
pub use control::{STATEMENT_STACK_BYTES, StatementControl, StopReason, process_threads};
pub use error::{ExecError, Result};
pub use exchange::{
    EXCHANGE_STALL, Exchanger, MailboxKey, Mailboxes, exchange_failure, is_exchange_failure,
    partition, run_parts_at_once,
};
pub use expr::evaluate;
pub use gather::{GatheredParts, Gatherer, run_part};
pub use infinite_times::{DATE_INFINITY, TIMESTAMP_INFINITY, date_text};
pub use json::json_check;
pub use key_hash::key_hashes;
pub use lake_rows::drop_deleted;
pub use memory::{MemoryPool, Reservation, default_memory_limit, format_size, parse_memory_size};
pub use models::{ModelAccess, StatementModels, answer_key};
pub use pipeline::{ExecContext, execute, execute_profiled};
pub use pondra_parser::{MESSAGE_CHARS, bounded_message, quoted_excerpt};
pub use profile::Profile;
pub use scan::{Morsel, read_morsel, read_table, table_morsels};
pub use structs::{nested_string, to_text as nested_as_text};
pub use uuids::uuid_text;
pub use vectors::{
    BuildSettings, DEFAULT_EF_SEARCH, Graph, MOST_EF_SEARCH, Near, build_file_graph, decode_graph,
    encode_graph, vector_check, vector_distance,
};
pub use zoned_times::{instant_text, offset_in, zone_name};
