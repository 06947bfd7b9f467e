//! The rows a scan with a nearest clause reads from a data file with a graph (ADR 0082): the
//! `max(k, ef)` nodes the graph finds nearest, skipping deleted rows, as ranges of each row
//! group. Graphs are loaded once per process and kept, least recently used out.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, LazyLock, Mutex};

use arrow::array::RecordBatch;
use pondra_catalog::{DataFile, DeletionVector, TableDef};
use pondra_planner::Nearest;
use pondra_storage::ParquetFooter;

use super::distance::{as_vectors, vector_at};
use super::graph_file::decode_graph;
use super::hnsw::Graph;
use crate::pipeline::ExecContext;
use crate::{ExecError, Result};

/// How many candidates a graph search weighs at least: more finds more of the true nearest.
const EF_SEARCH: usize = 64;

/// The bytes of graphs a process keeps loaded.
const GRAPH_CACHE_BYTES: usize = 4 << 30;

/// A nearest clause with its vector evaluated, for one scan.
pub(crate) struct NearestQuery<'n> {
    pub nearest: &'n Nearest,
    pub vector: Vec<f32>,
}

impl<'n> NearestQuery<'n> {
    pub fn new(nearest: &'n Nearest) -> Result<NearestQuery<'n>> {
        let options = arrow::array::RecordBatchOptions::new().with_row_count(Some(1));
        let no_columns = Arc::new(arrow::datatypes::Schema::empty());
        let one_row = RecordBatch::try_new_with_options(no_columns, vec![], &options)?;
        let value = crate::expr::evaluate(&nearest.query, &one_row)?;
        let list = as_vectors(&value)?;
        let vector = vector_at(&list, 0)?
            .ok_or_else(|| ExecError::Execution("the vector searched for is NULL".into()))?;
        Ok(NearestQuery {
            nearest,
            vector: vector.to_vec(),
        })
    }

    /// The rows of `file` to read, by row group, when it has a graph; `None` to read it whole.
    pub fn candidates(
        &self,
        table: &TableDef,
        file: &DataFile,
        (footer, deleted): (&ParquetFooter, Option<&DeletionVector>),
        ctx: &ExecContext,
    ) -> Result<Option<Vec<Vec<Range<usize>>>>> {
        let Some(graph) = ctx
            .snapshot
            .index_graphs(table.id, &self.nearest.index)
            .and_then(|graphs| graphs.get(&file.path))
        else {
            return Ok(None);
        };
        let graph = loaded_graph(&graph.object, ctx)?;
        if graph.dimensions != self.vector.len() {
            return Err(ExecError::Execution(format!(
                "the vector searched for has {} dimensions; index {} holds {}",
                self.vector.len(),
                self.nearest.index,
                graph.dimensions
            )));
        }
        let live = |node: u32| {
            let ordinal = graph.ordinals[node as usize];
            !deleted.is_some_and(|d| d.contains(ordinal))
        };
        let ef = self.nearest.k.max(EF_SEARCH);
        let found = graph.search(&self.vector, ef, live);
        let mut ordinals: Vec<u32> = found
            .iter()
            .take(self.nearest.k.max(1))
            .map(|near| graph.ordinals[near.node as usize])
            .collect();
        ordinals.sort_unstable();
        Ok(Some(by_row_group(&ordinals, footer)))
    }
}

/// Sorted row ordinals of a file as single-row ranges within each of its row groups.
fn by_row_group(ordinals: &[u32], footer: &ParquetFooter) -> Vec<Vec<Range<usize>>> {
    let mut groups = Vec::with_capacity(footer.row_groups());
    let mut first = 0usize;
    let mut next = ordinals.iter().peekable();
    for row_group in 0..footer.row_groups() {
        let end = first + footer.row_group_rows(row_group);
        let mut ranges = Vec::new();
        while let Some(&&ordinal) = next.peek() {
            let ordinal = ordinal as usize;
            if ordinal >= end {
                break;
            }
            ranges.push(ordinal - first..ordinal - first + 1);
            next.next();
        }
        groups.push(ranges);
        first = end;
    }
    groups
}

/// The rows both sorted, disjoint range lists hold; `None` stands for every row.
pub(crate) fn intersect_ranges(
    a: Option<Vec<Range<usize>>>,
    b: Option<&[Range<usize>]>,
) -> Option<Vec<Range<usize>>> {
    let (a, b) = match (a, b) {
        (a, None) => return a,
        (None, Some(b)) => return Some(b.to_vec()),
        (Some(a), Some(b)) => (a, b),
    };
    Some(crate::prune::intersect(&a, b))
}

/// Loaded graphs by object path, with when each was last used.
struct GraphCache {
    graphs: HashMap<String, (Arc<Graph>, u64)>,
    bytes: usize,
    clock: u64,
}

static GRAPHS: LazyLock<Mutex<GraphCache>> = LazyLock::new(|| {
    Mutex::new(GraphCache {
        graphs: HashMap::new(),
        bytes: 0,
        clock: 0,
    })
});

fn graph_bytes(graph: &Graph) -> usize {
    graph.vectors.len() * 4 + graph.len() * (graph.m * 2 * 4 + 32)
}

/// The graph in `object`, from the cache or read and decoded once.
fn loaded_graph(object: &str, ctx: &ExecContext) -> Result<Arc<Graph>> {
    {
        let mut cache = GRAPHS.lock().expect("the graph cache is never poisoned");
        cache.clock += 1;
        let now = cache.clock;
        if let Some((graph, used)) = cache.graphs.get_mut(object) {
            *used = now;
            return Ok(graph.clone());
        }
    }
    let bytes = ctx.runtime.block_on(ctx.lake.get(object))?;
    let graph = Arc::new(decode_graph(&bytes)?);
    let mut cache = GRAPHS.lock().expect("the graph cache is never poisoned");
    let size = graph_bytes(&graph);
    while cache.bytes + size > GRAPH_CACHE_BYTES && !cache.graphs.is_empty() {
        let oldest = cache
            .graphs
            .iter()
            .min_by_key(|(_, (_, used))| *used)
            .map(|(path, _)| path.clone())
            .expect("not empty");
        let (dropped, _) = cache.graphs.remove(&oldest).expect("listed");
        cache.bytes -= graph_bytes(&dropped);
    }
    cache.clock += 1;
    let now = cache.clock;
    if cache
        .graphs
        .insert(object.to_string(), (graph.clone(), now))
        .is_none()
    {
        cache.bytes += size;
    }
    Ok(graph)
}

#[cfg(test)]
mod tests {
    use super::intersect_ranges;

    #[test]
    fn ranges_intersect() {
        let pages = Some(vec![0..10, 20..30]);
        let rows = [5..6, 12..13, 25..26];
        assert_eq!(
            intersect_ranges(pages, Some(&rows)),
            Some(vec![5..6, 25..26])
        );
        assert_eq!(intersect_ranges(None, Some(&rows)), Some(rows.to_vec()));
        let one = vec![1..2, 4..5];
        assert_eq!(intersect_ranges(Some(one.clone()), None), Some(one));
    }
}
