//! The math library both anchors share: logarithms, trigonometry, gamma, and DuckDB's
//! `even`, `nextafter` and the DOUBLE tests (`isnan`, `isinf`, `isfinite`, `signbit`). Each
//! takes and gives DOUBLEs (the tests give BOOLEANs).

use arrow::datatypes::DataType;

use super::functions::numbers;
use crate::expr::{Expr, MathOp, ScalarFunction};
use crate::scalar::ScalarValue;
use crate::{Result, bind_err};

/// The bound call, or `None` when `name` is none of these functions.
pub(super) fn math_function(name: &str, args: &[Expr]) -> Option<Result<Expr>> {
    let op = match name {
        // `log(x)` is the logarithm to base 10 in both anchors; `log(b, x)` to base b.
        "log" if args.len() == 2 => MathOp::LogBase,
        "log" | "log10" => MathOp::Log10,
        "log2" => MathOp::Log2,
        "cbrt" => MathOp::Cbrt,
        "sin" => MathOp::Sin,
        "cos" => MathOp::Cos,
        "tan" => MathOp::Tan,
        "cot" => MathOp::Cot,
        "asin" => MathOp::Asin,
        "acos" => MathOp::Acos,
        "atan" => MathOp::Atan,
        "atan2" => MathOp::Atan2,
        "sinh" => MathOp::Sinh,
        "cosh" => MathOp::Cosh,
        "tanh" => MathOp::Tanh,
        "degrees" => MathOp::Degrees,
        "radians" => MathOp::Radians,
        "gamma" => MathOp::Gamma,
        "lgamma" => MathOp::Lgamma,
        "even" => MathOp::Even,
        "nextafter" => MathOp::NextAfter,
        "pi" => MathOp::Pi,
        "fdiv" => MathOp::FDiv,
        "fmod" => MathOp::FMod,
        "isnan" => MathOp::IsNan,
        "isinf" => MathOp::IsInf,
        "isfinite" => MathOp::IsFinite,
        "signbit" => MathOp::SignBit,
        _ => return None,
    };
    Some(bind(name, op, args))
}

/// `random()`: drawn for each row when the query runs, so never a constant.
pub(super) fn random(args: &[Expr]) -> Result<Expr> {
    if !args.is_empty() {
        return Err(bind_err!("random takes no arguments"));
    }
    Ok(Expr::Function {
        func: ScalarFunction::Random,
        args: Vec::new(),
        data_type: DataType::Float64,
    })
}

fn bind(name: &str, op: MathOp, args: &[Expr]) -> Result<Expr> {
    let arity = op.arity();
    if args.len() != arity {
        return Err(bind_err!(
            "{name} takes {arity} argument{}",
            if arity == 1 { "" } else { "s" }
        ));
    }
    numbers(name, args)?;
    if op == MathOp::Pi {
        return Ok(Expr::Literal(ScalarValue::Float64(std::f64::consts::PI)));
    }
    let data_type = match op.is_test() {
        true => DataType::Boolean,
        false => DataType::Float64,
    };
    Ok(Expr::Function {
        func: ScalarFunction::Math(op),
        args: args
            .iter()
            .map(|a| a.clone().cast(&DataType::Float64))
            .collect(),
        data_type,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_takes_an_optional_base() {
        let x = Expr::Literal(ScalarValue::Float64(8.0));
        let one = math_function("log", std::slice::from_ref(&x)).expect("known");
        assert!(matches!(
            one,
            Ok(Expr::Function {
                func: ScalarFunction::Math(MathOp::Log10),
                ..
            })
        ));
        let two = math_function("log", &[x.clone(), x]).expect("known");
        assert!(matches!(
            two,
            Ok(Expr::Function {
                func: ScalarFunction::Math(MathOp::LogBase),
                ..
            })
        ));
        assert!(math_function("pi", &[]).expect("known").is_ok());
        assert!(math_function("sin", &[]).expect("known").is_err());
        assert!(math_function("no_such_function", &[]).is_none());
    }
}
