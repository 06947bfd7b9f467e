//! The bytes of a graph object (ADR 0082), little-endian: the magic, the metric, dimensions,
//! nodes, `m`, the entry node and the top level; each node's row ordinal and level; the
//! vectors; then level by level, each node on it with its neighbours (a u16 count, then u32
//! node numbers).

use pondra_catalog::VectorMetric;

use super::hnsw::Graph;
use crate::{ExecError, Result};

const MAGIC: &[u8; 11] = b"PONDRAHNSW1";

pub fn encode_graph(graph: &Graph) -> Vec<u8> {
    let nodes = graph.len();
    let mut out = Vec::with_capacity(32 + nodes * (5 + graph.dimensions * 4 + graph.m * 8));
    out.extend_from_slice(MAGIC);
    out.push(graph.metric.code());
    for value in [graph.dimensions, nodes, graph.m, graph.entry as usize] {
        out.extend_from_slice(&(value as u32).to_le_bytes());
    }
    out.push(graph.top_level);
    for (ordinal, level) in graph.ordinals.iter().zip(&graph.levels) {
        out.extend_from_slice(&ordinal.to_le_bytes());
        out.push(*level);
    }
    for value in &graph.vectors {
        out.extend_from_slice(&value.to_le_bytes());
    }
    for level in 0..=graph.top_level as usize {
        for links in graph.links.iter().filter(|links| links.len() > level) {
            let neighbours = &links[level];
            out.extend_from_slice(&(neighbours.len() as u16).to_le_bytes());
            for neighbour in neighbours {
                out.extend_from_slice(&neighbour.to_le_bytes());
            }
        }
    }
    out
}

/// Reads the bytes [`encode_graph`] wrote; an error for anything else, never a panic.
pub fn decode_graph(bytes: &[u8]) -> Result<Graph> {
    let mut reader = Reader { bytes, at: 0 };
    if reader.take(MAGIC.len())? != MAGIC {
        return Err(corrupt("it does not start with the graph's magic"));
    }
    let metric = VectorMetric::from_code(reader.u8()?).ok_or_else(|| corrupt("unknown metric"))?;
    let dimensions = reader.u32()? as usize;
    let nodes = reader.u32()? as usize;
    let m = reader.u32()? as usize;
    let entry = reader.u32()?;
    let top_level = reader.u8()?;
    // Each node takes at least five bytes and its floats: a count past the bytes is corrupt.
    if nodes.saturating_mul(5 + dimensions.saturating_mul(4)) > bytes.len() {
        return Err(corrupt("it counts more nodes than it holds"));
    }
    if nodes > 0 && entry as usize >= nodes {
        return Err(corrupt("its entry is not one of its nodes"));
    }
    let mut ordinals = Vec::with_capacity(nodes);
    let mut levels = Vec::with_capacity(nodes);
    for _ in 0..nodes {
        ordinals.push(reader.u32()?);
        levels.push(reader.u8()?.min(top_level));
    }
    let floats = reader.take(nodes * dimensions * 4)?;
    let vectors = floats
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().expect("four bytes")))
        .collect();
    let mut links: Vec<Vec<Vec<u32>>> = levels
        .iter()
        .map(|&level| Vec::with_capacity(level as usize + 1))
        .collect();
    for level in 0..=top_level {
        for (node, node_level) in levels.iter().enumerate() {
            if *node_level < level {
                continue;
            }
            let count = reader.u16()? as usize;
            let mut neighbours = Vec::with_capacity(count);
            for _ in 0..count {
                let neighbour = reader.u32()?;
                if neighbour as usize >= nodes || levels[neighbour as usize] < level {
                    return Err(corrupt("a link leads to no node of its level"));
                }
                neighbours.push(neighbour);
            }
            links[node].push(neighbours);
        }
    }
    if reader.at != bytes.len() {
        return Err(corrupt("bytes follow its last level"));
    }
    Ok(Graph {
        metric,
        dimensions,
        m,
        entry,
        top_level,
        ordinals,
        levels,
        vectors,
        links,
    })
}

fn corrupt(why: &str) -> ExecError {
    ExecError::Execution(format!("a vector index's graph is corrupt: {why}"))
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, length: usize) -> Result<&'a [u8]> {
        let end = self
            .at
            .checked_add(length)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| corrupt("it ends early"))?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().expect("two")))
    }

    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("four")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vectors::hnsw::BuildSettings;

    fn small_graph() -> Graph {
        let rows = (0..300u32)
            .map(|i| (i * 2, vec![i as f32, (i % 7) as f32, (i % 13) as f32]))
            .collect();
        let settings = BuildSettings {
            metric: VectorMetric::L2Sq,
            m: 6,
            ef_construction: 20,
        };
        Graph::build(settings, 3, rows)
    }

    #[test]
    fn a_graph_reads_back_as_written() {
        let graph = small_graph();
        assert_eq!(decode_graph(&encode_graph(&graph)).unwrap(), graph);
    }

    #[test]
    fn broken_bytes_are_an_error() {
        let bytes = encode_graph(&small_graph());
        for cut in [0, 5, 20, bytes.len() / 2, bytes.len() - 1] {
            assert!(decode_graph(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(decode_graph(&extra).is_err());
        let mut wrong_link = bytes;
        let last = wrong_link.len() - 4;
        wrong_link[last..].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode_graph(&wrong_link).is_err());
    }
}
