//! Functions that give rows of their own: `generate_series`, `range`, `unnest`,
//! `_pg_expandarray`, `pg_get_keywords` and the set-returning JSON functions. In FROM, their
//! arguments may read the columns of earlier FROM items (a LATERAL function, `lateral.rs`) or
//! of the query around, and `WITH ORDINALITY` numbers their rows. In a select list, they unnest
//! per input row (several side by side).

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema};
use pondra_parser::ast;

use super::Binder;
use super::expr::{Context, SET_FUNCTION_BASE, bind_expr, is_string_literal, type_name};
use super::scope::Scope;
use crate::expr::{Expr, ScalarFunction};
use crate::logical::LogicalPlan;
use crate::scalar::ScalarValue;
use crate::types::{expanded_array_type, list_of};
use crate::{Result, bind_err, unsupported};

/// True for the names `set_function` binds.
pub fn is_set_function(name: &str) -> bool {
    matches!(
        name,
        "generate_series" | "range" | "unnest" | "pg_get_keywords" | "_pg_expandarray"
    ) || super::json_functions::is_json_set_function(name)
}

/// The rows of the set-returning function `name` over `args`, in a column named after it (a
/// function giving records has a column per field); `WITH ORDINALITY` adds each row's place,
/// from 1, in a column `ordinality`. With a binder, the arguments may read the columns of the
/// query around (outer columns: a LATERAL function, or one in a correlated subquery).
pub fn set_function(
    name: &str,
    args: &[ast::FunctionArg],
    binder: Option<&Binder<'_>>,
    ordinality: bool,
) -> Result<LogicalPlan> {
    let empty = Scope::default();
    let mut ctx = Context::Plain {
        scope: &empty,
        clause: "FROM",
        binder,
    };
    let args = args
        .iter()
        .map(|a| match a {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => bind_expr(e, &mut ctx),
            other => Err(bind_err!("{name}: unexpected argument {other}")),
        })
        .collect::<Result<Vec<_>>>()?;
    if name == "pg_get_keywords" {
        if !args.is_empty() {
            return Err(bind_err!("pg_get_keywords takes no arguments"));
        }
        if ordinality {
            return Err(unsupported!("pg_get_keywords() WITH ORDINALITY"));
        }
        return Ok(keywords());
    }
    // One row of no columns to unnest from.
    let one_row = LogicalPlan::Values {
        schema: Arc::new(Schema::empty()),
        rows: vec![Vec::new()],
    };
    let array = set_function_array(name, args)?;
    let array = match ordinality {
        // Each element beside its place: the array zipped with 1, 2, ... its length.
        true => {
            let length = super::duckdb_functions::length(std::slice::from_ref(&array))?;
            let stop = Expr::Binary {
                op: crate::expr::BinaryOp::Plus,
                left: Box::new(length),
                right: Box::new(Expr::Literal(ScalarValue::Int64(1))),
            };
            let places =
                set_function_array("range", vec![Expr::Literal(ScalarValue::Int64(1)), stop])?;
            super::list_picks::zip(&[array, places])?
        }
        false => array,
    };
    let elements = one_row.unnest(array, name);
    let element = Expr::columns_of(&elements.schema()).remove(0);
    let (value, place) = match ordinality {
        true => (
            super::structs::field_at(element.clone(), 0),
            Some(super::structs::field_at(element, 1)),
        ),
        false => (element, None),
    };
    // A function giving records has a column per field; `unnest` of structs gives the
    // structs, as DuckDB's does.
    let (mut exprs, mut names): (Vec<Expr>, Vec<String>) = match value.data_type() {
        DataType::Struct(fields) if name != "unnest" => (0..fields.len())
            .map(|i| {
                let field = Expr::Function {
                    func: ScalarFunction::Field(i),
                    args: vec![value.clone()],
                    data_type: fields[i].data_type().clone(),
                };
                (field, fields[i].name().clone())
            })
            .unzip(),
        _ => (vec![value], vec![name.to_string()]),
    };
    if let Some(place) = place {
        exprs.push(place);
        names.push("ordinality".into());
    }
    Ok(elements.project(exprs, names))
}

/// The array whose elements the set-returning function `name` gives, one per row.
pub fn set_function_array(name: &str, args: Vec<Expr>) -> Result<Expr> {
    let array = |args: Vec<Expr>| match args.as_slice() {
        [array] if matches!(array.data_type(), DataType::List(_)) => Ok(array.clone()),
        [other] => Err(bind_err!(
            "{name} needs an array, not {}",
            type_name(&other.data_type())
        )),
        _ => Err(bind_err!("{name} takes one array")),
    };
    if let Some(array) = super::json_functions::json_set_function(name, &args) {
        return array;
    }
    match name {
        "unnest" => array(args),
        "_pg_expandarray" => {
            let array = array(args)?;
            let DataType::List(item) = array.data_type() else {
                unreachable!("an array")
            };
            Ok(Expr::Function {
                func: ScalarFunction::ExpandArray,
                data_type: expanded_array_type(item.data_type()),
                args: vec![array],
            })
        }
        "generate_series" | "range" => series(name, args),
        _ => Err(bind_err!("{name} is not a set-returning function")),
    }
}

/// A set-returning function in a select list: each input row (each group's, in a grouped
/// select) once per element, the element in place of the call.
pub fn select_list_set_function(name: &str, args: Vec<Expr>, ctx: &Context<'_>) -> Result<Expr> {
    let binder = match ctx {
        Context::Plain {
            clause: "SELECT",
            binder: Some(binder),
            ..
        } => *binder,
        Context::Plain { clause, .. } => {
            return Err(bind_err!(
                "set-returning functions are not allowed in {clause}"
            ));
        }
        Context::Aggregated(_, Some(binder)) => *binder,
        Context::Aggregated(_, None) => {
            return Err(bind_err!("set-returning functions are not allowed here"));
        }
    };
    let array = set_function_array(name, args)?;
    let DataType::List(item) = array.data_type() else {
        unreachable!("an array")
    };
    let index = binder.add_set_function(array)?;
    Ok(Expr::column(
        SET_FUNCTION_BASE + index,
        name,
        item.data_type().clone(),
    ))
}

/// `generate_series(start, stop [, step])` (stop included) or `range([start,] stop [, step])`
/// (stop excluded), over BIGINTs, as an array.
fn series(name: &str, args: Vec<Expr>) -> Result<Expr> {
    let inclusive = name == "generate_series";
    let mut args = match (inclusive, args.len()) {
        (false, 1) => {
            let mut args = args;
            args.insert(0, Expr::Literal(ScalarValue::Int64(0)));
            args
        }
        (_, 2 | 3) => args,
        _ => return Err(bind_err!("{name} takes a start, a stop and a step")),
    };
    let timed = |e: &Expr| matches!(e.data_type(), DataType::Date32 | DataType::Timestamp(..));
    if args.iter().take(2).any(timed) {
        return time_series(name, args, inclusive);
    }
    if args.len() == 2 {
        args.push(Expr::Literal(ScalarValue::Int64(1)));
    }
    for arg in &mut args {
        // A quoted number is read as one, as Postgres reads a literal of unknown type.
        if is_string_literal(arg) {
            *arg = arg.clone().cast(&DataType::Int64);
        }
        let t = arg.data_type();
        if !matches!(t, DataType::Int32 | DataType::Int64 | DataType::Null) {
            return Err(unsupported!("{name} over {}", type_name(&t)));
        }
    }
    Ok(Expr::Function {
        func: ScalarFunction::Series { inclusive },
        args: args.into_iter().map(|a| a.cast(&DataType::Int64)).collect(),
        data_type: list_of(DataType::Int64),
    })
}

/// `generate_series(start, stop, step)` / `range` over dates or timestamps, by an interval:
/// an array of TIMESTAMPs, as in both anchors.
fn time_series(name: &str, args: Vec<Expr>, inclusive: bool) -> Result<Expr> {
    let [start, stop, step] = args.as_slice() else {
        return Err(bind_err!(
            "{name} over dates or timestamps takes a start, a stop and an interval"
        ));
    };
    let stamp = DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, None);
    let interval = DataType::Interval(arrow::datatypes::IntervalUnit::MonthDayNano);
    for end in [start, stop] {
        let t = end.data_type();
        if !matches!(
            t,
            DataType::Date32 | DataType::Timestamp(..) | DataType::Null | DataType::Utf8
        ) {
            return Err(bind_err!(
                "{name}: {} is no date or timestamp",
                type_name(&t)
            ));
        }
    }
    if !matches!(step.data_type(), DataType::Interval(_) | DataType::Utf8) {
        return Err(bind_err!(
            "{name} over dates or timestamps steps by an interval, not {}",
            type_name(&step.data_type())
        ));
    }
    Ok(Expr::Function {
        func: ScalarFunction::TimeSeries { inclusive },
        args: vec![
            start.clone().cast(&stamp),
            stop.clone().cast(&stamp),
            step.clone().cast(&interval),
        ],
        data_type: list_of(stamp),
    })
}

/// `pg_get_keywords()`: the words the SQL parser knows; those it will not take as a column
/// alias are reserved.
fn keywords() -> LogicalPlan {
    use sqlparser::keywords::{ALL_KEYWORDS, ALL_KEYWORDS_INDEX, RESERVED_FOR_COLUMN_ALIAS};
    let text = |s: &str| Expr::Literal(ScalarValue::Utf8(s.to_string()));
    let rows = ALL_KEYWORDS
        .iter()
        .zip(ALL_KEYWORDS_INDEX)
        .map(|(word, keyword)| {
            let reserved = RESERVED_FOR_COLUMN_ALIAS.contains(keyword);
            let (code, description) = if reserved {
                ("R", "reserved")
            } else {
                ("U", "unreserved")
            };
            vec![
                text(&word.to_lowercase()),
                text(code),
                Expr::Literal(ScalarValue::Boolean(!reserved)),
                text(description),
            ]
        })
        .collect();
    let schema = Schema::new(vec![
        Field::new("word", DataType::Utf8, true),
        Field::new("catcode", DataType::Utf8, true),
        Field::new("barelabel", DataType::Boolean, true),
        Field::new("catdesc", DataType::Utf8, true),
    ]);
    LogicalPlan::Values {
        schema: Arc::new(schema),
        rows,
    }
}

/// `table_changes('t', from [, to])` (ADR 0048): every change the commits `from..=to` made to
/// table `t`, as its columns plus `_change_type` (`insert`, `delete`, `update_preimage`,
/// `update_postimage`), `_commit_version` and `_commit_timestamp`, as Delta's change data feed
/// names them. Commits that updated or deleted rows recorded them; the rest of the range's
/// insertions are the rows that still carry a commit of the range without a record.
pub fn table_changes(
    snapshot: &pondra_catalog::Snapshot,
    table: Arc<pondra_catalog::TableDef>,
    (from, to): (u64, Option<u64>),
) -> Result<LogicalPlan> {
    use pondra_catalog::{COMMIT_TIMESTAMP, COMMIT_VERSION, TableKind};
    if !matches!(table.kind, TableKind::Table) {
        return Err(bind_err!(
            "table_changes reads a table's changes, and {} is a view",
            table.name
        ));
    }
    let latest = snapshot.commit;
    let to = to.unwrap_or(latest);
    if to > latest {
        return Err(bind_err!(
            "table_changes: version {to} is after the latest commit, {latest}"
        ));
    }
    if from > to {
        return Err(bind_err!(
            "table_changes: the start version {from} is after the end version {to}"
        ));
    }
    let schema = table.change_record_schema();
    let records = LogicalPlan::ChangeRecords {
        table: table.clone(),
        from,
        to,
        schema: schema.clone(),
    };
    let scan_schema = table.scan_schema(true, false);
    let width = table.columns.len();
    let version = Expr::column(width, COMMIT_VERSION, DataType::Int64);
    let bound = |op, value: u64| Expr::Binary {
        op,
        left: Box::new(version.clone()),
        right: Box::new(Expr::Literal(ScalarValue::Int64(value as i64))),
    };
    let mut conditions = vec![
        bound(crate::expr::BinaryOp::GtEq, from),
        bound(crate::expr::BinaryOp::LtEq, to),
    ];
    let recorded: Vec<Expr> = snapshot
        .change_records(table.id)
        .iter()
        .filter(|r| (from..=to).contains(&r.commit))
        .map(|r| Expr::Literal(ScalarValue::Int64(r.commit as i64)))
        .collect();
    if !recorded.is_empty() {
        conditions.push(Expr::InList {
            expr: Box::new(version.clone()),
            list: recorded,
            negated: true,
        });
    }
    let inserted = LogicalPlan::Filter {
        input: Box::new(LogicalPlan::Scan {
            table: table.clone(),
            schema: scan_schema.clone(),
        }),
        predicate: Expr::and_all(conditions).expect("two bounds at least"),
    };
    let mut exprs = Expr::columns_of(&scan_schema);
    exprs.insert(width, Expr::Literal(ScalarValue::Utf8("insert".into())));
    let names = schema.fields().iter().map(|f| f.name().clone()).collect();
    debug_assert_eq!(scan_schema.field(width + 1).name(), COMMIT_TIMESTAMP);
    let inserted = inserted.project(exprs, names);
    Ok(LogicalPlan::Union {
        inputs: vec![records, inserted],
        schema,
    })
}

/// The arguments of `table_changes`: the table's name, the first version and the last.
pub fn table_changes_arguments(args: &[ast::FunctionArg]) -> Result<(String, u64, Option<u64>)> {
    let value = |arg: &ast::FunctionArg| match arg {
        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(ast::Expr::Value(v))) => {
            Some(v.value.clone())
        }
        _ => None,
    };
    let version = |arg: &ast::FunctionArg| match value(arg) {
        Some(ast::Value::Number(n, _)) => n
            .parse::<u64>()
            .map_err(|_| bind_err!("table_changes: {n} is not a commit version")),
        _ => Err(bind_err!(
            "table_changes: versions are whole numbers, not {arg}"
        )),
    };
    let name = |arg: &ast::FunctionArg| match value(arg) {
        Some(ast::Value::SingleQuotedString(name)) => Ok(name),
        _ => Err(bind_err!(
            "table_changes: the table is named by a string, not {arg}"
        )),
    };
    match args {
        [table, from] => Ok((name(table)?, version(from)?, None)),
        [table, from, to] => Ok((name(table)?, version(from)?, Some(version(to)?))),
        _ => Err(bind_err!(
            "table_changes takes a table's name, a first version and an optional last"
        )),
    }
}
