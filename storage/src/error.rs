use thiserror::Error;

/// What can go wrong when reading or writing the lake's objects.
#[derive(Debug, Error)]
pub enum StorageError {
    #[error("object store: {0}")]
    ObjectStore(#[from] object_store::Error),
    #[error("object already exists: {0}")]
    AlreadyExists(String),
    /// A conditional overwrite found another version of the object than the one expected.
    #[error("object changed meanwhile: {0}")]
    Changed(String),
    #[error("arrow: {0}")]
    Arrow(#[from] arrow::error::ArrowError),
    #[error("parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    #[error("cannot open lake folder {path}: {message}")]
    Folder { path: String, message: String },
    #[error("cannot open {location}: {message}")]
    Location { location: String, message: String },
    #[error("no file matches {0}")]
    NoFileMatches(String),
    #[error("{0} is not supported yet")]
    Unsupported(String),
}

pub type Result<T, E = StorageError> = std::result::Result<T, E>;
