//! Literals: numbers, strings and booleans given their types, and intervals read from their
//! text.

use sqlparser::ast::{self, Value};

use crate::scalar::ScalarValue;
use crate::{Result, bind_err, unsupported};

/// The typed value of a literal: integers are INTEGER when they fit and BIGINT otherwise,
/// numbers with a point are exact DECIMALs, numbers with an exponent are DOUBLEs.
pub fn literal(value: &Value) -> Result<ScalarValue> {
    Ok(match value {
        Value::Number(text, _) => number_literal(text)?,
        Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => ScalarValue::Utf8(s.clone()),
        // Postgres's and DuckDB's `$$text$$` and `$tag$text$tag$`: text taken as written.
        Value::DollarQuotedString(s) => ScalarValue::Utf8(s.value.clone()),
        Value::Boolean(b) => ScalarValue::Boolean(*b),
        Value::Null => ScalarValue::Null,
        other => return Err(unsupported!("the literal {other}")),
    })
}

pub(super) fn number_literal(text: &str) -> Result<ScalarValue> {
    // `5_000`: underscores between digits group them, as PostgreSQL 16 and DuckDB read them.
    if text.contains('_') {
        let bytes = text.as_bytes();
        let grouping = bytes.iter().enumerate().all(|(i, &b)| {
            b != b'_'
                || (i > 0
                    && bytes[i - 1].is_ascii_digit()
                    && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
        });
        if !grouping {
            return Err(bind_err!("invalid number {text}"));
        }
        return number_literal(&text.replace('_', ""));
    }
    if let Ok(v) = text.parse::<i64>() {
        return Ok(match i32::try_from(v) {
            Ok(small) => ScalarValue::Int32(small),
            Err(_) => ScalarValue::Int64(v),
        });
    }
    if !text.contains(['e', 'E'])
        && let Some((whole, fraction)) = text.split_once('.').or(Some((text, "")))
    {
        let digits = format!("{whole}{fraction}");
        let scale = fraction.len();
        let precision = digits.trim_start_matches('0').len().max(scale).max(1);
        if precision <= 38
            && let Ok(value) = digits.parse::<i128>()
        {
            return Ok(ScalarValue::Decimal {
                value,
                precision: precision as u8,
                scale: scale as i8,
            });
        }
    }
    text.parse::<f64>()
        .map(ScalarValue::Float64)
        .map_err(|_| bind_err!("invalid number {text}"))
}

/// `INTERVAL '3' MONTH`, `INTERVAL '90' DAY`, `INTERVAL '1 year 2 days'`.
pub(crate) fn interval_literal(interval: &ast::Interval) -> Result<ScalarValue> {
    let text = match interval.value.as_ref() {
        ast::Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::Number(s, _) => s.clone(),
            other => return Err(bind_err!("invalid interval {other}")),
        },
        other => return Err(unsupported!("the interval {other}")),
    };
    if interval.last_field.is_some() {
        return Err(unsupported!("intervals with a range of fields"));
    }
    interval_of_text(&text, interval.leading_field.as_ref())
}

/// The interval `text` says (`'1 year 2 days'`, or a number of `leading` units).
pub(crate) fn interval_of_text(
    text: &str,
    leading: Option<&ast::DateTimeField>,
) -> Result<ScalarValue> {
    let mut parts: Vec<(i64, String)> = Vec::new();
    let mut words: Vec<&str> = text.split_whitespace().collect();
    // `'2 days ago'` is minus two days, as in both anchors.
    let ago = words.len() > 1 && words.last().is_some_and(|w| w.eq_ignore_ascii_case("ago"));
    if ago {
        words.pop();
    }
    let invalid = || bind_err!("invalid interval '{text}'");
    match (leading, words.as_slice()) {
        (Some(field), [number]) => {
            let n = number.parse::<i64>().map_err(|_| invalid())?;
            parts.push((n, field.to_string().to_lowercase()));
        }
        (None, words) if !words.is_empty() => {
            let mut rest = words;
            while let [first, tail @ ..] = rest {
                // A time of day, `12:34:56.789`, as both anchors write the time part.
                if let Some(micros) = clock_micros(first) {
                    parts.push((micros, "microsecond".into()));
                    rest = tail;
                    continue;
                }
                let [unit, tail @ ..] = tail else {
                    return Err(invalid());
                };
                let unit = unit.to_lowercase();
                match first.parse::<i64>() {
                    Ok(n) => parts.push((n, unit)),
                    Err(_) => parts.extend(fraction_of_unit(first, &unit).ok_or_else(invalid)?),
                }
                rest = tail;
            }
        }
        _ => return Err(invalid()),
    }
    if ago {
        for (n, _) in &mut parts {
            *n = -*n;
        }
    }
    let (mut months, mut days, mut nanos) = (0i64, 0i64, 0i64);
    let out_of_range = || bind_err!("interval out of range: '{text}'");
    for (n, unit) in parts {
        let (total, per_unit) = match unit.trim_end_matches('s') {
            "year" => (&mut months, 12),
            "quarter" => (&mut months, 3),
            "month" => (&mut months, 1),
            "week" => (&mut days, 7),
            "day" => (&mut days, 1),
            "hour" => (&mut nanos, 3_600_000_000_000),
            "minute" => (&mut nanos, 60_000_000_000),
            "second" => (&mut nanos, 1_000_000_000),
            "millisecond" => (&mut nanos, 1_000_000),
            "microsecond" => (&mut nanos, 1_000),
            other => return Err(bind_err!("unknown interval unit {other}")),
        };
        *total = n
            .checked_mul(per_unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(out_of_range)?;
    }
    Ok(ScalarValue::Interval {
        months: i32::try_from(months).map_err(|_| bind_err!("interval out of range"))?,
        days: i32::try_from(days).map_err(|_| bind_err!("interval out of range"))?,
        nanos,
    })
}

/// `1.5 days` and the like: the whole units, and the fraction carried down as DuckDB carries
/// it (a month is 30 days, a day 24 hours), as parts of the units below.
fn fraction_of_unit(number: &str, unit: &str) -> Option<Vec<(i64, String)>> {
    let value: f64 = number.parse().ok().filter(|v: &f64| v.is_finite())?;
    let micros_per = |unit: &str| -> Option<f64> {
        Some(match unit {
            "hour" => 3.6e9,
            "minute" => 6e7,
            "second" => 1e6,
            "millisecond" => 1e3,
            "microsecond" => 1.0,
            _ => return None,
        })
    };
    let singular = unit.trim_end_matches('s');
    let (months, days) = match singular {
        "year" => (value * 12.0, 0.0),
        "quarter" => (value * 3.0, 0.0),
        "month" => (value, 0.0),
        "week" => (0.0, value * 7.0),
        "day" => (0.0, value),
        other => {
            let micros = value * micros_per(other)?;
            return (micros.abs() < 9.2e15)
                .then(|| vec![(micros.round() as i64, "microsecond".into())]);
        }
    };
    let days = days + months.fract() * 30.0;
    let micros = days.fract() * 8.64e10;
    let fits = |v: f64| v.abs() < 2.1e9;
    (fits(months) && fits(days)).then(|| {
        vec![
            (months.trunc() as i64, "month".into()),
            (days.trunc() as i64, "day".into()),
            (micros.round() as i64, "microsecond".into()),
        ]
    })
}

/// `[-]H:MM[:SS[.ffffff]]` as microseconds; `None` for other words.
fn clock_micros(word: &str) -> Option<i64> {
    let (sign, clock) = match word.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, word.strip_prefix('+').unwrap_or(word)),
    };
    let mut fields = clock.split(':');
    let hours: i64 = fields.next()?.parse().ok()?;
    let minutes: i64 = fields.next()?.parse().ok()?;
    let seconds = fields.next().unwrap_or("0");
    if fields.next().is_some() || !(0..60).contains(&minutes) {
        return None;
    }
    let (whole, fraction) = seconds.split_once('.').unwrap_or((seconds, ""));
    let whole: i64 = whole.parse().ok()?;
    if !(0..60).contains(&whole)
        || fraction.len() > 6
        || !fraction.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let fraction: i64 = format!("{fraction:0<6}").parse().ok()?;
    let micros = ((hours * 60 + minutes) * 60 + whole)
        .checked_mul(1_000_000)?
        .checked_add(fraction)?;
    Some(sign * micros)
}
