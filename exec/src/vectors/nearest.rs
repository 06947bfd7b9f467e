//! The rows a scan with a nearest clause reads from the data files with a graph (ADR 0082):
//! each graph is searched weighing `max(k, ef_search)` candidates, skipping deleted rows, and
//! the `k` nearest over all the files are the only rows read, as ranges of each row group.
//! Where a graph holds its rows' vectors as written (`l2sq`, `ip`), the scan takes the indexed
//! column from the graph and decodes none of that column's pages. Graphs are loaded once per
//! process and kept, least recently used out.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, LazyLock, Mutex};

use arrow::array::{ArrayRef, Float32Array, ListArray, RecordBatch};
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::{DataType, SchemaRef};
use pondra_catalog::{Container, DataFile, TableDef, VectorMetric};
use pondra_planner::Nearest;
use pondra_storage::ParquetFooter;
use rayon::prelude::*;

use super::distance::{as_vectors, vector_at};
use super::graph_file::decode_graph;
use super::hnsw::{Graph, Near};
use crate::pipeline::ExecContext;
use crate::{ExecError, Result};

/// How many candidates a graph search weighs unless the session sets `hnsw.ef_search`: more
/// finds more of the true nearest, and costs more.
pub const DEFAULT_EF_SEARCH: usize = 64;

/// The most `hnsw.ef_search` takes, as pgvector.
pub const MOST_EF_SEARCH: usize = 1000;

/// The bytes of graphs a process keeps loaded.
const GRAPH_CACHE_BYTES: usize = 4 << 30;

/// A nearest clause with its vector evaluated, for one scan.
pub(crate) struct NearestQuery<'n> {
    pub nearest: &'n Nearest,
    pub vector: Vec<f32>,
    /// How many candidates each graph search weighs.
    ef: usize,
}

/// The rows of one data file a nearest scan reads, found by the file's graph.
pub struct NearestRows {
    /// Per row group, the rows to read, one range each, in order.
    pub rows: Vec<Vec<Range<usize>>>,
    /// The indexed column's values of those rows, from the graph, when it holds them as
    /// written.
    graph_vectors: Option<GraphVectors>,
}

/// A graph's vectors standing in for the indexed column of the rows it found.
struct GraphVectors {
    /// The scan's column they are.
    column: usize,
    graph: Arc<Graph>,
    /// The rows found as (row ordinal in the file, graph node), by ordinal.
    nodes: Vec<(u32, u32)>,
}

/// What one file's graph found: its graph and the nearest live rows it weighed.
struct Found {
    graph: Arc<Graph>,
    near: Vec<Near>,
}

/// The rows of one file a nearest scan reads, as [`NearestQuery::choose`] picked them.
pub(crate) struct Chosen {
    graph: Arc<Graph>,
    /// (row ordinal in the file, graph node), by ordinal.
    nodes: Vec<(u32, u32)>,
}

impl<'n> NearestQuery<'n> {
    pub fn new(nearest: &'n Nearest, ctx: &ExecContext) -> Result<NearestQuery<'n>> {
        let options = arrow::array::RecordBatchOptions::new().with_row_count(Some(1));
        let no_columns = Arc::new(arrow::datatypes::Schema::empty());
        let one_row = RecordBatch::try_new_with_options(no_columns, vec![], &options)?;
        let value = crate::expr::evaluate(&nearest.query, &one_row)?;
        let list = as_vectors(&value)?;
        let vector = vector_at(&list, 0)?
            .ok_or_else(|| ExecError::Execution("the vector searched for is NULL".into()))?;
        let ef_search = ctx.control.ef_search().unwrap_or(DEFAULT_EF_SEARCH);
        Ok(NearestQuery {
            nearest,
            vector: vector.to_vec(),
            ef: nearest.k.max(ef_search),
        })
    }

    /// The rows to read of each of `files` that has a graph, by path: the `k` nearest live
    /// rows over all those files, by the distances their graphs measure. A file left out has
    /// no graph and is read whole; a file listed with no rows is not read.
    ///
    /// The sort above the scan orders what it reads by exact distance, so keeping the `k`
    /// nearest over all files, rather than each file's `k`, drops only rows it would drop.
    pub fn choose(
        &self,
        table: &TableDef,
        files: &[DataFile],
        ctx: &ExecContext,
    ) -> Result<HashMap<String, Chosen>> {
        let Some(graphs) = ctx.snapshot.index_graphs(table.id, &self.nearest.index) else {
            return Ok(HashMap::new());
        };
        let indexed: Vec<(&DataFile, &str)> = files
            .iter()
            .filter_map(|file| Some((file, graphs.get(&file.path)?.object.as_str())))
            .collect();
        let found = indexed
            .par_iter()
            .map(|(file, object)| self.search(table, file, object, ctx))
            .collect::<Result<Vec<Found>>>()?;
        let mut nearest: Vec<(Near, usize)> = found
            .iter()
            .enumerate()
            .flat_map(|(place, found)| found.near.iter().map(move |near| (*near, place)))
            .collect();
        nearest.sort_unstable_by_key(|(near, _)| *near);
        nearest.truncate(self.nearest.k.max(1));
        let mut nodes = vec![Vec::new(); found.len()];
        for (near, place) in nearest {
            let ordinal = found[place].graph.ordinals[near.node as usize];
            nodes[place].push((ordinal, near.node));
        }
        let chosen = indexed.iter().zip(found).zip(nodes);
        Ok(chosen
            .map(|(((file, _), found), mut nodes)| {
                nodes.sort_unstable();
                let graph = found.graph;
                (file.path.clone(), Chosen { graph, nodes })
            })
            .collect())
    }

    /// Searches the graph in `object` of `file`, skipping the file's deleted rows.
    fn search(
        &self,
        table: &TableDef,
        file: &DataFile,
        object: &str,
        ctx: &ExecContext,
    ) -> Result<Found> {
        let graph = loaded_graph(object, ctx)?;
        if graph.dimensions != self.vector.len() {
            return Err(ExecError::Execution(format!(
                "the vector searched for has {} dimensions; index {} holds {}",
                self.vector.len(),
                self.nearest.index,
                graph.dimensions
            )));
        }
        let container = Container::File(file.path.clone());
        let deleted = ctx.snapshot.deletion_vector(table.id, &container);
        let live = |node: u32| {
            let ordinal = graph.ordinals[node as usize];
            !deleted.is_some_and(|d| d.contains(ordinal))
        };
        let mut near = graph.search(&self.vector, self.ef, live);
        near.truncate(self.nearest.k.max(1));
        Ok(Found { graph, near })
    }

    /// The rows `chosen` of a file, by row group of its `footer`.
    pub fn rows(&self, chosen: Chosen, footer: &ParquetFooter) -> NearestRows {
        let ordinals: Vec<u32> = chosen.nodes.iter().map(|(ordinal, _)| *ordinal).collect();
        let rows = by_row_group(&ordinals, footer);
        // A cosine graph holds its vectors normalized, not as written.
        let graph_vectors = (self.nearest.metric != VectorMetric::Cosine).then_some(GraphVectors {
            column: self.nearest.column,
            graph: chosen.graph,
            nodes: chosen.nodes,
        });
        NearestRows {
            rows,
            graph_vectors,
        }
    }
}

impl NearestRows {
    /// The column of `columns` the graph supplies, if it supplies one read there as a list of
    /// 4-byte floats in `schema`.
    pub fn graph_column(&self, schema: &SchemaRef, columns: &[usize]) -> Option<usize> {
        let column = self.graph_vectors.as_ref()?.column;
        let DataType::List(item) = schema.fields().get(column)?.data_type() else {
            return None;
        };
        (columns.contains(&column) && item.data_type() == &DataType::Float32).then_some(column)
    }

    /// `batches`, the rows at `ranges` of the row group whose first row is `first_row`, with
    /// the graph's column filled in from the graph.
    pub fn fill_graph_column(
        &self,
        batches: Vec<RecordBatch>,
        first_row: usize,
        ranges: &[Range<usize>],
    ) -> Result<Vec<RecordBatch>> {
        let vectors = self.graph_vectors.as_ref().expect("a graph column");
        let mut ordinals = ranges
            .iter()
            .flat_map(|range| range.clone())
            .map(|row| (first_row + row) as u32);
        let mut filled = Vec::with_capacity(batches.len());
        for batch in batches {
            let mut values = Vec::with_capacity(batch.num_rows() * vectors.graph.dimensions);
            for _ in 0..batch.num_rows() {
                let ordinal = ordinals.next().expect("a range per row read");
                let at = vectors
                    .nodes
                    .binary_search_by_key(&ordinal, |(ordinal, _)| *ordinal)
                    .expect("a row read is a row the graph found");
                values.extend_from_slice(vectors.graph.vector(vectors.nodes[at].1));
            }
            let schema = batch.schema();
            let DataType::List(item) = schema.field(vectors.column).data_type() else {
                unreachable!("graph_column checked the column's type");
            };
            let lengths = std::iter::repeat_n(vectors.graph.dimensions, batch.num_rows());
            let list = ListArray::try_new(
                item.clone(),
                OffsetBuffer::from_lengths(lengths),
                Arc::new(Float32Array::from(values)),
                None,
            )?;
            let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
            columns[vectors.column] = Arc::new(list);
            filled.push(RecordBatch::try_new(schema, columns)?);
        }
        assert!(
            ordinals.next().is_none(),
            "every row in the ranges was read"
        );
        Ok(filled)
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
