//! `'infinity'` and `'-infinity'` for DATE and TIMESTAMP (ADR 0062): the extreme values of
//! their Arrow types, read from and written as those words, kept across a change of type,
//! and NULL in parts and differences.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, Date32Array, PrimitiveArray, StringArray, TimestampMicrosecondArray,
};
use arrow::compute::{CastOptions, cast_with_options};
use arrow::datatypes::{
    ArrowPrimitiveType, DataType, Date32Type, TimeUnit, TimestampMicrosecondType,
};
use arrow::error::ArrowError;

use crate::Result;

pub const DATE_INFINITY: i32 = i32::MAX;
pub const DATE_NEGATIVE_INFINITY: i32 = -i32::MAX;
pub const TIMESTAMP_INFINITY: i64 = i64::MAX;
pub const TIMESTAMP_NEGATIVE_INFINITY: i64 = -i64::MAX;

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// Whether `text` names an infinity, and then whether the positive one.
pub fn infinity_word(text: &str) -> Option<bool> {
    let word = text.trim();
    let (positive, rest) = match word.as_bytes().first() {
        Some(b'-') => (false, &word[1..]),
        Some(b'+') => (true, &word[1..]),
        _ => (true, word),
    };
    rest.eq_ignore_ascii_case("infinity").then_some(positive)
}

/// The word for an infinite date or timestamp, `None` for a finite one.
pub fn infinity_text(value: i64, positive_infinity: i64) -> Option<&'static str> {
    match value {
        v if v == positive_infinity => Some("infinity"),
        v if v == -positive_infinity => Some("-infinity"),
        _ => None,
    }
}

/// A date as PostgreSQL and DuckDB write it.
pub fn date_text(days: i32) -> String {
    if let Some(word) = infinity_text(days as i64, DATE_INFINITY as i64) {
        return word.to_string();
    }
    chrono::DateTime::from_timestamp(days as i64 * 86_400, 0)
        .map(|d| crate::eras::with_era(&d, d.format("%m-%d")))
        .unwrap_or_else(|| days.to_string())
}

fn is_time(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Date32 | DataType::Timestamp(TimeUnit::Microsecond, None)
    )
}

/// The cast of `value` to `to` when infinity is involved: text to a date or timestamp, a
/// date to a timestamp or back, a date to text. `None` when it is not, for the caller's
/// usual cast.
pub fn cast_infinite(
    value: &ArrayRef,
    to: &DataType,
    options: &CastOptions,
) -> Option<Result<ArrayRef>> {
    match (value.data_type(), to) {
        (DataType::Utf8, to) if is_time(to) => {
            let texts = value.as_string::<i32>();
            texts
                .iter()
                .any(|t| t.is_some_and(|t| infinity_word(t).is_some()))
                .then(|| from_text(texts, to, options))
        }
        (DataType::Date32, to @ DataType::Timestamp(TimeUnit::Microsecond, None)) => {
            // Always here, for an error that names the date out of range.
            let dates = value.as_primitive::<Date32Type>();
            let stamps =
                dates.try_unary::<_, TimestampMicrosecondType, _>(|d| {
                    match infinity_text(d as i64, DATE_INFINITY as i64) {
                        Some("infinity") => Ok(TIMESTAMP_INFINITY),
                        Some(_) => Ok(TIMESTAMP_NEGATIVE_INFINITY),
                        None => (d as i64).checked_mul(MICROS_PER_DAY).ok_or_else(|| {
                            ArrowError::CastError(format!(
                                "date {} out of range for TIMESTAMP",
                                date_text(d)
                            ))
                        }),
                    }
                });
            Some(
                stamps
                    .map(|stamps| Arc::new(stamps.with_data_type(to.clone())) as ArrayRef)
                    .map_err(Into::into),
            )
        }
        (DataType::Timestamp(TimeUnit::Microsecond, None), DataType::Date32) => {
            let stamps = value.as_primitive::<TimestampMicrosecondType>();
            has_infinity(stamps, TIMESTAMP_INFINITY).then(|| {
                let dates: Date32Array =
                    stamps.unary(|t| match infinity_text(t, TIMESTAMP_INFINITY) {
                        Some("infinity") => DATE_INFINITY,
                        Some(_) => DATE_NEGATIVE_INFINITY,
                        None => t.div_euclid(MICROS_PER_DAY) as i32,
                    });
                Ok(Arc::new(dates) as ArrayRef)
            })
        }
        (DataType::Date32, DataType::Utf8) => {
            let dates = value.as_primitive::<Date32Type>();
            let texts: StringArray = dates.iter().map(|d| d.map(date_text)).collect();
            Some(Ok(Arc::new(texts)))
        }
        _ => None,
    }
}

fn has_infinity<T: ArrowPrimitiveType>(values: &PrimitiveArray<T>, infinity: T::Native) -> bool
where
    T::Native: Into<i64>,
{
    let infinity: i64 = infinity.into();
    values
        .iter()
        .flatten()
        .any(|v| v.into().unsigned_abs() == infinity.unsigned_abs())
}

/// Text to a date or timestamp: the words are put in after the others are cast.
fn from_text(texts: &StringArray, to: &DataType, options: &CastOptions) -> Result<ArrayRef> {
    let finite: StringArray = texts
        .iter()
        .map(|t| t.filter(|t| infinity_word(t).is_none()))
        .collect();
    let cast = cast_with_options(&(Arc::new(finite) as ArrayRef), to, options)?;
    let word = |row: usize| {
        texts
            .is_valid(row)
            .then(|| infinity_word(texts.value(row)))
            .flatten()
    };
    Ok(match to {
        DataType::Date32 => {
            let dates = cast.as_primitive::<Date32Type>();
            let patched: Date32Array = (0..dates.len())
                .map(|row| match word(row) {
                    Some(true) => Some(DATE_INFINITY),
                    Some(false) => Some(DATE_NEGATIVE_INFINITY),
                    None => dates.is_valid(row).then(|| dates.value(row)),
                })
                .collect();
            Arc::new(patched)
        }
        _ => {
            let stamps = cast.as_primitive::<TimestampMicrosecondType>();
            let patched: TimestampMicrosecondArray = (0..stamps.len())
                .map(|row| match word(row) {
                    Some(true) => Some(TIMESTAMP_INFINITY),
                    Some(false) => Some(TIMESTAMP_NEGATIVE_INFINITY),
                    None => stamps.is_valid(row).then(|| stamps.value(row)),
                })
                .collect();
            Arc::new(patched.with_data_type(to.clone()))
        }
    })
}

/// `value` with its infinite dates or timestamps as NULL: what parts and differences of
/// them are. Any other column is returned as it is.
pub fn finite_only(value: &ArrayRef) -> ArrayRef {
    match value.data_type() {
        DataType::Date32 => {
            let dates = value.as_primitive::<Date32Type>();
            match has_infinity(dates, DATE_INFINITY) {
                true => Arc::new(dates.unary_opt::<_, Date32Type>(|d| {
                    infinity_text(d as i64, DATE_INFINITY as i64)
                        .is_none()
                        .then_some(d)
                })),
                false => value.clone(),
            }
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            let stamps = value.as_primitive::<TimestampMicrosecondType>();
            match has_infinity(stamps, TIMESTAMP_INFINITY) {
                true => Arc::new(
                    stamps
                        .unary_opt::<_, TimestampMicrosecondType>(|t| {
                            infinity_text(t, TIMESTAMP_INFINITY).is_none().then_some(t)
                        })
                        .with_data_type(value.data_type().clone()),
                ),
                false => value.clone(),
            }
        }
        _ => value.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_are_read_in_any_case_and_sign() {
        assert_eq!(infinity_word(" Infinity "), Some(true));
        assert_eq!(infinity_word("+infinity"), Some(true));
        assert_eq!(infinity_word("-INFINITY"), Some(false));
        assert_eq!(infinity_word("infinit"), None);
        assert_eq!(infinity_word("2020-01-01"), None);
    }

    #[test]
    fn text_becomes_the_extremes_and_back() {
        let texts: ArrayRef = Arc::new(StringArray::from(vec![
            Some("infinity"),
            Some("2020-01-02"),
            None,
            Some("-infinity"),
        ]));
        let options = CastOptions::default();
        let dates = cast_infinite(&texts, &DataType::Date32, &options)
            .unwrap()
            .unwrap();
        let dates = dates.as_primitive::<Date32Type>();
        assert_eq!(dates.value(0), DATE_INFINITY);
        assert_eq!(dates.value(1), 18263);
        assert!(dates.is_null(2));
        assert_eq!(dates.value(3), DATE_NEGATIVE_INFINITY);
        let dates: ArrayRef = Arc::new(dates.clone());
        let stamp = DataType::Timestamp(TimeUnit::Microsecond, None);
        let stamps = cast_infinite(&dates, &stamp, &options).unwrap().unwrap();
        let stamps = stamps.as_primitive::<TimestampMicrosecondType>();
        assert_eq!(stamps.value(0), TIMESTAMP_INFINITY);
        assert_eq!(stamps.value(3), TIMESTAMP_NEGATIVE_INFINITY);
        assert_eq!(date_text(DATE_NEGATIVE_INFINITY), "-infinity");
        assert!(finite_only(&dates).is_null(0));
        assert!(finite_only(&dates).is_valid(1));
    }
}
