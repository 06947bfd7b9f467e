use thiserror::Error;

/// Why a statement or a node operation failed.
#[derive(Debug, Error)]
pub enum NodeError {
    #[error(transparent)]
    Parse(#[from] pondra_parser::ParseError),
    #[error(transparent)]
    Plan(#[from] pondra_planner::PlanError),
    #[error(transparent)]
    Exec(#[from] pondra_exec::ExecError),
    #[error(transparent)]
    Catalog(#[from] pondra_catalog::CatalogError),
    #[error(transparent)]
    Storage(#[from] pondra_storage::StorageError),
    #[error("{0}")]
    Other(String),
    /// A fault of Pondra's own (a panic) caught at the statement's boundary.
    #[error("internal error: {0}")]
    Internal(String),
    /// A transaction's commit lost to a concurrent one (SQLSTATE 40001).
    #[error("{}", crate::sessions::transaction::SERIALIZATION_FAILURE)]
    SerializationFailure,
    /// A statement sent to a transaction that a failed statement aborted (SQLSTATE 25P02).
    #[error("{}", crate::sessions::transaction::ABORTED)]
    Aborted,
    /// A producer's append that follows one the lake does not keep (ADR 0078): nothing was
    /// written, and the producer sends again from its first append not acknowledged.
    #[error("{0}")]
    OutOfOrder(String),
    /// A savepoint statement outside a transaction (SQLSTATE 25P01).
    #[error("{0} can only be used in transaction blocks")]
    NoTransaction(&'static str),
}

impl From<arrow::error::ArrowError> for NodeError {
    fn from(e: arrow::error::ArrowError) -> Self {
        NodeError::Exec(e.into())
    }
}

pub type Result<T, E = NodeError> = std::result::Result<T, E>;
