//! PostgreSQL's formatting functions: `to_char` of timestamps and numbers by a template
//! (`'YYYY-MM-DD HH24:MI'`, `'FM9,999.00'`), and `to_date` / `to_timestamp` reading text by
//! one. Template words follow PostgreSQL's; `FM` drops padding, `TH` adds an ordinal suffix,
//! double quotes and a backslash make text literal.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, Date32Array, Float64Array, StringArray, TimestampMicrosecondArray,
};
use arrow::datatypes::TimestampMicrosecondType;
use chrono::{Datelike, NaiveDate, NaiveDateTime, Timelike};

use crate::{ExecError, Result};

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// The template words, longest first so that `HH24` is not read as `HH`.
const WORDS: &[&str] = &[
    "HH24", "HH12", "HH", "MI", "SSSSS", "SSSS", "SS", "MS", "US", "A.M.", "P.M.", "a.m.", "p.m.",
    "AM", "PM", "am", "pm", "IYYY", "YYYY", "YYY", "YY", "Y", "MONTH", "Month", "month", "MON",
    "Mon", "mon", "MM", "DAY", "Day", "day", "DY", "Dy", "dy", "DDD", "DD", "D", "IW", "WW", "Q",
    "CC", "J",
];

/// PostgreSQL's template words this module does not write or read: refused by name rather
/// than copied as text.
const UNSUPPORTED_WORDS: &[&str] = &[
    "TZH", "TZM", "TZ", "tz", "OF", "RM", "rm", "Y,YYY", "IYY", "IY", "ID", "BC", "AD", "B.C.",
    "A.D.", "bc", "ad", "b.c.", "a.d.", "W", "I",
];

/// One piece of a date template.
enum Piece {
    Word {
        word: &'static str,
        fill: bool,
        ordinal: Option<bool>,
    },
    Text(String),
}

fn pieces(template: &str) -> Result<Vec<Piece>> {
    let mut out = Vec::new();
    let mut rest = template;
    let mut fill = false;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("FM") {
            fill = true;
            rest = after;
            continue;
        }
        if let Some(word) = WORDS.iter().find(|w| rest.starts_with(**w)) {
            rest = &rest[word.len()..];
            let ordinal = if rest.starts_with("TH") {
                Some(true)
            } else if rest.starts_with("th") {
                Some(false)
            } else {
                None
            };
            if ordinal.is_some() {
                rest = &rest[2..];
            }
            out.push(Piece::Word {
                word,
                fill,
                ordinal,
            });
            fill = false;
            continue;
        }
        if let Some(word) = UNSUPPORTED_WORDS.iter().find(|w| rest.starts_with(**w)) {
            return Err(ExecError::Execution(format!(
                "not supported yet: the template word {word} (in {template:?})"
            )));
        }
        if c == '"' {
            let end = rest[1..].find('"').map_or(rest.len(), |i| i + 1);
            out.push(Piece::Text(rest[1..end].to_string()));
            rest = rest.get(end + 1..).unwrap_or("");
            continue;
        }
        if c == '\\' && rest.len() > 1 {
            let next = rest[1..].chars().next().expect("a character follows");
            out.push(Piece::Text(next.to_string()));
            rest = &rest[1 + next.len_utf8()..];
            continue;
        }
        out.push(Piece::Text(c.to_string()));
        rest = &rest[c.len_utf8()..];
    }
    Ok(out)
}

fn ordinal_suffix(n: i64, upper: bool) -> &'static str {
    let suffix = match (n % 100, n % 10) {
        (11..=13, _) => "th",
        (_, 1) => "st",
        (_, 2) => "nd",
        (_, 3) => "rd",
        _ => "th",
    };
    match (upper, suffix) {
        (false, s) => s,
        (true, "st") => "ST",
        (true, "nd") => "ND",
        (true, "rd") => "RD",
        (true, _) => "TH",
    }
}

fn cased(name: &str, word: &str) -> String {
    if word.chars().all(|c| c.is_ascii_uppercase()) {
        name.to_uppercase()
    } else if word.chars().all(|c| c.is_ascii_lowercase()) {
        name.to_lowercase()
    } else {
        name.to_string()
    }
}

/// `time` written by `template`.
fn format_time(time: NaiveDateTime, template: &str) -> Result<String> {
    let mut out = String::new();
    for piece in pieces(template)? {
        let (word, fill, ordinal) = match piece {
            Piece::Text(text) => {
                out.push_str(&text);
                continue;
            }
            Piece::Word {
                word,
                fill,
                ordinal,
            } => (word, fill, ordinal),
        };
        let hour12 = (time.hour() + 11) % 12 + 1;
        let number = |n: i64, width: usize| match fill {
            true => n.to_string(),
            false => format!("{n:0width$}"),
        };
        let name = |name: &str, width: usize| {
            let name = cased(name, word);
            match fill {
                true => name,
                false => format!("{name:width$}"),
            }
        };
        let (text, value) = match word {
            "HH24" => (number(time.hour().into(), 2), time.hour().into()),
            "HH12" | "HH" => (number(hour12.into(), 2), hour12.into()),
            "MI" => (number(time.minute().into(), 2), time.minute().into()),
            "SS" => (number(time.second().into(), 2), time.second().into()),
            "SSSS" | "SSSSS" => {
                let seconds = i64::from(time.num_seconds_from_midnight());
                (seconds.to_string(), seconds)
            }
            "MS" => {
                let ms = i64::from(time.nanosecond() / 1_000_000);
                (number(ms, 3), ms)
            }
            "US" => {
                let us = i64::from(time.nanosecond() / 1_000);
                (number(us, 6), us)
            }
            "AM" | "PM" | "am" | "pm" | "A.M." | "P.M." | "a.m." | "p.m." => {
                let pm = time.hour() >= 12;
                let text = match (word.len() > 2, pm) {
                    (false, false) => "AM",
                    (false, true) => "PM",
                    (true, false) => "A.M.",
                    (true, true) => "P.M.",
                };
                (cased(text, word), 0)
            }
            "YYYY" => (number(time.year().into(), 4), time.year().into()),
            "YYY" => (number((time.year() % 1000).into(), 3), time.year().into()),
            "YY" => (number((time.year() % 100).into(), 2), time.year().into()),
            "Y" => ((time.year() % 10).to_string(), time.year().into()),
            "IYYY" => {
                let year = i64::from(time.iso_week().year());
                (number(year, 4), year)
            }
            "MONTH" | "Month" | "month" => (name(MONTHS[time.month0() as usize], 9), 0),
            "MON" | "Mon" | "mon" => (name(&MONTHS[time.month0() as usize][..3], 3), 0),
            "MM" => (number(time.month().into(), 2), time.month().into()),
            "DAY" | "Day" | "day" => {
                let day = DAYS[time.weekday().num_days_from_sunday() as usize];
                (name(day, 9), 0)
            }
            "DY" | "Dy" | "dy" => {
                let day = DAYS[time.weekday().num_days_from_sunday() as usize];
                (name(&day[..3], 3), 0)
            }
            "DDD" => (number(time.ordinal().into(), 3), time.ordinal().into()),
            "DD" => (number(time.day().into(), 2), time.day().into()),
            "D" => {
                let day = i64::from(time.weekday().num_days_from_sunday() + 1);
                (day.to_string(), day)
            }
            "IW" => {
                let week = i64::from(time.iso_week().week());
                (number(week, 2), week)
            }
            "WW" => {
                let week = i64::from(time.ordinal0() / 7 + 1);
                (number(week, 2), week)
            }
            "Q" => {
                let quarter = i64::from(time.month0() / 3 + 1);
                (quarter.to_string(), quarter)
            }
            "CC" => {
                let year = i64::from(time.year());
                let century = if year > 0 {
                    (year + 99) / 100
                } else {
                    year / 100 - 1
                };
                (number(century, 2), century)
            }
            "J" => {
                let julian = i64::from(time.date().num_days_from_ce()) + 1_721_425;
                (julian.to_string(), julian)
            }
            other => unreachable!("{other} is in WORDS"),
        };
        out.push_str(&text);
        if let Some(upper) = ordinal {
            out.push_str(ordinal_suffix(value, upper));
        }
    }
    Ok(out)
}

/// `to_char(timestamp, template)`.
pub fn time_to_char(args: &[ArrayRef]) -> Result<ArrayRef> {
    let times = args[0].as_primitive::<TimestampMicrosecondType>();
    let templates = args[1].as_string::<i32>();
    let mut out = Vec::with_capacity(times.len());
    for row in 0..times.len() {
        if times.is_null(row) || templates.is_null(row) {
            out.push(None);
            continue;
        }
        let Some(time) = chrono::DateTime::from_timestamp_micros(times.value(row)) else {
            out.push(None);
            continue;
        };
        out.push(Some(format_time(time.naive_utc(), templates.value(row))?));
    }
    Ok(Arc::new(StringArray::from(out)))
}

/// The fields a template read from text.
#[derive(Default)]
struct ReadFields {
    year: Option<i32>,
    month: Option<u32>,
    day: Option<u32>,
    day_of_year: Option<u32>,
    hour: u32,
    hour12: bool,
    pm: Option<bool>,
    minute: u32,
    second: u32,
    micros: u32,
}

fn bad_input(text: &str, template: &str, why: &str) -> ExecError {
    ExecError::Execution(format!(
        "invalid value for the template {template:?} in {text:?}: {why}"
    ))
}

/// Reads `text` by `template`: separators in the template skip any one separator (blanks any
/// run of blanks), numbers take as many digits as they can up to their width.
fn read_time(text: &str, template: &str) -> Result<NaiveDateTime> {
    let mut fields = ReadFields::default();
    let mut rest = text;
    let pieces = pieces(template)?;
    // A year followed directly by another number reads 4 digits, else as many as it finds.
    let next_is_word: Vec<bool> = (0..pieces.len())
        .map(|i| matches!(pieces.get(i + 1), Some(Piece::Word { .. })))
        .collect();
    for (i, piece) in pieces.into_iter().enumerate() {
        let word = match piece {
            Piece::Text(literal) => {
                for c in literal.chars() {
                    if c.is_whitespace() {
                        rest = rest.trim_start();
                    } else if let Some(next) = rest.chars().next()
                        && !next.is_ascii_alphanumeric()
                    {
                        rest = &rest[next.len_utf8()..];
                    }
                }
                continue;
            }
            Piece::Word { word, .. } => word,
        };
        rest = rest.trim_start();
        let mut read_width = 0;
        let mut digits = |width: usize| -> Result<i64> {
            let signed = rest.starts_with('-') && word.starts_with('Y');
            let start = usize::from(signed);
            let taken = rest[start..]
                .char_indices()
                .take_while(|(i, c)| c.is_ascii_digit() && *i < width)
                .count();
            if taken == 0 {
                return Err(bad_input(text, template, &format!("{word} needs digits")));
            }
            let value: i64 = rest[start..start + taken].parse().expect("digits");
            rest = &rest[start + taken..];
            read_width = taken;
            Ok(if signed { -value } else { value })
        };
        let small = |n: i64| u32::try_from(n).unwrap_or(u32::MAX);
        match word {
            "YYYY" | "IYYY" => {
                let width = if next_is_word[i] { 4 } else { 9 };
                fields.year = Some(digits(width)? as i32);
            }
            "YYY" | "YY" | "Y" => {
                let value = digits(word.len())? as i32;
                // Two-digit years nearest 2020, as PostgreSQL reads them.
                fields.year = Some(match word.len() {
                    2 if value < 70 => 2000 + value,
                    2 => 1900 + value,
                    3 => 2000 + value,
                    _ => 2020 + value,
                });
            }
            "MM" => fields.month = Some(small(digits(2)?)),
            "DD" => fields.day = Some(small(digits(2)?)),
            "DDD" => fields.day_of_year = Some(small(digits(3)?)),
            "HH24" => fields.hour = small(digits(2)?),
            "HH12" | "HH" => {
                fields.hour = small(digits(2)?);
                fields.hour12 = true;
            }
            "MI" => fields.minute = small(digits(2)?),
            "SS" => fields.second = small(digits(2)?),
            // Fractions of a second: `.5` is 500 milliseconds, as PostgreSQL reads it.
            "MS" => {
                let value = digits(3)?;
                fields.micros = small(value * 10i64.pow(3 - read_width as u32) * 1000);
            }
            "US" => {
                let value = digits(6)?;
                fields.micros = small(value * 10i64.pow(6 - read_width as u32));
            }
            "MONTH" | "Month" | "month" | "MON" | "Mon" | "mon" => {
                let full = word.len() > 3;
                let found = MONTHS.iter().position(|m| {
                    let name = if full { m } else { &m[..3] };
                    rest.get(..name.len())
                        .is_some_and(|r| r.eq_ignore_ascii_case(name))
                });
                let month = found.ok_or_else(|| bad_input(text, template, "no month name"))?;
                rest = &rest[if full { MONTHS[month].len() } else { 3 }..];
                fields.month = Some(month as u32 + 1);
            }
            "DAY" | "Day" | "day" | "DY" | "Dy" | "dy" => {
                let full = word.len() > 2;
                let found = DAYS.iter().find(|d| {
                    let name = if full { d } else { &d[..3] };
                    rest.get(..name.len())
                        .is_some_and(|r| r.eq_ignore_ascii_case(name))
                });
                let day = found.ok_or_else(|| bad_input(text, template, "no day name"))?;
                rest = &rest[if full { day.len() } else { 3 }..];
            }
            "AM" | "PM" | "am" | "pm" | "A.M." | "P.M." | "a.m." | "p.m." => {
                let upper = rest.to_ascii_uppercase();
                let marker = ["A.M.", "P.M.", "AM", "PM"]
                    .into_iter()
                    .find(|m| upper.starts_with(m))
                    .ok_or_else(|| bad_input(text, template, "no AM or PM"))?;
                fields.pm = Some(marker.starts_with('P'));
                rest = &rest[marker.len()..];
            }
            _ => {
                return Err(ExecError::Execution(format!(
                    "the template word {word} is not supported when reading text"
                )));
            }
        }
    }
    if !rest.trim().is_empty() {
        return Err(bad_input(text, template, "text is left over"));
    }
    assemble(&fields).ok_or_else(|| {
        ExecError::Execution(format!(
            "date/time field value out of range: {text:?} read by {template:?}"
        ))
    })
}

fn assemble(fields: &ReadFields) -> Option<NaiveDateTime> {
    let year = fields.year.unwrap_or(1);
    let date = match fields.day_of_year {
        Some(day) if fields.month.is_none() => NaiveDate::from_yo_opt(year, day)?,
        _ => NaiveDate::from_ymd_opt(year, fields.month.unwrap_or(1), fields.day.unwrap_or(1))?,
    };
    let mut hour = fields.hour;
    if fields.hour12 || fields.pm.is_some() {
        if !(1..=12).contains(&hour) {
            return None;
        }
        hour %= 12;
        if fields.pm == Some(true) {
            hour += 12;
        }
    }
    date.and_hms_micro_opt(hour, fields.minute, fields.second, fields.micros)
}

/// `to_date(text, template)`.
pub fn to_date(args: &[ArrayRef]) -> Result<ArrayRef> {
    let (texts, templates) = (args[0].as_string::<i32>(), args[1].as_string::<i32>());
    let mut out = Vec::with_capacity(texts.len());
    for (text, template) in texts.iter().zip(templates.iter()) {
        out.push(match (text, template) {
            (Some(text), Some(template)) => {
                let date = read_time(text, template)?.date();
                Some((date - NaiveDate::from_ymd_opt(1970, 1, 1).expect("epoch")).num_days() as i32)
            }
            _ => None,
        });
    }
    Ok(Arc::new(Date32Array::from(out)))
}

/// `to_timestamp(text, template)`, as a wall time.
pub fn to_timestamp(args: &[ArrayRef]) -> Result<ArrayRef> {
    let (texts, templates) = (args[0].as_string::<i32>(), args[1].as_string::<i32>());
    let mut out = Vec::with_capacity(texts.len());
    for (text, template) in texts.iter().zip(templates.iter()) {
        out.push(match (text, template) {
            (Some(text), Some(template)) => {
                Some(read_time(text, template)?.and_utc().timestamp_micros())
            }
            _ => None,
        });
    }
    Ok(Arc::new(TimestampMicrosecondArray::from(out)))
}

/// `to_char(number, template)`: `9` a digit or a blank, `0` a digit, `.` / `D` the decimal
/// point, `,` / `G` a group separator, `S` / `MI` / `PL` / `SG` / `PR` the sign, `FM` no
/// padding; a number too wide for the template is `#`s.
pub fn number_to_char(args: &[ArrayRef]) -> Result<ArrayRef> {
    let numbers: &Float64Array = args[0].as_primitive();
    let templates = args[1].as_string::<i32>();
    let mut out = Vec::with_capacity(numbers.len());
    for row in 0..numbers.len() {
        if numbers.is_null(row) || templates.is_null(row) {
            out.push(None);
            continue;
        }
        out.push(Some(format_number(
            numbers.value(row),
            templates.value(row),
        )?));
    }
    Ok(Arc::new(StringArray::from(out)))
}

/// One place of a number template.
#[derive(Clone, Copy, PartialEq)]
enum Place {
    /// `9` (blank when a leading zero) or `0` (always a digit).
    Digit {
        zero: bool,
    },
    Point,
    Group,
    /// Where the sign goes, and how: `S`, `MI`, `PL`, `SG`.
    Sign {
        minus: bool,
        plus: bool,
    },
    AngleBrackets,
    Text(char),
}

fn unsupported_number_word(word: &str) -> ExecError {
    ExecError::Execution(format!(
        "not supported yet: the number template word {word}"
    ))
}

fn places(template: &str) -> Result<(Vec<Place>, bool)> {
    let mut out = Vec::new();
    let mut fill = false;
    let mut rest = template;
    while let Some(c) = rest.chars().next() {
        let (place, width) = match c {
            'F' if rest.starts_with("FM") => {
                fill = true;
                rest = &rest[2..];
                continue;
            }
            '9' => (Place::Digit { zero: false }, 1),
            '0' => (Place::Digit { zero: true }, 1),
            '.' | 'D' => (Place::Point, 1),
            ',' | 'G' => (Place::Group, 1),
            'P' if rest.starts_with("PR") => (Place::AngleBrackets, 2),
            'P' if rest.starts_with("PL") => (
                Place::Sign {
                    minus: false,
                    plus: true,
                },
                2,
            ),
            'M' if rest.starts_with("MI") => (
                Place::Sign {
                    minus: true,
                    plus: false,
                },
                2,
            ),
            'S' if rest.starts_with("SG") => (
                Place::Sign {
                    minus: true,
                    plus: true,
                },
                2,
            ),
            'S' => (
                Place::Sign {
                    minus: true,
                    plus: true,
                },
                1,
            ),
            'E' if rest.starts_with("EEEE") => return Err(unsupported_number_word("EEEE")),
            'V' | 'L' => return Err(unsupported_number_word(&c.to_string())),
            'R' | 'r' if rest[1..].starts_with(['N', 'n']) => {
                return Err(unsupported_number_word("RN"));
            }
            other => (Place::Text(other), other.len_utf8()),
        };
        out.push(place);
        rest = &rest[width..];
    }
    Ok((out, fill))
}

fn format_number(value: f64, template: &str) -> Result<String> {
    if !value.is_finite() {
        return Err(ExecError::Execution(format!(
            "to_char cannot write {value}"
        )));
    }
    let (places, fill) = places(template)?;
    // `S` before the digits is anchored to the number, as the implicit sign is, and writes
    // `+` for a positive one.
    let mut places = places;
    let first_digit = places.iter().position(|p| matches!(p, Place::Digit { .. }));
    let s_sign = Place::Sign {
        minus: true,
        plus: true,
    };
    let anchored = match places.iter().position(|p| *p == s_sign) {
        Some(s) if first_digit.is_none_or(|d| s < d) => {
            places.remove(s);
            true
        }
        _ => false,
    };
    let point = places
        .iter()
        .position(|p| *p == Place::Point)
        .unwrap_or(places.len());
    let is_digit = |p: &&Place| matches!(p, Place::Digit { .. });
    let whole_places = places[..point].iter().filter(is_digit).count();
    let fraction_places = places[point..].iter().filter(is_digit).count();
    let written = format!("{:.*}", fraction_places, value.abs());
    let (whole, fraction) = written.split_once('.').unwrap_or((&written, ""));
    let whole = whole.trim_start_matches('0');
    let negative = value < 0.0 && written.chars().any(|c| matches!(c, '1'..='9'));
    let overflow = whole.len() > whole_places;
    let explicit_sign = places
        .iter()
        .any(|p| matches!(p, Place::Sign { .. } | Place::AngleBrackets));
    // The whole part's digits, right-aligned under its places; a leading `0` place forces
    // zeros from there on.
    let first_zero = places[..point]
        .iter()
        .position(|p| *p == Place::Digit { zero: true });
    let mut whole_digits = vec![None; whole_places];
    for (slot, d) in whole_digits.iter_mut().rev().zip(whole.chars().rev()) {
        *slot = Some(d);
    }
    let mut seen = 0;
    for (i, place) in places[..point].iter().enumerate() {
        if let Place::Digit { .. } = place {
            if first_zero.is_some_and(|z| i >= z) && whole_digits[seen].is_none() {
                whole_digits[seen] = Some('0');
            }
            seen += 1;
        }
    }
    if fraction_places == 0 && whole_places > 0 && whole_digits.iter().all(Option::is_none) {
        whole_digits[whole_places - 1] = Some('0');
    }
    // Cells: None is a blank (a space, or nothing under FM).
    let mut cells: Vec<Option<String>> = Vec::new();
    let mut started = false;
    let mut whole_seen = 0;
    let mut fraction_chars = fraction.chars();
    let mut trailing_nines = 0;
    let mut implicit_sign = !explicit_sign;
    let sign_cell = match (negative, anchored) {
        (true, _) => Some("-".to_string()),
        (false, true) => Some("+".to_string()),
        (false, false) => None,
    };
    for (i, place) in places.iter().enumerate() {
        let in_fraction = i > point;
        match *place {
            Place::Digit { zero } if in_fraction => {
                let d = fraction_chars.next().unwrap_or('0');
                trailing_nines = if !zero && d == '0' {
                    trailing_nines + 1
                } else {
                    0
                };
                cells.push(Some(if overflow { '#' } else { d }.to_string()));
            }
            Place::Digit { .. } => {
                let d = whole_digits[whole_seen];
                whole_seen += 1;
                if overflow {
                    cells.push(Some("#".into()));
                    continue;
                }
                if d.is_some() && implicit_sign {
                    cells.push(sign_cell.clone());
                    implicit_sign = false;
                }
                started |= d.is_some();
                cells.push(d.map(String::from));
            }
            Place::Point => {
                if implicit_sign {
                    cells.push(sign_cell.clone());
                    implicit_sign = false;
                }
                cells.push(Some(".".into()));
            }
            Place::Group => {
                trailing_nines = 0;
                cells.push(started.then(|| ",".to_string()));
            }
            Place::Sign { minus, plus } => {
                trailing_nines = 0;
                cells.push(match (negative, minus, plus) {
                    (true, true, _) => Some("-".into()),
                    (false, _, true) => Some("+".into()),
                    _ => None,
                });
            }
            Place::AngleBrackets => {}
            Place::Text(c) => {
                trailing_nines = 0;
                cells.push(Some(c.to_string()));
            }
        }
    }
    if implicit_sign {
        cells.insert(0, sign_cell.clone());
    }
    if fill {
        cells.truncate(cells.len() - trailing_nines);
    }
    let mut text: String = cells
        .into_iter()
        .filter_map(|cell| match (cell, fill) {
            (Some(text), _) => Some(text),
            (None, false) => Some(" ".to_string()),
            (None, true) => None,
        })
        .collect();
    if places.contains(&Place::AngleBrackets) {
        text = match (negative, fill) {
            (true, _) => format!("<{}>", text.trim_start()),
            (false, false) => format!(" {text} "),
            (false, true) => text,
        };
    }
    Ok(text)
}
