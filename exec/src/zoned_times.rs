//! Instants (SQL `TIMESTAMPTZ`, Arrow timestamps with a zone; ADR 0067): text with an offset
//! read as the instant it names, written as the wall time in the zone the array is labelled
//! with (the session's) and that zone's offset then; casts to and from the other time types
//! through the wall time in that zone, by its rules (daylight saving included).

use std::str::FromStr;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, StringArray, TimestampMicrosecondArray};
use arrow::datatypes::{DataType, TimeUnit, TimestampMicrosecondType};
use chrono::{DateTime, NaiveDateTime, Offset, TimeZone};
use chrono_tz::Tz;

use crate::infinite_times::TIMESTAMP_INFINITY;
use crate::{ExecError, Result};

const NAIVE: DataType = DataType::Timestamp(TimeUnit::Microsecond, None);

/// The names of UTC both anchors accept, lower-cased.
const UTC_NAMES: [&str; 10] = [
    "utc",
    "gmt",
    "etc/utc",
    "etc/gmt",
    "uct",
    "universal",
    "zulu",
    "z",
    "+00",
    "+00:00",
];

/// A zone's name as Pondra labels instants with it: `UTC` for any name of UTC, the zone
/// database's spelling of any other it knows; `None` for a name it does not know.
pub fn zone_name(name: &str) -> Option<String> {
    let name = name.trim();
    if UTC_NAMES.contains(&name.to_lowercase().as_str()) {
        return Some("UTC".into());
    }
    chrono_tz::TZ_VARIANTS
        .iter()
        .find(|tz| tz.name().eq_ignore_ascii_case(name))
        .map(|tz| tz.name().to_string())
}

/// The rules of a zone label; `None` for UTC, which needs none.
fn rules(zone: &str) -> Result<Option<Tz>> {
    if zone == "UTC" || UTC_NAMES.contains(&zone.to_lowercase().as_str()) {
        return Ok(None);
    }
    Tz::from_str(zone)
        .map(Some)
        .map_err(|_| ExecError::Execution(format!("unknown time zone {zone:?}")))
}

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
        (Some(zone), None) if *to == DataType::Utf8 => Ok(to_text(value, &zone)),
        // To another time type through the wall time; to a number as the instant's value.
        (Some(zone), None)
            if matches!(
                to,
                DataType::Timestamp(..) | DataType::Date32 | DataType::Time64(_)
            ) =>
        {
            walls(value, &zone).and_then(|walls| crate::casts::cast(&walls, to, safe))
        }
        (Some(_), None) => crate::casts::cast(&labelled(value, None), to, safe),
        (None, Some(zone)) if *value.data_type() == DataType::Utf8 => from_text(value, &zone, safe),
        (None, Some(zone)) => {
            crate::casts::cast(value, &NAIVE, safe).and_then(|walls| instants(&walls, &zone))
        }
    })
}

/// Microsecond timestamps with their zone label changed and their values kept.
fn labelled(value: &ArrayRef, zone: Option<Arc<str>>) -> ArrayRef {
    let stamps = value.as_primitive::<TimestampMicrosecondType>().clone();
    Arc::new(stamps.with_timezone_opt(zone))
}

/// Each finite value mapped by `f`; infinities and NULLs kept.
fn each_finite(
    value: &ArrayRef,
    zone: Option<Arc<str>>,
    f: impl Fn(i64) -> Result<i64>,
) -> Result<ArrayRef> {
    let stamps = value.as_primitive::<TimestampMicrosecondType>();
    let mapped = stamps
        .iter()
        .map(|v| match v {
            Some(v) if v.abs() != TIMESTAMP_INFINITY => f(v).map(Some),
            other => Ok(other),
        })
        .collect::<Result<TimestampMicrosecondArray>>()?;
    Ok(Arc::new(mapped.with_timezone_opt(zone)))
}

fn utc_of(micros: i64) -> Result<DateTime<chrono::Utc>> {
    DateTime::from_timestamp_micros(micros)
        .ok_or_else(|| ExecError::Execution(format!("timestamp out of range: {micros}")))
}

/// Instants as the wall times they are in `zone`.
fn walls(value: &ArrayRef, zone: &str) -> Result<ArrayRef> {
    let Some(tz) = rules(zone)? else {
        return Ok(labelled(value, None));
    };
    each_finite(value, None, |micros| {
        Ok(micros + i64::from(offset_at(&tz, micros)?) * 1_000_000)
    })
}

/// The offset of `tz` from UTC at an instant, in seconds.
fn offset_at(tz: &Tz, micros: i64) -> Result<i32> {
    let utc = utc_of(micros)?;
    Ok(tz
        .offset_from_utc_datetime(&utc.naive_utc())
        .fix()
        .local_minus_utc())
}

/// Wall times in `zone` as the instants they name, labelled with the zone. A wall time the
/// zone skips (daylight saving begins) or repeats (it ends) is read at the offset in force
/// before the change, as Postgres reads it.
fn instants(walls: &ArrayRef, zone: &str) -> Result<ArrayRef> {
    let label = Some(Arc::from(zone));
    let Some(tz) = rules(zone)? else {
        return Ok(labelled(walls, label));
    };
    each_finite(walls, label, |wall| instant_of_wall(&tz, wall))
}

fn instant_of_wall(tz: &Tz, wall: i64) -> Result<i64> {
    let naive: NaiveDateTime = utc_of(wall)?.naive_utc();
    let before = naive - chrono::Duration::days(1);
    let offset = match tz.offset_from_local_datetime(&naive) {
        chrono::LocalResult::Single(offset) => offset.fix(),
        chrono::LocalResult::Ambiguous(_, standard) => standard.fix(),
        chrono::LocalResult::None => tz.offset_from_utc_datetime(&before).fix(),
    };
    Ok(wall - i64::from(offset.local_minus_utc()) * 1_000_000)
}

/// Instants as both anchors write them: the wall time in `zone`, then its offset (`+00`,
/// `-05`, `+05:30`). A zone label Pondra does not know (from a file read in place) is
/// written as UTC, which names the same instants.
fn to_text(value: &ArrayRef, zone: &str) -> ArrayRef {
    let tz = rules(zone).ok().flatten();
    let stamps = value.as_primitive::<TimestampMicrosecondType>();
    let texts: StringArray = stamps
        .iter()
        .map(|micros| micros.map(|m| instant_text(m, shown_offset(tz.as_ref(), m))))
        .collect();
    Arc::new(texts)
}

/// Instants as text in their zone, for printers.
pub fn instants_as_text(value: &ArrayRef) -> ArrayRef {
    match value.data_type() {
        DataType::Timestamp(_, Some(zone)) => to_text(value, zone),
        _ => to_text(value, "UTC"),
    }
}

/// One instant as text, at an offset from UTC in seconds (infinities as their words).
pub fn instant_text(micros: i64, offset: i32) -> String {
    if crate::infinite_times::infinity_text(micros, TIMESTAMP_INFINITY).is_some() {
        return crate::casts::timestamp_text(micros);
    }
    let wall = crate::casts::timestamp_text(micros + i64::from(offset) * 1_000_000);
    let (sign, offset) = if offset < 0 {
        ('-', -offset)
    } else {
        ('+', offset)
    };
    let (hours, minutes, seconds) = (offset / 3600, offset / 60 % 60, offset % 60);
    match (minutes, seconds) {
        (0, 0) => format!("{wall}{sign}{hours:02}"),
        (_, 0) => format!("{wall}{sign}{hours:02}:{minutes:02}"),
        _ => format!("{wall}{sign}{hours:02}:{minutes:02}:{seconds:02}"),
    }
}

/// The offset of an instant's zone label from UTC, in seconds, for printers that write one
/// value at a time.
pub fn offset_in(zone: &str, micros: i64) -> i32 {
    shown_offset(rules(zone).ok().flatten().as_ref(), micros)
}

/// The offset an instant is written with: its zone's then, none for UTC, an infinity or a
/// zone Pondra does not know.
fn shown_offset(tz: Option<&Tz>, micros: i64) -> i32 {
    match tz {
        Some(tz) if micros.abs() != TIMESTAMP_INFINITY => offset_at(tz, micros).unwrap_or(0),
        _ => 0,
    }
}

/// Text read as instants labelled `zone`: a wall time with an offset (`+02`, `-05:30`, `Z`,
/// `UTC`) names the instant at that offset, one without names the wall time in the zone.
fn from_text(value: &ArrayRef, zone: &str, safe: bool) -> Result<ArrayRef> {
    let tz = rules(zone)?;
    let texts = value.as_string::<i32>();
    let mut offsets = Vec::with_capacity(texts.len());
    let mut walls = Vec::with_capacity(texts.len());
    for text in texts {
        let (wall, offset) = match text {
            Some(text) => match split_offset(text) {
                Some((wall, offset)) => (Some(wall), offset),
                None if safe => (None, None),
                None => {
                    return Err(ExecError::Execution(format!(
                        "conversion failed: {text:?} has an offset that is not a number of \
                         hours and minutes"
                    )));
                }
            },
            None => (None, None),
        };
        walls.push(wall);
        offsets.push(offset);
    }
    let walls: ArrayRef = Arc::new(StringArray::from(walls));
    let walls = crate::casts::cast(&walls, &NAIVE, safe)?;
    let walls = walls.as_primitive::<TimestampMicrosecondType>();
    let mut instants = Vec::with_capacity(walls.len());
    for (wall, offset) in walls.iter().zip(offsets) {
        instants.push(match (wall, offset, &tz) {
            (Some(w), _, _) if w.abs() == TIMESTAMP_INFINITY => Some(w),
            (Some(w), Some(offset), _) => Some(w - offset * 1_000_000),
            (Some(w), None, Some(tz)) => Some(instant_of_wall(tz, w)?),
            (Some(w), None, None) => Some(w),
            (None, ..) => None,
        });
    }
    let instants = TimestampMicrosecondArray::from(instants);
    Ok(Arc::new(instants.with_timezone_opt(Some(zone))))
}

/// The texts with the offsets some of them end in taken off; `None` when none has one.
pub fn without_offsets(texts: &StringArray) -> Option<ArrayRef> {
    let has_offset = |t: &str| split_offset(t).is_some_and(|(_, offset)| offset.is_some());
    if !texts.iter().flatten().any(has_offset) {
        return None;
    }
    let walls: StringArray = texts
        .iter()
        .map(|t| t.map(|t| split_offset(t).map_or(t, |(wall, _)| wall)))
        .collect();
    Some(Arc::new(walls))
}

/// A text's wall time and the offset from UTC it gives, in seconds, if it gives one. `None`
/// when it ends in what looks like an offset but is not one.
fn split_offset(text: &str) -> Option<(&str, Option<i64>)> {
    let trimmed = text.trim_end();
    for suffix in ["Z", "z", " UTC", "UTC", " GMT", "GMT"] {
        if let Some(wall) = trimmed.strip_suffix(suffix)
            && wall.contains(':')
        {
            return Some((wall.trim_end(), Some(0)));
        }
    }
    // An offset's sign comes after the time of day, whose first colon it follows.
    let Some(colon) = trimmed.find(':') else {
        return Some((text, None));
    };
    let Some(sign_at) = trimmed[colon..].rfind(['+', '-']).map(|at| colon + at) else {
        return Some((text, None));
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
    Some((wall, Some(sign * (hours * 3600 + minutes * 60 + seconds))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_read_after_the_time_of_day() {
        assert_eq!(
            split_offset("2021-01-01 10:00"),
            Some(("2021-01-01 10:00", None))
        );
        assert_eq!(split_offset("2021-01-01"), Some(("2021-01-01", None)));
        assert_eq!(
            split_offset("2021-01-01 10:00+02"),
            Some(("2021-01-01 10:00", Some(7200)))
        );
        assert_eq!(
            split_offset("2021-01-01 10:00:00.5-05:30"),
            Some(("2021-01-01 10:00:00.5", Some(-19800)))
        );
        assert_eq!(
            split_offset("2021-01-01T10:00Z"),
            Some(("2021-01-01T10:00", Some(0)))
        );
        assert_eq!(
            split_offset("2021-01-01 10:00 UTC"),
            Some(("2021-01-01 10:00", Some(0)))
        );
        assert_eq!(split_offset("2021-01-01 10:00+2x"), None);
        assert_eq!(split_offset("2021-01-01 10:00+123"), None);
    }

    #[test]
    fn wall_times_in_a_zone_with_daylight_saving() {
        let tz = Tz::America__New_York;
        let wall = |text: &str| {
            NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M")
                .expect("a wall time")
                .and_utc()
                .timestamp_micros()
        };
        // Winter is five hours behind UTC, summer four.
        assert_eq!(
            instant_of_wall(&tz, wall("2021-01-01 10:00")).unwrap(),
            wall("2021-01-01 15:00")
        );
        assert_eq!(
            instant_of_wall(&tz, wall("2021-07-01 10:00")).unwrap(),
            wall("2021-07-01 14:00")
        );
        // 02:30 on 14 March 2021 does not happen there; it is read at the winter offset.
        assert_eq!(
            instant_of_wall(&tz, wall("2021-03-14 02:30")).unwrap(),
            wall("2021-03-14 07:30")
        );
        // 01:30 on 7 November 2021 happens twice; the second, at the winter offset, is taken.
        assert_eq!(
            instant_of_wall(&tz, wall("2021-11-07 01:30")).unwrap(),
            wall("2021-11-07 06:30")
        );
        let summer = wall("2021-07-01 14:00");
        assert_eq!(offset_at(&tz, summer).unwrap(), -4 * 3600);
        assert_eq!(instant_text(summer, -4 * 3600), "2021-07-01 10:00:00-04");
        assert_eq!(instant_text(summer, 19800), "2021-07-01 19:30:00+05:30");
    }
}
