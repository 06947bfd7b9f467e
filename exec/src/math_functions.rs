//! The math library over DOUBLEs (`MathOp`). Arguments outside a function's domain are an
//! error, as in PostgreSQL and DuckDB, rather than a NaN.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Float64Array};
use arrow::datatypes::{DataType, Decimal128Type, Float64Type, Int64Type};
use pondra_planner::MathOp;

use crate::{ExecError, Result};

/// The values of `op` over its DOUBLE arguments (`pi()` is bound as a constant).
pub fn math_function(op: MathOp, args: &[ArrayRef]) -> Result<ArrayRef> {
    if op.is_test() {
        return Ok(Arc::new(test(op, args[0].as_primitive::<Float64Type>())));
    }
    let out: Float64Array = match op.arity() {
        1 => {
            let x = args[0].as_primitive::<Float64Type>();
            let mut out = Vec::with_capacity(x.len());
            for v in x.iter() {
                out.push(v.map(|v| unary(op, v)).transpose()?);
            }
            Float64Array::from(out)
        }
        _ => {
            let (a, b) = (
                args[0].as_primitive::<Float64Type>(),
                args[1].as_primitive::<Float64Type>(),
            );
            let mut out = Vec::with_capacity(a.len());
            for (a, b) in a.iter().zip(b.iter()) {
                out.push(match (a, b) {
                    (Some(a), Some(b)) => Some(binary(op, a, b)?),
                    _ => None,
                });
            }
            Float64Array::from(out)
        }
    };
    Ok(Arc::new(out))
}

/// `trunc(x, n)` (toward zero) or `roundbankers(x, n)` (`half_even`: to the nearest, ties to
/// the even digit) over DOUBLEs, integers and decimals, each in its own type; decimals and
/// integers exactly.
pub fn cut_digits(values: &ArrayRef, digits: &ArrayRef, half_even: bool) -> Result<ArrayRef> {
    let digits_array = digits;
    let digits = digits.as_primitive::<Int64Type>();
    // How many of the value's last digits to cut, given the value's scale.
    let cut = |row: usize, scale: i64| -> Option<u32> {
        let n = digits.is_valid(row).then(|| digits.value(row))?;
        Some(scale.saturating_sub(n).clamp(0, 38) as u32)
    };
    let whole = |v: i128, cut: u32| match 10i128.checked_pow(cut) {
        Some(unit) => {
            let (mut quotient, rest) = (v / unit, (v % unit).abs());
            let away = rest * 2 > unit || (rest * 2 == unit && quotient % 2 != 0);
            if half_even && away {
                quotient += v.signum();
            }
            quotient.checked_mul(unit).unwrap_or(v)
        }
        None => 0,
    };
    Ok(match values.data_type() {
        DataType::Float64 => {
            let x = values.as_primitive::<Float64Type>();
            let out: Float64Array = (0..x.len())
                .map(|row| {
                    let n = digits.is_valid(row).then(|| digits.value(row))?;
                    let unit = 10f64.powi(n.clamp(-308, 308) as i32);
                    let scaled = x.is_valid(row).then(|| x.value(row) * unit)?;
                    let cut = match half_even {
                        true => scaled.round_ties_even(),
                        false => scaled.trunc(),
                    };
                    Some(cut / unit)
                })
                .collect();
            Arc::new(out)
        }
        DataType::Int32 | DataType::Int64 => {
            let wide = arrow::compute::cast(values, &DataType::Int64)?;
            let x = wide.as_primitive::<Int64Type>();
            let out: arrow::array::Int64Array = (0..x.len())
                .map(|row| {
                    Some(whole(x.is_valid(row).then(|| x.value(row))? as i128, cut(row, 0)?) as i64)
                })
                .collect();
            arrow::compute::cast(&(Arc::new(out) as ArrayRef), values.data_type())?
        }
        DataType::Decimal128(precision, scale) => {
            let x = values.as_primitive::<Decimal128Type>();
            let out: arrow::array::Decimal128Array = (0..x.len())
                .map(|row| {
                    Some(whole(
                        x.is_valid(row).then(|| x.value(row))?,
                        cut(row, *scale as i64)?,
                    ))
                })
                .collect();
            Arc::new(out.with_precision_and_scale(*precision, *scale)?)
        }
        DataType::Decimal64(precision, scale) => {
            let wide = arrow::compute::cast(values, &DataType::Decimal128(*precision, *scale))?;
            let cut = cut_digits(&wide, digits_array, half_even)?;
            arrow::compute::cast(&cut, values.data_type())?
        }
        other => {
            return Err(ExecError::Execution(format!("trunc over {other}")));
        }
    })
}

fn test(op: MathOp, x: &Float64Array) -> BooleanArray {
    x.iter()
        .map(|v| {
            v.map(|v| match op {
                MathOp::IsNan => v.is_nan(),
                MathOp::IsInf => v.is_infinite(),
                MathOp::IsFinite => v.is_finite(),
                _ => v.is_sign_negative(),
            })
        })
        .collect()
}

fn domain(ok: bool, message: &str) -> Result<()> {
    match ok {
        true => Ok(()),
        false => Err(ExecError::Execution(message.to_string())),
    }
}

fn logarithm(v: f64) -> Result<()> {
    domain(v != 0.0, "cannot take logarithm of zero")?;
    domain(
        v > 0.0 || v.is_nan(),
        "cannot take logarithm of a negative number",
    )
}

fn unary(op: MathOp, v: f64) -> Result<f64> {
    Ok(match op {
        MathOp::Log10 => {
            logarithm(v)?;
            v.log10()
        }
        MathOp::Log2 => {
            logarithm(v)?;
            v.log2()
        }
        MathOp::Cbrt => v.cbrt(),
        MathOp::Sin => v.sin(),
        MathOp::Cos => v.cos(),
        MathOp::Tan => v.tan(),
        MathOp::Cot => 1.0 / v.tan(),
        MathOp::Asin => {
            domain(
                (-1.0..=1.0).contains(&v),
                "ASIN is undefined outside [-1,1]",
            )?;
            v.asin()
        }
        MathOp::Acos => {
            domain(
                (-1.0..=1.0).contains(&v),
                "ACOS is undefined outside [-1,1]",
            )?;
            v.acos()
        }
        MathOp::Atan => v.atan(),
        MathOp::Sinh => v.sinh(),
        MathOp::Cosh => v.cosh(),
        MathOp::Tanh => v.tanh(),
        MathOp::Degrees => v.to_degrees(),
        MathOp::Radians => v.to_radians(),
        MathOp::Gamma => {
            domain(v != 0.0, "cannot take gamma of zero")?;
            gamma(v)
        }
        MathOp::Lgamma => {
            domain(v != 0.0, "cannot take log gamma of zero")?;
            gamma(v).abs().ln()
        }
        MathOp::Even => even(v),
        other => unreachable!("{other:?} is not a function of one DOUBLE"),
    })
}

fn binary(op: MathOp, a: f64, b: f64) -> Result<f64> {
    Ok(match op {
        MathOp::LogBase => {
            logarithm(a)?;
            logarithm(b)?;
            domain(a != 1.0, "cannot take logarithm to base one")?;
            b.ln() / a.ln()
        }
        MathOp::Atan2 => a.atan2(b),
        MathOp::NextAfter => next_after(a, b),
        MathOp::FDiv | MathOp::FMod => {
            domain(b != 0.0, "division by zero")?;
            match op {
                MathOp::FDiv => (a / b).floor(),
                _ => a % b,
            }
        }
        other => unreachable!("{other:?} is not a function of two DOUBLEs"),
    })
}

/// Rounded away from zero to an even whole number: 1.1 → 2, 2 → 2, -0.5 → -2.
fn even(v: f64) -> f64 {
    let away = if v < 0.0 { v.floor() } else { v.ceil() };
    match away % 2.0 == 0.0 {
        true => away,
        false => away + v.signum(),
    }
}

/// The next DOUBLE after `x` toward `toward`.
fn next_after(x: f64, toward: f64) -> f64 {
    if x.is_nan() || toward.is_nan() {
        return f64::NAN;
    }
    if x == toward {
        return toward;
    }
    if x == 0.0 {
        let smallest = f64::from_bits(1);
        return if toward > 0.0 { smallest } else { -smallest };
    }
    let bits = x.to_bits();
    let away_from_zero = (toward > x) == (x > 0.0);
    f64::from_bits(if away_from_zero { bits + 1 } else { bits - 1 })
}

/// The gamma function, by the Lanczos approximation (g = 7, nine terms), reflected for
/// arguments below one half; exact to about 15 digits, and whole for whole arguments up to 23.
fn gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const COEFFICIENTS: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return pi / ((pi * x).sin() * gamma(1.0 - x));
    }
    if x == x.floor() && x <= 24.0 {
        return (1..x as u64).map(|k| k as f64).product();
    }
    let x = x - 1.0;
    let t = x + G + 0.5;
    let sum = COEFFICIENTS[1..]
        .iter()
        .enumerate()
        .fold(COEFFICIENTS[0], |sum, (i, c)| {
            sum + c / (x + i as f64 + 1.0)
        });
    (2.0 * std::f64::consts::PI).sqrt() * t.powf(x + 0.5) * (-t).exp() * sum
}

/// `rows` DOUBLEs drawn uniformly from [0, 1): SplitMix64 from a seed the process's hasher
/// keys make fresh for each batch, which is plenty for sampling and shuffling, and no more.
pub fn random(rows: usize) -> ArrayRef {
    use std::hash::{BuildHasher, Hasher};
    let mut state = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let draws: Float64Array = (0..rows)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            // The top 53 bits, as a fraction of 2^53.
            Some((z >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect();
    Arc::new(draws)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_rounds_away_from_zero_to_even() {
        assert_eq!(even(1.1), 2.0);
        assert_eq!(even(2.0), 2.0);
        assert_eq!(even(2.5), 4.0);
        assert_eq!(even(-0.5), -2.0);
        assert_eq!(even(-3.0), -4.0);
    }

    #[test]
    fn gamma_matches_factorials_and_halves() {
        assert_eq!(gamma(5.0), 24.0);
        assert!((gamma(0.5) - std::f64::consts::PI.sqrt()).abs() < 1e-12);
        assert!((gamma(4.5) - 11.631_728_396_567_45).abs() < 1e-9);
        assert!((gamma(-0.5) + 2.0 * std::f64::consts::PI.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn next_after_steps_one_double() {
        assert!(next_after(1.0, 2.0) > 1.0);
        assert_eq!(next_after(1.0, 2.0), 1.0 + f64::EPSILON);
        assert!(next_after(1.0, 0.0) < 1.0);
        assert!(next_after(-1.0, 0.0) > -1.0);
        assert_eq!(next_after(0.0, -1.0), -f64::from_bits(1));
    }
}
