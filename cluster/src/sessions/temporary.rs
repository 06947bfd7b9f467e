//! A session's temporary tables (`CREATE TEMPORARY TABLE`): Parquet files in a folder of the
//! session's own, read in place as the session's external tables, never in the lake, and
//! deleted with the session. Their names hide the lake's tables of the same name, as in
//! Postgres.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use pondra_catalog::{Column, Snapshot, SqlType, TableDef, TableKind};
use pondra_planner::{ExternalTable, LogicalPlan};

use crate::node::Node;
use crate::sessions::session::Session;
use crate::statement_result::{StatementResult, done};
use crate::{NodeError, Result};

/// Temporary tables get ids from here, far above any lake table's, for the oids clients see.
const FIRST_ID: u64 = 1 << 30;

static NEXT_FOLDER: AtomicU64 = AtomicU64::new(0);

/// The temporary tables of one session.
#[derive(Debug, Default)]
pub struct TemporaryTables {
    /// The session's folder, made on the first temporary table.
    folder: Option<PathBuf>,
    tables: HashMap<String, Arc<ExternalTable>>,
    /// Each table's definition, as the catalog tables list it.
    definitions: HashMap<String, Arc<TableDef>>,
    next_id: u64,
}

impl TemporaryTables {
    /// The tables by name, for binding.
    pub fn tables(&self) -> HashMap<String, Arc<ExternalTable>> {
        self.tables.clone()
    }

    pub fn definitions(&self) -> Vec<Arc<TableDef>> {
        self.definitions.values().cloned().collect()
    }

    pub fn is_empty(&self) -> bool {
        self.definitions().is_empty()
    }

    pub fn contains(&self, name: &str) -> bool {
        self.tables.contains_key(name)
    }

    /// Where a new table's file goes: a fresh path in the session's folder.
    pub fn new_file(&mut self, name: &str) -> Result<PathBuf> {
        let folder = match &self.folder {
            Some(folder) => folder.clone(),
            None => {
                let folder = std::env::temp_dir().join(format!(
                    "pondra-temporary-{}-{}",
                    std::process::id(),
                    NEXT_FOLDER.fetch_add(1, Ordering::Relaxed)
                ));
                std::fs::create_dir_all(&folder).map_err(|e| {
                    NodeError::Other(format!("cannot make a folder for temporary tables: {e}"))
                })?;
                self.folder = Some(folder.clone());
                folder
            }
        };
        self.next_id += 1;
        Ok(folder.join(format!("{name}-{}.parquet", self.next_id)))
    }

    /// Adds the table read from `file`.
    pub fn add(&mut self, name: String, file: &std::path::Path) -> Result<()> {
        let table = ExternalTable::open(&name, &file.to_string_lossy())?;
        let columns = table
            .schema
            .fields()
            .iter()
            .map(|f| {
                Ok(Column {
                    name: f.name().clone(),
                    sql_type: SqlType::from_arrow(f.data_type()).ok_or_else(|| {
                        NodeError::Other(format!("column {} cannot be stored", f.name()))
                    })?,
                    not_null: false,
                    id: 0,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let definition = TableDef {
            id: FIRST_ID + self.next_id,
            ..TableDef::new(name.clone(), columns, TableKind::Table)
        };
        self.definitions.insert(name.clone(), Arc::new(definition));
        self.tables.insert(name, table);
        Ok(())
    }

    /// Whether `id` is a temporary table's (of any session).
    pub fn is_temporary(id: u64) -> bool {
        id >= FIRST_ID
    }

    /// The table named `name`, read in place.
    pub fn table(&self, name: &str) -> Option<Arc<ExternalTable>> {
        self.tables.get(name).cloned()
    }

    /// Makes `file` the whole content of table `name` (which keeps its definition), and deletes
    /// the files it replaces.
    pub fn replace(&mut self, name: &str, file: &std::path::Path) -> Result<()> {
        let table = ExternalTable::open(name, &file.to_string_lossy())?;
        let old = self.tables.insert(name.to_string(), table);
        delete_files(old.iter().flat_map(|t| t.files.iter()));
        Ok(())
    }

    /// Drops a table and its file; false when there is none of that name.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(table) = self.tables.remove(name) else {
            return false;
        };
        self.definitions.remove(name);
        delete_files(table.files.iter());
        true
    }
}

/// Deletes a temporary table's files (they are the session's alone).
fn delete_files<'a>(files: impl Iterator<Item = &'a pondra_planner::ExternalFile>) {
    for file in files {
        if let pondra_storage::FileSource::Local(path) = &file.source {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Drop for TemporaryTables {
    fn drop(&mut self) {
        if let Some(folder) = &self.folder {
            let _ = std::fs::remove_dir_all(folder);
        }
    }
}

/// Runs `DROP TABLE` of one of the session's temporary tables; `None` for any other statement.
pub(crate) fn drop_temporary(
    session: &Session,
    statement: &pondra_parser::ast::Statement,
) -> Option<Result<StatementResult>> {
    use pondra_parser::ast;
    let ast::Statement::Drop {
        object_type: ast::ObjectType::Table,
        names,
        ..
    } = statement
    else {
        return None;
    };
    let [name] = names.as_slice() else {
        return None;
    };
    let name = pondra_planner::object_name(name).ok()?;
    session
        .with_temporary(|t| t.remove(&name))
        .then(|| Ok(done("DROP TABLE")))
}

impl Node {
    /// `CREATE TEMPORARY TABLE name AS input`: the rows written to a file of the session's.
    pub(crate) async fn create_temporary(
        &self,
        session: &Session,
        name: String,
        input: LogicalPlan,
        if_not_exists: bool,
        snapshot: Arc<Snapshot>,
    ) -> Result<StatementResult> {
        if session.with_temporary(|t| t.contains(&name)) {
            if if_not_exists {
                return Ok(done("CREATE TABLE"));
            }
            return Err(NodeError::Other(format!(
                "relation \"{name}\" already exists"
            )));
        }
        let schema = input.schema();
        let rows = self.run_query(input, snapshot, Vec::new()).await?;
        let count: usize = rows.iter().map(|b| b.num_rows()).sum();
        let bytes = pondra_storage::write_parquet_bytes(&schema, &rows)?;
        let file = session.with_temporary(|t| t.new_file(&name))?;
        std::fs::write(&file, &bytes).map_err(|e| {
            NodeError::Other(format!("cannot write the temporary table {name}: {e}"))
        })?;
        session.with_temporary(|t| t.add(name, &file))?;
        Ok(done(format!("SELECT {count}")))
    }

    /// `INSERT` into a temporary table: its rows and `input`'s written to a new file that
    /// replaces its own (temporary tables are small, and the session's alone).
    pub(crate) async fn insert_temporary(
        &self,
        session: &Session,
        name: &str,
        input: LogicalPlan,
        snapshot: Arc<Snapshot>,
    ) -> Result<StatementResult> {
        let Some(table) = session.with_temporary(|t| t.table(name)) else {
            return Err(NodeError::Other(format!("table {name} does not exist")));
        };
        let schema = table.schema.clone();
        let scan = LogicalPlan::ParquetScan { table };
        let mut rows = self.run_query(scan, snapshot.clone(), Vec::new()).await?;
        let added = self.run_query(input, snapshot, Vec::new()).await?;
        let count: usize = added.iter().map(|b| b.num_rows()).sum();
        for batch in added {
            let columns = batch
                .columns()
                .iter()
                .zip(schema.fields())
                .map(|(column, field)| arrow::compute::cast(column, field.data_type()))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            rows.push(arrow::array::RecordBatch::try_new(schema.clone(), columns)?);
        }
        let bytes = pondra_storage::write_parquet_bytes(&schema, &rows)?;
        let file = session.with_temporary(|t| t.new_file(name))?;
        std::fs::write(&file, &bytes).map_err(|e| {
            NodeError::Other(format!("cannot write the temporary table {name}: {e}"))
        })?;
        session.with_temporary(|t| t.replace(name, &file))?;
        Ok(done(format!("INSERT 0 {count}")))
    }
}
