use arrow::datatypes::DataType;
use pondra_catalog::{SqlType, StructField, decimal_parts, decimal_type};
use sqlparser::ast;

use crate::binder::normalize;
use crate::integer_domains::IntegerDomain;
use crate::{Result, unsupported};

/// The SQL type a column definition or a CAST names.
pub fn sql_type_from_ast(data_type: &ast::DataType) -> Result<SqlType> {
    use ast::DataType as D;
    if let Some(domain) = IntegerDomain::of(data_type) {
        return Ok(domain.kept_as());
    }
    Ok(match data_type {
        D::Boolean | D::Bool => SqlType::Boolean,
        // MySQL's `SIGNED [INTEGER]`, which DuckDB reads as INTEGER.
        D::Int(_) | D::Integer(_) | D::Int4(_) | D::Int32 | D::Signed | D::SignedInteger => {
            SqlType::Int
        }
        D::BigInt(_) | D::Int8(_) | D::Int64 => SqlType::BigInt,
        D::Double(_) | D::DoublePrecision | D::Float8 | D::Float64 | D::Real | D::Float4 => {
            SqlType::Double
        }
        D::Float(_) => SqlType::Double,
        D::Decimal(info) | D::Numeric(info) => {
            let (precision, scale) = match info {
                ast::ExactNumberInfo::None => (18, 3),
                ast::ExactNumberInfo::Precision(p) => (*p, 0),
                ast::ExactNumberInfo::PrecisionAndScale(p, s) => (*p, *s),
            };
            if !(1..=38).contains(&precision) || scale < 0 || scale as u64 > precision {
                return Err(crate::bind_err!(
                    "DECIMAL({precision},{scale}) is out of range: precision must be 1 to 38 and scale 0 to precision"
                ));
            }
            SqlType::Decimal {
                precision: precision as u8,
                scale: scale as i8,
            }
        }
        D::Varchar(_)
        | D::Text
        | D::String(_)
        | D::Char(_)
        | D::Character(_)
        | D::CharacterVarying(_)
        | D::CharVarying(_) => SqlType::Varchar,
        D::Date => SqlType::Date,
        D::Timestamp(_, ast::TimezoneInfo::None | ast::TimezoneInfo::WithoutTimeZone)
        | D::TimestampNtz(_)
        | D::Datetime(_) => SqlType::Timestamp,
        D::Timestamp(_, ast::TimezoneInfo::WithTimeZone | ast::TimezoneInfo::Tz) => {
            SqlType::TimestampTz
        }
        D::Interval { .. } => SqlType::Interval,
        D::Time(_, ast::TimezoneInfo::None) => SqlType::Time,
        D::Blob(_) | D::Bytea | D::Binary(_) | D::Varbinary(_) => SqlType::Blob,
        D::JSON | D::JSONB => SqlType::Json,
        D::Uuid => SqlType::Uuid,
        D::Regclass => SqlType::Varchar,
        D::Array(ast::ArrayElemTypeDef::SquareBracket(element, Some(size)))
            if is_four_byte_float(element) =>
        {
            vector_of(*size)?
        }
        D::Custom(name, modifiers)
            if modifiers.len() == 1
                && name.0.len() == 1
                && name.to_string().eq_ignore_ascii_case("vector") =>
        {
            let size = match &modifiers[0] {
                ast::TypeModifier::Number(digits, _) => digits.parse::<u64>().ok(),
                _ => None,
            };
            let size = size.ok_or_else(|| {
                crate::bind_err!("vector({}): a length is a number", modifiers[0])
            })?;
            vector_of(size)?
        }
        D::Array(
            ast::ArrayElemTypeDef::SquareBracket(element, _)
            | ast::ArrayElemTypeDef::AngleBracket(element)
            | ast::ArrayElemTypeDef::Parenthesis(element)
            | ast::ArrayElemTypeDef::Qualified(element, _),
        ) => SqlType::List(Box::new(sql_type_from_ast(element)?)),
        D::Map(key, value, _) => SqlType::Map(
            Box::new(sql_type_from_ast(key)?),
            Box::new(sql_type_from_ast(value)?),
        ),
        D::Struct(fields, _) => SqlType::Struct(
            fields
                .iter()
                .map(|f| {
                    Ok(StructField {
                        name: f.field_name.as_ref().map(normalize).unwrap_or_default(),
                        sql_type: sql_type_from_ast(&f.field_type)?,
                    })
                })
                .collect::<Result<_>>()?,
        ),
        // The names Postgres clients cast catalog values to: object ids and their names.
        D::Custom(name, modifiers) if modifiers.is_empty() => {
            let last = name
                .0
                .last()
                .and_then(|p| p.as_ident())
                .map(|i| i.value.to_lowercase())
                .unwrap_or_default();
            match last.as_str() {
                "text" | "name" | "regtype" | "regclass" | "regproc" | "regnamespace"
                | "regrole" | "char" | "bpchar" | "varchar" => SqlType::Varchar,
                "oid" | "int4" => SqlType::Int,
                "int8" => SqlType::BigInt,
                "float4" | "float8" => SqlType::Double,
                "bool" => SqlType::Boolean,
                _ => return Err(unsupported!("the type {data_type}")),
            }
        }
        other => return Err(unsupported!("the type {other}")),
    })
}

/// Whether `element` names a 4-byte float, whose fixed-size arrays are vectors (ADR 0082).
fn is_four_byte_float(element: &ast::DataType) -> bool {
    use ast::DataType as D;
    matches!(element, D::Float(_) | D::Real | D::Float4)
}

/// The vector type of `size` floats: 1 to 65,535 of them.
fn vector_of(size: u64) -> Result<SqlType> {
    match u32::try_from(size) {
        Ok(size @ 1..=65_535) => Ok(SqlType::Vector(size)),
        _ => Err(crate::bind_err!(
            "a vector holds 1 to 65535 floats, not {size}"
        )),
    }
}

/// The type of arrays (Arrow lists) of `item`.
pub fn list_of(item: DataType) -> DataType {
    DataType::List(std::sync::Arc::new(arrow::datatypes::Field::new(
        "item", item, true,
    )))
}

/// `schema`'s fields followed by `more`.
pub(crate) fn schema_with(
    schema: &arrow::datatypes::Schema,
    more: impl IntoIterator<Item = arrow::datatypes::Field>,
) -> arrow::datatypes::SchemaRef {
    let fields = schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .chain(more);
    std::sync::Arc::new(arrow::datatypes::Schema::new(fields.collect::<Vec<_>>()))
}

/// The type `_pg_expandarray` gives for an array of `item`: an array of records `(x, n)`, the
/// element and its position from 1.
pub fn expanded_array_type(item: &DataType) -> DataType {
    let fields = vec![
        arrow::datatypes::Field::new("x", item.clone(), true),
        arrow::datatypes::Field::new("n", DataType::Int32, true),
    ];
    list_of(DataType::Struct(fields.into()))
}

/// Appends one element of an array in Postgres's text form (`{1,NULL,"a b"}`), quoted when
/// Postgres would quote it.
pub fn push_array_item(text: &mut String, item: &str) {
    let needs_quotes = item.is_empty()
        || item.eq_ignore_ascii_case("null")
        || item
            .chars()
            .any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || c.is_whitespace());
    if !needs_quotes {
        text.push_str(item);
        return;
    }
    text.push('"');
    for c in item.chars() {
        if matches!(c, '"' | '\\') {
            text.push('\\');
        }
        text.push(c);
    }
    text.push('"');
}

/// True for the types arithmetic applies to.
pub fn is_numeric(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Int32
            | DataType::Int64
            | DataType::Float64
            | DataType::Decimal64(_, _)
            | DataType::Decimal128(_, _)
    )
}

/// The type two numeric operands are brought to before they are combined, following Postgres:
/// integers widen to BIGINT, integers and decimals meet in a decimal, anything with a DOUBLE is
/// a DOUBLE.
pub fn common_numeric_type(left: &DataType, right: &DataType) -> Option<DataType> {
    use DataType::*;
    Some(match (left, right) {
        (Null, other) | (other, Null) if is_numeric(other) => other.clone(),
        (Float64, r) if is_numeric(r) => Float64,
        (l, Float64) if is_numeric(l) => Float64,
        (Int32, Int32) => Int32,
        (Int32 | Int64, Int32 | Int64) => Int64,
        (l, r) => match (decimal_parts(l), decimal_parts(r)) {
            (Some((p1, s1)), Some((p2, s2))) => {
                let scale = s1.max(s2);
                let integer_digits = (p1 as i16 - s1 as i16).max(p2 as i16 - s2 as i16);
                decimal_type((integer_digits + scale as i16).clamp(1, 38) as u8, scale)
            }
            (Some((p, s)), None) if matches!(r, Int32 | Int64) => decimal_with_integer(p, s, r),
            (None, Some((p, s))) if matches!(l, Int32 | Int64) => decimal_with_integer(p, s, l),
            _ => return None,
        },
    })
}

/// The decimal a `DECIMAL(p, s)` and an integer of type `integer` meet in.
fn decimal_with_integer(precision: u8, scale: i8, integer: &DataType) -> DataType {
    let integer_digits = (precision as i16 - scale as i16).max(integer_digits(integer) as i16);
    decimal_type((integer_digits + scale as i16).min(38) as u8, scale)
}

/// The most digits a value of integer type `integer` has, as a decimal: 10 for INTEGER, 19
/// for BIGINT (as in DuckDB).
pub fn integer_digits(integer: &DataType) -> u8 {
    match integer {
        DataType::Int32 => 10,
        _ => 19,
    }
}
