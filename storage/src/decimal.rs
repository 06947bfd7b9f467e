//! The width a decimal is held in.

use arrow::datatypes::DataType;

/// The most digits a decimal held in 64 bits has.
pub const DECIMAL64_MAX_PRECISION: u8 = 18;

/// The Arrow type of `DECIMAL(precision, scale)`: 64 bits wide up to 18 digits, 128 beyond
/// (ADR 0028). Money fits the narrow type, whose values are read from Parquet's INT64
/// decimals without a copy and compared, summed and hashed at half the width.
pub fn decimal_type(precision: u8, scale: i8) -> DataType {
    match precision <= DECIMAL64_MAX_PRECISION {
        true => DataType::Decimal64(precision, scale),
        false => DataType::Decimal128(precision, scale),
    }
}

/// The precision and scale of a decimal type of either width.
pub fn decimal_parts(data_type: &DataType) -> Option<(u8, i8)> {
    match data_type {
        DataType::Decimal64(precision, scale) | DataType::Decimal128(precision, scale) => {
            Some((*precision, *scale))
        }
        _ => None,
    }
}
