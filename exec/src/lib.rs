//! The executor: physical plans run as push-based pipelines of vectorized operators over Arrow
//! record batches.
//!
//! A pipeline is a source, a chain of streaming operators and a sink. Pipeline breakers (hash
//! aggregate, sort, limit) are sinks: the pipeline under them runs to completion first, and
//! their output is the source of the pipeline above. Sinks keep their state apart from the
//! plan, so several threads can later each sink into their own local state, to be combined once.

mod aggregate;
mod error;
mod expr;
mod functions;
mod join;
mod keys;
mod pipeline;
mod profile;
mod scan;
mod sort;
mod subquery;
mod window;

pub use error::{ExecError, Result};
pub use expr::evaluate;
pub use pipeline::{ExecContext, execute, execute_profiled};
pub use profile::Profile;
pub use scan::{Morsel, read_morsel, read_table, table_morsels};
