//! The end-to-end tests, one binary with a module per area (linking the workspace once rather
//! than once per area). `cargo test -p pondra-tests --test e2e <module>::` runs one area, as
//! `cargo test -p pondra-tests --test e2e slt::` does the `.slt` files.

mod common;

mod bounded_state;
mod bucket;
mod changes_oracle;
mod cluster;
mod cluster_nodes;
mod cluster_simulation;
mod cluster_tasks;
mod compaction;
mod crash;
mod duckdb_corpus;
mod explain;
mod fuzz;
mod hardening;
mod lake_formats;
mod load;
mod models;
mod nexmark;
mod python_package;
mod query_oracle;
mod serve_console;
mod serve_flight;
mod serve_functions;
mod serve_http;
mod serve_jdbc;
mod serve_kafka;
mod serve_pg;
mod serve_tools;
mod shell;
mod slt;
mod spilling;
mod spread;
mod sqlite_corpus;
mod tpch;
mod vectors;
