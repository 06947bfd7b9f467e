//! A stable 64-bit hash of a row's values, which leads the key of a view's count table whose
//! group has a key that is not an integer (ADR 0054): scans prune pages by integer ranges
//! only, so lookups by the group go through its hash. Stored in the lake, so it never changes:
//! FNV-1a over each value's canonical bytes (a NULL marker, or a presence marker and the value:
//! strings as UTF-8 with their length, integers, dates and times as 64-bit little-endian,
//! floats as their 64-bit pattern, decimals as 128-bit little-endian, anything else as its
//! text).

use arrow::array::{Array, ArrayRef, AsArray, Int64Array};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Decimal128Type, Float64Type, Int64Type};

use crate::Result;

const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

fn mix(hash: &mut u64, bytes: &[u8]) {
    for byte in bytes {
        *hash ^= u64::from(*byte);
        *hash = hash.wrapping_mul(PRIME);
    }
}

/// The hash of each row of `columns` (all of one length).
pub fn key_hashes(columns: &[ArrayRef]) -> Result<Int64Array> {
    let rows = columns.first().map_or(0, |c| c.len());
    let mut hashes = vec![OFFSET; rows];
    for column in columns {
        assert_eq!(column.len(), rows, "the columns of one batch");
        let canonical = canonical(column)?;
        for (row, hash) in hashes.iter_mut().enumerate() {
            if canonical.is_null(row) {
                mix(hash, &[0]);
                continue;
            }
            mix(hash, &[1]);
            match canonical.data_type() {
                DataType::Utf8 => {
                    let text = canonical.as_string::<i32>().value(row).as_bytes();
                    mix(hash, &(text.len() as u64).to_le_bytes());
                    mix(hash, text);
                }
                DataType::Binary => {
                    let bytes = canonical.as_binary::<i32>().value(row);
                    mix(hash, &(bytes.len() as u64).to_le_bytes());
                    mix(hash, bytes);
                }
                DataType::Boolean => mix(hash, &[u8::from(canonical.as_boolean().value(row))]),
                DataType::Float64 => {
                    let value = canonical.as_primitive::<Float64Type>().value(row);
                    mix(hash, &value.to_bits().to_le_bytes());
                }
                DataType::Decimal128(..) => {
                    let value = canonical.as_primitive::<Decimal128Type>().value(row);
                    mix(hash, &value.to_le_bytes());
                }
                DataType::Int64 => {
                    let value = canonical.as_primitive::<Int64Type>().value(row);
                    mix(hash, &value.to_le_bytes());
                }
                other => unreachable!("canonical form {other}"),
            }
        }
    }
    Ok(Int64Array::from_iter_values(
        hashes.into_iter().map(|h| h as i64),
    ))
}

/// `column` in the form its bytes are hashed from.
fn canonical(column: &ArrayRef) -> Result<ArrayRef> {
    let target = match column.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => DataType::Utf8,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => DataType::Binary,
        DataType::Boolean => DataType::Boolean,
        DataType::Float16 | DataType::Float32 | DataType::Float64 => DataType::Float64,
        DataType::Decimal128(p, s) => DataType::Decimal128(*p, *s),
        exact if pondra_catalog::is_exact_integer(exact) => DataType::Int64,
        DataType::Date64
        | DataType::Timestamp(..)
        | DataType::Time32(..)
        | DataType::Time64(..) => DataType::Int64,
        _ => DataType::Utf8,
    };
    Ok(cast(column, &target)?)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int32Array, StringArray};

    use super::*;

    #[test]
    fn hashes_are_stable_and_tell_rows_apart() {
        let texts: ArrayRef = Arc::new(StringArray::from(vec![
            Some("a"),
            Some("b"),
            None,
            Some("a"),
        ]));
        let numbers: ArrayRef = Arc::new(Int32Array::from(vec![1, 1, 1, 2]));
        let hashes = key_hashes(&[texts.clone(), numbers]).unwrap();
        let values = hashes.values();
        assert_ne!(values[0], values[1]);
        assert_ne!(values[0], values[2]);
        assert_ne!(values[0], values[3]);
        // The bytes are fixed: a hash stored in the lake must be found again by any version.
        let alone = key_hashes(&[texts]).unwrap();
        assert_eq!(
            alone.value(0),
            key_hashes(&[Arc::new(StringArray::from(vec!["a"]))])
                .unwrap()
                .value(0)
        );
        assert_eq!(alone.value(0), -1_974_798_585_736_099_004);
    }
}
