//! Vectors (ADR 0082): distances between them, HNSW graphs over a data file's vectors, their
//! bytes in the lake, and the rows a nearest-neighbour scan reads through them.

mod build;
mod distance;
mod graph_file;
mod hnsw;
mod nearest;

pub use build::build_file_graph;
pub use distance::{vector_check, vector_distance};
pub use graph_file::{decode_graph, encode_graph};
pub use hnsw::{BuildSettings, Graph, Near};
pub use nearest::{DEFAULT_EF_SEARCH, MOST_EF_SEARCH};
pub(crate) use nearest::{NearestQuery, NearestRows, intersect_ranges};
