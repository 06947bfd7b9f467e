//! Apache Iceberg v2 tables: publishing Pondra's tables as Iceberg (its Parquet files named
//! in place, not copied) and reading other engines' Iceberg tables. Pure: these functions
//! build and parse the bytes of metadata.json files, manifest lists and manifests (Avro);
//! the caller reads and writes the objects and decides which files a version holds.
//!
//! Pondra's tables are unpartitioned and unsorted, with one manifest per snapshot. What the
//! readers do not follow (format version 3, gzip-compressed metadata, nested or other column
//! types) is refused by name; delete manifests and files are reported by their `content`
//! for the caller to refuse.

mod avro_schemas;
mod manifest_read;
mod manifest_write;
mod metadata;
mod metadata_write;
mod table_files;
mod types;
mod version;

#[cfg(test)]
mod tests;

pub use manifest_read::{
    IcebergManifestEntry, IcebergManifestRef, parse_manifest, parse_manifest_list,
};
pub use metadata::{
    IcebergSnapshot, IcebergTableMetadata, newest_metadata_file, parse_iceberg_metadata,
};
pub use table_files::{IcebergFiles, iceberg_table_files};
pub use types::{IcebergField, IcebergType, IcebergValue};
pub use version::{
    IcebergDataFile, IcebergObject, IcebergVersion, IcebergVersionInput, iceberg_version,
};
