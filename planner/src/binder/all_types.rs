//! `test_all_types()`, DuckDB's table for testing every type: a row of small values, a row of
//! large values and a row of NULLs, one column per type. Pondra's has a column for each of
//! DuckDB's types it holds, with DuckDB's values where its types hold them; where DuckDB's
//! extremes pass Pondra's ranges (HUGEINT and UHUGEINT are kept in 38 digits, dates and times
//! in the range they are read and written in, a TIME to just before midnight), the extremes of
//! Pondra's. The columns of the types Pondra lacks (BIGNUM, BIT, ENUM, UNION, TIME WITH TIME
//! ZONE, `TIMESTAMP_S` / `_MS` / `_NS`) are left out, so a query naming one fails naming it.

use arrow::datatypes::{DataType, TimeUnit};
use sqlparser::ast;

use super::Binder;
use crate::expr::Expr;
use crate::logical::LogicalPlan;
use crate::{Result, bind_err};

/// The first and last days Pondra reads and writes: 262144-01-01 (BC) and 262142-12-31.
const FIRST_DAY: &str = "DATE '1970-01-01' + (-96465292)";
const LAST_DAY: &str = "DATE '1970-01-01' + 95026236";

const DUCKS: &str = "'🦆🦆🦆🦆🦆🦆'";

/// A column: its name, its type, and its small and large values as SQL.
type Column = (&'static str, &'static str, String, String);

/// Each column, in DuckDB's order.
fn columns() -> Vec<Column> {
    let text = |s: &str| s.to_string();
    let int_list = "[42, 999, NULL, NULL, -42]";
    let strings = format!("[{DUCKS}, 'goose', NULL, '']");
    let record = format!("{{'a': 42, 'b': {DUCKS}}}");
    let empty_record = "{'a': NULL, 'b': NULL}";
    let first_moment = format!("({FIRST_DAY})::TIMESTAMP");
    let last_moment = format!("({LAST_DAY}) + INTERVAL '23:59:59.999999'");
    vec![
        ("bool", "BOOLEAN", text("false"), text("true")),
        ("tinyint", "TINYINT", text("-128"), text("127")),
        ("smallint", "SMALLINT", text("-32768"), text("32767")),
        ("int", "INTEGER", text("-2147483648"), text("2147483647")),
        (
            "bigint",
            "BIGINT",
            text("'-9223372036854775808'"),
            text("'9223372036854775807'"),
        ),
        (
            "hugeint",
            "HUGEINT",
            format!("'-{}'", "9".repeat(38)),
            format!("'{}'", "9".repeat(38)),
        ),
        (
            "uhugeint",
            "UHUGEINT",
            text("0"),
            format!("'{}'", "9".repeat(38)),
        ),
        ("utinyint", "UTINYINT", text("0"), text("255")),
        ("usmallint", "USMALLINT", text("0"), text("65535")),
        ("uint", "UINTEGER", text("0"), text("4294967295")),
        (
            "ubigint",
            "UBIGINT",
            text("0"),
            text("'18446744073709551615'"),
        ),
        ("date", "DATE", text(FIRST_DAY), text(LAST_DAY)),
        (
            "time",
            "TIME",
            text("'00:00:00'"),
            text("'23:59:59.999999'"),
        ),
        (
            "timestamp",
            "TIMESTAMP",
            first_moment.clone(),
            last_moment.clone(),
        ),
        // Written as wall times, read as UTC's (see `as_instants`).
        ("timestamp_tz", "TIMESTAMP", first_moment, last_moment),
        (
            "float",
            "FLOAT",
            text("'-3.4028235e+38'"),
            text("'3.4028235e+38'"),
        ),
        (
            "double",
            "DOUBLE",
            text("'-1.7976931348623157e+308'"),
            text("'1.7976931348623157e+308'"),
        ),
        ("dec_4_1", "DECIMAL(4,1)", text("-999.9"), text("999.9")),
        (
            "dec_9_4",
            "DECIMAL(9,4)",
            text("-99999.9999"),
            text("99999.9999"),
        ),
        (
            "dec_18_6",
            "DECIMAL(18,6)",
            text("-999999999999.999999"),
            text("999999999999.999999"),
        ),
        (
            "dec38_10",
            "DECIMAL(38,10)",
            format!("'-{}.{}'", "9".repeat(28), "9".repeat(10)),
            format!("'{}.{}'", "9".repeat(28), "9".repeat(10)),
        ),
        (
            "uuid",
            "UUID",
            text("'00000000-0000-0000-0000-000000000000'"),
            text("'ffffffff-ffff-ffff-ffff-ffffffffffff'"),
        ),
        (
            "interval",
            "INTERVAL",
            text("'00:00:00'"),
            text("'83 years 3 months 999 days 00:16:39.999999'"),
        ),
        (
            "varchar",
            "VARCHAR",
            text(DUCKS),
            text("'goo' || chr(0) || 'se'"),
        ),
        (
            "blob",
            "BLOB",
            text("'thisisalongblob\\x00withnullbytes'"),
            text("'\\x00\\x00\\x00a'"),
        ),
        ("int_array", "INTEGER[]", text("[]"), text(int_list)),
        (
            "double_array",
            "DOUBLE[]",
            text("[]"),
            text("[42.0, 'nan'::DOUBLE, 'infinity'::DOUBLE, '-infinity'::DOUBLE, NULL, -42.0]"),
        ),
        (
            "date_array",
            "DATE[]",
            text("[]"),
            text(
                "['1970-01-01'::DATE, 'infinity'::DATE, '-infinity'::DATE, NULL, \
                 '2022-05-12'::DATE]",
            ),
        ),
        (
            "timestamp_array",
            "TIMESTAMP[]",
            text("[]"),
            text(
                "['1970-01-01'::TIMESTAMP, 'infinity'::TIMESTAMP, '-infinity'::TIMESTAMP, NULL, \
                 '2022-05-12 16:23:45'::TIMESTAMP]",
            ),
        ),
        (
            "timestamptz_array",
            "TIMESTAMPTZ[]",
            text("[]"),
            text(
                "['1970-01-01 00:00:00+00'::TIMESTAMPTZ, 'infinity'::TIMESTAMPTZ, \
                 '-infinity'::TIMESTAMPTZ, NULL, '2022-05-12 23:23:45+00'::TIMESTAMPTZ]",
            ),
        ),
        ("varchar_array", "VARCHAR[]", text("[]"), strings.clone()),
        (
            "nested_int_array",
            "INTEGER[][]",
            text("[]"),
            format!("[[], {int_list}, NULL, [], {int_list}]"),
        ),
        (
            "struct",
            "STRUCT(a INTEGER, b VARCHAR)",
            text(empty_record),
            record.clone(),
        ),
        (
            "struct_of_arrays",
            "STRUCT(a INTEGER[], b VARCHAR[])",
            text(empty_record),
            format!("{{'a': {int_list}, 'b': {strings}}}"),
        ),
        (
            "array_of_structs",
            "STRUCT(a INTEGER, b VARCHAR)[]",
            text("[]"),
            format!("[{empty_record}, {record}, NULL]"),
        ),
        (
            "map",
            "MAP(VARCHAR, VARCHAR)",
            text("MAP {}"),
            format!("MAP {{'key1': {DUCKS}, 'key2': 'goose'}}"),
        ),
        (
            "fixed_int_array",
            "INTEGER[3]",
            text("[NULL, 2, 3]"),
            text("[4, 5, 6]"),
        ),
        (
            "fixed_varchar_array",
            "VARCHAR[3]",
            text("['a', NULL, 'c']"),
            text("['d', 'e', 'f']"),
        ),
        (
            "fixed_nested_int_array",
            "INTEGER[3][3]",
            text("[[NULL, 2, 3], NULL, [NULL, 2, 3]]"),
            text("[[4, 5, 6], [NULL, 2, 3], [4, 5, 6]]"),
        ),
        (
            "fixed_nested_varchar_array",
            "VARCHAR[3][3]",
            text("[['a', NULL, 'c'], NULL, ['a', NULL, 'c']]"),
            text("[['d', 'e', 'f'], ['a', NULL, 'c'], ['d', 'e', 'f']]"),
        ),
        (
            "fixed_struct_array",
            "STRUCT(a INTEGER, b VARCHAR)[3]",
            format!("[{empty_record}, {record}, {empty_record}]"),
            format!("[{record}, {empty_record}, {record}]"),
        ),
        (
            "struct_of_fixed_array",
            "STRUCT(a INTEGER[3], b VARCHAR[3])",
            text("{'a': [NULL, 2, 3], 'b': ['a', NULL, 'c']}"),
            text("{'a': [4, 5, 6], 'b': ['d', 'e', 'f']}"),
        ),
        (
            "fixed_array_of_int_list",
            "INTEGER[][3]",
            format!("[[], {int_list}, []]"),
            format!("[{int_list}, [], {int_list}]"),
        ),
        (
            "list_of_fixed_int_array",
            "INTEGER[3][]",
            text("[[NULL, 2, 3], [4, 5, 6], [NULL, 2, 3]]"),
            text("[[4, 5, 6], [NULL, 2, 3], [4, 5, 6]]"),
        ),
    ]
}

/// The query `test_all_types()` is: a VALUES of the three rows, each value cast to its type.
fn query_text() -> String {
    let columns = columns();
    let row = |value: &dyn Fn(&Column) -> String| {
        let cells: Vec<String> = columns
            .iter()
            .map(|column| format!("CAST({} AS {})", value(column), column.1))
            .collect();
        format!("({})", cells.join(", "))
    };
    let names: Vec<&str> = columns.iter().map(|c| c.0).collect();
    format!(
        "SELECT * FROM (VALUES {}, {}, {}) AS all_types({})",
        row(&|c| c.2.clone()),
        row(&|c| c.3.clone()),
        row(&|_| "NULL".to_string()),
        names.join(", ")
    )
}

impl Binder<'_> {
    /// `test_all_types()`: see the module's comment.
    pub(super) fn test_all_types(&self, args: &[ast::FunctionArg]) -> Result<LogicalPlan> {
        if !args.is_empty() {
            return Err(bind_err!("test_all_types takes no arguments"));
        }
        let parsed = pondra_parser::parse_sql(&query_text())
            .map_err(|e| bind_err!("test_all_types: {e}"))?;
        let [statement] = parsed.as_slice() else {
            unreachable!("one query");
        };
        let pondra_parser::Statement::Sql(sql) = &statement.statement else {
            unreachable!("a query");
        };
        let ast::Statement::Query(query) = sql.as_ref() else {
            unreachable!("a query");
        };
        let plan = self.bind_query(query)?;
        Ok(as_instants(plan, &self.instant_type(), "timestamp_tz"))
    }
}

/// `plan` with its column `name`, wall times, read as instants in UTC and typed as the
/// session's instants.
fn as_instants(plan: LogicalPlan, instant: &DataType, name: &str) -> LogicalPlan {
    let schema = plan.schema();
    let utc = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
    let (exprs, names): (Vec<Expr>, Vec<String>) = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, field)| {
            let column = Expr::column(i, field.name(), field.data_type().clone());
            let value = match field.name() == name {
                true => column.cast(&utc).cast(instant),
                false => column,
            };
            (value, field.name().clone())
        })
        .unzip();
    plan.project(exprs, names)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_column_has_a_type_and_two_values() {
        let columns = super::columns();
        assert_eq!(columns.len(), 44);
        let text = super::query_text();
        assert!(text.contains("AS all_types(bool, tinyint,"));
        assert!(text.ends_with("list_of_fixed_int_array)"));
    }
}
