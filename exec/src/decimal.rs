//! Decimal sums, differences and products whose result cannot overflow its type, computed
//! without Arrow's per-value overflow checks and precision validation: a value of precision
//! p is below 10^p, so a product of precisions p1 and p2 is below 10^(p1 + p2), and a sum of
//! two values of precision p below 2 * 10^p, which fit i128 up to 38 digits.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Datum, PrimitiveArray};
use arrow::datatypes::{DataType, Decimal128Type};
use pondra_planner::BinaryOp;

use crate::Result;

/// `l op r` for two decimals, when it is sure not to overflow: a product of precision
/// p1 + p2 and scale s1 + s2, or a sum (difference) of two decimals of one type, of one more
/// digit. `None` when another kernel must compute it.
pub fn unchecked(op: BinaryOp, l: &dyn Datum, r: &dyn Datum) -> Option<Result<ArrayRef>> {
    let (left, left_scalar) = l.get();
    let (right, right_scalar) = r.get();
    let (DataType::Decimal128(p1, s1), DataType::Decimal128(p2, s2)) =
        (left.data_type(), right.data_type())
    else {
        return None;
    };
    let (precision, scale) = match op {
        BinaryOp::Multiply if p1 + p2 <= 38 => (p1 + p2, s1 + s2),
        BinaryOp::Plus | BinaryOp::Minus if p1 == p2 && s1 == s2 && *p1 < 38 => (p1 + 1, *s1),
        _ => return None,
    };
    let f: fn(i128, i128) -> i128 = match op {
        BinaryOp::Multiply => |a, b| a * b,
        BinaryOp::Plus => |a, b| a + b,
        _ => |a, b| a - b,
    };
    let a = left.as_primitive::<Decimal128Type>();
    let b = right.as_primitive::<Decimal128Type>();
    let result: PrimitiveArray<Decimal128Type> = match (left_scalar, right_scalar) {
        (false, false) => match arrow::compute::binary(a, b, f) {
            Ok(result) => result,
            Err(e) => return Some(Err(e.into())),
        },
        (false, true) if b.is_valid(0) => {
            let b = b.value(0);
            a.unary(|a| f(a, b))
        }
        (true, false) if a.is_valid(0) => {
            let a = a.value(0);
            b.unary(|b| f(a, b))
        }
        // A NULL constant, or two constants: rare enough for the general kernel.
        _ => return None,
    };
    Some(
        result
            .with_precision_and_scale(precision, scale)
            .map(|r| Arc::new(r) as ArrayRef)
            .map_err(Into::into),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Decimal128Array, Scalar};

    fn decimals(values: &[Option<i128>], p: u8, s: i8) -> Decimal128Array {
        Decimal128Array::from(values.to_vec())
            .with_precision_and_scale(p, s)
            .unwrap()
    }

    #[test]
    fn products_and_sums_keep_exact_values_and_nulls() {
        let price = decimals(&[Some(1050), None, Some(-99_999)], 15, 2);
        let discount = decimals(&[Some(5), Some(10), Some(100)], 15, 2);
        let product = unchecked(BinaryOp::Multiply, &price, &discount)
            .unwrap()
            .unwrap();
        assert_eq!(product.data_type(), &DataType::Decimal128(30, 4));
        let product = product.as_primitive::<Decimal128Type>();
        assert_eq!(product.value(0), 5250);
        assert!(product.is_null(1));
        assert_eq!(product.value(2), -9_999_900);

        let one = Scalar::new(decimals(&[Some(100)], 15, 2));
        let rest = unchecked(BinaryOp::Minus, &one, &discount)
            .unwrap()
            .unwrap();
        assert_eq!(rest.data_type(), &DataType::Decimal128(16, 2));
        let rest = rest.as_primitive::<Decimal128Type>();
        assert_eq!(rest.values(), &[95, 90, 0]);
    }

    #[test]
    fn products_that_could_overflow_are_left_to_checked_kernels() {
        let wide = decimals(&[Some(1)], 20, 0);
        assert!(unchecked(BinaryOp::Multiply, &wide, &wide).is_none());
        let a = decimals(&[Some(1)], 10, 2);
        let b = decimals(&[Some(1)], 12, 2);
        assert!(unchecked(BinaryOp::Plus, &a, &b).is_none());
    }
}
