use thiserror::Error;

/// What can go wrong reading or committing the catalog.
#[derive(Debug, Error)]
pub enum CatalogError {
    #[error("table {0} already exists")]
    TableExists(String),
    #[error("table {0} does not exist")]
    TableNotFound(String),
    #[error("schema \"{0}\" already exists")]
    SchemaExists(String),
    #[error("schema \"{0}\" does not exist")]
    SchemaNotFound(String),
    #[error("schema \"{0}\" is not empty")]
    SchemaNotEmpty(String),
    #[error(
        "another process has opened this lake for writing; this process can no longer commit ({0})"
    )]
    Fenced(String),
    /// Rows a commit deletes were deleted by a commit after the snapshot it read (ADR 0048).
    #[error("rows of table {0} were deleted by a concurrent statement")]
    DeletedConcurrently(String),
    /// Rows a commit deletes were moved into another container (tiering, compaction) after
    /// the snapshot it read: the statement must be planned again.
    #[error("rows of table {0} were moved by tiering since the statement read them")]
    RowsMoved(String),
    /// An append to a Kafka partition the table does not have (ADR 0079).
    #[error("table {table} has {partitions} Kafka partitions: no partition {partition}")]
    NoSuchPartition {
        table: String,
        partitions: u16,
        partition: u16,
    },
    #[error("notebook {0} does not exist")]
    NotebookNotFound(String),
    #[error("task {0} does not exist")]
    TaskNotFound(String),
    #[error("secret {0} does not exist")]
    SecretNotFound(String),
    /// A tick of a task that has run already (ADR 0081).
    #[error("task {task}'s tick at {scheduled} has run already")]
    TickTaken { task: String, scheduled: i64 },
    #[error("catalog store: {0}")]
    Store(String),
    /// The leader refused a commit handed to it: it conflicts with a commit made since the
    /// snapshot it was prepared against (ADR 0053). Prepared again, it may commit.
    #[error("{0}")]
    Conflict(String),
    /// A write on a node that only reads (`pondra serve --read-only`).
    #[error("this node is read-only: send writes to another node of the cluster")]
    ReadOnly,
    #[error("catalog entry {key} is corrupt: {message}")]
    Corrupt { key: String, message: String },
    #[error(transparent)]
    Storage(#[from] pondra_storage::StorageError),
}

impl From<slatedb::Error> for CatalogError {
    fn from(e: slatedb::Error) -> Self {
        if matches!(
            e.kind(),
            slatedb::ErrorKind::Closed(slatedb::CloseReason::Fenced)
        ) {
            CatalogError::Fenced(e.to_string())
        } else {
            CatalogError::Store(e.to_string())
        }
    }
}

pub type Result<T, E = CatalogError> = std::result::Result<T, E>;
