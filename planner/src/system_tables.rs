//! The catalog as Postgres clients read it: `pg_catalog` and `information_schema` tables,
//! built from the snapshot when a query names them (psql's `\dt`, DBeaver, Metabase).

use std::sync::Arc;

use arrow::array::ListArray;
use arrow::datatypes::{DataType, Field, Int32Type, Schema, TimeUnit};
use pondra_catalog::{Snapshot, TableDef, TableKind};

use crate::expr::Expr;
use crate::logical::LogicalPlan;
use crate::scalar::ScalarValue;
use crate::types::list_of;

pub const PG_CATALOG_OID: i32 = 11;
pub const PUBLIC_OID: i32 = 2200;
pub const INFORMATION_SCHEMA_OID: i32 = 13_000;
/// The access method of every index: clients print it.
const BTREE_OID: i32 = 403;
/// The owner every object has.
pub const OWNER: &str = "pondra";
/// The database a lake is to a client, unless the server names it (`--lakes`).
pub const CATALOG: &str = "pondra";
/// The Postgres version clients are told, which picks the catalog queries they send: 14's are
/// those Pondra answers (ADR 0010).
pub const SERVER_VERSION: &str = "14.0";

/// `pg_class`'s own oid: the class of every relation's comment in `pg_description`.
const PG_CLASS_OID: i32 = 1259;

/// The oids Postgres gives its catalog tables, which clients name as `'pg_class'::regclass`.
pub fn catalog_table_oid(name: &str) -> Option<i32> {
    Some(match name {
        "pg_type" => 1247,
        "pg_attribute" => 1249,
        "pg_proc" => 1255,
        "pg_class" => 1259,
        "pg_namespace" => 2615,
        "pg_constraint" => 2606,
        "pg_description" => 2609,
        "pg_index" => 2610,
        "pg_database" => 1262,
        "pg_am" => 2601,
        "pg_attrdef" => 2604,
        "pg_depend" => 2608,
        "pg_inherits" => 2611,
        "pg_rewrite" => 2618,
        "pg_trigger" => 2620,
        "pg_sequence" => 2224,
        "pg_collation" => 3456,
        "pg_enum" => 3501,
        "pg_policy" => 3256,
        "pg_statistic_ext" => 3381,
        "pg_publication" => 6104,
        "pg_auth_members" => 1261,
        _ => return None,
    })
}

/// A table's oid: user tables from 16384, as in Postgres. Oids are 32 bits and table ids 64,
/// so ids wrap below the indexes' oids (2^24): two tables 2^23 ids apart share an oid.
pub fn table_oid(table: &TableDef) -> i32 {
    16_384 + (table.id % (1 << 23)) as i32
}

/// The schema and the name of a table as clients see them: a table of a schema other than
/// `public` is stored as `<schema>.<table>`.
pub fn schema_and_name(stored: &str) -> (&str, &str) {
    stored.split_once('.').unwrap_or(("public", stored))
}

/// The oid of the schema of a table stored as `stored`.
fn namespace_oid(snapshot: &Snapshot, stored: &str) -> i32 {
    match snapshot.schemas.get(schema_and_name(stored).0) {
        Some(id) => 16_384 + *id as i32,
        None => PUBLIC_OID,
    }
}

/// An index as clients see one: a keyed table's primary key, a UNIQUE constraint, or an index
/// made by CREATE INDEX. The first two are constraints too, as in Postgres.
pub struct IndexEntry {
    pub oid: i32,
    /// The oid of its constraint, for a primary key or UNIQUE constraint.
    pub constraint: Option<(i32, ConstraintKind)>,
    pub name: String,
    /// The table's column numbers, from 1.
    pub columns: Vec<i32>,
    pub column_names: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ConstraintKind {
    PrimaryKey,
    Unique,
}

impl IndexEntry {
    pub fn is_unique(&self) -> bool {
        self.constraint.is_some()
    }

    /// As `pg_get_indexdef` writes it.
    pub fn definition(&self, table: &str) -> String {
        format!(
            "CREATE {}INDEX {} ON public.{table} USING btree ({})",
            if self.is_unique() { "UNIQUE " } else { "" },
            self.name,
            self.column_names.join(", ")
        )
    }

    /// As `pg_get_constraintdef` writes it.
    pub fn constraint_definition(&self) -> Option<String> {
        let (_, kind) = self.constraint?;
        let kind = match kind {
            ConstraintKind::PrimaryKey => "PRIMARY KEY",
            ConstraintKind::Unique => "UNIQUE",
        };
        Some(format!("{kind} ({})", self.column_names.join(", ")))
    }
}

/// The indexes of `table`, with oids of their own: 2^24 on, 256 per table (indexes first,
/// their constraints from 128). Table ids wrap as in `table_oid`, so every oid fits 31 bits.
pub fn table_indexes(table: &TableDef) -> Vec<IndexEntry> {
    let base = (1 << 24) + (table.id % (1 << 22)) as i32 * 256;
    let position = |name: &String| {
        table
            .columns
            .iter()
            .position(|c| c.name == *name)
            .map_or(0, |i| i as i32 + 1)
    };
    let mut entries = Vec::new();
    let mut add = |name: String, columns: &[String], kind: Option<ConstraintKind>| {
        let k = entries.len() as i32;
        entries.push(IndexEntry {
            oid: base + k,
            constraint: kind.map(|kind| (base + 128 + k, kind)),
            name,
            columns: columns.iter().map(position).collect(),
            column_names: columns.to_vec(),
        });
    };
    if !table.key.is_empty() {
        add(
            format!("{}_pkey", schema_and_name(&table.name).1),
            &table.key,
            Some(ConstraintKind::PrimaryKey),
        );
    }
    for unique in &table.unique {
        let name = format!(
            "{}_{}_key",
            schema_and_name(&table.name).1,
            unique.join("_")
        );
        add(name, unique, Some(ConstraintKind::Unique));
    }
    for index in &table.indexes {
        add(index.name.clone(), &index.columns, None);
    }
    entries
}

enum Cell {
    Int(i32),
    Ints(Vec<i32>),
    Text(String),
    Bool(bool),
    Null,
}

/// A function or macro as the catalogs list it (ADR 0068, 0081).
struct Routine<'s> {
    def: &'s TableDef,
    name: String,
    arguments: usize,
    returns: Option<pondra_catalog::SqlType>,
    body: String,
    language: pondra_catalog::FunctionLanguage,
    procedure: bool,
}

/// PostgreSQL's `record`, the type a function returning a table is listed with.
const RECORD: (i32, &str) = (2249, "record");

impl Routine<'_> {
    /// The oid and name of the type the routine returns: none for a macro or a procedure.
    fn returned_type(&self) -> Option<(i32, String)> {
        let returns = self.returns.as_ref()?;
        if matches!(returns, pondra_catalog::SqlType::Struct(_)) {
            return Some((RECORD.0, RECORD.1.to_string()));
        }
        Some(pg_type_of(&returns.to_arrow()))
    }
}

impl Routine<'_> {
    /// The name of one overload: a function's with its parameter types, a macro's alone.
    fn specific_name(&self) -> &str {
        let name = self
            .def
            .name
            .trim_end_matches(pondra_catalog::FUNCTION_SUFFIX)
            .trim_end_matches(pondra_catalog::PROCEDURE_SUFFIX);
        name.trim_end_matches("$macro")
    }
}

/// The lake's functions, macros and procedures, each overload apart.
fn routines(snapshot: &Snapshot) -> impl Iterator<Item = Routine<'_>> {
    snapshot.tables.values().filter_map(|def| {
        let name = def
            .name
            .split(['(', '$'])
            .next()
            .unwrap_or_default()
            .to_string();
        match &def.kind {
            TableKind::Macro {
                parameters,
                body,
                signature,
                ..
            } => Some(Routine {
                def,
                name,
                arguments: parameters.len(),
                returns: signature.as_ref().map(|s| s.returns.clone()),
                body: body.clone(),
                language: signature.as_ref().map(|s| s.language).unwrap_or_default(),
                procedure: false,
            }),
            TableKind::Procedure {
                parameters,
                language,
                body,
                ..
            } => Some(Routine {
                def,
                name,
                arguments: parameters.len(),
                returns: None,
                body: body.clone(),
                language: *language,
                procedure: true,
            }),
            _ => None,
        }
    })
}

fn int(v: i32) -> Cell {
    Cell::Int(v)
}

fn text(v: impl Into<String>) -> Cell {
    Cell::Text(v.into())
}

/// The types `pg_type_of` gives: oid, name in `pg_type`, name as `format_type` writes it, and
/// the oid of the array type of it.
const TYPES: [(i32, &str, &str, i32); 12] = [
    (16, "bool", "boolean", 1000),
    (17, "bytea", "bytea", 1001),
    (20, "int8", "bigint", 1016),
    (23, "int4", "integer", 1007),
    (700, "float4", "real", 1021),
    (701, "float8", "double precision", 1022),
    (1043, "varchar", "character varying", 1015),
    (1082, "date", "date", 1182),
    (1114, "timestamp", "timestamp without time zone", 1115),
    (1184, "timestamptz", "timestamp with time zone", 1185),
    (1186, "interval", "interval", 1187),
    (1700, "numeric", "numeric", 1231),
];

/// Each type oid `pg_type_of` gives with its name as `format_type` writes it, arrays included.
pub fn type_names() -> impl Iterator<Item = (i32, String)> {
    TYPES
        .iter()
        .flat_map(|(oid, _, name, array)| [(*oid, name.to_string()), (*array, format!("{name}[]"))])
}

/// The Postgres type oid and name of a stored column type.
pub fn pg_type_of(data_type: &DataType) -> (i32, String) {
    let (oid, name) = match data_type {
        DataType::Boolean => (16, "boolean"),
        DataType::Int32 => (23, "integer"),
        DataType::Int64 => (20, "bigint"),
        DataType::Float32 => (700, "real"),
        DataType::Float64 => (701, "double precision"),
        DataType::Decimal64(..) | DataType::Decimal128(..) => (1700, "numeric"),
        DataType::Date32 => (1082, "date"),
        DataType::Timestamp(_, Some(_)) => (1184, "timestamp with time zone"),
        DataType::Timestamp(..) => (1114, "timestamp without time zone"),
        DataType::Interval(_) => (1186, "interval"),
        DataType::Binary => (17, "bytea"),
        DataType::List(item) => {
            let oid = pg_type_of(item.data_type()).0;
            let (_, _, name, array) = TYPES
                .iter()
                .find(|t| t.0 == oid)
                .expect("every type pg_type_of gives is listed");
            return (*array, format!("{name}[]"));
        }
        _ => (1043, "character varying"),
    };
    (oid, name.to_string())
}

/// Postgres's category of a type (`pg_type.typcategory`).
fn type_category(oid: i32) -> &'static str {
    match oid {
        16 => "B",
        17 => "U",
        20 | 23 | 700 | 701 | 1700 => "N",
        1082 | 1114 | 1184 => "D",
        1186 => "T",
        _ => "S",
    }
}

/// The Arrow type Pondra keeps a value of the Postgres type `oid` as.
fn type_of_oid(oid: i32) -> DataType {
    match oid {
        16 => DataType::Boolean,
        20 => DataType::Int64,
        23 => DataType::Int32,
        701 => DataType::Float64,
        1082 => DataType::Date32,
        1114 => DataType::Timestamp(TimeUnit::Microsecond, None),
        1186 => DataType::Interval(arrow::datatypes::IntervalUnit::MonthDayNano),
        _ => DataType::Utf8,
    }
}

/// Bytes of a value of the type, or -1 for a type of varying length, as `pg_attribute.attlen`.
fn type_length(data_type: &DataType) -> i32 {
    match data_type {
        DataType::Boolean => 1,
        DataType::Int32 | DataType::Date32 => 4,
        DataType::Int64 | DataType::Float64 | DataType::Timestamp(..) => 8,
        DataType::Interval(_) => 16,
        _ => -1,
    }
}

fn relkind(table: &TableDef) -> &'static str {
    match table.kind {
        TableKind::Table
        | TableKind::ValueCounts { .. }
        | TableKind::JoinState { .. }
        | TableKind::Macro { .. }
        | TableKind::Procedure { .. } => "r",
        TableKind::View { .. } => "v",
        TableKind::MaterializedView { .. } => "m",
    }
}

fn table_type(table: &TableDef) -> &'static str {
    match table.kind {
        TableKind::Table
        | TableKind::ValueCounts { .. }
        | TableKind::JoinState { .. }
        | TableKind::Macro { .. }
        | TableKind::Procedure { .. } => "BASE TABLE",
        TableKind::View { .. } | TableKind::MaterializedView { .. } => "VIEW",
    }
}

/// One column of one table, as the catalog tables list it.
struct ColumnEntry<'t> {
    table: &'t TableDef,
    name: String,
    data_type: DataType,
    /// From 1.
    position: i32,
    not_null: bool,
}

fn every_column<'t>(
    tables: &[&'t Arc<TableDef>],
    columns_of: &dyn Fn(&TableDef) -> Vec<(String, DataType)>,
) -> Vec<ColumnEntry<'t>> {
    let mut entries = Vec::new();
    for table in tables {
        for (i, (name, data_type)) in columns_of(table).into_iter().enumerate() {
            entries.push(ColumnEntry {
                table,
                name,
                data_type,
                position: i as i32 + 1,
                not_null: table.columns.get(i).is_some_and(|c| c.not_null),
            });
        }
    }
    entries
}

/// The columns of every index, each with the oid of its index, as `pg_attribute` lists them.
fn index_columns<'t>(tables: &[&'t Arc<TableDef>]) -> Vec<(i32, ColumnEntry<'t>)> {
    let mut entries = Vec::new();
    for table in tables {
        for index in table_indexes(table) {
            for (k, name) in index.column_names.iter().enumerate() {
                let Some(column) = table.columns.iter().find(|c| c.name == *name) else {
                    continue;
                };
                let entry = ColumnEntry {
                    table,
                    name: name.clone(),
                    data_type: column.sql_type.to_arrow(),
                    position: k as i32 + 1,
                    not_null: column.not_null,
                };
                entries.push((index.oid, entry));
            }
        }
    }
    entries
}

/// What differs between the `pg_class` rows of tables, views and indexes.
struct PgClassRow<'a> {
    oid: i32,
    name: &'a str,
    namespace: i32,
    kind: &'a str,
    access_method: i32,
    rows: i32,
    has_index: bool,
    replica_identity: &'a str,
}

fn pg_class_row(row: PgClassRow<'_>) -> Vec<Cell> {
    vec![
        int(row.oid),
        text(row.name),
        int(row.namespace),
        text(row.kind),
        int(10),
        int(row.access_method),
        Cell::Int(row.rows),
        int(0),
        Cell::Bool(row.has_index),
        text("p"),
        Cell::Bool(false),
        int(0),
        Cell::Bool(false),
        Cell::Bool(false),
        Cell::Bool(false),
        Cell::Bool(false),
        int(0),
        int(0),
        text(row.replica_identity),
        int(0),
        int(0),
        Cell::Null,
        Cell::Null,
    ]
}

/// The plan of a system table, or `None` if `schema.name` is not one. `columns_of` gives the
/// columns of a view or materialized view (a table's are in its definition).
pub fn system_table(
    schema: &str,
    name: &str,
    snapshot: &Snapshot,
    database: &str,
    temporary: &[Arc<TableDef>],
    columns_of: &dyn Fn(&TableDef) -> Vec<(String, DataType)>,
) -> Option<LogicalPlan> {
    let tables: Vec<&Arc<TableDef>> = snapshot.visible_tables().chain(temporary).collect();
    let (fields, rows): (Vec<(&str, DataType)>, Vec<Vec<Cell>>) = match (schema, name) {
        ("pg_catalog", "pg_namespace") => (
            vec![
                ("oid", DataType::Int32),
                ("nspname", DataType::Utf8),
                ("nspowner", DataType::Int32),
            ],
            [
                vec![int(PG_CATALOG_OID), text("pg_catalog"), int(10)],
                vec![int(PUBLIC_OID), text("public"), int(10)],
                vec![
                    int(INFORMATION_SCHEMA_OID),
                    text("information_schema"),
                    int(10),
                ],
            ]
            .into_iter()
            .chain(
                snapshot
                    .schemas
                    .iter()
                    .map(|(name, id)| vec![int(16_384 + *id as i32), text(name.as_str()), int(10)]),
            )
            .collect(),
        ),
        ("pg_catalog", "pg_am") => (
            vec![
                ("oid", DataType::Int32),
                ("amname", DataType::Utf8),
                ("amtype", DataType::Utf8),
            ],
            vec![
                vec![int(2), text("heap"), text("t")],
                vec![int(BTREE_OID), text("btree"), text("i")],
            ],
        ),
        ("pg_catalog", "pg_class") => (
            vec![
                ("oid", DataType::Int32),
                ("relname", DataType::Utf8),
                ("relnamespace", DataType::Int32),
                ("relkind", DataType::Utf8),
                ("relowner", DataType::Int32),
                ("relam", DataType::Int32),
                ("reltuples", DataType::Float64),
                ("relpages", DataType::Int32),
                ("relhasindex", DataType::Boolean),
                ("relpersistence", DataType::Utf8),
                ("relispartition", DataType::Boolean),
                ("relchecks", DataType::Int32),
                ("relhasrules", DataType::Boolean),
                ("relhastriggers", DataType::Boolean),
                ("relrowsecurity", DataType::Boolean),
                ("relforcerowsecurity", DataType::Boolean),
                ("reltablespace", DataType::Int32),
                ("reloftype", DataType::Int32),
                ("relreplident", DataType::Utf8),
                ("reltoastrelid", DataType::Int32),
                ("reltype", DataType::Int32),
                ("relpartbound", DataType::Utf8),
                ("reloptions", list_of(DataType::Utf8)),
            ],
            tables
                .iter()
                .map(|t| {
                    let rows = snapshot.row_count(t.id) as i32;
                    pg_class_row(PgClassRow {
                        oid: table_oid(t),
                        name: schema_and_name(&t.name).1,
                        namespace: namespace_oid(snapshot, &t.name),
                        kind: relkind(t),
                        access_method: if t.is_view() { 0 } else { 2 },
                        rows,
                        has_index: !table_indexes(t).is_empty(),
                        replica_identity: "d",
                    })
                })
                .chain(tables.iter().flat_map(|t| {
                    table_indexes(t).into_iter().map(|index| {
                        pg_class_row(PgClassRow {
                            oid: index.oid,
                            name: &index.name,
                            namespace: namespace_oid(snapshot, &t.name),
                            kind: "i",
                            access_method: BTREE_OID,
                            rows: 0,
                            has_index: false,
                            replica_identity: "n",
                        })
                    })
                }))
                .collect(),
        ),
        ("pg_catalog", "pg_attribute") => (
            vec![
                ("attrelid", DataType::Int32),
                ("attname", DataType::Utf8),
                ("atttypid", DataType::Int32),
                ("attnum", DataType::Int32),
                ("attnotnull", DataType::Boolean),
                ("attisdropped", DataType::Boolean),
                ("atttypmod", DataType::Int32),
                ("atthasdef", DataType::Boolean),
                ("attcollation", DataType::Int32),
                ("attidentity", DataType::Utf8),
                ("attgenerated", DataType::Utf8),
                ("attlen", DataType::Int32),
                ("attstorage", DataType::Utf8),
                ("attcompression", DataType::Utf8),
                ("attstattarget", DataType::Int32),
            ],
            every_column(&tables, columns_of)
                .into_iter()
                .map(|c| (table_oid(c.table), c))
                .chain(index_columns(&tables))
                .map(|(relation, c)| {
                    vec![
                        int(relation),
                        text(c.name),
                        int(pg_type_of(&c.data_type).0),
                        int(c.position),
                        Cell::Bool(c.not_null),
                        Cell::Bool(false),
                        int(-1),
                        Cell::Bool(false),
                        int(0),
                        text(""),
                        text(""),
                        int(type_length(&c.data_type)),
                        // Stored in place ('p') for fixed widths, extended ('x') otherwise.
                        text(if type_length(&c.data_type) > 0 {
                            "p"
                        } else {
                            "x"
                        }),
                        text(""),
                        int(-1),
                    ]
                })
                .collect(),
        ),
        ("pg_catalog", "pg_type") => (
            vec![
                ("oid", DataType::Int32),
                ("typname", DataType::Utf8),
                ("typnamespace", DataType::Int32),
                ("typcollation", DataType::Int32),
                ("typtype", DataType::Utf8),
                ("typbasetype", DataType::Int32),
                ("typtypmod", DataType::Int32),
                ("typnotnull", DataType::Boolean),
                ("typelem", DataType::Int32),
                ("typarray", DataType::Int32),
                ("typrelid", DataType::Int32),
                ("typdelim", DataType::Utf8),
                ("typcategory", DataType::Utf8),
                ("typinput", DataType::Utf8),
                ("typlen", DataType::Int32),
            ],
            TYPES
                .iter()
                .flat_map(|(oid, name, _, array)| {
                    // The type, then the type of its arrays (named with a leading underscore).
                    [
                        (*oid, name.to_string(), 0, *array),
                        (*array, format!("_{name}"), *oid, 0),
                    ]
                })
                .map(|(oid, name, element, array)| {
                    let scalar = element == 0;
                    let category = if scalar { type_category(oid) } else { "A" };
                    let input = if scalar {
                        format!("{name}in")
                    } else {
                        "array_in".to_string()
                    };
                    vec![
                        int(oid),
                        text(name),
                        int(PG_CATALOG_OID),
                        int(0),
                        text("b"),
                        int(0),
                        int(-1),
                        Cell::Bool(false),
                        int(element),
                        int(array),
                        int(0),
                        text(","),
                        text(category),
                        text(input),
                        int(if scalar {
                            type_length(&type_of_oid(oid))
                        } else {
                            -1
                        }),
                    ]
                })
                .collect(),
        ),
        // Pondra keeps no column defaults, collations, constraints or inheritance: these are
        // empty, for the clients that join them.
        ("pg_catalog", "pg_attrdef") => (
            vec![
                ("oid", DataType::Int32),
                ("adrelid", DataType::Int32),
                ("adnum", DataType::Int32),
                ("adbin", DataType::Utf8),
            ],
            Vec::new(),
        ),
        ("pg_catalog", "pg_collation") => (
            vec![
                ("oid", DataType::Int32),
                ("collname", DataType::Utf8),
                ("collnamespace", DataType::Int32),
            ],
            Vec::new(),
        ),
        ("pg_catalog", "pg_database") => (
            vec![
                ("oid", DataType::Int32),
                ("datname", DataType::Utf8),
                ("datdba", DataType::Int32),
                ("encoding", DataType::Int32),
                ("datcollate", DataType::Utf8),
                ("datctype", DataType::Utf8),
                ("datistemplate", DataType::Boolean),
                ("datallowconn", DataType::Boolean),
                ("datacl", list_of(DataType::Utf8)),
            ],
            // Encoding 6 is UTF8; text compares by bytes, as in the C collation.
            vec![vec![
                int(1),
                text(database),
                int(10),
                int(6),
                text("C"),
                text("C"),
                Cell::Bool(false),
                Cell::Bool(true),
                Cell::Null,
            ]],
        ),
        ("pg_catalog", "pg_tables") => (
            vec![
                ("schemaname", DataType::Utf8),
                ("tablename", DataType::Utf8),
                ("tableowner", DataType::Utf8),
                ("hasindexes", DataType::Boolean),
            ],
            tables
                .iter()
                .filter(|t| matches!(t.kind, TableKind::Table))
                .map(|t| {
                    let (schema, name) = schema_and_name(&t.name);
                    vec![
                        text(schema),
                        text(name),
                        text(OWNER),
                        Cell::Bool(!table_indexes(t).is_empty()),
                    ]
                })
                .collect(),
        ),
        ("pg_catalog", "pg_views") | ("pg_catalog", "pg_matviews") => {
            let materialized = name == "pg_matviews";
            let view_column = if materialized {
                "matviewname"
            } else {
                "viewname"
            };
            let owner_column = if materialized {
                "matviewowner"
            } else {
                "viewowner"
            };
            (
                vec![
                    ("schemaname", DataType::Utf8),
                    (view_column, DataType::Utf8),
                    (owner_column, DataType::Utf8),
                    ("definition", DataType::Utf8),
                ],
                tables
                    .iter()
                    .filter_map(|t| match (&t.kind, materialized) {
                        (TableKind::View { sql, .. }, false)
                        | (TableKind::MaterializedView { sql, .. }, true) => Some(vec![
                            text(schema_and_name(&t.name).0),
                            text(schema_and_name(&t.name).1),
                            text(OWNER),
                            text(sql.clone()),
                        ]),
                        _ => None,
                    })
                    .collect(),
            )
        }
        ("pg_catalog", "pg_roles") | ("pg_catalog", "pg_user") => (
            vec![
                ("oid", DataType::Int32),
                ("rolname", DataType::Utf8),
                ("rolsuper", DataType::Boolean),
                ("usename", DataType::Utf8),
                ("usesysid", DataType::Int32),
                ("rolinherit", DataType::Boolean),
                ("rolcreaterole", DataType::Boolean),
                ("rolcreatedb", DataType::Boolean),
                ("rolcanlogin", DataType::Boolean),
                ("rolconnlimit", DataType::Int32),
                (
                    "rolvaliduntil",
                    DataType::Timestamp(TimeUnit::Microsecond, None),
                ),
                ("rolreplication", DataType::Boolean),
                ("rolbypassrls", DataType::Boolean),
            ],
            vec![vec![
                int(10),
                text(OWNER),
                Cell::Bool(true),
                text(OWNER),
                int(10),
                Cell::Bool(true),
                Cell::Bool(true),
                Cell::Bool(true),
                Cell::Bool(true),
                int(-1),
                Cell::Null,
                Cell::Bool(false),
                Cell::Bool(false),
            ]],
        ),
        ("pg_catalog", "pg_settings") => (
            vec![("name", DataType::Utf8), ("setting", DataType::Utf8)],
            [
                ("server_version", SERVER_VERSION),
                ("server_encoding", "UTF8"),
                ("client_encoding", "UTF8"),
                ("standard_conforming_strings", "on"),
                ("DateStyle", "ISO, MDY"),
                ("TimeZone", "UTC"),
                ("max_identifier_length", "63"),
                ("max_index_keys", "32"),
            ]
            .into_iter()
            .map(|(n, v)| vec![text(n), text(v)])
            .collect(),
        ),
        ("pg_catalog", "pg_index") => (
            vec![
                ("indexrelid", DataType::Int32),
                ("indrelid", DataType::Int32),
                ("indnatts", DataType::Int32),
                ("indnkeyatts", DataType::Int32),
                ("indisprimary", DataType::Boolean),
                ("indisunique", DataType::Boolean),
                ("indisclustered", DataType::Boolean),
                ("indisvalid", DataType::Boolean),
                ("indisreplident", DataType::Boolean),
                ("indimmediate", DataType::Boolean),
                ("indkey", list_of(DataType::Int32)),
                ("indoption", list_of(DataType::Int32)),
                ("indexprs", DataType::Utf8),
                ("indpred", DataType::Utf8),
            ],
            tables
                .iter()
                .flat_map(|t| {
                    table_indexes(t).into_iter().map(|index| {
                        let primary =
                            matches!(index.constraint, Some((_, ConstraintKind::PrimaryKey)));
                        let width = index.columns.len() as i32;
                        vec![
                            int(index.oid),
                            int(table_oid(t)),
                            int(width),
                            int(width),
                            Cell::Bool(primary),
                            Cell::Bool(index.is_unique()),
                            Cell::Bool(false),
                            Cell::Bool(true),
                            Cell::Bool(false),
                            Cell::Bool(true),
                            Cell::Ints(index.columns.clone()),
                            Cell::Ints(vec![0; index.columns.len()]),
                            Cell::Null,
                            Cell::Null,
                        ]
                    })
                })
                .collect(),
        ),
        ("pg_catalog", "pg_constraint") => (
            vec![
                ("oid", DataType::Int32),
                ("conname", DataType::Utf8),
                ("connamespace", DataType::Int32),
                ("contype", DataType::Utf8),
                ("condeferrable", DataType::Boolean),
                ("condeferred", DataType::Boolean),
                ("conrelid", DataType::Int32),
                ("conindid", DataType::Int32),
                ("confrelid", DataType::Int32),
                ("conkey", list_of(DataType::Int32)),
                ("confkey", list_of(DataType::Int32)),
                ("confupdtype", DataType::Utf8),
                ("confdeltype", DataType::Utf8),
                ("confmatchtype", DataType::Utf8),
            ],
            tables
                .iter()
                .flat_map(|t| {
                    table_indexes(t).into_iter().filter_map(|index| {
                        let (oid, kind) = index.constraint?;
                        let contype = match kind {
                            ConstraintKind::PrimaryKey => "p",
                            ConstraintKind::Unique => "u",
                        };
                        Some(vec![
                            int(oid),
                            text(index.name),
                            int(namespace_oid(snapshot, &t.name)),
                            text(contype),
                            Cell::Bool(false),
                            Cell::Bool(false),
                            int(table_oid(t)),
                            int(index.oid),
                            int(0),
                            Cell::Ints(index.columns),
                            Cell::Null,
                            text(" "),
                            text(" "),
                            text(" "),
                        ])
                    })
                })
                .collect(),
        ),
        // Pondra has no comments or stored functions to list: these are empty, for the
        // clients that join them.
        ("pg_catalog", "pg_description") => (
            vec![
                ("objoid", DataType::Int32),
                ("classoid", DataType::Int32),
                ("objsubid", DataType::Int32),
                ("description", DataType::Utf8),
            ],
            tables
                .iter()
                .flat_map(|table| {
                    table.comments.iter().filter_map(move |(name, comment)| {
                        let column = match name.is_empty() {
                            true => 0,
                            false => table.columns.iter().position(|c| &c.name == name)? as i32 + 1,
                        };
                        Some(vec![
                            int(table_oid(table)),
                            int(PG_CLASS_OID),
                            int(column),
                            text(comment.clone()),
                        ])
                    })
                })
                .collect(),
        ),
        ("pg_catalog", "pg_proc") => (
            vec![
                ("oid", DataType::Int32),
                ("proname", DataType::Utf8),
                ("pronamespace", DataType::Int32),
                ("prokind", DataType::Utf8),
                ("prorettype", DataType::Int32),
                ("pronargs", DataType::Int32),
                ("prosrc", DataType::Utf8),
            ],
            routines(snapshot)
                .map(|routine| {
                    let returned = routine.returned_type();
                    vec![
                        int(table_oid(routine.def)),
                        text(routine.name),
                        int(namespace_oid(snapshot, &routine.def.name)),
                        text(if routine.procedure { "p" } else { "f" }),
                        int(returned.map_or(0, |(oid, _)| oid)),
                        int(routine.arguments as i32),
                        text(routine.body),
                    ]
                })
                .collect(),
        ),
        ("information_schema", "routines") => (
            vec![
                ("routine_catalog", DataType::Utf8),
                ("routine_schema", DataType::Utf8),
                ("routine_name", DataType::Utf8),
                ("specific_name", DataType::Utf8),
                ("routine_type", DataType::Utf8),
                ("data_type", DataType::Utf8),
                ("routine_body", DataType::Utf8),
                ("routine_definition", DataType::Utf8),
                ("external_language", DataType::Utf8),
            ],
            routines(snapshot)
                .map(|routine| {
                    let returns = routine.returned_type();
                    vec![
                        text(database),
                        text("public"),
                        text(routine.name.clone()),
                        text(routine.specific_name()),
                        text(if routine.procedure {
                            "PROCEDURE"
                        } else {
                            "FUNCTION"
                        }),
                        returns.map_or(Cell::Null, |(_, name)| text(name)),
                        text(match routine.language.is_sql() {
                            true => "SQL",
                            false => "EXTERNAL",
                        }),
                        text(routine.body),
                        text(routine.language.name().to_uppercase()),
                    ]
                })
                .collect(),
        ),
        ("information_schema", "views") => (
            vec![
                ("table_catalog", DataType::Utf8),
                ("table_schema", DataType::Utf8),
                ("table_name", DataType::Utf8),
                ("view_definition", DataType::Utf8),
            ],
            tables
                .iter()
                .filter_map(|t| match &t.kind {
                    TableKind::View { sql, .. } | TableKind::MaterializedView { sql, .. } => {
                        Some(vec![
                            text(database),
                            text(schema_and_name(&t.name).0),
                            text(schema_and_name(&t.name).1),
                            text(sql.clone()),
                        ])
                    }
                    TableKind::Table
                    | TableKind::ValueCounts { .. }
                    | TableKind::JoinState { .. }
                    | TableKind::Macro { .. }
                    | TableKind::Procedure { .. } => None,
                })
                .collect(),
        ),
        ("information_schema", "schemata") => (
            vec![
                ("catalog_name", DataType::Utf8),
                ("schema_name", DataType::Utf8),
                ("schema_owner", DataType::Utf8),
            ],
            ["public", "pg_catalog", "information_schema"]
                .into_iter()
                .chain(snapshot.schemas.keys().map(String::as_str))
                .map(|s| vec![text(database), text(s), text(OWNER)])
                .collect(),
        ),
        ("information_schema", "tables") => (
            vec![
                ("table_catalog", DataType::Utf8),
                ("table_schema", DataType::Utf8),
                ("table_name", DataType::Utf8),
                ("table_type", DataType::Utf8),
            ],
            tables
                .iter()
                .map(|t| {
                    let (schema, name) = schema_and_name(&t.name);
                    vec![
                        text(database),
                        text(schema),
                        text(name),
                        text(table_type(t)),
                    ]
                })
                .collect(),
        ),
        ("information_schema", "columns") => (
            vec![
                ("table_catalog", DataType::Utf8),
                ("table_schema", DataType::Utf8),
                ("table_name", DataType::Utf8),
                ("column_name", DataType::Utf8),
                ("ordinal_position", DataType::Int32),
                ("column_default", DataType::Utf8),
                ("is_nullable", DataType::Utf8),
                ("data_type", DataType::Utf8),
                ("character_maximum_length", DataType::Int32),
                ("character_octet_length", DataType::Int32),
                ("numeric_precision", DataType::Int32),
                ("numeric_precision_radix", DataType::Int32),
                ("numeric_scale", DataType::Int32),
                ("datetime_precision", DataType::Int32),
                ("udt_catalog", DataType::Utf8),
                ("udt_schema", DataType::Utf8),
                ("udt_name", DataType::Utf8),
                ("is_identity", DataType::Utf8),
                ("is_generated", DataType::Utf8),
                ("is_updatable", DataType::Utf8),
            ],
            every_column(&tables, columns_of)
                .into_iter()
                .map(|c| {
                    let (precision, radix, scale) = match c.data_type {
                        DataType::Decimal64(p, s) | DataType::Decimal128(p, s) => {
                            (int(p as i32), int(10), int(s as i32))
                        }
                        DataType::Int32 => (int(32), int(2), int(0)),
                        DataType::Int64 => (int(64), int(2), int(0)),
                        DataType::Float64 => (int(53), int(2), Cell::Null),
                        _ => (Cell::Null, Cell::Null, Cell::Null),
                    };
                    let datetime_precision = match c.data_type {
                        DataType::Date32 => int(0),
                        DataType::Timestamp(..) => int(6),
                        _ => Cell::Null,
                    };
                    let oid = pg_type_of(&c.data_type).0;
                    let udt_name = TYPES.iter().find(|t| t.0 == oid).map_or("", |t| t.1);
                    let (schema, table) = schema_and_name(&c.table.name);
                    let default = c.table.defaults.get(&c.name).map_or(Cell::Null, text);
                    vec![
                        text(database),
                        text(schema),
                        text(table),
                        text(c.name),
                        int(c.position),
                        default,
                        text(if c.not_null { "NO" } else { "YES" }),
                        text(pg_type_of(&c.data_type).1),
                        // Text columns have no declared length.
                        Cell::Null,
                        Cell::Null,
                        precision,
                        radix,
                        scale,
                        datetime_precision,
                        text(database),
                        text("pg_catalog"),
                        text(udt_name),
                        text("NO"),
                        text("NEVER"),
                        text(if c.table.kind == TableKind::Table {
                            "YES"
                        } else {
                            "NO"
                        }),
                    ]
                })
                .collect(),
        ),
        ("pg_catalog", "pg_indexes") => (
            vec![
                ("schemaname", DataType::Utf8),
                ("tablename", DataType::Utf8),
                ("indexname", DataType::Utf8),
                ("tablespace", DataType::Utf8),
                ("indexdef", DataType::Utf8),
            ],
            tables
                .iter()
                .flat_map(|table| {
                    table_indexes(table).into_iter().map(|index| {
                        let (schema, name) = schema_and_name(&table.name);
                        vec![
                            text(schema),
                            text(name),
                            text(&index.name),
                            Cell::Null,
                            text(index.definition(&table.name)),
                        ]
                    })
                })
                .collect(),
        ),
        ("information_schema", "table_constraints") => (
            vec![
                ("constraint_catalog", DataType::Utf8),
                ("constraint_schema", DataType::Utf8),
                ("constraint_name", DataType::Utf8),
                ("table_catalog", DataType::Utf8),
                ("table_schema", DataType::Utf8),
                ("table_name", DataType::Utf8),
                ("constraint_type", DataType::Utf8),
                ("is_deferrable", DataType::Utf8),
                ("initially_deferred", DataType::Utf8),
                ("enforced", DataType::Utf8),
            ],
            tables
                .iter()
                .flat_map(|table| {
                    table_indexes(table).into_iter().filter_map(|index| {
                        let (_, kind) = index.constraint?;
                        let kind = match kind {
                            ConstraintKind::PrimaryKey => "PRIMARY KEY",
                            ConstraintKind::Unique => "UNIQUE",
                        };
                        let (schema, name) = schema_and_name(&table.name);
                        Some(vec![
                            text(database),
                            text(schema),
                            text(&index.name),
                            text(database),
                            text(schema),
                            text(name),
                            text(kind),
                            text("NO"),
                            text("NO"),
                            text("YES"),
                        ])
                    })
                })
                .collect(),
        ),
        ("pg_catalog", name) => (empty_catalog_table(name)?, Vec::new()),
        _ => return None,
    };
    let schema = Arc::new(Schema::new(
        fields
            .iter()
            .map(|(name, data_type)| Field::new(*name, data_type.clone(), true))
            .collect::<Vec<_>>(),
    ));
    let rows = rows
        .into_iter()
        .map(|row| {
            row.into_iter()
                .zip(&fields)
                .map(|(cell, (_, data_type))| {
                    let value = match cell {
                        Cell::Int(v) => ScalarValue::Int32(v),
                        Cell::Ints(v) => {
                            ScalarValue::Single(Arc::new(ListArray::from_iter_primitive::<
                                Int32Type,
                                _,
                                _,
                            >([Some(
                                v.into_iter().map(Some),
                            )])))
                        }
                        Cell::Text(v) => ScalarValue::Utf8(v),
                        Cell::Bool(v) => ScalarValue::Boolean(v),
                        Cell::Null => ScalarValue::Null,
                    };
                    Expr::Literal(value).cast(data_type)
                })
                .collect()
        })
        .collect();
    Some(LogicalPlan::Values { schema, rows })
}

/// The columns of catalog tables that list what Pondra has none of: row security policies,
/// extended statistics, publications, inheritance, enum types, role memberships, triggers,
/// rewrite rules, sequences and recorded dependencies. psql's `\d`, SQLAlchemy's inspection
/// and dbt read them.
fn empty_catalog_table(name: &str) -> Option<Vec<(&'static str, DataType)>> {
    use DataType::{Boolean, Int32, Utf8};
    let oids = || list_of(Int32);
    Some(match name {
        "pg_policy" => vec![
            ("oid", Int32),
            ("polname", Utf8),
            ("polrelid", Int32),
            ("polcmd", Utf8),
            ("polpermissive", Boolean),
            ("polroles", oids()),
            ("polqual", Utf8),
            ("polwithcheck", Utf8),
        ],
        "pg_statistic_ext" => vec![
            ("oid", Int32),
            ("stxrelid", Int32),
            ("stxname", Utf8),
            ("stxnamespace", Int32),
            ("stxowner", Int32),
            ("stxstattarget", Int32),
            ("stxkeys", oids()),
            ("stxkind", list_of(Utf8)),
            ("stxexprs", Utf8),
        ],
        "pg_publication" => vec![
            ("oid", Int32),
            ("pubname", Utf8),
            ("pubowner", Int32),
            ("puballtables", Boolean),
            ("pubinsert", Boolean),
            ("pubupdate", Boolean),
            ("pubdelete", Boolean),
            ("pubtruncate", Boolean),
            ("pubviaroot", Boolean),
        ],
        "pg_publication_rel" => vec![
            ("oid", Int32),
            ("prpubid", Int32),
            ("prrelid", Int32),
            ("prqual", Utf8),
            ("prattrs", oids()),
        ],
        "pg_publication_namespace" => vec![("oid", Int32), ("pnpubid", Int32), ("pnnspid", Int32)],
        "pg_inherits" => vec![
            ("inhrelid", Int32),
            ("inhparent", Int32),
            ("inhseqno", Int32),
            ("inhdetachpending", Boolean),
        ],
        "pg_trigger" => vec![
            ("oid", Int32),
            ("tgrelid", Int32),
            ("tgparentid", Int32),
            ("tgname", Utf8),
            ("tgfoid", Int32),
            ("tgenabled", Utf8),
            ("tgisinternal", Boolean),
        ],
        "pg_enum" => vec![
            ("oid", Int32),
            ("enumtypid", Int32),
            ("enumsortorder", DataType::Float64),
            ("enumlabel", Utf8),
        ],
        "pg_auth_members" => vec![
            ("roleid", Int32),
            ("member", Int32),
            ("grantor", Int32),
            ("admin_option", Boolean),
        ],
        // Pondra keeps no access statistics: the views answer, with no rows.
        "pg_stat_user_tables" | "pg_stat_all_tables" | "pg_statio_user_tables" => vec![
            ("relid", Int32),
            ("schemaname", Utf8),
            ("relname", Utf8),
            ("seq_scan", DataType::Int64),
            ("idx_scan", DataType::Int64),
            ("n_live_tup", DataType::Int64),
            ("n_dead_tup", DataType::Int64),
            (
                "last_analyze",
                DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, None),
            ),
        ],
        "pg_stat_user_indexes" | "pg_stat_all_indexes" => vec![
            ("relid", Int32),
            ("indexrelid", Int32),
            ("schemaname", Utf8),
            ("relname", Utf8),
            ("indexrelname", Utf8),
            ("idx_scan", DataType::Int64),
        ],
        "pg_stat_activity" => vec![
            ("datid", Int32),
            ("datname", Utf8),
            ("pid", Int32),
            ("usename", Utf8),
            ("application_name", Utf8),
            ("client_addr", Utf8),
            ("state", Utf8),
            ("query", Utf8),
        ],
        "pg_stat_database" => vec![
            ("datid", Int32),
            ("datname", Utf8),
            ("numbackends", Int32),
            ("xact_commit", DataType::Int64),
            ("xact_rollback", DataType::Int64),
        ],
        "pg_sequence" => vec![
            ("seqrelid", Int32),
            ("seqtypid", Int32),
            ("seqstart", DataType::Int64),
            ("seqincrement", DataType::Int64),
            ("seqmax", DataType::Int64),
            ("seqmin", DataType::Int64),
            ("seqcache", DataType::Int64),
            ("seqcycle", Boolean),
        ],
        // Views are bound again on every read, so nothing records what depends on what.
        "pg_depend" => vec![
            ("classid", Int32),
            ("objid", Int32),
            ("objsubid", Int32),
            ("refclassid", Int32),
            ("refobjid", Int32),
            ("refobjsubid", Int32),
            ("deptype", Utf8),
        ],
        "pg_rewrite" => vec![
            ("oid", Int32),
            ("rulename", Utf8),
            ("ev_class", Int32),
            ("ev_type", Utf8),
            ("ev_enabled", Utf8),
            ("is_instead", Boolean),
        ],
        _ => return None,
    })
}
