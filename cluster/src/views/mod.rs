//! Materialized views kept current through commits: the changes a commit makes to each view
//! it reaches (aggregates, joins, windows, views over views), the states they keep, and live
//! queries that follow a relation's changes.

pub(crate) mod own_index;
pub(crate) mod subscription;
pub(crate) mod value_counts;
pub(crate) mod view_cascade;
pub(crate) mod view_changes;
pub(crate) mod view_stream;
