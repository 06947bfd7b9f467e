//! The options of `CREATE TABLE ... WITH (...)`: a TTL (ADR 0048), a merge table's folds
//! (ADR 0050) and a watermark (ADR 0055). Options not known are refused, not ignored.

use std::collections::BTreeMap;

use pondra_catalog::{
    Column, Fold, KafkaFormat, MAX_PARTITIONS, SqlType, TableFormat, Ttl, Watermark,
};
use pondra_parser::ast;

use super::object_name;
use super::scope::normalize;
use crate::scalar::ScalarValue;
use crate::{Result, bind_err, unsupported};

/// What a table's options give it.
pub(super) struct TableOptions {
    pub ttl: Option<Ttl>,
    pub folds: BTreeMap<String, Fold>,
    pub watermark: Option<Watermark>,
    pub publish: Vec<TableFormat>,
    pub kafka_format: KafkaFormat,
    pub partitions: u16,
}

/// The options of a table with `columns` and primary `key`.
pub(super) fn table_options(
    options: &ast::CreateTableOptions,
    columns: &[Column],
    key: &[String],
) -> Result<TableOptions> {
    let options = match options {
        ast::CreateTableOptions::None => &Vec::new(),
        ast::CreateTableOptions::With(options) => options,
        other => return Err(unsupported!("the table options {other}")),
    };
    let (mut ttl, mut ttl_column, mut merge) = (None, None, None);
    let (mut watermark_column, mut watermark) = (None, None);
    let mut publish = Vec::new();
    let mut kafka_format = KafkaFormat::Json;
    let mut partitions = 1;
    let keyed = !key.is_empty();
    for option in options {
        let ast::SqlOption::KeyValue { key, value } = option else {
            return Err(unsupported!("the table option {option}"));
        };
        let text = option_text(value);
        match object_name(key)?.as_str() {
            "ttl" => ttl = Some(text),
            "ttl_column" => ttl_column = Some(text),
            "merge" => merge = Some(text),
            "watermark_column" => watermark_column = Some(text),
            "watermark" => watermark = Some(value),
            "publish" => {
                publish = publish_formats(&text)?;
                check_publishable(columns, &publish)?;
            }
            "kafka_format" => {
                kafka_format = KafkaFormat::parse(&text).ok_or_else(|| {
                    bind_err!("kafka_format is 'json' or 'debezium', not '{text}'")
                })?;
                if kafka_format == KafkaFormat::Debezium && !keyed {
                    return Err(bind_err!(
                        "kafka_format = 'debezium' needs a PRIMARY KEY: its events upsert and delete rows by key"
                    ));
                }
            }
            // Kafka partitions (ADR 0079).
            "partitions" => match text.parse::<u16>() {
                Ok(n @ 1..=MAX_PARTITIONS) => partitions = n,
                _ => {
                    return Err(bind_err!(
                        "partitions is a whole number from 1 to {MAX_PARTITIONS}, not {text}"
                    ));
                }
            },
            other => return Err(unsupported!("the table option {other}")),
        }
    }
    Ok(TableOptions {
        ttl: table_ttl(ttl, ttl_column, columns)?,
        folds: match merge {
            Some(text) => merge_folds(&text, columns, key)?,
            None => BTreeMap::new(),
        },
        watermark: table_watermark(watermark_column, watermark, columns)?,
        publish,
        kafka_format,
        partitions,
    })
}

/// An option's value as text: a string's contents, an identifier's name, else as written.
fn option_text(value: &ast::Expr) -> String {
    match value {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => s.clone(),
            _ => value.to_string(),
        },
        ast::Expr::Identifier(ident) => normalize(ident),
        other => other.to_string(),
    }
}

/// The formats `publish = 'delta,iceberg'` names (ADR 0058); an empty list publishes none.
pub(super) fn publish_formats(text: &str) -> Result<Vec<TableFormat>> {
    let mut formats = Vec::new();
    for name in text.split(',').filter(|n| !n.trim().is_empty()) {
        let format = TableFormat::parse(name).ok_or_else(|| {
            bind_err!(
                "publish = '{text}': a table is published as 'delta', 'iceberg' or 'delta,iceberg', not as {}",
                name.trim()
            )
        })?;
        if !formats.contains(&format) {
            formats.push(format);
        }
    }
    Ok(formats)
}

/// Refuses to publish `columns` in `formats` when a format cannot hold them: neither Delta
/// nor Iceberg has an interval type, and Delta without column mapping (ADR 0058) takes no
/// column name with a space or any of `,;{}()=`.
pub(super) fn check_publishable(columns: &[Column], formats: &[TableFormat]) -> Result<()> {
    if formats.is_empty() {
        return Ok(());
    }
    if let Some(column) = columns.iter().find(|c| c.sql_type == SqlType::Interval) {
        return Err(unsupported!(
            "publishing a table with an INTERVAL column ({}): Delta and Iceberg have no interval type",
            column.name
        ));
    }
    if let Some(column) = columns.iter().find(|c| c.sql_type == SqlType::Time) {
        return Err(unsupported!(
            "publishing a table with a TIME column ({}): Delta has no time type (ADR 0065)",
            column.name
        ));
    }
    if let Some(column) = columns.iter().find(|c| !c.sql_type.is_scalar()) {
        return Err(unsupported!(
            "publishing a table with the {} column {} (ADR 0059)",
            column.sql_type,
            column.name
        ));
    }
    let unnamed = |c: &&Column| c.name.contains(|ch: char| " ,;{}()\n\t=".contains(ch));
    if formats.contains(&TableFormat::Delta)
        && let Some(column) = columns.iter().find(unnamed)
    {
        return Err(unsupported!(
            "publishing as Delta a column named \"{}\": Delta without column mapping takes no space or ,;{{}}()= in a name",
            column.name
        ));
    }
    Ok(())
}

/// `ALTER TABLE t SET (publish = '...')`: the option an existing table can change.
pub(super) fn altered_publish(options: &[ast::SqlOption]) -> Result<Vec<TableFormat>> {
    let [ast::SqlOption::KeyValue { key, value }] = options else {
        return Err(unsupported!(
            "ALTER TABLE ... SET with options other than one publish = '...'"
        ));
    };
    match object_name(key)?.as_str() {
        "publish" => publish_formats(&option_text(value)),
        other => Err(unsupported!("changing the table option {other}")),
    }
}

/// The watermark `WATERMARK FOR ts AS ts - INTERVAL '5' SECOND` gives a table, which the
/// parser passes as `WITH (watermark_column = ts, watermark = (ts - INTERVAL '5' SECOND))`
/// (ADR 0055).
fn table_watermark(
    column: Option<String>,
    expression: Option<&ast::Expr>,
    columns: &[Column],
) -> Result<Option<Watermark>> {
    let usage = "WATERMARK FOR <column> AS <column> [- INTERVAL '<delay>']";
    let (column, expression) = match (column, expression) {
        (None, None) => return Ok(None),
        (Some(column), Some(expression)) => (column, expression),
        _ => {
            return Err(bind_err!(
                "a watermark takes both its column and its expression: {usage}"
            ));
        }
    };
    let Some(found) = columns.iter().find(|c| c.name == column) else {
        return Err(bind_err!("WATERMARK FOR {column}: no such column"));
    };
    if found.sql_type != SqlType::Timestamp {
        return Err(bind_err!(
            "WATERMARK FOR {column}: the column must be a TIMESTAMP, not {}",
            found.sql_type
        ));
    }
    let mut expression = expression;
    while let ast::Expr::Nested(inner) = expression {
        expression = inner;
    }
    let names_column =
        |e: &ast::Expr| matches!(e, ast::Expr::Identifier(i) if normalize(i) == column);
    let delay = match expression {
        e if names_column(e) => None,
        ast::Expr::BinaryOp {
            left,
            op: ast::BinaryOperator::Minus,
            right,
        } if names_column(left) => Some(right.as_ref()),
        other => {
            return Err(unsupported!(
                "the watermark expression {other} (a watermark is {usage})"
            ));
        }
    };
    let delay_micros = match delay {
        None => 0,
        Some(delay) => interval_micros(delay)
            .ok_or_else(|| bind_err!("the watermark's delay {delay} is not a constant interval of days, hours, minutes or seconds"))?,
    };
    if delay_micros < 0 {
        return Err(bind_err!("the watermark's delay must not be negative"));
    }
    Ok(Some(Watermark {
        column,
        delay_micros,
    }))
}

/// A constant interval without months or years, in microseconds.
pub(crate) fn interval_micros(expression: &ast::Expr) -> Option<i64> {
    let empty = super::scope::Scope::default();
    let mut ctx = super::expr::Context::plain(&empty, "WATERMARK");
    match super::expr::bind_expr(expression, &mut ctx).ok()? {
        crate::expr::Expr::Literal(ScalarValue::Interval {
            months: 0,
            days,
            nanos,
        }) => Some(i64::from(days) * 86_400_000_000 + nanos / 1_000),
        _ => None,
    }
}

/// The folds of `WITH (merge = 'views sum, first_seen min, last_seen max')` (ADR 0050).
fn merge_folds(text: &str, columns: &[Column], key: &[String]) -> Result<BTreeMap<String, Fold>> {
    if key.is_empty() {
        return Err(bind_err!("a merge table needs a PRIMARY KEY"));
    }
    let mut folds = BTreeMap::new();
    for entry in text.split(',').map(str::trim) {
        let words: Vec<&str> = entry.split_whitespace().collect();
        let [name, function] = words.as_slice() else {
            return Err(bind_err!(
                "merge = '{text}': each entry is a column and sum, min, max or last ('{entry}')"
            ));
        };
        let name = name.to_lowercase();
        let Some(column) = columns.iter().find(|c| c.name == name) else {
            return Err(bind_err!(
                "merge names {name}, which is not a column of the table"
            ));
        };
        if key.contains(&name) {
            return Err(bind_err!(
                "merge names {name}, a column of the key: keys are not folded"
            ));
        }
        let fold = match function.to_lowercase().as_str() {
            "sum" => Fold::Sum,
            "min" => Fold::Min,
            "max" => Fold::Max,
            "last" => Fold::Last,
            other => {
                return Err(bind_err!(
                    "merge folds {name} by {other}: a merge table folds by sum, min, max or last"
                ));
            }
        };
        let numeric = matches!(
            column.sql_type,
            SqlType::Int | SqlType::BigInt | SqlType::Double | SqlType::Decimal { .. }
        );
        let refused = match fold {
            Fold::Sum => !numeric,
            Fold::Min | Fold::Max => {
                column.sql_type == SqlType::Interval || !column.sql_type.is_scalar()
            }
            Fold::Last => false,
        };
        if refused {
            return Err(bind_err!(
                "merge cannot fold {name} ({}) by {function}",
                column.sql_type
            ));
        }
        if folds.insert(name.clone(), fold).is_some() {
            return Err(bind_err!("merge names {name} twice"));
        }
    }
    Ok(folds)
}

/// The TTL `WITH (ttl = '7 days', ttl_column = 'ts')` gives a table (ADR 0048).
fn table_ttl(
    ttl: Option<String>,
    column: Option<String>,
    columns: &[Column],
) -> Result<Option<Ttl>> {
    if ttl.is_none() && column.is_none() {
        return Ok(None);
    }
    let (Some(ttl), Some(column)) = (ttl, column) else {
        return Err(bind_err!(
            "a TTL needs both ttl = '<interval>' and ttl_column = <column>"
        ));
    };
    let Some(found) = columns.iter().find(|c| c.name == column) else {
        return Err(bind_err!(
            "ttl_column {column} is not a column of the table"
        ));
    };
    if !matches!(found.sql_type, SqlType::Timestamp | SqlType::Date) {
        return Err(bind_err!(
            "ttl_column {column} must be a TIMESTAMP or DATE, not {}",
            found.sql_type
        ));
    }
    let ScalarValue::Interval {
        months: 0,
        days,
        nanos,
    } = super::expr::interval_of_text(&ttl, None)?
    else {
        return Err(bind_err!(
            "a TTL is weeks, days, hours, minutes or seconds, not months ('{ttl}')"
        ));
    };
    let micros = i64::from(days) * 86_400_000_000 + nanos / 1000;
    if micros <= 0 {
        return Err(bind_err!("a TTL must be longer than nothing ('{ttl}')"));
    }
    Ok(Some(Ttl { column, micros }))
}
