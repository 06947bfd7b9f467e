use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, IntervalUnit, Schema, SchemaRef, TimeUnit};
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use pondra_storage::decimal_type;

use crate::statistics::ColumnStatistics;

/// The metadata key of a field that `SELECT *` leaves out (system columns: ADR 0048).
pub const HIDDEN_COLUMN: &str = "pondra.hidden";

/// The column of a change record and of `table_changes` naming each row's change.
pub const CHANGE_TYPE: &str = "_change_type";
/// The system column holding the commit that wrote a row.
pub const COMMIT_VERSION: &str = "_commit_version";
/// The system column holding when the commit that wrote a row was made (UTC).
pub const COMMIT_TIMESTAMP: &str = "_commit_timestamp";

/// The hidden column of each row's Kafka offset (ADR 0077): the rows its table's appends held
/// before it. Stored in data files after the commit columns; NULL for rows appended before
/// offsets were kept.
pub const OFFSET: &str = "_offset";

/// The system columns every row of a table carries, in order.
pub fn system_fields() -> [Field; 2] {
    [
        Field::new(COMMIT_VERSION, DataType::Int64, true),
        Field::new(
            COMMIT_TIMESTAMP,
            DataType::Timestamp(TimeUnit::Microsecond, None),
            true,
        ),
    ]
}

/// The key under which Parquet keeps a column's field id in an Arrow field's metadata.
pub const PARQUET_FIELD_ID: &str = "PARQUET:field_id";

/// The field ids of the commit columns in data files: past any id a table's column can have,
/// so that a reader that maps columns by field id (Iceberg) never takes one for a column.
pub const COMMIT_FIELD_IDS: [i32; 2] = [2_000_000_001, 2_000_000_002];

/// The field id in data files of the offset column, after the commit columns'.
pub const OFFSET_FIELD_ID: i32 = 2_000_000_003;

/// The field id in Parquet files and Iceberg schemas of the column with `column_id` (ADR
/// 0058): one more than the id, since Iceberg's field ids start at 1.
pub fn field_id(column_id: u32) -> i32 {
    i32::try_from(column_id + 1).expect("column ids stay below the commit columns' field ids")
}

/// A column type as SQL names it; each maps to one Arrow type.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SqlType {
    Boolean,
    Int,
    BigInt,
    Double,
    Decimal {
        precision: u8,
        scale: i8,
    },
    Varchar,
    Date,
    Timestamp,
    /// An instant, to the microsecond, kept in UTC and shown in the session's zone (ADR 0067).
    TimestampTz,
    Interval,
    /// A time of day without a zone, to the microsecond (ADR 0065).
    Time,
    /// A string of bytes, not text (ADR 0066).
    Blob,
    /// JSON text: a text column whose every value is checked to be JSON when it is written.
    /// Values read are text.
    Json,
    /// A UUID, kept as its canonical text (lower-case, hyphenated), to which every value
    /// written is brought; values read are text.
    Uuid,
    /// A list of values of one type, NULLs among them (ADR 0059).
    List(Box<SqlType>),
    /// A 4-byte float: read from files and lists that hold them (a vector's elements); SQL's
    /// `REAL` and `FLOAT` name `Double`.
    Real,
    /// A vector of `n` 4-byte floats (ADR 0082): a list of floats whose every row holds exactly
    /// `n` values, checked as it is written.
    Vector(u32),
    /// A record of named fields, each of its own type (ADR 0063). The fields of an unnamed
    /// struct (`row(1, 2)`) have empty names.
    Struct(Vec<StructField>),
    /// Distinct non-NULL keys of one type, each with a value of another (ADR 0064).
    Map(Box<SqlType>, Box<SqlType>),
}

/// One field of a [`SqlType::Struct`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StructField {
    pub name: String,
    pub sql_type: SqlType,
}

impl SqlType {
    /// The Arrow type that holds values of this SQL type.
    pub fn to_arrow(&self) -> DataType {
        match *self {
            SqlType::Boolean => DataType::Boolean,
            SqlType::Int => DataType::Int32,
            SqlType::BigInt => DataType::Int64,
            SqlType::Double => DataType::Float64,
            SqlType::Real => DataType::Float32,
            SqlType::Vector(_) => vector_type(),
            SqlType::Decimal { precision, scale } => decimal_type(precision, scale),
            SqlType::Varchar => DataType::Utf8,
            SqlType::Date => DataType::Date32,
            SqlType::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
            SqlType::TimestampTz => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            SqlType::Interval => DataType::Interval(IntervalUnit::MonthDayNano),
            SqlType::Time => DataType::Time64(TimeUnit::Microsecond),
            SqlType::Blob => DataType::Binary,
            SqlType::Json | SqlType::Uuid => DataType::Utf8,
            SqlType::List(ref element) => {
                DataType::List(Arc::new(Field::new("item", element.to_arrow(), true)))
            }
            SqlType::Map(ref key, ref value) => map_type(key.to_arrow(), value.to_arrow()),
            SqlType::Struct(ref fields) => DataType::Struct(
                fields
                    .iter()
                    .map(|f| Field::new(f.name.clone(), f.sql_type.to_arrow(), true))
                    .collect(),
            ),
        }
    }

    /// Whether values of the type are scalars, which statistics, keys and folds can order.
    pub fn is_scalar(&self) -> bool {
        !matches!(
            self,
            SqlType::List(_) | SqlType::Vector(_) | SqlType::Struct(_) | SqlType::Map(..)
        )
    }

    /// The SQL type of an Arrow type, when Pondra can store it.
    pub fn from_arrow(data_type: &DataType) -> Option<SqlType> {
        Some(match data_type {
            DataType::Boolean => SqlType::Boolean,
            DataType::Int32 => SqlType::Int,
            DataType::Int64 => SqlType::BigInt,
            DataType::Float64 => SqlType::Double,
            DataType::Float32 => SqlType::Real,
            DataType::Decimal64(precision, scale) | DataType::Decimal128(precision, scale) => {
                SqlType::Decimal {
                    precision: *precision,
                    scale: *scale,
                }
            }
            DataType::Utf8 => SqlType::Varchar,
            DataType::Date32 => SqlType::Date,
            DataType::Timestamp(TimeUnit::Microsecond, None) => SqlType::Timestamp,
            DataType::Timestamp(TimeUnit::Microsecond, Some(_)) => SqlType::TimestampTz,
            DataType::Interval(IntervalUnit::MonthDayNano) => SqlType::Interval,
            DataType::Time64(TimeUnit::Microsecond) => SqlType::Time,
            DataType::Binary => SqlType::Blob,
            DataType::List(element) => {
                SqlType::List(Box::new(SqlType::from_arrow(element.data_type())?))
            }
            DataType::Map(entries, _) => {
                let DataType::Struct(fields) = entries.data_type() else {
                    return None;
                };
                let [key, value] = fields.iter().collect::<Vec<_>>()[..] else {
                    return None;
                };
                SqlType::Map(
                    Box::new(SqlType::from_arrow(key.data_type())?),
                    Box::new(SqlType::from_arrow(value.data_type())?),
                )
            }
            DataType::Struct(fields) => SqlType::Struct(
                fields
                    .iter()
                    .map(|f| {
                        Some(StructField {
                            name: f.name().clone(),
                            sql_type: SqlType::from_arrow(f.data_type())?,
                        })
                    })
                    .collect::<Option<Vec<_>>>()?,
            ),
            _ => return None,
        })
    }
}

impl fmt::Display for SqlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SqlType::Boolean => write!(f, "BOOLEAN"),
            SqlType::Int => write!(f, "INTEGER"),
            SqlType::BigInt => write!(f, "BIGINT"),
            SqlType::Double => write!(f, "DOUBLE"),
            SqlType::Real => write!(f, "FLOAT"),
            SqlType::Vector(dimensions) => write!(f, "FLOAT[{dimensions}]"),
            SqlType::Decimal { precision, scale } => write!(f, "DECIMAL({precision},{scale})"),
            SqlType::Varchar => write!(f, "VARCHAR"),
            SqlType::Date => write!(f, "DATE"),
            SqlType::Timestamp => write!(f, "TIMESTAMP"),
            SqlType::TimestampTz => write!(f, "TIMESTAMP WITH TIME ZONE"),
            SqlType::Interval => write!(f, "INTERVAL"),
            SqlType::Time => write!(f, "TIME"),
            SqlType::Blob => write!(f, "BLOB"),
            SqlType::Json => write!(f, "JSON"),
            SqlType::Uuid => write!(f, "UUID"),
            SqlType::List(element) => write!(f, "{element}[]"),
            // DuckDB's names: STRUCT(a INTEGER), and TUPLE(INTEGER) for an unnamed struct.
            SqlType::Map(key, value) => write!(f, "MAP({key}, {value})"),
            SqlType::Struct(fields) if fields.is_empty() => write!(f, "STRUCT"),
            SqlType::Struct(fields) if fields.iter().all(|f| f.name.is_empty()) => {
                let types: Vec<String> = fields.iter().map(|f| f.sql_type.to_string()).collect();
                write!(f, "TUPLE({})", types.join(", "))
            }
            SqlType::Struct(fields) => {
                let fields: Vec<String> = fields
                    .iter()
                    .map(|f| format!("{} {}", quoted_field_name(&f.name), f.sql_type))
                    .collect();
                write!(f, "STRUCT({})", fields.join(", "))
            }
        }
    }
}

/// The Arrow type of vectors (ADR 0082): lists of 4-byte floats, each of its column's length.
pub fn vector_type() -> DataType {
    DataType::List(Arc::new(Field::new("item", DataType::Float32, true)))
}

/// The Arrow type of maps from `key` to `value` (ADR 0064): a list of `entries` structs of a
/// non-NULL `key` and a nullable `value`, unsorted.
pub fn map_type(key: DataType, value: DataType) -> DataType {
    let entries = DataType::Struct(
        vec![
            Field::new("key", key, false),
            Field::new("value", value, true),
        ]
        .into(),
    );
    DataType::Map(Arc::new(Field::new("entries", entries, false)), false)
}

/// A struct field's name as DuckDB writes it in a type: bare when it is a plain lower-case
/// word, in double quotes otherwise.
fn quoted_field_name(name: &str) -> String {
    let plain = name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// How a merge table folds a column of two rows of one key (ADR 0050). NULL is no value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Fold {
    Sum,
    Min,
    Max,
    /// The newest row's value, NULL included.
    Last,
}

/// One column of a stored table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Column {
    pub name: String,
    pub sql_type: SqlType,
    /// Declared NOT NULL (key columns always are): a write that leaves it NULL fails.
    #[serde(default)]
    pub not_null: bool,
    /// Never reused within the table: data files and log segments name their columns by id,
    /// so that ADD and DROP COLUMN rewrite no file (ADR 0048). Given by
    /// [`TableDef::with_column_ids`].
    #[serde(default)]
    pub id: u32,
}

/// How a container's columns map to its table's, when they differ (a container written before
/// an ADD or DROP COLUMN): for each column of the table, its position in the container, or
/// `None` when the container predates the column (its values are NULL); and how many of the
/// table's columns the container stores (what it stores after them, commit columns or a change
/// record's, follows).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub columns: Vec<Option<usize>>,
    pub stored: usize,
}

/// What a stored table is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TableKind {
    /// Rows appended by writers.
    Table,
    /// A materialized view: its stored rows are the view's state (for an aggregating view, one
    /// partial aggregate per group per commit, merged when read and when tiered), kept current by
    /// every commit to `base_table` and to each table of `also_reads` (the other tables a view
    /// over a join reads, ADR 0054).
    MaterializedView {
        sql: String,
        base_table: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        also_reads: Vec<String>,
    },
    /// A materialized view's count of the values of its mins and maxes (ADR 0052), keyed on
    /// the group and the value: hidden from listings, kept by the commits that keep `view`,
    /// dropped and renamed with it. `position` numbers the view's count tables.
    ValueCounts { view: String, position: usize },
    /// One side of a join in a materialized view, indexed by its join key (ADR 0054): the
    /// side's rows, each with its number of copies, keyed on the key values and the row. Hidden
    /// and kept with `view`, as `ValueCounts` is. `position` is 2j for the left side of the
    /// view's j-th join, 2j+1 for its right side.
    JoinState { view: String, position: usize },
    /// A view that stores nothing: its query is bound in place of the name wherever it is read.
    /// `column_names` rename the query's columns when the view declared them.
    View {
        sql: String,
        column_names: Vec<String>,
    },
    /// A scalar macro (ADR 0068), kept under [`macro_name`]: its parameters, the SQL text of
    /// each one's default if it has one, and the SQL text of its body. Holds no rows; hidden
    /// from listings and from FROM.
    Macro {
        parameters: Vec<String>,
        defaults: Vec<Option<String>>,
        body: String,
        /// A typed SQL function's parameter and return types (ADR 0081); none for a macro.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<Signature>,
    },
    /// A stored procedure (ADR 0081), kept under [`procedure_name`]: its parameters' names and
    /// types, and its body, run by `CALL`. Holds no rows; hidden from listings and from FROM.
    Procedure {
        parameters: Vec<String>,
        parameter_types: Vec<SqlType>,
        language: FunctionLanguage,
        body: String,
    },
}

/// A typed SQL function's types (ADR 0081): `CREATE FUNCTION f(a INT) RETURNS BIGINT ...`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signature {
    pub parameter_types: Vec<SqlType>,
    pub returns: SqlType,
    /// The body's language: SQL, bound inline, or Python, run in worker processes.
    #[serde(default, skip_serializing_if = "FunctionLanguage::is_sql")]
    pub language: FunctionLanguage,
    /// A Python function called once per batch of rows, on arrays, rather than once per row.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub vectorized: bool,
    /// `RETURNS TABLE (...)`: the function is called in FROM, its rows those of its body's
    /// query, and `returns` is a struct of the declared columns.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub table: bool,
}

/// What a typed function's body is written in (ADR 0081).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FunctionLanguage {
    #[default]
    Sql,
    Python,
}

impl FunctionLanguage {
    pub fn is_sql(&self) -> bool {
        *self == FunctionLanguage::Sql
    }

    pub fn name(self) -> &'static str {
        match self {
            FunctionLanguage::Sql => "sql",
            FunctionLanguage::Python => "python",
        }
    }
}

/// The catalog name a macro is kept under (ADR 0068), apart from the tables' names.
pub fn macro_name(name: &str) -> String {
    format!("{name}$macro")
}

/// The catalog name a typed SQL function is kept under (ADR 0081): one per overload, its
/// parameter types in the name.
pub fn function_name(name: &str, parameter_types: &[SqlType]) -> String {
    let types: Vec<String> = parameter_types
        .iter()
        .map(|t| t.to_string().to_lowercase())
        .collect();
    format!("{name}({}){FUNCTION_SUFFIX}", types.join(","))
}

/// The ending of a typed SQL function's catalog name.
pub const FUNCTION_SUFFIX: &str = "$function";

/// The catalog name a procedure is kept under (ADR 0081): one per overload, as a function's.
pub fn procedure_name(name: &str, parameter_types: &[SqlType]) -> String {
    let function = function_name(name, parameter_types);
    let name = function.trim_end_matches(FUNCTION_SUFFIX);
    format!("{name}{PROCEDURE_SUFFIX}")
}

/// The ending of a procedure's catalog name.
pub const PROCEDURE_SUFFIX: &str = "$procedure";

/// An index as declared by `CREATE INDEX`. Pondra keeps no index structure (ADR 0005): scans
/// prune by the statistics of Parquet files instead. The declaration is kept so that schemas
/// written for other databases load, and so that DROP INDEX finds what it drops.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Index {
    pub name: String,
    pub columns: Vec<String>,
    /// How an HNSW index finds near vectors (ADR 0082); none for a declared index, which
    /// reads do not use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector: Option<crate::VectorIndex>,
}

/// A table's time to live (ADR 0048): rows whose `column` (a TIMESTAMP or DATE) is older than
/// `micros` before now are hidden from reads at once, and dropped when tiering rewrites them.
/// Rows whose column is NULL never expire.
/// A table's watermark (ADR 0055): the greatest `column` written, less `delay_micros`. Rows
/// below it when they are written are late.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Watermark {
    pub column: String,
    pub delay_micros: i64,
}

/// What the lake keeps of a watermarked table's event times (ADR 0055).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventTime {
    /// The greatest event time written, in microseconds since the epoch.
    pub greatest: i64,
    /// How many rows were late when written.
    pub late_rows: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ttl {
    pub column: String,
    pub micros: i64,
}

impl Ttl {
    /// The oldest value of the column a row keeps at `now_ms` (ms since the epoch), in
    /// microseconds since the epoch.
    pub fn cutoff_micros(&self, now_ms: u64) -> i64 {
        now_ms as i64 * 1000 - self.micros
    }

    /// The same cutoff in days since the epoch, for a DATE column: a row of an earlier day
    /// has expired.
    pub fn cutoff_days(&self, now_ms: u64) -> i32 {
        self.cutoff_micros(now_ms).div_euclid(86_400_000_000) as i32
    }
}

/// A stored table or materialized view.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableDef {
    /// Never reused, so a dropped table's leftovers can never be mistaken for a new table's.
    pub id: u64,
    pub name: String,
    pub columns: Vec<Column>,
    pub kind: TableKind,
    #[serde(default)]
    pub indexes: Vec<Index>,
    /// The primary key's columns; a keyed table holds one row per key, and an INSERT of a
    /// key it holds replaces that row (an upsert). Empty for an append-only table.
    #[serde(default)]
    pub key: Vec<String>,
    /// UNIQUE constraints: no two rows may agree on all of these columns unless one is NULL.
    #[serde(default)]
    pub unique: Vec<Vec<String>>,
    /// `COMMENT ON`: the table's comment under the empty name, each column's under its name.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub comments: std::collections::BTreeMap<String, String>,
    /// Each column's default, as SQL text, under the column's name (ADR 0073).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub defaults: std::collections::BTreeMap<String, String>,
    /// `WITH (ttl = ..., ttl_column = ...)`: when its rows expire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<Ttl>,
    /// `WATERMARK FOR column AS column - delay`: how late its rows may arrive (ADR 0055).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watermark: Option<Watermark>,
    /// A merge table's folds (ADR 0050): how an INSERT folds each named column with the row
    /// the table holds for its key; a column not named takes the newest value. Empty for a
    /// table that is not a merge table.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub folds: std::collections::BTreeMap<String, Fold>,
    /// The id the next added column gets; 0 in a definition written before columns had ids.
    #[serde(default)]
    pub next_column_id: u32,
    /// How many columns the table was created with: a container that lists no column ids
    /// holds the columns with ids `0..positional_width`, in order.
    #[serde(default)]
    pub positional_width: u32,
    /// `WITH (publish = 'delta,iceberg')`: the formats the table is published in for other
    /// engines (ADR 0058), in the order named; empty for a table not published.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub publish: Vec<TableFormat>,
    /// `WITH (kafka_format = '...')`: how the Kafka door reads the values produced to the
    /// table (ADR 0077).
    #[serde(default, skip_serializing_if = "KafkaFormat::is_json")]
    pub kafka_format: KafkaFormat,
    /// `WITH (partitions = N)`: the table's Kafka partitions (ADR 0079); 1 unless given.
    #[serde(default = "one_partition", skip_serializing_if = "is_one_partition")]
    pub partitions: u16,
}

fn one_partition() -> u16 {
    1
}

fn is_one_partition(partitions: &u16) -> bool {
    *partitions == 1
}

/// The most Kafka partitions a table may have (ADR 0079).
pub const MAX_PARTITIONS: u16 = 1024;

/// How many low bits of a row's `_offset` hold its offset within its partition (ADR 0079):
/// partition p's offset n is the lake offset `p << 48 | n`.
pub const PARTITION_SHIFT: u32 = 48;

/// The lake offset (`_offset`) of partition `partition`'s offset `offset` (ADR 0079).
pub fn lake_offset(partition: u16, offset: u64) -> u64 {
    debug_assert!(
        offset < 1 << PARTITION_SHIFT,
        "offset {offset} beyond a partition's"
    );
    (u64::from(partition) << PARTITION_SHIFT) | offset
}

/// The partition of a lake offset and the offset within it (ADR 0079).
pub fn partition_offset(lake_offset: u64) -> (u16, u64) {
    let partition = lake_offset >> PARTITION_SHIFT;
    assert!(
        partition <= u64::from(u16::MAX),
        "lake offset {lake_offset} beyond any partition"
    );
    (partition as u16, lake_offset & ((1 << PARTITION_SHIFT) - 1))
}

/// How the Kafka door reads a record's value (ADR 0077).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KafkaFormat {
    /// A JSON object of the row's columns by name.
    #[default]
    Json,
    /// A Debezium change event of a keyed table's row.
    Debezium,
}

impl KafkaFormat {
    /// The format a `kafka_format` option names (`json` or `debezium`, any case).
    pub fn parse(name: &str) -> Option<KafkaFormat> {
        match name.trim().to_ascii_lowercase().as_str() {
            "json" => Some(KafkaFormat::Json),
            "debezium" => Some(KafkaFormat::Debezium),
            _ => None,
        }
    }

    pub fn is_json(&self) -> bool {
        *self == KafkaFormat::Json
    }
}

/// An open table format a table can be published in (ADR 0058).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TableFormat {
    Delta,
    Iceberg,
}

impl TableFormat {
    /// The format a `publish` option names (`delta` or `iceberg`, any case).
    pub fn parse(name: &str) -> Option<TableFormat> {
        match name.trim().to_ascii_lowercase().as_str() {
            "delta" => Some(TableFormat::Delta),
            "iceberg" => Some(TableFormat::Iceberg),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            TableFormat::Delta => "delta",
            TableFormat::Iceberg => "iceberg",
        }
    }
}

impl TableDef {
    /// A definition with no index, key, constraint or comment; the commit that creates it
    /// gives it its id.
    pub fn new(name: String, columns: Vec<Column>, kind: TableKind) -> TableDef {
        TableDef {
            id: 0,
            name,
            columns,
            kind,
            indexes: Vec::new(),
            key: Vec::new(),
            unique: Vec::new(),
            comments: Default::default(),
            defaults: Default::default(),
            ttl: None,
            watermark: None,
            folds: Default::default(),
            next_column_id: 0,
            positional_width: 0,
            publish: Vec::new(),
            kafka_format: KafkaFormat::Json,
            partitions: 1,
        }
        .with_column_ids()
    }

    /// The definition with column ids, if it was written before columns had them: each
    /// column's position, which is how files written before then map them.
    pub fn with_column_ids(mut self) -> TableDef {
        if self.next_column_id == 0 {
            let width = u32::try_from(self.columns.len()).expect("under 2^32 columns");
            for (id, column) in (0..).zip(&mut self.columns) {
                column.id = id;
            }
            self.next_column_id = width;
            self.positional_width = width;
        }
        self
    }

    /// The ids of the table's columns, in order.
    pub fn column_ids(&self) -> Vec<u32> {
        self.columns.iter().map(|c| c.id).collect()
    }

    /// The column ids a container written now records: none while they are the ids the table
    /// was created with, in order (as every container of a table never altered holds).
    pub fn stored_column_ids(&self) -> Vec<u32> {
        let ids = self.column_ids();
        match ids.iter().copied().eq(0..self.positional_width) {
            true => Vec::new(),
            false => ids,
        }
    }

    /// How a container whose columns have `ids` (none: the table's first columns) maps to the
    /// table's columns; `None` when it holds exactly the table's columns, in order.
    pub fn layout_of(&self, ids: &[u32]) -> Option<Layout> {
        let implied: Vec<u32>;
        let ids = match ids.is_empty() {
            true => {
                implied = (0..self.positional_width).collect();
                &implied
            }
            false => ids,
        };
        if self.columns.iter().map(|c| c.id).eq(ids.iter().copied()) {
            return None;
        }
        let columns = self
            .columns
            .iter()
            .map(|c| ids.iter().position(|&id| id == c.id))
            .collect();
        Some(Layout {
            columns,
            stored: ids.len(),
        })
    }

    /// The Arrow schema of the stored rows; every column is nullable.
    pub fn arrow_schema(&self) -> SchemaRef {
        let fields: Vec<Field> = self
            .columns
            .iter()
            .map(|c| Field::new(&c.name, c.sql_type.to_arrow(), true))
            .collect();
        Arc::new(Schema::new(fields))
    }

    /// The schema of a scan of the table: its rows; with `system`, the hidden system columns
    /// `_commit_version` and `_commit_timestamp` after them; with `addressed`, the hidden row
    /// address last (ADR 0048).
    pub fn scan_schema(&self, system: bool, addressed: bool) -> SchemaRef {
        self.scan_schema_numbered(system, false, addressed)
    }

    /// As [`TableDef::scan_schema`], and with `numbered`, the hidden row number `rowid` after
    /// the system columns (ADR 0075).
    pub fn scan_schema_numbered(&self, system: bool, numbered: bool, addressed: bool) -> SchemaRef {
        self.scan_schema_hidden(system, numbered, addressed, false)
    }

    /// As [`TableDef::scan_schema_numbered`], and with `offsets`, each row's offset `_offset`
    /// last (ADR 0077).
    pub fn scan_schema_hidden(
        &self,
        system: bool,
        numbered: bool,
        addressed: bool,
        offsets: bool,
    ) -> SchemaRef {
        let mut fields = self.arrow_schema().fields().to_vec();
        let hidden = |name: &str, data_type: DataType| {
            let metadata = std::collections::HashMap::from([(HIDDEN_COLUMN.into(), "true".into())]);
            Arc::new(Field::new(name, data_type, true).with_metadata(metadata))
        };
        if system {
            fields.extend(system_fields().map(|f| hidden(f.name(), f.data_type().clone())));
        }
        if numbered {
            fields.push(hidden(crate::ROW_ID, DataType::Int64));
        }
        if addressed {
            fields.push(hidden(crate::ROW_ADDRESS, DataType::Int64));
        }
        if offsets {
            fields.push(hidden(OFFSET, DataType::Int64));
        }
        Arc::new(Schema::new(fields))
    }

    /// What a change record of the table holds (ADR 0048): its columns, the change type, and
    /// for a row the commit removed, the version and time of the commit that had written it
    /// (NULL for a row it added: that is the record's own commit).
    pub fn change_record_schema(&self) -> SchemaRef {
        let mut fields = self.arrow_schema().fields().to_vec();
        fields.push(Arc::new(Field::new(CHANGE_TYPE, DataType::Utf8, false)));
        fields.extend(system_fields().map(Arc::new));
        Arc::new(Schema::new(fields))
    }

    /// The schema of the data files tiering writes for a table: its columns, then the commit
    /// version and time of each row (ADR 0048), then its offset (ADR 0077).
    pub fn stored_schema(&self) -> SchemaRef {
        let mut fields = self.arrow_schema().fields().to_vec();
        fields.extend(system_fields().map(Arc::new));
        fields.push(Arc::new(Field::new(OFFSET, DataType::Int64, true)));
        Arc::new(Schema::new(fields))
    }

    /// The schema data files of the table are written in: [`TableDef::stored_schema`] (or
    /// the table's columns alone, without `commit_columns`), each field with its Parquet field
    /// id (ADR 0058).
    pub fn file_schema(&self, commit_columns: bool) -> SchemaRef {
        let ids = self.columns.iter().map(|c| field_id(c.id));
        let schema = match commit_columns {
            true => self.stored_schema(),
            false => self.arrow_schema(),
        };
        let fields: Vec<Field> = schema
            .fields()
            .iter()
            .zip(ids.chain(COMMIT_FIELD_IDS).chain([OFFSET_FIELD_ID]))
            .map(|(field, id)| {
                let metadata = HashMap::from([(PARQUET_FIELD_ID.to_string(), id.to_string())]);
                field.as_ref().clone().with_metadata(metadata)
            })
            .collect();
        Arc::new(Schema::new(fields))
    }

    pub fn is_materialized_view(&self) -> bool {
        matches!(self.kind, TableKind::MaterializedView { .. })
    }

    pub fn is_view(&self) -> bool {
        matches!(self.kind, TableKind::View { .. })
    }

    /// Whether the table is a view's internal state that no listing shows and no query names.
    pub fn is_hidden(&self) -> bool {
        matches!(
            self.kind,
            TableKind::ValueCounts { .. }
                | TableKind::JoinState { .. }
                | TableKind::Macro { .. }
                | TableKind::Procedure { .. }
        )
    }
}

/// The name of a view's count table at `position` (ADR 0052).
pub fn value_counts_name(view: &str, position: usize) -> String {
    format!("{view}$values_{position}")
}

/// The name of the state of a view's join side at `position` (ADR 0054).
pub fn join_state_name(view: &str, position: usize) -> String {
    format!("{view}$join_{position}")
}

/// Where a log segment's bytes are.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SegmentPayload {
    /// Small segments ride inside the catalog commit itself.
    Inline(#[serde(with = "crate::wire::base64_bytes")] Bytes),
    /// Large segments are objects under `log/`, written before the commit that names them.
    Object(String),
}

/// One committed batch of rows not yet folded into Parquet: Arrow IPC, zstd-compressed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogSegment {
    pub table_id: u64,
    /// The commit that made these rows visible.
    pub commit: u64,
    /// Position among the segments one commit wrote to the same table.
    pub index: u32,
    pub rows: u64,
    /// The offset of its first row: the rows its table's appends held before it, in commit
    /// order (ADR 0077). None in a segment written before offsets were kept and in a change
    /// record.
    pub first_offset: Option<u64>,
    /// Wall-clock milliseconds at commit, so tiering can tell how long rows have waited.
    pub committed_at_ms: u64,
    pub payload: SegmentPayload,
    /// Per column, the least and greatest value of an integer or date column, for scans to
    /// skip the segment by; empty when not gathered.
    pub ranges: Vec<Option<(i64, i64)>>,
    /// The ids of the table's columns the segment holds, in order; empty for the columns the
    /// table was created with ([`TableDef::stored_column_ids`]).
    pub column_ids: Vec<u32>,
}

/// One Parquet file of a table under `data/<table>/`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataFile {
    pub table_id: u64,
    pub path: String,
    pub rows: u64,
    pub size_bytes: u64,
    /// Per column of the table, in order, as the file was written; empty when not gathered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<ColumnStatistics>,
    /// The commit that added the file, and its time in ms since the epoch: the commit version
    /// of rows of a file that does not store theirs (0 in files added before it was kept).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub commit: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub committed_at_ms: u64,
    /// The ids of the table's columns the file holds, in order; empty for the columns the table
    /// was created with ([`TableDef::stored_column_ids`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub column_ids: Vec<u32>,
    /// The least and greatest offset of its rows (ADR 0077); none when it stores no offsets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offsets: Option<(u64, u64)>,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(name: &str) -> Column {
        Column {
            name: name.into(),
            sql_type: SqlType::BigInt,
            not_null: false,
            id: 0,
        }
    }

    #[test]
    fn containers_map_to_the_columns_by_id() {
        let mut def = TableDef::new(
            "t".into(),
            vec![column("a"), column("b"), column("c")],
            TableKind::Table,
        );
        assert_eq!(def.column_ids(), vec![0, 1, 2]);
        assert_eq!(def.stored_column_ids(), Vec::<u32>::new());
        assert_eq!(def.layout_of(&[]), None);
        // DROP COLUMN b, then ADD COLUMN d.
        def.columns.remove(1);
        let mut d = column("d");
        d.id = def.next_column_id;
        def.next_column_id += 1;
        def.columns.push(d);
        assert_eq!(def.stored_column_ids(), vec![0, 2, 3]);
        assert_eq!(def.layout_of(&[0, 2, 3]), None);
        let old = def.layout_of(&[]).unwrap();
        assert_eq!(old.columns, vec![Some(0), Some(2), None]);
        assert_eq!(old.stored, 3);
        let reordered = def.layout_of(&[3, 0]).unwrap();
        assert_eq!(reordered.columns, vec![Some(1), None, Some(0)]);
    }

    #[test]
    fn definitions_without_ids_get_their_positions() {
        let json = r#"{"id":4,"name":"t","columns":[{"name":"a","sql_type":"BigInt"},
            {"name":"b","sql_type":"BigInt"}],"kind":"Table"}"#;
        let def: TableDef = serde_json::from_str(json).unwrap();
        let def = def.with_column_ids();
        assert_eq!(def.column_ids(), vec![0, 1]);
        assert_eq!((def.next_column_id, def.positional_width), (2, 2));
        assert_eq!(def.layout_of(&[]), None);
    }
}
