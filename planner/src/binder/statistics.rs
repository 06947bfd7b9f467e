//! The two-variable statistical aggregates of PostgreSQL and DuckDB: `covar_pop(y, x)`,
//! `covar_samp`, `corr`, and `regr_count`, `regr_avgx`, `regr_avgy`, `regr_sxx`, `regr_syy`,
//! `regr_sxy`, `regr_slope`, `regr_intercept`, `regr_r2`, and DuckDB's `weighted_avg(y, x)`. Each is bound as sums over the rows
//! where both arguments are non-NULL (their count, the sums of x, y, x², y² and xy, as
//! DOUBLEs) and an expression over those sums, NULL where PostgreSQL's is (no rows, a zero
//! variance).

use arrow::datatypes::DataType;
use sqlparser::ast::{self, BinaryOperator};

use super::Binder;
use super::expr::*;
use crate::expr::{AggregateCall, AggregateFunction, Expr};
use crate::scalar::ScalarValue;
use crate::types::is_numeric;
use crate::{Result, bind_err};

/// Whether `name` is one of these aggregates.
pub fn is_statistic(name: &str) -> bool {
    matches!(
        name,
        "covar_pop"
            | "covar_samp"
            | "corr"
            | "regr_count"
            | "regr_avgx"
            | "regr_avgy"
            | "regr_sxx"
            | "regr_syy"
            | "regr_sxy"
            | "regr_slope"
            | "regr_intercept"
            | "regr_r2"
            | "weighted_avg"
            | "wavg"
    )
}

fn op(left: Expr, op: BinaryOperator, right: Expr) -> Result<Expr> {
    binary(left, &op, right)
}

/// `a / b`, NULL where `b` is 0 (or NULL).
pub(super) fn divide(a: Expr, b: Expr) -> Result<Expr> {
    let zero = op(
        b.clone(),
        BinaryOperator::Eq,
        Expr::Literal(ScalarValue::Float64(0.0)),
    )?;
    Ok(Expr::Case {
        branches: vec![(Expr::Not(Box::new(zero)), op(a, BinaryOperator::Divide, b)?)],
        otherwise: None,
        data_type: DataType::Float64,
    })
}

pub(super) fn bind_statistic(
    function: &ast::Function,
    name: &str,
    agg: &mut Aggregation,
    binder: Option<&Binder<'_>>,
) -> Result<Expr> {
    // A pair counts only where both values are there: FILTER's other rows as NULLs.
    let unfiltered = super::ordered_set::filter_as_nulls(function, &[0, 1]);
    let function = &unfiltered;
    let [y, x] = function_args(function)[..] else {
        return Err(bind_err!("{name} takes two arguments, y and x"));
    };
    if contains_aggregate(y) || contains_aggregate(x) {
        return Err(bind_err!("aggregate function calls cannot be nested"));
    }
    let mut context = argument_context(&agg.input, binder);
    let (y, x) = (
        bind_generic(y, &mut context)?,
        bind_generic(x, &mut context)?,
    );
    for value in [&y, &x] {
        let t = value.data_type();
        if !is_numeric(&t) && t != DataType::Null {
            return Err(bind_err!("{name} needs numbers, not {}", type_name(&t)));
        }
    }
    // Each value only where both are there.
    let both = op(
        Expr::IsNotNull(Box::new(y.clone())),
        BinaryOperator::And,
        Expr::IsNotNull(Box::new(x.clone())),
    )?;
    let paired = |value: Expr| Expr::Case {
        branches: vec![(both.clone(), value.cast(&DataType::Float64))],
        otherwise: None,
        data_type: DataType::Float64,
    };
    let (y, x) = (paired(y), paired(x));
    let mut sum =
        |value: Expr| agg.column_of(AggregateCall::new(AggregateFunction::Sum, Some(value)));
    let sx = sum(x.clone());
    let sy = sum(y.clone());
    let sxx = sum(op(x.clone(), BinaryOperator::Multiply, x.clone())?);
    let syy = sum(op(y.clone(), BinaryOperator::Multiply, y.clone())?);
    let sxy = sum(op(x.clone(), BinaryOperator::Multiply, y.clone())?);
    let count = agg.column_of(AggregateCall::new(AggregateFunction::Count, Some(x)));
    if name == "regr_count" {
        return Ok(count);
    }
    let n = count.cast(&DataType::Float64);
    // Sums of squares about the means: Σx² - (Σx)²/n, and the like.
    let centered = |squares: Expr, a: Expr, b: Expr| -> Result<Expr> {
        let product = op(a, BinaryOperator::Multiply, b)?;
        op(squares, BinaryOperator::Minus, divide(product, n.clone())?)
    };
    let cxx = centered(sxx, sx.clone(), sx.clone())?;
    let cyy = centered(syy, sy.clone(), sy.clone())?;
    let cxy = centered(sxy.clone(), sx.clone(), sy.clone())?;
    let mean = |s: Expr| divide(s, n.clone());
    let one = Expr::Literal(ScalarValue::Float64(1.0));
    match name {
        "covar_pop" => divide(cxy, n.clone()),
        "covar_samp" => divide(cxy, op(n.clone(), BinaryOperator::Minus, one)?),
        // DuckDB's weighted mean of y by the weights x: NaN when they add up to zero.
        "weighted_avg" | "wavg" => {
            let no_weight = op(
                sx.clone(),
                BinaryOperator::Eq,
                Expr::Literal(ScalarValue::Float64(0.0)),
            )?;
            Ok(Expr::Case {
                branches: vec![(no_weight, Expr::Literal(ScalarValue::Float64(f64::NAN)))],
                otherwise: Some(Box::new(divide(sxy, sx)?)),
                data_type: DataType::Float64,
            })
        }
        "regr_avgx" => mean(sx),
        "regr_avgy" => mean(sy),
        "regr_sxx" => no_rows_null(cxx, &n),
        "regr_syy" => no_rows_null(cyy, &n),
        "regr_sxy" => no_rows_null(cxy, &n),
        "regr_slope" => divide(cxy, cxx),
        "regr_intercept" => {
            let slope = divide(cxy, cxx)?;
            let shift = op(slope, BinaryOperator::Multiply, mean(sx)?)?;
            op(mean(sy)?, BinaryOperator::Minus, shift)
        }
        "corr" => {
            let spread = op(cxx, BinaryOperator::Multiply, cyy)?;
            let root = Expr::Function {
                func: crate::expr::ScalarFunction::Sqrt,
                args: vec![spread],
                data_type: DataType::Float64,
            };
            divide(cxy, root)
        }
        "regr_r2" => {
            // 1 when y does not vary (and x does), as in PostgreSQL.
            let cxy_squared = op(cxy.clone(), BinaryOperator::Multiply, cxy)?;
            let spread = op(cxx.clone(), BinaryOperator::Multiply, cyy.clone())?;
            let flat_y = op(
                cyy,
                BinaryOperator::Eq,
                Expr::Literal(ScalarValue::Float64(0.0)),
            )?;
            let varies_x = op(
                cxx,
                BinaryOperator::NotEq,
                Expr::Literal(ScalarValue::Float64(0.0)),
            )?;
            let when_flat = op(flat_y, BinaryOperator::And, varies_x)?;
            Ok(Expr::Case {
                branches: vec![(when_flat, Expr::Literal(ScalarValue::Float64(1.0)))],
                otherwise: Some(Box::new(divide(cxy_squared, spread)?)),
                data_type: DataType::Float64,
            })
        }
        _ => unreachable!("is_statistic names these"),
    }
}

/// `value`, NULL over no rows.
fn no_rows_null(value: Expr, n: &Expr) -> Result<Expr> {
    let some = op(
        n.clone(),
        BinaryOperator::Gt,
        Expr::Literal(ScalarValue::Float64(0.0)),
    )?;
    Ok(Expr::Case {
        branches: vec![(some, value)],
        otherwise: None,
        data_type: DataType::Float64,
    })
}
