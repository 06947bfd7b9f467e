//! Binary operators: arithmetic in the operands' common type, `||` of text and lists, `//`, and
//! the regular expression, JSON and bitwise operators.

use arrow::datatypes::DataType;
use pondra_catalog::{decimal_parts, decimal_type};
use sqlparser::ast::BinaryOperator;

use super::comparisons::{boolean, coerce, comparison, comparison_type, is_string_literal};
use super::date_arithmetic::{
    at_midnight, date_arithmetic, dates_beside_dates, is_interval, is_temporal,
};
use super::type_name;
use crate::binder::functions::strings;
use crate::expr::{BinaryOp, BitwiseOp, Expr, ScalarFunction};
use crate::scalar::ScalarValue;
use crate::types::{common_numeric_type, integer_digits};
use crate::{Result, bind_err, unsupported};

pub(crate) fn binary(left: Expr, op: &BinaryOperator, right: Expr) -> Result<Expr> {
    if let Some(days) = date_arithmetic(&left, op, &right)? {
        return Ok(days);
    }
    if let Some(distance) = crate::binder::vectors::distance_operator(op, &left, &right) {
        return distance;
    }
    if *op == BinaryOperator::StringConcat
        && let Some(bytes) = crate::binder::blobs::concat(&left, &right)
    {
        return bytes;
    }
    if *op == BinaryOperator::StringConcat {
        // Lists concatenate as lists, in both anchors; an element joins a list at its end.
        let is_list = |e: &Expr| matches!(e.data_type(), DataType::List(_));
        let is_null = |e: &Expr| e.data_type() == DataType::Null;
        let function = match (is_list(&left), is_list(&right)) {
            (true, true) => Some("list_concat"),
            (true, false) if is_null(&right) => Some("list_concat"),
            (false, true) if is_null(&left) => Some("list_concat"),
            (true, false) => Some("list_append"),
            (false, true) => Some("list_prepend"),
            (false, false) => None,
        };
        if let Some(function) = function {
            let args = [left, right];
            return crate::binder::duckdb_functions::duckdb_function(function, &args)
                .expect("a list function");
        }
    }
    if let BinaryOperator::Multiply | BinaryOperator::Divide = op
        && let Some(scaled) = crate::binder::interval_ops::interval_scale(
            &left,
            *op == BinaryOperator::Divide,
            &right,
        )
    {
        return scaled;
    }
    let op = match comparison(op) {
        Some(compare) => compare,
        None => match op {
            BinaryOperator::Plus => BinaryOp::Plus,
            BinaryOperator::Minus => BinaryOp::Minus,
            BinaryOperator::Multiply => BinaryOp::Multiply,
            BinaryOperator::Divide => BinaryOp::Divide,
            BinaryOperator::Modulo => BinaryOp::Modulo,
            BinaryOperator::And => BinaryOp::And,
            BinaryOperator::Or => BinaryOp::Or,
            BinaryOperator::StringConcat => BinaryOp::Concat,
            BinaryOperator::PGRegexMatch
            | BinaryOperator::PGRegexIMatch
            | BinaryOperator::PGRegexNotMatch
            | BinaryOperator::PGRegexNotIMatch => {
                let insensitive = matches!(
                    op,
                    BinaryOperator::PGRegexIMatch | BinaryOperator::PGRegexNotIMatch
                );
                let matched = Expr::Function {
                    func: ScalarFunction::RegexpMatch(insensitive),
                    args: strings(vec![left, right]),
                    data_type: DataType::Boolean,
                };
                let negated = matches!(
                    op,
                    BinaryOperator::PGRegexNotMatch | BinaryOperator::PGRegexNotIMatch
                );
                return Ok(if negated {
                    Expr::Not(Box::new(matched))
                } else {
                    matched
                });
            }
            BinaryOperator::DuckIntegerDivide => return integer_divide(left, right),
            BinaryOperator::Glob | BinaryOperator::PGStartsWith => {
                let func = match op {
                    BinaryOperator::Glob => ScalarFunction::Text(crate::expr::TextOp::Glob),
                    _ => ScalarFunction::StartsWith,
                };
                for side in [&left, &right] {
                    let t = side.data_type();
                    if !matches!(t, DataType::Utf8 | DataType::Null) {
                        return Err(bind_err!(
                            "{op} needs VARCHAR operands, not {}",
                            type_name(&t)
                        ));
                    }
                }
                return Ok(Expr::Function {
                    func,
                    args: strings(vec![left, right]),
                    data_type: DataType::Boolean,
                });
            }
            BinaryOperator::Arrow => {
                return crate::binder::functions::json_get(vec![left, right], false);
            }
            BinaryOperator::LongArrow => {
                return crate::binder::functions::json_get(vec![left, right], true);
            }
            BinaryOperator::HashArrow | BinaryOperator::HashLongArrow => {
                let text = matches!(op, BinaryOperator::HashLongArrow);
                return crate::binder::json_functions::path_operator(left, right, text);
            }
            // `@>` and `<@` of JSON text (PostgreSQL's jsonb containment).
            BinaryOperator::AtArrow | BinaryOperator::ArrowAt
                if [&left, &right]
                    .iter()
                    .all(|e| matches!(e.data_type(), DataType::Utf8 | DataType::Null)) =>
            {
                let (haystack, needle) = match op {
                    BinaryOperator::AtArrow => (left, right),
                    _ => (right, left),
                };
                let name = "jsonb_contains";
                return crate::binder::json_functions::json_function(name, &[haystack, needle])
                    .expect("a JSON function");
            }
            BinaryOperator::BitwiseAnd => return bitwise(left, BitwiseOp::And, right),
            BinaryOperator::BitwiseOr => return bitwise(left, BitwiseOp::Or, right),
            BinaryOperator::BitwiseXor | BinaryOperator::PGBitwiseXor => {
                return bitwise(left, BitwiseOp::Xor, right);
            }
            BinaryOperator::PGBitwiseShiftLeft => {
                return bitwise(left, BitwiseOp::ShiftLeft, right);
            }
            BinaryOperator::PGBitwiseShiftRight => {
                return bitwise(left, BitwiseOp::ShiftRight, right);
            }
            other => return Err(unsupported!("the operator {other}")),
        },
    };
    let (lt, rt) = (left.data_type(), right.data_type());
    let (left, right) = match op {
        BinaryOp::And | BinaryOp::Or => {
            let name = if op == BinaryOp::And { "AND" } else { "OR" };
            (boolean(left, name)?, boolean(right, name)?)
        }
        BinaryOp::Concat => (left.cast(&DataType::Utf8), right.cast(&DataType::Utf8)),
        op if op.is_comparison() => {
            let (left, right) = dates_beside_dates(left, right);
            let (lt, rt) = (left.data_type(), right.data_type());
            let lt = integer_constant_beside_decimal(&left, &rt).unwrap_or(lt);
            let rt = integer_constant_beside_decimal(&right, &lt).unwrap_or(rt);
            let target = if is_string_literal(&left) {
                comparison_type(&rt, &lt, &left)?
            } else {
                comparison_type(&lt, &rt, &right)?
            };
            (coerce(left, &target), coerce(right, &target))
        }
        // A date moved by an interval is a TIMESTAMP, in both anchors: its midnight moved.
        BinaryOp::Plus | BinaryOp::Minus if is_temporal(&lt) && is_interval(&rt) => {
            (at_midnight(left), right)
        }
        BinaryOp::Plus if is_interval(&lt) && is_temporal(&rt) => (at_midnight(right), left),
        _ => {
            let lt = integer_constant_beside_decimal(&left, &rt).unwrap_or(lt);
            let rt = integer_constant_beside_decimal(&right, &lt).unwrap_or(rt);
            let Some(target) = common_numeric_type(&lt, &rt) else {
                return Err(bind_err!(
                    "operator {} is not defined for types {} and {}",
                    op_symbol(op),
                    type_name(&lt),
                    type_name(&rt)
                ));
            };
            return Ok(arithmetic(op, left, right, &lt, &rt, target));
        }
    };
    Ok(Expr::Binary {
        op,
        left: Box::new(left),
        right: Box::new(right),
    })
}

pub(super) fn op_symbol(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Plus => "+",
        BinaryOp::Minus => "-",
        BinaryOp::Multiply => "*",
        BinaryOp::Divide => "/",
        _ => "%",
    }
}

/// Arithmetic in the operands' common type. Decimal products keep every digit (the scales add);
/// decimal quotients are computed in DOUBLE.
pub(super) fn arithmetic(
    op: BinaryOp,
    left: Expr,
    right: Expr,
    lt: &DataType,
    rt: &DataType,
    target: DataType,
) -> Expr {
    let node = |l: Expr, r: Expr| Expr::Binary {
        op,
        left: Box::new(l),
        right: Box::new(r),
    };
    let Some((precision, scale)) = decimal_parts(&target) else {
        return node(left.cast(&target), right.cast(&target));
    };
    match op {
        BinaryOp::Multiply => {
            // An integer operand is a decimal of as many digits as its type holds.
            let as_decimal = |t: &DataType| decimal_parts(t).unwrap_or((integer_digits(t), 0));
            let ((p1, s1), (p2, s2)) = (as_decimal(lt), as_decimal(rt));
            let result = decimal_type((p1 + p2).min(38), s1 + s2);
            Expr::Cast {
                expr: Box::new(node(
                    left.cast(&decimal_type(p1, s1)),
                    right.cast(&decimal_type(p2, s2)),
                )),
                data_type: result,
            }
        }
        BinaryOp::Divide | BinaryOp::Modulo => node(
            left.cast(&DataType::Float64),
            right.cast(&DataType::Float64),
        ),
        // A sum or difference can carry into one more integer digit.
        _ => Expr::Cast {
            expr: Box::new(node(left.cast(&target), right.cast(&target))),
            data_type: decimal_type((precision + 1).min(38), scale),
        },
    }
}

/// The decimal type an integer constant takes beside a decimal: just as many digits as it
/// has, as in DuckDB, so `1 - discount` stays as narrow as `discount` rather than growing
/// to hold any BIGINT.
fn integer_constant_beside_decimal(expr: &Expr, other: &DataType) -> Option<DataType> {
    decimal_parts(other)?;
    let value = match expr {
        Expr::Literal(ScalarValue::Int32(v)) => i64::from(*v),
        Expr::Literal(ScalarValue::Int64(v)) => *v,
        _ => return None,
    };
    let digits = value.unsigned_abs().checked_ilog10().map_or(1, |d| d + 1);
    Some(decimal_type(digits as u8, 0))
}

/// `a // b` (DuckDB): the quotient of integers as an integer, of other numbers rounded down.
fn integer_divide(left: Expr, right: Expr) -> Result<Expr> {
    let integer = |t: &DataType| {
        matches!(
            t,
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 | DataType::Null
        )
    };
    let quotient = binary(left.clone(), &BinaryOperator::Divide, right.clone())?;
    if integer(&left.data_type()) && integer(&right.data_type()) {
        return Ok(quotient);
    }
    Ok(Expr::Function {
        func: ScalarFunction::Floor,
        args: vec![quotient.cast(&DataType::Float64)],
        data_type: DataType::Float64,
    })
}

/// A bitwise operator: both sides become the wider of their integer types.
fn bitwise(left: Expr, op: BitwiseOp, right: Expr) -> Result<Expr> {
    let (lt, rt) = (left.data_type(), right.data_type());
    let integer = |t: &DataType| matches!(t, DataType::Int32 | DataType::Int64 | DataType::Null);
    if !integer(&lt) || !integer(&rt) {
        return Err(bind_err!(
            "operator {} is not defined for types {} and {}: it takes integers",
            ScalarFunction::Bitwise(op).name(),
            type_name(&lt),
            type_name(&rt)
        ));
    }
    let data_type = if lt == DataType::Int64 || rt == DataType::Int64 {
        DataType::Int64
    } else {
        DataType::Int32
    };
    Ok(Expr::Function {
        func: ScalarFunction::Bitwise(op),
        args: vec![left.cast(&data_type), right.cast(&data_type)],
        data_type,
    })
}
