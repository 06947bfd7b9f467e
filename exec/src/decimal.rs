//! Decimal sums, differences and products computed without Arrow's per-value overflow checks
//! and precision validation, where the result cannot overflow its type: a value of precision
//! p is below 10^p, so a product of precisions p1 and p2 is below 10^(p1 + p2), and a sum of
//! two values of precision p below 2 * 10^p. Results of up to 18 digits are computed in 64
//! bits, wider ones in 128 (ADR 0028); a product of more than 38 digits is checked per value.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Datum, PrimitiveArray};
use arrow::datatypes::{ArrowPrimitiveType, DataType, Decimal64Type, Decimal128Type};
use pondra_catalog::{DECIMAL64_MAX_PRECISION, decimal_parts};
use pondra_planner::BinaryOp;

use crate::{ExecError, Result};

/// The largest unscaled value of 38 digits.
const MAX_DECIMAL128: i128 = 10_i128.pow(38) - 1;

/// `l op r` for two decimals: a product of precision p1 + p2 (at most 38) and scale s1 + s2,
/// or a sum (difference) of two decimals of one type, of one more digit. `None` when another
/// kernel must compute it.
pub fn unchecked(op: BinaryOp, l: &dyn Datum, r: &dyn Datum) -> Option<Result<ArrayRef>> {
    let (left, left_scalar) = l.get();
    let (right, right_scalar) = r.get();
    let (p1, s1) = decimal_parts(left.data_type())?;
    let (p2, s2) = decimal_parts(right.data_type())?;
    let (precision, scale, checked) = match op {
        BinaryOp::Multiply => (p1 + p2, s1 + s2, p1 + p2 > 38),
        BinaryOp::Plus | BinaryOp::Minus if left.data_type() == right.data_type() && p1 < 38 => {
            (p1 + 1, s1, false)
        }
        _ => return None,
    };
    let sides = Sides {
        left,
        left_scalar,
        right,
        right_scalar,
    };
    if checked {
        let product_of = |a: i128, b: i128| {
            a.checked_mul(b)
                .filter(|p| p.unsigned_abs() <= MAX_DECIMAL128 as u128)
        };
        let overflowed = std::cell::Cell::new(false);
        let product = sides.wide(|a, b| {
            product_of(a, b).unwrap_or_else(|| {
                overflowed.set(true);
                0
            })
        })?;
        if overflowed.get() {
            // Values under NULL slots are arbitrary: only a row with a value overflows.
            let overflows = sides.wide(|a, b| i128::from(product_of(a, b).is_none()))?;
            let on_a_value =
                overflows.map(|o| (0..o.len()).any(|row| o.is_valid(row) && o.value(row) == 1));
            match on_a_value {
                Ok(false) => {}
                Ok(true) => {
                    return Some(Err(ExecError::Execution(
                        "numeric overflow: decimal product out of range".into(),
                    )));
                }
                Err(e) => return Some(Err(e)),
            }
        }
        return Some(decimal(product, 38, scale));
    }
    // Wrapping operations: no value in range overflows, and a NULL slot's arbitrary value
    // must not panic.
    let result = match (precision <= DECIMAL64_MAX_PRECISION, op) {
        (true, BinaryOp::Multiply) => sides.narrow(i64::wrapping_mul),
        (true, BinaryOp::Plus) => sides.narrow(i64::wrapping_add),
        (true, _) => sides.narrow(i64::wrapping_sub),
        (false, BinaryOp::Multiply) => {
            return sides
                .wide(i128::wrapping_mul)
                .map(|r| decimal(r, precision, scale));
        }
        (false, BinaryOp::Plus) => {
            return sides
                .wide(i128::wrapping_add)
                .map(|r| decimal(r, precision, scale));
        }
        (false, _) => {
            return sides
                .wide(i128::wrapping_sub)
                .map(|r| decimal(r, precision, scale));
        }
    };
    result.map(|r| decimal(r, precision, scale))
}

/// A result of the precision and scale its operator gives.
fn decimal<A: arrow::datatypes::DecimalType>(
    result: Result<PrimitiveArray<A>>,
    precision: u8,
    scale: i8,
) -> Result<ArrayRef> {
    Ok(Arc::new(result?.with_precision_and_scale(precision, scale)?) as ArrayRef)
}

/// A decimal column `values` of type `from` as type `to`, when `to` has the same scale and at
/// least as many digits (`keeps_values`): the unscaled values stay as they are, so no value is
/// checked, and only a 64-bit column bound for 128 bits is copied.
pub fn cast_keeping_values(values: &ArrayRef, from: &DataType, to: &DataType) -> Result<ArrayRef> {
    let (precision, scale) = decimal_parts(to).expect("a decimal");
    match (from, to) {
        (DataType::Decimal64(..), DataType::Decimal64(..)) => {
            let same = values.as_primitive::<Decimal64Type>().clone();
            decimal(Ok(same), precision, scale)
        }
        (DataType::Decimal64(..), _) => {
            let wide = values
                .as_primitive::<Decimal64Type>()
                .unary::<_, Decimal128Type>(i128::from);
            decimal(Ok(wide), precision, scale)
        }
        (DataType::Decimal128(..), DataType::Decimal128(..)) => {
            let same = values.as_primitive::<Decimal128Type>().clone();
            decimal(Ok(same), precision, scale)
        }
        // Stored 128 bits wide with at most 18 digits (older files): each value fits.
        (DataType::Decimal128(..), _) => {
            let narrow = values
                .as_primitive::<Decimal128Type>()
                .unary::<_, Decimal64Type>(|v| v as i64);
            decimal(Ok(narrow), precision, scale)
        }
        _ => unreachable!("keeps_values admits decimals alone"),
    }
}

/// Whether `cast_keeping_values` casts `from` to `to`: decimals of one scale, to at least as
/// many digits.
pub fn keeps_values(from: &DataType, to: &DataType) -> bool {
    match (decimal_parts(from), decimal_parts(to)) {
        (Some((p1, s1)), Some((p2, s2))) => s1 == s2 && p2 >= p1,
        _ => false,
    }
}

/// The two operands of a decimal operator, either of them a constant.
struct Sides<'a> {
    left: &'a dyn Array,
    left_scalar: bool,
    right: &'a dyn Array,
    right_scalar: bool,
}

impl Sides<'_> {
    /// `f` over two operands of 64 bits.
    fn narrow(&self, f: impl Fn(i64, i64) -> i64) -> Option<Result<PrimitiveArray<Decimal64Type>>> {
        let narrow = |a: &dyn Array| matches!(a.data_type(), DataType::Decimal64(..));
        if !narrow(self.left) || !narrow(self.right) {
            return None;
        }
        self.apply::<Decimal64Type, Decimal64Type, Decimal64Type>(f)
    }

    /// `f` over the operands in 128 bits, whichever width each has.
    fn wide(
        &self,
        f: impl Fn(i128, i128) -> i128,
    ) -> Option<Result<PrimitiveArray<Decimal128Type>>> {
        use DataType::{Decimal64, Decimal128};
        type D64 = Decimal64Type;
        type D128 = Decimal128Type;
        match (self.left.data_type(), self.right.data_type()) {
            (Decimal64(..), Decimal64(..)) => {
                self.apply::<D64, D64, D128>(|a, b| f(a.into(), b.into()))
            }
            (Decimal64(..), Decimal128(..)) => self.apply::<D64, D128, D128>(|a, b| f(a.into(), b)),
            (Decimal128(..), Decimal64(..)) => self.apply::<D128, D64, D128>(|a, b| f(a, b.into())),
            _ => self.apply::<D128, D128, D128>(f),
        }
    }

    fn apply<A, B, O>(
        &self,
        f: impl Fn(A::Native, B::Native) -> O::Native,
    ) -> Option<Result<PrimitiveArray<O>>>
    where
        A: ArrowPrimitiveType,
        B: ArrowPrimitiveType,
        O: ArrowPrimitiveType,
    {
        let a = self.left.as_primitive::<A>();
        let b = self.right.as_primitive::<B>();
        Some(match (self.left_scalar, self.right_scalar) {
            (false, false) => arrow::compute::binary(a, b, f).map_err(Into::into),
            (false, true) if b.is_valid(0) => {
                let b = b.value(0);
                Ok(a.unary(|a| f(a, b)))
            }
            (true, false) if a.is_valid(0) => {
                let a = a.value(0);
                Ok(b.unary(|b| f(a, b)))
            }
            // A NULL constant, or two constants: rare enough for the general kernel.
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Decimal64Array, Decimal128Array, Scalar};

    fn narrow(values: &[Option<i64>], p: u8, s: i8) -> Decimal64Array {
        Decimal64Array::from(values.to_vec())
            .with_precision_and_scale(p, s)
            .unwrap()
    }

    fn wide(values: &[Option<i128>], p: u8, s: i8) -> Decimal128Array {
        Decimal128Array::from(values.to_vec())
            .with_precision_and_scale(p, s)
            .unwrap()
    }

    #[test]
    fn products_and_sums_keep_exact_values_and_nulls() {
        let price = narrow(&[Some(1050), None, Some(-99_999)], 15, 2);
        let discount = narrow(&[Some(5), Some(10), Some(100)], 15, 2);
        let product = unchecked(BinaryOp::Multiply, &price, &discount)
            .unwrap()
            .unwrap();
        assert_eq!(product.data_type(), &DataType::Decimal128(30, 4));
        let product = product.as_primitive::<Decimal128Type>();
        assert_eq!(product.value(0), 5250);
        assert!(product.is_null(1));
        assert_eq!(product.value(2), -9_999_900);

        let one = Scalar::new(narrow(&[Some(100)], 15, 2));
        let rest = unchecked(BinaryOp::Minus, &one, &discount)
            .unwrap()
            .unwrap();
        assert_eq!(rest.data_type(), &DataType::Decimal64(16, 2));
        let rest = rest.as_primitive::<Decimal64Type>();
        assert_eq!(rest.values(), &[95, 90, 0]);

        let small = narrow(&[Some(12)], 4, 1);
        let square = unchecked(BinaryOp::Multiply, &small, &small)
            .unwrap()
            .unwrap();
        assert_eq!(square.data_type(), &DataType::Decimal64(8, 2));
        assert_eq!(square.as_primitive::<Decimal64Type>().value(0), 144);
    }

    #[test]
    fn mixed_widths_meet_in_128_bits() {
        let price = narrow(&[Some(-250)], 15, 2);
        let big = wide(&[Some(10_i128.pow(20))], 22, 0);
        let product = unchecked(BinaryOp::Multiply, &price, &big)
            .unwrap()
            .unwrap();
        assert_eq!(product.data_type(), &DataType::Decimal128(37, 2));
        assert_eq!(
            product.as_primitive::<Decimal128Type>().value(0),
            -250 * 10_i128.pow(20)
        );
    }

    #[test]
    fn products_beyond_38_digits_are_checked_per_value() {
        let a = wide(&[Some(10_i128.pow(19))], 20, 0);
        let fits = wide(&[Some(10_i128.pow(18))], 20, 0);
        let product = unchecked(BinaryOp::Multiply, &a, &fits).unwrap().unwrap();
        assert_eq!(product.data_type(), &DataType::Decimal128(38, 0));
        assert_eq!(
            product.as_primitive::<Decimal128Type>().value(0),
            10_i128.pow(37)
        );
        let overflow = unchecked(BinaryOp::Multiply, &a, &a).unwrap();
        assert!(overflow.is_err(), "10^38 has 39 digits");

        // A NULL slot's value does not overflow anything.
        let values = Decimal128Array::new(
            vec![10_i128.pow(19), 3].into(),
            Some(vec![false, true].into()),
        )
        .with_precision_and_scale(20, 0)
        .unwrap();
        let product = unchecked(BinaryOp::Multiply, &values, &values)
            .unwrap()
            .unwrap();
        assert!(product.is_null(0));
        assert_eq!(product.as_primitive::<Decimal128Type>().value(1), 9);
    }

    #[test]
    fn sums_of_different_types_are_left_to_other_kernels() {
        let a = narrow(&[Some(1)], 10, 2);
        let b = narrow(&[Some(1)], 12, 2);
        assert!(unchecked(BinaryOp::Plus, &a, &b).is_none());
    }

    #[test]
    fn casts_keep_unscaled_values_across_widths() {
        let stored: ArrayRef = Arc::new(wide(&[Some(-12_345), None], 15, 2));
        let (from, to) = (DataType::Decimal128(15, 2), DataType::Decimal64(15, 2));
        assert!(keeps_values(&from, &to));
        let narrowed = cast_keeping_values(&stored, &from, &to).unwrap();
        assert_eq!(narrowed.data_type(), &to);
        assert_eq!(narrowed.as_primitive::<Decimal64Type>().value(0), -12_345);
        assert!(narrowed.is_null(1));
        let widened = cast_keeping_values(&narrowed, &to, &DataType::Decimal128(20, 2)).unwrap();
        assert_eq!(widened.as_primitive::<Decimal128Type>().value(0), -12_345);
        assert!(!keeps_values(&to, &DataType::Decimal64(15, 3)));
        assert!(!keeps_values(&to, &DataType::Decimal64(14, 2)));
    }
}
