use std::sync::Arc;

use pondra_catalog::{Column, TableDef};

use crate::logical::LogicalPlan;
use crate::view::ViewPlan;

/// A bound statement, ready to run.
#[derive(Debug)]
pub enum Plan {
    /// A query whose rows go back to the client.
    Query(LogicalPlan),
    CreateTable {
        name: String,
        columns: Vec<Column>,
        if_not_exists: bool,
    },
    DropTable {
        name: String,
        if_exists: bool,
    },
    /// Appends the rows of `input` (already in the table's column order and types).
    Insert {
        table: Arc<TableDef>,
        input: LogicalPlan,
    },
    /// `CREATE TABLE ... AS SELECT`: the table and its first rows in one commit.
    CreateTableAs {
        name: String,
        columns: Vec<Column>,
        input: LogicalPlan,
        if_not_exists: bool,
    },
    /// `COPY ... TO 'file'`: the rows of `input` written to a local Parquet or CSV file.
    CopyTo {
        input: LogicalPlan,
        path: String,
    },
    CreateMaterializedView {
        name: String,
        sql: String,
        view: Box<ViewPlan>,
        if_not_exists: bool,
    },
    /// Moves every waiting row of the log tail into Parquet.
    Checkpoint,
    /// Prints the plan of a query.
    Explain(LogicalPlan),
}
