//! Vector indexes follow the data files (ADR 0082): every data file of a table with an HNSW
//! index gets a graph of its vectors, built by the leader after tiering and compaction, or by
//! `CREATE INDEX` for the files there when it runs. Each graph is one commit of its own.

use std::sync::Arc;

use pondra_catalog::{
    Change, Container, DataFile, Index, IndexGraph, Snapshot, TableDef, graph_object,
};

use crate::node::Node;
use crate::object_names::unique_name;
use crate::{NodeError, Result};

impl Node {
    /// Builds the graphs the data files of indexed tables lack; returns how many it built.
    pub async fn index_files(&self) -> Result<usize> {
        let snapshot = self.snapshot();
        let mut built = 0;
        for table in snapshot.tables.values() {
            for index in table.indexes.iter().filter(|i| i.vector.is_some()) {
                let graphs = snapshot.index_graphs(table.id, &index.name);
                for file in snapshot.files(table.id) {
                    if graphs.is_some_and(|g| g.contains_key(&file.path)) {
                        continue;
                    }
                    let graph = self.build_graph(&snapshot, table, index, file).await?;
                    let change = Change::AddIndexGraph {
                        table_id: table.id,
                        index: index.name.clone(),
                        graph,
                    };
                    self.catalog.commit(vec![change]).await?;
                    built += 1;
                }
            }
        }
        Ok(built)
    }

    /// The changes that record a new index's graphs of every data file of `table`.
    pub(crate) async fn graphs_of_new_index(
        &self,
        snapshot: &Snapshot,
        table: &TableDef,
        index: &Index,
    ) -> Result<Vec<Change>> {
        let mut changes = Vec::new();
        for file in snapshot.files(table.id) {
            let graph = self.build_graph(snapshot, table, index, file).await?;
            changes.push(Change::AddIndexGraph {
                table_id: table.id,
                index: index.name.clone(),
                graph,
            });
        }
        Ok(changes)
    }

    /// Builds the graph of `file` for `index` and writes it to the lake.
    async fn build_graph(
        &self,
        snapshot: &Snapshot,
        table: &TableDef,
        index: &Index,
        file: &DataFile,
    ) -> Result<IndexGraph> {
        let vector = index.vector.expect("only vector indexes have graphs");
        let column = index
            .columns
            .first()
            .and_then(|name| table.columns.iter().position(|c| &c.name == name))
            .ok_or_else(|| NodeError::Other(format!("index {} has no column", index.name)))?;
        let (source, footer) = self.lake.data_file(&file.path).await?;
        let deleted = snapshot
            .deletion_vector(table.id, &Container::File(file.path.clone()))
            .cloned();
        let (table_def, file_def) = (Arc::new(table.clone()), file.clone());
        let bytes = tokio::task::spawn_blocking(move || {
            let graph = pondra_exec::build_file_graph(
                (&source, &footer),
                (&table_def, &file_def, column),
                vector,
                deleted.as_ref(),
            )?;
            Ok::<_, NodeError>((pondra_exec::encode_graph(&graph), graph.len()))
        })
        .await
        .map_err(|e| NodeError::Other(format!("building a graph stopped: {e}")))??;
        let (bytes, nodes) = bytes;
        let object = graph_object(&table.name, &index.name, &file.path, &unique_name());
        let size = bytes.len() as u64;
        self.lake.put(&object, bytes.into()).await?;
        Ok(IndexGraph {
            file: file.path.clone(),
            object,
            nodes: nodes as u64,
            bytes: size,
        })
    }
}
