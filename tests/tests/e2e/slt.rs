//! Runs every `.slt` file under `tests/slt/`, each against a fresh lake.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::RecordBatch;
use pondra_cluster::{Node, NodeOptions, Session};
use pondra_tests::{SqlError, map_cells, run_sql_in};
use sqllogictest::{DBOutput, DefaultColumnType};

/// A lake, and the one session a file's statements run in (as a client's connection).
struct Lake {
    node: Arc<Node>,
    runtime: Arc<tokio::runtime::Runtime>,
    session: Arc<Session>,
}

impl sqllogictest::DB for Lake {
    type Error = SqlError;
    type ColumnType = DefaultColumnType;

    fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SqlError> {
        match run_sql_in(&self.node, &self.runtime, &self.session, sql)? {
            Some((schema, batches)) => Ok(DBOutput::Rows {
                types: vec![DefaultColumnType::Any; schema.fields().len()],
                rows: rows(&batches),
            }),
            None => Ok(DBOutput::StatementComplete(0)),
        }
    }
}

/// Values as the `.slt` files spell them: NULL, `(empty)` for an empty string, timestamps as
/// PostgreSQL writes them, else Arrow's text.
fn rows(batches: &[RecordBatch]) -> Vec<Vec<String>> {
    let batches: Vec<RecordBatch> = batches
        .iter()
        .map(|b| pondra_cluster::with_timestamps_as_text(b).expect("timestamps as text"))
        .collect();
    map_cells(&batches, |column, _, row, text| {
        if column.is_null(row) {
            "NULL".to_string()
        } else if text.is_empty() {
            "(empty)".to_string()
        } else {
            text
        }
    })
}

/// The `.slt` files to run: every one, or with `PONDRA_SLT` set (`windows,joins`) those whose
/// names contain one of its words.
fn slt_files(dir: &Path) -> Vec<PathBuf> {
    let only = std::env::var("PONDRA_SLT").unwrap_or_default();
    let chosen = |p: &Path| {
        let name = p.file_name().unwrap_or_default().to_string_lossy();
        only.is_empty() || only.split(',').any(|word| name.contains(word.trim()))
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "slt") && chosen(p))
        .collect();
    files.sort();
    files
}

#[test]
fn slt_files_pass() {
    // Statements run on threads with the server's stacks, as they do in `pondra serve`.
    let runtime = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_stack_size(pondra_cluster::STATEMENT_STACK_BYTES)
            .build()
            .unwrap(),
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("slt");
    let files = slt_files(&dir);
    assert!(!files.is_empty(), "no .slt files in {}", dir.display());
    let mut failures = Vec::new();
    for file in &files {
        let lake_dir = tempfile::tempdir().unwrap();
        let node = runtime
            .block_on(Node::open_folder(lake_dir.path(), NodeOptions::default()))
            .unwrap();
        let lake = Lake {
            node: node.clone(),
            runtime: runtime.clone(),
            session: Session::new(None),
        };
        let mut runner = sqllogictest::Runner::new(move || {
            let lake = Lake {
                node: lake.node.clone(),
                runtime: lake.runtime.clone(),
                session: lake.session.clone(),
            };
            async move { Ok(lake) }
        });
        if let Err(e) = runner.run_file(file) {
            failures.push(format!("{}: {e}", file.display()));
        }
        runtime.block_on(node.close()).unwrap();
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
