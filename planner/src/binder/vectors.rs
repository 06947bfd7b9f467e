//! Distances between vectors (ADR 0082): DuckDB's `array_distance` family, pgvector's
//! functions and its operators `<->`, `<=>` and `<#>`.

use arrow::datatypes::DataType;
use pondra_catalog::{SqlType, TableDef, VectorIndex, VectorMetric, vector_type};
use sqlparser::ast::{self, BinaryOperator};

use super::expr::type_name;
use super::functions::expect_arity;
use crate::expr::{Expr, ScalarFunction, VectorDistance};
use crate::{Result, bind_err, unsupported};

/// The distance a function name computes; `None` when `name` is not one.
fn distance_named(name: &str) -> Option<VectorDistance> {
    Some(match name {
        "array_distance" | "list_distance" | "l2_distance" => VectorDistance::Euclidean,
        "array_cosine_distance" | "list_cosine_distance" | "cosine_distance" => {
            VectorDistance::CosineDistance
        }
        "array_cosine_similarity" | "list_cosine_similarity" => VectorDistance::CosineSimilarity,
        "array_inner_product"
        | "list_inner_product"
        | "array_dot_product"
        | "list_dot_product"
        | "inner_product" => VectorDistance::InnerProduct,
        "array_negative_inner_product"
        | "list_negative_inner_product"
        | "array_negative_dot_product"
        | "list_negative_dot_product"
        | "negative_inner_product" => VectorDistance::NegativeInnerProduct,
        _ => return None,
    })
}

/// A distance function's call; `None` when `name` is not one.
pub(super) fn vector_function(name: &str, args: &[Expr]) -> Option<Result<Expr>> {
    let distance = distance_named(name)?;
    Some(expect_arity(name, args, 2).and_then(|_| distance_call(distance, &args[0], &args[1])))
}

/// `left <-> right`, `<=>` or `<#>` when they are pgvector's operators: `<=>` is MySQL's
/// NULL-safe equality between scalars, and a distance only between vectors.
pub(crate) fn distance_operator(
    op: &BinaryOperator,
    left: &Expr,
    right: &Expr,
) -> Option<Result<Expr>> {
    let distance = match op {
        BinaryOperator::Custom(name) if name == "<->" => VectorDistance::Euclidean,
        BinaryOperator::Custom(name) if name == "<#>" => VectorDistance::NegativeInnerProduct,
        BinaryOperator::Spaceship => {
            let is_list = |e: &Expr| matches!(e.data_type(), DataType::List(_));
            if !is_list(left) && !is_list(right) {
                return None;
            }
            VectorDistance::CosineDistance
        }
        _ => return None,
    };
    Some(distance_call(distance, left, right))
}

fn distance_call(distance: VectorDistance, left: &Expr, right: &Expr) -> Result<Expr> {
    Ok(Expr::Function {
        func: ScalarFunction::VectorDistance(distance),
        args: vec![
            vector_operand(distance, left)?,
            vector_operand(distance, right)?,
        ],
        data_type: DataType::Float64,
    })
}

/// `value` as a vector: a list of numbers, or pgvector's text form `'[1,2,3]'`.
fn vector_operand(distance: VectorDistance, value: &Expr) -> Result<Expr> {
    match value.data_type() {
        DataType::List(item) if item.data_type() == &DataType::Float32 => Ok(value.clone()),
        DataType::List(item) if item.data_type().is_numeric() || item.data_type().is_null() => {
            Ok(value.clone().cast(&vector_type()))
        }
        DataType::Utf8 | DataType::Null => Ok(value.clone().cast(&vector_type())),
        other => Err(bind_err!(
            "{} needs vectors (FLOAT[n] or lists of numbers), not {}",
            distance.name(),
            type_name(&other)
        )),
    }
}

/// The method of `CREATE INDEX ... USING HNSW (col) WITH (metric = ..., m = ...,
/// ef_construction = ...)`; none for an index without `USING`, which is only declared.
pub(super) fn vector_index(
    create: &ast::CreateIndex,
    table: &TableDef,
    columns: &[String],
) -> Result<Option<VectorIndex>> {
    let method = match &create.using {
        None if create.with.is_empty() => return Ok(None),
        None => return Err(unsupported!("WITH options on an index without USING HNSW")),
        Some(ast::IndexType::Custom(name)) if name.value.eq_ignore_ascii_case("hnsw") => "hnsw",
        Some(ast::IndexType::BTree) => return Ok(None),
        Some(other) => return Err(unsupported!("{other} indexes (HNSW indexes are built)")),
    };
    let [column] = columns else {
        return Err(bind_err!("an {method} index holds one vector column"));
    };
    let sql_type = table
        .columns
        .iter()
        .find(|c| &c.name == column)
        .map(|c| &c.sql_type);
    if !matches!(sql_type, Some(SqlType::Vector(_))) {
        return Err(bind_err!(
            "an HNSW index needs a vector column (FLOAT[n]); {column} is {}",
            sql_type.map_or("missing".to_string(), |t| t.to_string())
        ));
    }
    let mut index = VectorIndex {
        metric: VectorMetric::L2Sq,
        m: VectorIndex::DEFAULT_M,
        ef_construction: VectorIndex::DEFAULT_EF_CONSTRUCTION,
    };
    for option in &create.with {
        let (name, value) = index_option(option)?;
        let number = || -> Result<u32> {
            value
                .parse::<u32>()
                .ok()
                .filter(|n| (2..=1000).contains(n))
                .ok_or_else(|| {
                    bind_err!("HNSW option {name} is a whole number from 2 to 1000, not {value}")
                })
        };
        match name.as_str() {
            "metric" => {
                index.metric = VectorMetric::parse(&value).ok_or_else(|| {
                    bind_err!("HNSW metric is 'l2sq', 'cosine' or 'ip', not '{value}'")
                })?
            }
            "m" => index.m = number()?,
            "ef_construction" => index.ef_construction = number()?,
            other => {
                return Err(bind_err!(
                    "HNSW takes metric, m and ef_construction, not {other}"
                ));
            }
        }
    }
    Ok(Some(index))
}

/// One `name = value` of an index's WITH options, the value as text.
fn index_option(option: &ast::Expr) -> Result<(String, String)> {
    let ast::Expr::BinaryOp {
        left,
        op: BinaryOperator::Eq,
        right,
    } = option
    else {
        return Err(bind_err!("an index option is name = value, not {option}"));
    };
    let ast::Expr::Identifier(name) = left.as_ref() else {
        return Err(bind_err!("an index option is name = value, not {option}"));
    };
    let value = match right.as_ref() {
        ast::Expr::Value(value) => match &value.value {
            ast::Value::SingleQuotedString(text) => text.clone(),
            ast::Value::Number(number, _) => number.clone(),
            other => other.to_string(),
        },
        ast::Expr::Identifier(word) => word.value.clone(),
        other => other.to_string(),
    };
    Ok((name.value.to_ascii_lowercase(), value))
}
