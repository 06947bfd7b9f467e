use std::fmt;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, BooleanArray, Date32Array, Decimal64Array, Decimal128Array, Float64Array,
    Int32Array, Int64Array, IntervalMonthDayNanoArray, NullArray, StringArray,
    TimestampMicrosecondArray,
};
use arrow::datatypes::{DataType, IntervalMonthDayNano};

/// One constant value, as it appears in a plan.
#[derive(Clone, Debug, PartialEq)]
pub enum ScalarValue {
    Null,
    Boolean(bool),
    Int32(i32),
    Int64(i64),
    Float64(f64),
    /// A decimal's unscaled value, whichever width its precision gives it.
    Decimal {
        value: i128,
        precision: u8,
        scale: i8,
    },
    Utf8(String),
    Date32(i32),
    TimestampMicros(i64),
    /// An interval of months, days and nanoseconds (Arrow's MonthDayNano).
    Interval {
        months: i32,
        days: i32,
        nanos: i64,
    },
    /// A value of any other type (an array, say), as an Arrow array of one element.
    Single(ArrayRef),
}

impl ScalarValue {
    pub fn data_type(&self) -> DataType {
        match self {
            ScalarValue::Null => DataType::Null,
            ScalarValue::Boolean(_) => DataType::Boolean,
            ScalarValue::Int32(_) => DataType::Int32,
            ScalarValue::Int64(_) => DataType::Int64,
            ScalarValue::Float64(_) => DataType::Float64,
            ScalarValue::Decimal {
                precision, scale, ..
            } => pondra_catalog::decimal_type(*precision, *scale),
            ScalarValue::Utf8(_) => DataType::Utf8,
            ScalarValue::Date32(_) => DataType::Date32,
            ScalarValue::TimestampMicros(_) => {
                DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, None)
            }
            ScalarValue::Interval { .. } => {
                DataType::Interval(arrow::datatypes::IntervalUnit::MonthDayNano)
            }
            ScalarValue::Single(array) => array.data_type().clone(),
        }
    }

    /// The value at `row` of an array.
    pub fn at(array: &dyn Array, row: usize) -> ScalarValue {
        use arrow::array::AsArray;
        use arrow::datatypes::*;
        if array.is_null(row) {
            return ScalarValue::Null;
        }
        match array.data_type() {
            DataType::Boolean => ScalarValue::Boolean(array.as_boolean().value(row)),
            DataType::Int32 => ScalarValue::Int32(array.as_primitive::<Int32Type>().value(row)),
            DataType::Int64 => ScalarValue::Int64(array.as_primitive::<Int64Type>().value(row)),
            DataType::Float64 => {
                ScalarValue::Float64(array.as_primitive::<Float64Type>().value(row))
            }
            DataType::Decimal64(precision, scale) => ScalarValue::Decimal {
                value: array.as_primitive::<Decimal64Type>().value(row).into(),
                precision: *precision,
                scale: *scale,
            },
            DataType::Decimal128(precision, scale) => ScalarValue::Decimal {
                value: array.as_primitive::<Decimal128Type>().value(row),
                precision: *precision,
                scale: *scale,
            },
            DataType::Utf8 => ScalarValue::Utf8(array.as_string::<i32>().value(row).to_string()),
            DataType::Date32 => ScalarValue::Date32(array.as_primitive::<Date32Type>().value(row)),
            DataType::Timestamp(TimeUnit::Microsecond, None) => ScalarValue::TimestampMicros(
                array.as_primitive::<TimestampMicrosecondType>().value(row),
            ),
            _ => ScalarValue::Single(array.slice(row, 1)),
        }
    }

    /// An array holding this value `len` times.
    pub fn to_array(&self, len: usize) -> ArrayRef {
        match self {
            ScalarValue::Null => Arc::new(NullArray::new(len)),
            ScalarValue::Boolean(v) => Arc::new(BooleanArray::from(vec![*v; len])),
            ScalarValue::Int32(v) => Arc::new(Int32Array::from_value(*v, len)),
            ScalarValue::Int64(v) => Arc::new(Int64Array::from_value(*v, len)),
            ScalarValue::Float64(v) => Arc::new(Float64Array::from_value(*v, len)),
            ScalarValue::Decimal {
                value,
                precision,
                scale,
            } => match *precision <= pondra_catalog::DECIMAL64_MAX_PRECISION {
                // Up to 18 digits, the value is below 10^18 and fits.
                true => Arc::new(
                    Decimal64Array::from_value(*value as i64, len)
                        .with_precision_and_scale(*precision, *scale)
                        .expect("valid decimal literal"),
                ),
                false => Arc::new(
                    Decimal128Array::from_value(*value, len)
                        .with_precision_and_scale(*precision, *scale)
                        .expect("valid decimal literal"),
                ),
            },
            ScalarValue::Utf8(v) => Arc::new(StringArray::from(vec![v.as_str(); len])),
            ScalarValue::Date32(v) => Arc::new(Date32Array::from_value(*v, len)),
            ScalarValue::TimestampMicros(v) => {
                Arc::new(TimestampMicrosecondArray::from_value(*v, len))
            }
            ScalarValue::Interval {
                months,
                days,
                nanos,
            } => Arc::new(IntervalMonthDayNanoArray::from_value(
                IntervalMonthDayNano::new(*months, *days, *nanos),
                len,
            )),
            ScalarValue::Single(array) if len == 1 => array.clone(),
            ScalarValue::Single(array) => {
                let first = arrow::array::UInt32Array::from_value(0, len);
                arrow::compute::take(array, &first, None).expect("an array of one value")
            }
        }
    }
}

impl fmt::Display for ScalarValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScalarValue::Null => write!(f, "NULL"),
            ScalarValue::Utf8(s) => write!(f, "'{}'", s.replace('\'', "''")),
            other => {
                let array = other.to_array(1);
                let formatted = arrow::util::display::array_value_to_string(&array, 0)
                    .unwrap_or_else(|_| "?".into());
                write!(f, "{formatted}")
            }
        }
    }
}
