//! DuckDB's dialect of sqllogictest, for running its test files (`duckdb-sqllogictest/`)
//! against Pondra: reading a file into steps (`parse`), writing Arrow values as DuckDB's
//! runner prints them (`values`) and judging answers against the expected lines
//! (`compare`). The runner itself is `tests/duckdb_corpus.rs`.

mod compare;
mod md5;
mod parse;
mod regex;
mod values;

pub use compare::{Answer, Labels, Mismatch, check, message_matches};
pub use parse::{Expect, Located, Parsed, Query, SortMode, Step, parse_file};
pub use values::{ValueKind, cell_text, value_kind};
