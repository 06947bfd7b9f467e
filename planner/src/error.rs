use thiserror::Error;

/// Why a statement could not be planned: the message names what the user must change.
#[derive(Debug, Error)]
pub enum PlanError {
    #[error("{0}")]
    Bind(String),
    #[error("not supported yet: {0}")]
    NotSupported(String),
    #[error(transparent)]
    Parse(#[from] pondra_parser::ParseError),
}

pub type Result<T, E = PlanError> = std::result::Result<T, E>;

/// A binding error with a formatted message.
#[macro_export]
macro_rules! bind_err {
    ($($arg:tt)*) => { $crate::PlanError::Bind(format!($($arg)*)) };
}

/// A "not supported yet" error with a formatted message.
#[macro_export]
macro_rules! unsupported {
    ($($arg:tt)*) => { $crate::PlanError::NotSupported(format!($($arg)*)) };
}
