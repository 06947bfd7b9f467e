//! Comparisons and tests: the type two values are compared in, row values compared field by
//! field, IS [NOT] DISTINCT FROM, IS TRUE / FALSE / UNKNOWN, LIKE with ESCAPE, and the boolean
//! a condition must be.

use arrow::datatypes::DataType;
use sqlparser::ast::{self, BinaryOperator};

use super::case_when::common_type;
use super::operators::binary;
use super::{Context, bind_expr, type_name};
use crate::expr::{BinaryOp, Expr, ScalarFunction};
use crate::scalar::ScalarValue;
use crate::types::{common_numeric_type, is_numeric};
use crate::{Result, bind_err, unsupported};

/// The comparison an operator is, if it is one.
pub(crate) fn comparison(op: &BinaryOperator) -> Option<BinaryOp> {
    Some(match op {
        BinaryOperator::Eq => BinaryOp::Eq,
        BinaryOperator::NotEq => BinaryOp::NotEq,
        BinaryOperator::Lt => BinaryOp::Lt,
        BinaryOperator::LtEq => BinaryOp::LtEq,
        BinaryOperator::Gt => BinaryOp::Gt,
        BinaryOperator::GtEq => BinaryOp::GtEq,
        _ => return None,
    })
}

/// The type two values are compared in; `right` is the second operand (a string literal can
/// take the other side's type, as in `d > '2024-01-01'`).
pub(crate) fn comparison_type(
    left: &DataType,
    right: &DataType,
    right_expr: &Expr,
) -> Result<DataType> {
    if left == right {
        return Ok(left.clone());
    }
    if let Some(t) = common_numeric_type(left, right) {
        return Ok(t);
    }
    match (left, right) {
        (DataType::Null, t) | (t, DataType::Null) => Ok(t.clone()),
        (DataType::List(l), DataType::List(r)) => {
            let item = comparison_type(l.data_type(), r.data_type(), right_expr)?;
            Ok(crate::binder::arrays::list_of(item))
        }
        (DataType::Struct(_), DataType::Struct(_)) => {
            crate::binder::structs::common_struct_type(left, right)
        }
        (DataType::Map(..), DataType::Map(..)) => common_type(&[left.clone(), right.clone()]),
        (t, DataType::Utf8) if is_string_literal(right_expr) => Ok(t.clone()),
        (DataType::Date32 | DataType::Timestamp(..), DataType::Timestamp(..))
        | (DataType::Timestamp(..), DataType::Date32) => {
            common_type(&[left.clone(), right.clone()])
        }
        _ => Err(bind_err!(
            "cannot compare values of types {} and {}",
            type_name(left),
            type_name(right)
        )),
    }
}

/// Casts `expr` to `target` unless it already has that type.
pub(crate) fn coerce(expr: Expr, target: &DataType) -> Expr {
    expr.cast(target)
}

pub(crate) fn is_string_literal(expr: &Expr) -> bool {
    matches!(expr, Expr::Literal(ScalarValue::Utf8(_)))
}

/// `left = right`, with the casts a comparison needs.
pub fn equality(left: Expr, right: Expr) -> Result<Expr> {
    binary(left, &BinaryOperator::Eq, right)
}

/// `left >= right`, with the casts a comparison needs.
pub fn at_least(left: Expr, right: Expr) -> Result<Expr> {
    binary(left, &BinaryOperator::GtEq, right)
}

/// `a IS DISTINCT FROM b`: `a <> b` with NULL a value like any other, never NULL itself.
pub(crate) fn distinct_values(left: Expr, right: Expr) -> Result<Expr> {
    let differ = binary(left.clone(), &BinaryOperator::NotEq, right.clone())?;
    let is_null = |e: &Expr| Expr::IsNull(Box::new(e.clone()));
    let yes = Expr::Literal(ScalarValue::Boolean(true));
    Ok(Expr::Case {
        branches: vec![
            (is_null(&left), Expr::IsNotNull(Box::new(right.clone()))),
            (is_null(&right), yes),
        ],
        otherwise: Some(Box::new(differ)),
        data_type: DataType::Boolean,
    })
}

/// A comparison of two row values `(a, b) op (c, d)` as PostgreSQL defines it, over their
/// fields: `=` when all are equal, `<>` when any differs, and the others in order, the first
/// field that differs deciding (`a < c OR (a = c AND b < d)`).
pub(super) fn row_comparison(
    left: &ast::Expr,
    op: &BinaryOperator,
    right: &ast::Expr,
) -> Result<ast::Expr> {
    let (ast::Expr::Tuple(l), ast::Expr::Tuple(r)) = (left, right) else {
        return Err(bind_err!(
            "{right} is not a row value of as many fields as {left}"
        ));
    };
    if l.len() != r.len() {
        return Err(bind_err!("unequal number of entries in row expressions"));
    }
    let pair = |a: &ast::Expr, op: BinaryOperator, b: &ast::Expr| ast::Expr::BinaryOp {
        left: Box::new(ast::Expr::Nested(Box::new(a.clone()))),
        op,
        right: Box::new(ast::Expr::Nested(Box::new(b.clone()))),
    };
    let join = |a: ast::Expr, op: BinaryOperator, b: ast::Expr| {
        ast::Expr::Nested(Box::new(ast::Expr::BinaryOp {
            left: Box::new(a),
            op,
            right: Box::new(b),
        }))
    };
    let fields: Vec<(&ast::Expr, &ast::Expr)> = l.iter().zip(r).collect();
    Ok(match op {
        BinaryOperator::Eq | BinaryOperator::NotEq => {
            let joiner = match op {
                BinaryOperator::Eq => BinaryOperator::And,
                _ => BinaryOperator::Or,
            };
            let parts = fields.iter().map(|(a, b)| pair(a, op.clone(), b));
            parts
                .reduce(|a, b| join(a, joiner.clone(), b))
                .expect("a row has fields")
        }
        BinaryOperator::Lt | BinaryOperator::LtEq | BinaryOperator::Gt | BinaryOperator::GtEq => {
            let strict = match op {
                BinaryOperator::Lt | BinaryOperator::LtEq => BinaryOperator::Lt,
                _ => BinaryOperator::Gt,
            };
            // From the last field back: the last compares with `op` itself.
            let (last_a, last_b) = fields.last().expect("a row has fields");
            let mut decided = pair(last_a, op.clone(), last_b);
            for (a, b) in fields.iter().rev().skip(1) {
                let tied = join(pair(a, BinaryOperator::Eq, b), BinaryOperator::And, decided);
                decided = join(pair(a, strict.clone(), b), BinaryOperator::Or, tied);
            }
            decided
        }
        other => return Err(unsupported!("the operator {other} on row values")),
    })
}

pub(crate) fn boolean(expr: Expr, what: &str) -> Result<Expr> {
    match expr.data_type() {
        DataType::Boolean => Ok(expr),
        DataType::Null => Ok(expr.cast(&DataType::Boolean)),
        // A quoted literal takes the type its place asks for, as in PostgreSQL: 'true'.
        DataType::Utf8 if is_string_literal(&expr) => Ok(expr.cast(&DataType::Boolean)),
        other => Err(bind_err!(
            "argument of {what} must be BOOLEAN, not {}",
            type_name(&other)
        )),
    }
}

/// The operand of `IS [NOT] TRUE | FALSE | UNKNOWN`: a boolean, or a number read as one
/// (non-zero is true), as DuckDB reads it.
pub(super) fn truth_value(value: Expr, what: &str) -> Result<Expr> {
    match value.data_type() {
        t if is_numeric(&t) => Ok(value.cast(&DataType::Boolean)),
        _ => boolean(value, what),
    }
}

/// `x IS [NOT] TRUE` and `x IS [NOT] FALSE`: never NULL; a NULL `x` is neither true nor false.
pub(super) fn truth_test(test: &ast::Expr, value: Expr) -> Result<Expr> {
    use ast::Expr as E;
    let value = truth_value(value, "IS TRUE")?;
    let asked = match test {
        E::IsTrue(_) | E::IsNotTrue(_) => value,
        _ => Expr::Not(Box::new(value)),
    };
    let holds = Expr::Function {
        func: ScalarFunction::Coalesce,
        args: vec![asked, Expr::Literal(ScalarValue::Boolean(false))],
        data_type: DataType::Boolean,
    };
    Ok(match test {
        E::IsNotTrue(_) | E::IsNotFalse(_) => Expr::Not(Box::new(holds)),
        _ => holds,
    })
}

/// A LIKE pattern with `ESCAPE e` in the matcher's form, where a backslash escapes
/// (`like_escape` in the executor); without ESCAPE, the pattern as written.
pub(super) fn escaped_pattern(
    pattern: Expr,
    escape: Option<&ast::Expr>,
    ctx: &mut Context<'_>,
) -> Result<Expr> {
    let Some(escape) = escape else {
        return Ok(pattern);
    };
    let escape = bind_expr(escape, ctx)?;
    for side in [&pattern, &escape] {
        let t = side.data_type();
        if t != DataType::Utf8 && t != DataType::Null {
            return Err(bind_err!(
                "LIKE ... ESCAPE needs VARCHAR operands, not {}",
                type_name(&t)
            ));
        }
    }
    Ok(Expr::Function {
        func: ScalarFunction::Text(crate::expr::TextOp::LikeEscape),
        args: vec![pattern.cast(&DataType::Utf8), escape.cast(&DataType::Utf8)],
        data_type: DataType::Utf8,
    })
}

pub(crate) fn like(
    expr: Expr,
    pattern: Expr,
    negated: bool,
    case_insensitive: bool,
) -> Result<Expr> {
    for side in [&expr, &pattern] {
        let t = side.data_type();
        if t != DataType::Utf8 && t != DataType::Null {
            return Err(bind_err!(
                "LIKE needs VARCHAR operands, not {}",
                type_name(&t)
            ));
        }
    }
    Ok(Expr::Like {
        expr: Box::new(expr.cast(&DataType::Utf8)),
        pattern: Box::new(pattern.cast(&DataType::Utf8)),
        negated,
        case_insensitive,
    })
}
