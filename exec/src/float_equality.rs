//! SQL compares floats by value: `-0.0 = 0.0`, and every NaN equals every other NaN and sorts
//! above every number (PostgreSQL, DuckDB). Arrow's comparison kernels and its row format go
//! by IEEE 754's total order instead, in which `-0.0 < 0.0` and a NaN's sign and payload place
//! it (the NaN `0.0 / 0.0` makes on x86 is negative, below every number). So float columns are
//! made canonical (zeros positive, NaNs the one positive quiet NaN) before they are compared,
//! hashed as keys or looked up; the values shown and stored keep their sign.

use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, PrimitiveArray};
use arrow::datatypes::{ArrowPrimitiveType, DataType, Float32Type, Float64Type};

/// `array` with its zeros and NaNs canonical, or itself when it is not a float column or has
/// none to change.
pub(crate) fn canonical_floats(array: &ArrayRef) -> ArrayRef {
    match array.data_type() {
        DataType::Float64 => canonical::<Float64Type>(array, |x| {
            let odd = (x == 0.0 || x.is_nan()) && x.is_sign_negative();
            odd.then(|| if x.is_nan() { f64::NAN } else { 0.0 })
        }),
        DataType::Float32 => canonical::<Float32Type>(array, |x| {
            let odd = (x == 0.0 || x.is_nan()) && x.is_sign_negative();
            odd.then(|| if x.is_nan() { f32::NAN } else { 0.0 })
        }),
        _ => array.clone(),
    }
}

/// `array` with each value `replacement` gives a replacement for replaced.
fn canonical<T: ArrowPrimitiveType>(
    array: &ArrayRef,
    replacement: impl Fn(T::Native) -> Option<T::Native>,
) -> ArrayRef {
    let values: &PrimitiveArray<T> = array.as_primitive();
    if !values.values().iter().any(|x| replacement(*x).is_some()) {
        return array.clone();
    }
    let fixed: PrimitiveArray<T> = values.unary(|x| replacement(x).unwrap_or(x));
    Arc::new(fixed.with_data_type(array.data_type().clone()))
}

#[cfg(test)]
mod tests {
    use arrow::array::{Array, Float64Array};

    use super::*;

    #[test]
    fn zeros_and_nans_become_canonical() {
        let column: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(-0.0),
            Some(0.0),
            Some(-f64::NAN),
            None,
            Some(-1.5),
        ]));
        let fixed = canonical_floats(&column);
        let fixed = fixed.as_primitive::<Float64Type>();
        assert!(fixed.value(0) == 0.0 && fixed.value(0).is_sign_positive());
        assert!(fixed.value(2).is_nan() && fixed.value(2).is_sign_positive());
        assert!(fixed.is_null(3));
        assert_eq!(fixed.value(4), -1.5);
    }
}
