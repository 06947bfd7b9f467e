//! Object stores and the file formats Pondra keeps in them: the lake's objects, log segments
//! (Arrow IPC, zstd) and Parquet data files.

mod cache;
mod decimal;
mod decoded_segments;
mod delta_log;
mod dictionaries;
mod error;
mod file_source;
mod footers;
mod iceberg;
mod lake;
mod location;
mod log_segment;
mod parquet_file;

pub use cache::{ObjectCache, default_capacity};
pub use decimal::{DECIMAL64_MAX_PRECISION, decimal_parts, decimal_type};
pub use delta_log::{DeltaFiles, DeltaLog, delta_table_files, replay_delta_log};
pub use error::{Result, StorageError};
pub use file_source::{FileSource, block_on_io, glob_matches, is_json_file, write_file};
pub use iceberg::{
    IcebergDataFile, IcebergField, IcebergFiles, IcebergManifestEntry, IcebergManifestRef,
    IcebergObject, IcebergSnapshot, IcebergTableMetadata, IcebergType, IcebergValue,
    IcebergVersion, IcebergVersionInput, iceberg_table_files, iceberg_version,
    newest_metadata_file, parse_iceberg_metadata, parse_manifest, parse_manifest_list,
};
pub use lake::Lake;
pub use location::{Location, SCHEMES};
pub use log_segment::{decode_log_segment, encode_log_segment};
pub use parquet_file::{
    ColumnFooterStats, DistinctSample, PageRange, ParquetFileInfo, ParquetFooter, RowRanges,
    csv_file_schema, json_file_schema, parquet_file_info, plain_strings, read_csv_file,
    read_json_file, read_parquet_bytes, read_parquet_row_group, read_parquet_row_group_where,
    string_dictionary_type, write_parquet_bytes, write_sorted_run,
};
