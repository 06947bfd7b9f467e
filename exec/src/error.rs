use thiserror::Error;

/// Why a plan failed while running.
#[derive(Debug, Error)]
pub enum ExecError {
    #[error("{0}")]
    Arrow(String),
    #[error(transparent)]
    Storage(#[from] pondra_storage::StorageError),
    #[error("{0}")]
    Execution(String),
    /// The statement was stopped before it finished: cancelled, timed out, its client gone,
    /// or the server shutting down.
    #[error("{}", .0.message())]
    Stopped(crate::control::StopReason),
    /// An allocation the statement needed would pass the memory limit.
    #[error("out of memory: the statement needed more than {}", crate::memory::format_size(*.limit))]
    OutOfMemory { limit: usize },
}

impl From<arrow::error::ArrowError> for ExecError {
    fn from(e: arrow::error::ArrowError) -> Self {
        use arrow::error::ArrowError as A;
        let message = match e {
            A::DivideByZero => "division by zero".to_string(),
            A::ArithmeticOverflow(m) => format!("numeric overflow: {m}"),
            A::CastError(m) => format!("conversion failed: {m}"),
            A::InvalidArgumentError(m) | A::ComputeError(m) => m,
            other => other.to_string(),
        };
        ExecError::Arrow(message)
    }
}

pub type Result<T, E = ExecError> = std::result::Result<T, E>;
