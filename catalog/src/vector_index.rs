//! Vector indexes (ADR 0082): how an HNSW index measures distance, its settings, and the graphs
//! built for a table's data files, one per file, listed under `v/` keys.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use slatedb::WriteBatch;

use crate::keys;
use crate::snapshot::Snapshot;

/// The distance an HNSW index orders rows by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum VectorMetric {
    /// The squared Euclidean distance, which orders rows as the Euclidean distance does.
    L2Sq,
    /// One less the cosine of the angle between two vectors.
    Cosine,
    /// The negated inner product: the greatest products first.
    Ip,
}

impl VectorMetric {
    /// The metric a `WITH (metric = '...')` option names.
    pub fn parse(name: &str) -> Option<VectorMetric> {
        match name.to_ascii_lowercase().as_str() {
            "l2sq" | "l2" => Some(VectorMetric::L2Sq),
            "cosine" => Some(VectorMetric::Cosine),
            "ip" => Some(VectorMetric::Ip),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            VectorMetric::L2Sq => "l2sq",
            VectorMetric::Cosine => "cosine",
            VectorMetric::Ip => "ip",
        }
    }

    pub fn code(self) -> u8 {
        match self {
            VectorMetric::L2Sq => 0,
            VectorMetric::Cosine => 1,
            VectorMetric::Ip => 2,
        }
    }

    pub fn from_code(code: u8) -> Option<VectorMetric> {
        [VectorMetric::L2Sq, VectorMetric::Cosine, VectorMetric::Ip]
            .into_iter()
            .find(|m| m.code() == code)
    }
}

/// An HNSW index's method and settings, kept in its table's definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VectorIndex {
    pub metric: VectorMetric,
    /// The neighbours a node keeps on each level above the first (twice as many on the first).
    pub m: u32,
    /// How many candidates an insertion weighs when it picks a node's neighbours.
    pub ef_construction: u32,
}

impl VectorIndex {
    pub const DEFAULT_M: u32 = 16;
    pub const DEFAULT_EF_CONSTRUCTION: u32 = 64;
}

/// The graph of one data file for one index: the object holding it and its size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexGraph {
    /// The data file whose rows the graph's nodes are.
    pub file: String,
    /// The graph's object in the lake.
    pub object: String,
    pub nodes: u64,
    pub bytes: u64,
}

/// The graphs of a lake by (table id, index name), each by its data file's path.
pub type IndexGraphs = Arc<BTreeMap<(u64, String), BTreeMap<String, Arc<IndexGraph>>>>;

/// The object that holds a graph of index `index` of table `table` for data file `file`:
/// `unique` keeps a rebuilt graph from taking the name of one listed for deletion.
pub fn graph_object(table: &str, index: &str, file: &str, unique: &str) -> String {
    let file_name = file.rsplit('/').next().unwrap_or(file);
    let stem = file_name.strip_suffix(".parquet").unwrap_or(file_name);
    format!("index/{table}/{index}/{stem}-{unique}.hnsw")
}

/// Records `graph` for `index` of table `table_id`.
pub(crate) fn add_graph(
    next: &mut Snapshot,
    batch: &mut WriteBatch,
    (table_id, index): (u64, String),
    graph: IndexGraph,
) {
    let key = keys::index_graph(table_id, &index, &graph.file);
    batch.put(key, serde_json::to_vec(&graph).expect("json"));
    let graphs = Arc::make_mut(&mut next.index_graphs);
    let file = graph.file.clone();
    graphs
        .entry((table_id, index))
        .or_default()
        .insert(file, Arc::new(graph));
}

/// Forgets the graphs of table `table_id` that `keep` does not keep (their index dropped, or
/// their file gone), and lists their objects for deletion.
pub(crate) fn drop_graphs_where(
    next: &mut Snapshot,
    batch: &mut WriteBatch,
    (table_id, deadline): (u64, u64),
    keep: impl Fn(&Snapshot, &str, &str) -> bool,
) {
    let mut dropped = Vec::new();
    for ((table, index), graphs) in next.index_graphs.iter() {
        if *table != table_id {
            continue;
        }
        for file in graphs.keys() {
            if !keep(next, index, file) {
                dropped.push((index.clone(), file.clone()));
            }
        }
    }
    if dropped.is_empty() {
        return;
    }
    let graphs = Arc::make_mut(&mut next.index_graphs);
    let mut objects = Vec::new();
    for (index, file) in dropped {
        let of_index = graphs.get_mut(&(table_id, index.clone())).expect("listed");
        let graph = of_index.remove(&file).expect("listed");
        if of_index.is_empty() {
            graphs.remove(&(table_id, index.clone()));
        }
        batch.delete(keys::index_graph(table_id, &index, &file));
        objects.push(graph.object.clone());
    }
    for object in objects {
        crate::catalog::schedule_delete(next, batch, deadline, object);
    }
}

/// Forgets the graphs of table `table_id` whose file or index is gone.
pub(crate) fn drop_stale_graphs(
    next: &mut Snapshot,
    batch: &mut WriteBatch,
    (table_id, deadline): (u64, u64),
) {
    let keep = |snapshot: &Snapshot, index: &str, file: &str| {
        let indexed = snapshot.tables.values().any(|t| {
            t.id == table_id
                && t.indexes
                    .iter()
                    .any(|i| i.name == index && i.vector.is_some())
        });
        indexed && snapshot.files(table_id).iter().any(|f| f.path == file)
    };
    drop_graphs_where(next, batch, (table_id, deadline), keep);
}
