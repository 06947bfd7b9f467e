//! Instants (SQL `TIMESTAMPTZ`, Arrow timestamps in UTC; ADR 0067): text with an offset read
//! as the instant it names, written with the session's offset, and casts to and from the
//! other time types through the wall time in the session's zone (UTC).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, StringArray};
use arrow::datatypes::{DataType, TimeUnit, TimestampMicrosecondType};

use crate::infinite_times::TIMESTAMP_INFINITY;
use crate::{ExecError, Result};

const NAIVE: DataType = DataType::Timestamp(TimeUnit::Microsecond, None);

/// The cast of `value` to `to` when either is an instant; `None` otherwise.
pub fn cast_zoned(value: &ArrayRef, to: &DataType, safe: bool) -> Option<Result<ArrayRef>> {
    let zone_of = |t: &DataType| match t {
        DataType::Timestamp(TimeUnit::Microsecond, Some(zone)) => Some(zone.clone()),
        _ => None,
    };
    let (from_zone, to_zone) = (zone_of(value.data_type()), zone_of(to));
    Some(match (from_zone, to_zone) {
        (None, None) => return None,
        (Some(_), Some(zone)) => Ok(labelled(value, Some(zone))),
        (Some(_), None) if *to == DataType::Utf8 => Ok(to_text(value)),
        (Some(_), None) => crate::casts::cast(&labelled(value, None), to, safe),
        (None, Some(zone)) if *value.data_type() == DataType::Utf8 => {
            from_text(value, safe).map(|v| labelled(&v, Some(zone)))
        }
        (None, Some(zone)) => {
            crate::casts::cast(value, &NAIVE, safe).map(|v| labelled(&v, Some(zone)))
        }
    })
}

/// Microsecond timestamps with their zone label changed and their values kept.
fn labelled(value: &ArrayRef, zone: Option<Arc<str>>) -> ArrayRef {
    let stamps = value.as_primitive::<TimestampMicrosecondType>().clone();
    Arc::new(stamps.with_timezone_opt(zone))
}

/// Instants as both anchors write them in UTC: the wall time, then `+00`.
pub fn to_text(value: &ArrayRef) -> ArrayRef {
    let stamps = value.as_primitive::<TimestampMicrosecondType>();
    let texts: StringArray = stamps.iter().map(|v| v.map(instant_text)).collect();
    Arc::new(texts)
}

/// One instant as text (infinities as their words).
pub fn instant_text(micros: i64) -> String {
    let text = crate::casts::timestamp_text(micros);
    match crate::infinite_times::infinity_text(micros, TIMESTAMP_INFINITY) {
        Some(_) => text,
        None => format!("{text}+00"),
    }
}

/// Text read as instants: a wall time with an offset (`+02`, `-05:30`, `Z`, `UTC`) names
/// the instant at that offset, one without names the wall time in UTC.
fn from_text(value: &ArrayRef, safe: bool) -> Result<ArrayRef> {
    let texts = value.as_string::<i32>();
    let mut offsets = Vec::with_capacity(texts.len());
    let mut walls = Vec::with_capacity(texts.len());
    for text in texts {
        let (wall, offset) = match text {
            Some(text) => match split_offset(text) {
                Some((wall, offset)) => (Some(wall), offset),
                None if safe => (None, 0),
                None => {
                    return Err(ExecError::Execution(format!(
                        "conversion failed: {text:?} has an offset that is not a number of \
                         hours and minutes"
                    )));
                }
            },
            None => (None, 0),
        };
        walls.push(wall);
        offsets.push(offset);
    }
    let walls: ArrayRef = Arc::new(StringArray::from(walls));
    let walls = crate::casts::cast(&walls, &NAIVE, safe)?;
    let walls = walls.as_primitive::<TimestampMicrosecondType>();
    let instants: arrow::array::TimestampMicrosecondArray = walls
        .iter()
        .zip(offsets)
        .map(|(wall, offset)| {
            wall.map(|w| match w.abs() {
                TIMESTAMP_INFINITY => w,
                _ => w - offset * 1_000_000,
            })
        })
        .collect();
    Ok(Arc::new(instants))
}

/// The texts with the offsets some of them end in taken off; `None` when none has one.
pub fn without_offsets(texts: &StringArray) -> Option<ArrayRef> {
    let has_offset = |t: &str| split_offset(t).is_some_and(|(wall, _)| wall.len() != t.len());
    if !texts.iter().flatten().any(has_offset) {
        return None;
    }
    let walls: StringArray = texts
        .iter()
        .map(|t| t.map(|t| split_offset(t).map_or(t, |(wall, _)| wall)))
        .collect();
    Some(Arc::new(walls))
}

/// A text's wall time and the offset from UTC it gives, in seconds (0 when it gives none).
/// `None` when it ends in what looks like an offset but is not one.
fn split_offset(text: &str) -> Option<(&str, i64)> {
    let trimmed = text.trim_end();
    for suffix in ["Z", "z", " UTC", "UTC", " GMT", "GMT"] {
        if let Some(wall) = trimmed.strip_suffix(suffix)
            && wall.contains(':')
        {
            return Some((wall.trim_end(), 0));
        }
    }
    // An offset's sign comes after the time of day, whose first colon it follows.
    let Some(colon) = trimmed.find(':') else {
        return Some((text, 0));
    };
    let Some(sign_at) = trimmed[colon..].rfind(['+', '-']).map(|at| colon + at) else {
        return Some((text, 0));
    };
    let sign = if trimmed.as_bytes()[sign_at] == b'-' {
        -1
    } else {
        1
    };
    let digits: String = trimmed[sign_at + 1..]
        .chars()
        .filter(|c| *c != ':')
        .collect();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.len() > 6 {
        return None;
    }
    let padded = format!("{digits:0<6}");
    let field = |at: usize| padded[at..at + 2].parse::<i64>().expect("digits");
    let digits_ok = digits.len().is_multiple_of(2) || digits.len() == 1;
    let (hours, minutes, seconds) = match digits.len() {
        1 => (digits.parse::<i64>().expect("a digit"), 0, 0),
        _ => (field(0), field(2), field(4)),
    };
    if !digits_ok || hours > 15 || minutes > 59 || seconds > 59 {
        return None;
    }
    let wall = trimmed[..sign_at].trim_end();
    Some((wall, sign * (hours * 3600 + minutes * 60 + seconds)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_read_after_the_time_of_day() {
        assert_eq!(
            split_offset("2021-01-01 10:00"),
            Some(("2021-01-01 10:00", 0))
        );
        assert_eq!(split_offset("2021-01-01"), Some(("2021-01-01", 0)));
        assert_eq!(
            split_offset("2021-01-01 10:00+02"),
            Some(("2021-01-01 10:00", 7200))
        );
        assert_eq!(
            split_offset("2021-01-01 10:00:00.5-05:30"),
            Some(("2021-01-01 10:00:00.5", -19800))
        );
        assert_eq!(
            split_offset("2021-01-01T10:00Z"),
            Some(("2021-01-01T10:00", 0))
        );
        assert_eq!(
            split_offset("2021-01-01 10:00 UTC"),
            Some(("2021-01-01 10:00", 0))
        );
        assert_eq!(split_offset("2021-01-01 10:00+2x"), None);
        assert_eq!(split_offset("2021-01-01 10:00+123"), None);
    }
}
