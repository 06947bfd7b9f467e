//! Where a lake or a file lives: a local path, or a URL naming a prefix in a bucket or on a
//! web server (ADR 0046). Stores are built from the variables each cloud's own tools read.

use std::path::PathBuf;
use std::sync::Arc;

use object_store::ObjectStore;
use object_store::path::Path;

use crate::{Result, StorageError};

/// A place named by a user: a folder, or a prefix of an object store.
#[derive(Clone, Debug)]
pub enum Location {
    /// A local path (`lake`, `/data/lake`, `file:///data/lake`).
    Folder(PathBuf),
    /// A prefix of a remote store (`s3://bucket/lake`).
    Remote {
        store: Arc<dyn ObjectStore>,
        /// The prefix under the store's root, empty for the whole bucket.
        prefix: Path,
        /// The URL as given, for messages.
        url: String,
    },
}

/// The URL schemes Pondra reads and writes, for messages.
pub const SCHEMES: &str = "s3://, gs://, az://, abfss://, https://, file:// or a path";

impl Location {
    /// Reads a path or a URL. A URL of a scheme Pondra does not know is an error, never a
    /// folder named after it.
    pub fn parse(text: &str) -> Result<Location> {
        let Some((scheme, _)) = text.split_once("://") else {
            return Ok(Location::Folder(PathBuf::from(text)));
        };
        let url = url::Url::parse(text).map_err(|e| StorageError::Location {
            location: text.to_string(),
            message: format!("not a valid URL: {e}"),
        })?;
        let store: Arc<dyn ObjectStore> = match scheme.to_ascii_lowercase().as_str() {
            "file" => {
                let path = url.to_file_path().map_err(|()| StorageError::Location {
                    location: text.to_string(),
                    message: "not a local path".into(),
                })?;
                return Ok(Location::Folder(path));
            }
            "s3" | "s3a" => Arc::new(
                object_store::aws::AmazonS3Builder::from_env()
                    .with_url(text)
                    .build()
                    .map_err(|e| store_error(text, e))?,
            ),
            "gs" => Arc::new(
                object_store::gcp::GoogleCloudStorageBuilder::from_env()
                    .with_url(text)
                    .build()
                    .map_err(|e| store_error(text, e))?,
            ),
            "az" | "azure" | "abfs" | "abfss" | "adl" => Arc::new(
                object_store::azure::MicrosoftAzureBuilder::from_env()
                    .with_url(text)
                    .build()
                    .map_err(|e| store_error(text, e))?,
            ),
            "http" | "https" => {
                let root = format!("{}://{}", url.scheme(), url.authority());
                let store = object_store::http::HttpBuilder::new()
                    .with_url(root)
                    .with_client_options(
                        object_store::ClientOptions::new().with_allow_http(url.scheme() == "http"),
                    )
                    .build()
                    .map_err(|e| store_error(text, e))?;
                let prefix = Path::from_url_path(url.path()).map_err(|e| store_error(text, e))?;
                return Ok(Location::Remote {
                    store: Arc::new(store),
                    prefix,
                    url: text.to_string(),
                });
            }
            other => {
                return Err(StorageError::Location {
                    location: text.to_string(),
                    message: format!("the scheme {other}:// is not known (use {SCHEMES})"),
                });
            }
        };
        let (_, prefix) =
            object_store::ObjectStoreScheme::parse(&url).map_err(|e| store_error(text, e))?;
        Ok(Location::Remote {
            store,
            prefix,
            url: text.to_string(),
        })
    }

    /// Whether a text names a remote store rather than a local path.
    pub fn is_remote(text: &str) -> bool {
        text.split_once("://")
            .is_some_and(|(scheme, _)| !scheme.eq_ignore_ascii_case("file"))
    }
}

fn store_error(location: &str, error: impl std::fmt::Display) -> StorageError {
    StorageError::Location {
        location: location.to_string(),
        message: error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_file_urls_are_folders_and_unknown_schemes_are_errors() {
        assert!(
            matches!(Location::parse("lake"), Ok(Location::Folder(p)) if p == std::path::Path::new("lake"))
        );
        assert!(matches!(
            Location::parse("file:///tmp/lake"),
            Ok(Location::Folder(p)) if p == std::path::Path::new("/tmp/lake")
        ));
        let error = Location::parse("ftp://x").unwrap_err().to_string();
        assert!(error.contains("the scheme ftp:// is not known"), "{error}");
        assert!(!std::path::Path::new("ftp:").exists());
    }

    #[test]
    fn bucket_urls_keep_their_prefix() {
        let location = object_store::aws::AmazonS3Builder::new()
            .with_url("s3://bucket/a/lake")
            .with_region("us-east-1")
            .build();
        assert!(location.is_ok());
        let url = url::Url::parse("s3://bucket/a/lake").unwrap();
        let (_, prefix) = object_store::ObjectStoreScheme::parse(&url).unwrap();
        assert_eq!(prefix.as_ref(), "a/lake");
    }
}
