//! Scalar functions over whole arrays: math, strings, comparisons and dates.

use std::fmt::Write as _;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Date32Array, Float64Array, Int64Array, StringArray,
    TimestampMicrosecondArray,
};
use arrow::compute::kernels::zip::zip;
use arrow::compute::{cast, is_null, not};
use arrow::datatypes::{DataType, Date32Type, Float64Type, Int64Type, TimestampMicrosecondType};
use chrono::{Datelike, NaiveDate, NaiveDateTime, NaiveTime};
use pondra_planner::{BitwiseOp, DatePart};

use crate::{ExecError, Result};

fn fail(message: impl Into<String>) -> ExecError {
    ExecError::Execution(message.into())
}

/// The error a math function gives for an argument outside its domain, and the domain.
pub type Domain = (&'static str, fn(f64) -> bool);

/// A DOUBLE function of one argument; `check` rejects arguments outside its domain.
pub fn math(value: &ArrayRef, f: fn(f64) -> f64, check: Option<Domain>) -> Result<ArrayRef> {
    let values = value.as_primitive::<Float64Type>();
    let mut out = Vec::with_capacity(values.len());
    for v in values.iter() {
        if let (Some(v), Some((message, ok))) = (v, check)
            && !ok(v)
        {
            return Err(fail(message));
        }
        out.push(v.map(f));
    }
    Ok(Arc::new(Float64Array::from(out)))
}

pub fn power(base: &ArrayRef, exponent: &ArrayRef) -> Result<ArrayRef> {
    let (b, e) = (
        base.as_primitive::<Float64Type>(),
        exponent.as_primitive::<Float64Type>(),
    );
    let out: Float64Array = b
        .iter()
        .zip(e.iter())
        .map(|(b, e)| Some(b?.powf(e?)))
        .collect();
    Ok(Arc::new(out))
}

/// A bitwise operator on two integer arrays of one type.
pub fn bitwise(left: &ArrayRef, right: &ArrayRef, op: BitwiseOp) -> Result<ArrayRef> {
    use arrow::compute::kernels::bitwise as b;
    macro_rules! apply {
        ($t:ty) => {{
            let (l, r) = (left.as_primitive::<$t>(), right.as_primitive::<$t>());
            Arc::new(match op {
                BitwiseOp::And => b::bitwise_and(l, r)?,
                BitwiseOp::Or => b::bitwise_or(l, r)?,
                BitwiseOp::Xor => b::bitwise_xor(l, r)?,
                BitwiseOp::ShiftLeft => b::bitwise_shift_left(l, r)?,
                BitwiseOp::ShiftRight => b::bitwise_shift_right(l, r)?,
            }) as ArrayRef
        }};
    }
    Ok(match left.data_type() {
        DataType::Int32 => apply!(arrow::datatypes::Int32Type),
        _ => apply!(Int64Type),
    })
}

/// Each list of integers (INTEGER or BIGINT) folded by `op`, NULLs passed over.
pub fn bit_fold(lists: &ArrayRef, op: BitwiseOp) -> Result<ArrayRef> {
    let list = lists.as_list::<i32>();
    let values = cast(list.values(), &DataType::Int64)?;
    let values = values.as_primitive::<Int64Type>();
    let offsets = list.value_offsets();
    let folded: Int64Array = (0..list.len())
        .map(|row| {
            if list.is_null(row) {
                return None;
            }
            let range = offsets[row] as usize..offsets[row + 1] as usize;
            let present = range
                .filter(|&i| values.is_valid(i))
                .map(|i| values.value(i));
            present.reduce(|a, b| match op {
                BitwiseOp::And => a & b,
                BitwiseOp::Or => a | b,
                _ => a ^ b,
            })
        })
        .collect();
    let item = match lists.data_type() {
        DataType::List(item) => item.data_type().clone(),
        _ => DataType::Int64,
    };
    Ok(cast(&folded, &item)?)
}

/// `ceil` / `floor`: integers are already whole.
pub fn round_to_whole(value: &ArrayRef, up: bool) -> Result<ArrayRef> {
    match value.data_type() {
        DataType::Float64 => math(value, if up { f64::ceil } else { f64::floor }, None),
        _ => Ok(value.clone()),
    }
}

/// A string function of the strings in `args[0]` and, per row, the other arguments.
fn strings_map(
    args: &[ArrayRef],
    f: impl Fn(&str, &[Option<&str>], &[Option<i64>]) -> Result<Option<String>>,
) -> Result<ArrayRef> {
    let first = args[0].as_string::<i32>();
    let texts: Vec<_> = args[1..]
        .iter()
        .filter(|a| a.data_type() == &DataType::Utf8)
        .map(|a| a.as_string::<i32>())
        .collect();
    let ints: Vec<_> = args[1..]
        .iter()
        .filter(|a| a.data_type() == &DataType::Int64)
        .map(|a| a.as_primitive::<Int64Type>())
        .collect();
    let mut made = StringSize::default();
    let out = (0..first.len())
        .map(|row| {
            if first.is_null(row) {
                return Ok(None);
            }
            let t: Vec<Option<&str>> = texts
                .iter()
                .map(|a| a.is_valid(row).then(|| a.value(row)))
                .collect();
            let n: Vec<Option<i64>> = ints
                .iter()
                .map(|a| a.is_valid(row).then(|| a.value(row)))
                .collect();
            let value = f(first.value(row), &t, &n)?;
            if let Some(value) = &value {
                made.add(value.len())?;
            }
            Ok(value)
        })
        .collect::<Result<StringArray>>()?;
    Ok(Arc::new(out))
}

/// The bytes of strings a function has made so far, checked as they grow: within the memory
/// limit, and within what one Arrow string array can hold.
#[derive(Default)]
pub struct StringSize {
    bytes: usize,
    checked: usize,
}

/// A string function's output is checked against the memory limit each time it grows by this.
const CHECK_EVERY: usize = 16 << 20;

impl StringSize {
    pub fn add(&mut self, bytes: usize) -> Result<()> {
        self.bytes += bytes;
        if self.bytes >= self.checked + CHECK_EVERY {
            crate::control::check_current()?;
            check_string_bytes(self.bytes as u128)?;
            self.checked = self.bytes;
        }
        Ok(())
    }
}

/// An error unless strings of `bytes` in all may be made now: one Arrow string array holds
/// at most 2 GiB, and the statement's memory limit must have room.
pub fn check_string_bytes(bytes: u128) -> Result<()> {
    if bytes > i32::MAX as u128 {
        return Err(fail(format!(
            "the strings would take {bytes} bytes; a column's strings in one batch may take \
             at most {} bytes",
            i32::MAX
        )));
    }
    crate::control::check_allocation(bytes as usize)
}

/// Removes the characters of the second argument (spaces without one) from either end.
pub fn trim(args: &[ArrayRef], leading: bool, trailing: bool) -> Result<ArrayRef> {
    strings_map(args, |s, t, _| {
        let characters = match t.first() {
            None => " ",
            Some(None) => return Ok(None),
            Some(Some(characters)) => characters,
        };
        let trimmed = |c: char| characters.contains(c);
        Ok(Some(match (leading, trailing) {
            (true, true) => s.trim_matches(trimmed).to_string(),
            (true, false) => s.trim_start_matches(trimmed).to_string(),
            _ => s.trim_end_matches(trimmed).to_string(),
        }))
    })
}

pub fn replace(args: &[ArrayRef]) -> Result<ArrayRef> {
    strings_map(args, |s, t, _| match (t[0], t[1]) {
        (Some(""), Some(_)) => Ok(Some(s.to_string())),
        (Some(from), Some(to)) => {
            // At most every `from` replaced: check before making it.
            let most = (s.len() / from.len()) as u128 * to.len() as u128 + s.len() as u128;
            if to.len() > from.len() {
                check_string_bytes(most)?;
            }
            Ok(Some(s.replace(from, to)))
        }
        _ => Ok(None),
    })
}

pub fn left_right(args: &[ArrayRef], left: bool) -> Result<ArrayRef> {
    strings_map(args, |s, _, n| {
        let Some(n) = n[0] else { return Ok(None) };
        let chars: Vec<char> = s.chars().collect();
        let len = chars.len() as i64;
        let take = if n >= 0 { n.min(len) } else { (len + n).max(0) } as usize;
        Ok(Some(if left {
            chars[..take].iter().collect()
        } else {
            chars[chars.len() - take..].iter().collect()
        }))
    })
}

/// `lpad` / `rpad(s, length, fill)`: `s` cut to `length` characters, or filled on the left
/// (right) with `fill` repeated; as PostgreSQL, an empty fill leaves `s` as it is.
pub fn pad(args: &[ArrayRef], left: bool) -> Result<ArrayRef> {
    strings_map(args, |s, texts, n| {
        let (Some(fill), Some(length)) = (texts[0], n[0]) else {
            return Ok(None);
        };
        let length = length.max(0) as usize;
        // The result is at most `length` characters of at most 4 bytes each.
        check_string_bytes(length as u128 * 4)?;
        let chars = s.chars().count();
        if chars >= length || fill.is_empty() {
            return Ok(Some(s.chars().take(length).collect()));
        }
        let filling: String = fill.chars().cycle().take(length - chars).collect();
        Ok(Some(match left {
            true => filling + s,
            false => format!("{s}{filling}"),
        }))
    })
}

/// `split_part(s, delimiter, n)`: the n-th field of `s` split at `delimiter`, counted from
/// the end when negative; empty past the last. An empty delimiter makes `s` one field.
pub fn split_part(args: &[ArrayRef]) -> Result<ArrayRef> {
    strings_map(args, |s, texts, n| {
        let (Some(delimiter), Some(field)) = (texts[0], n[0]) else {
            return Ok(None);
        };
        if field == 0 {
            return Err(ExecError::Execution(
                "split_part: field position must not be zero".into(),
            ));
        }
        let fields: Vec<&str> = match delimiter.is_empty() {
            true => vec![s],
            false => s.split(delimiter).collect(),
        };
        let index = match field > 0 {
            true => usize::try_from(field - 1).ok(),
            false => fields.len().checked_sub(field.unsigned_abs() as usize),
        };
        Ok(Some(
            index.and_then(|i| fields.get(i)).unwrap_or(&"").to_string(),
        ))
    })
}

pub fn reverse(args: &[ArrayRef]) -> Result<ArrayRef> {
    strings_map(args, |s, _, _| Ok(Some(s.chars().rev().collect())))
}

pub fn repeat(args: &[ArrayRef]) -> Result<ArrayRef> {
    // The whole result's size is known before any of it is made.
    let (strings, counts) = (
        args[0].as_string::<i32>(),
        args[1].as_primitive::<Int64Type>(),
    );
    let total: u128 = (0..strings.len())
        .filter(|&row| strings.is_valid(row) && counts.is_valid(row))
        .map(|row| strings.value(row).len() as u128 * counts.value(row).max(0) as u128)
        .sum();
    check_string_bytes(total)?;
    strings_map(args, |s, _, n| {
        let Some(count) = n[0] else { return Ok(None) };
        let count = count.max(0) as usize;
        check_string_bytes(s.len() as u128 * count as u128)?;
        Ok(Some(s.repeat(count)))
    })
}

/// `concat`: NULLs count as empty strings.
pub fn concat(args: &[ArrayRef]) -> Result<ArrayRef> {
    let rows = args.first().map_or(0, |a| a.len());
    let strings: Vec<_> = args.iter().map(|a| a.as_string::<i32>()).collect();
    let bytes: usize = strings.iter().map(|s| string_bytes(s)).sum();
    check_string_bytes(bytes as u128)?;
    let out: StringArray = (0..rows)
        .map(|row| {
            Some(
                strings
                    .iter()
                    .filter(|s| s.is_valid(row))
                    .map(|s| s.value(row))
                    .collect::<String>(),
            )
        })
        .collect();
    Ok(Arc::new(out))
}

/// The bytes of the strings of `strings`, slice or not.
pub fn string_bytes(strings: &arrow::array::StringArray) -> usize {
    let offsets = strings.value_offsets();
    (offsets[offsets.len() - 1] - offsets[0]) as usize
}

/// 1-based position of `args[1]` in `args[0]`, in characters; 0 when absent.
pub fn position(args: &[ArrayRef]) -> Result<ArrayRef> {
    let (hay, needle) = (args[0].as_string::<i32>(), args[1].as_string::<i32>());
    let out: Int64Array = hay
        .iter()
        .zip(needle.iter())
        .map(|(h, n)| {
            let (h, n) = (h?, n?);
            Some(
                h.find(n)
                    .map_or(0, |byte| h[..byte].chars().count() as i64 + 1),
            )
        })
        .collect();
    Ok(Arc::new(out))
}

pub fn starts_with(args: &[ArrayRef]) -> Result<ArrayRef> {
    let (s, p) = (args[0].as_string::<i32>(), args[1].as_string::<i32>());
    let out: BooleanArray = s
        .iter()
        .zip(p.iter())
        .map(|(s, p)| Some(s?.starts_with(p?)))
        .collect();
    Ok(Arc::new(out))
}

/// The largest (or smallest) non-NULL value of each row.
pub fn extreme(args: &[ArrayRef], greatest: bool) -> Result<ArrayRef> {
    let mut result = args[0].clone();
    for next in &args[1..] {
        // Nested values (lists, structs, maps) compare as the comparison operators do.
        let op = match greatest {
            true => pondra_planner::BinaryOp::Gt,
            false => pondra_planner::BinaryOp::Lt,
        };
        let better = crate::expr::compare(op, next, &result)?;
        // Take `next` where it is better, or where the result so far is NULL.
        let better = nulls_as_false(better.as_boolean());
        let result_null = is_null(&result)?;
        let take_next = arrow::compute::or(&better, &result_null)?;
        let next_null = is_null(next)?;
        let take_next = arrow::compute::and(&take_next, &not(&next_null)?)?;
        result = zip(&take_next, next, &result)?;
    }
    Ok(result)
}

/// The mask with NULL read as false (a NULL condition does not hold).
pub fn nulls_as_false(mask: &BooleanArray) -> BooleanArray {
    if mask.null_count() > 0 {
        arrow::compute::prep_null_mask_filter(mask)
    } else {
        mask.clone()
    }
}

fn date_of_day(days: i32) -> Result<NaiveDate> {
    days.checked_add(719_163)
        .and_then(NaiveDate::from_num_days_from_ce_opt)
        .ok_or_else(|| {
            fail(format!(
                "the date {days} days from 1970-01-01 is out of range"
            ))
        })
}

fn day_of_date(date: NaiveDate) -> i32 {
    date.num_days_from_ce() - 719_163
}

fn truncate_date(date: NaiveDate, part: DatePart) -> Result<NaiveDate> {
    let first = |y, m| {
        NaiveDate::from_ymd_opt(y, m, 1)
            .ok_or_else(|| fail(format!("date_trunc: the year {y} is out of range")))
    };
    match part {
        DatePart::Year => first(date.year(), 1),
        DatePart::Quarter => first(date.year(), (date.month0() / 3) * 3 + 1),
        DatePart::Month => first(date.year(), date.month()),
        DatePart::Week => {
            Ok(date - chrono::Duration::days(date.weekday().num_days_from_monday() as i64))
        }
        // The ISO year starts on the Monday of its first week.
        DatePart::IsoYear => {
            let year = date.iso_week().year();
            NaiveDate::from_isoywd_opt(year, 1, chrono::Weekday::Mon)
                .ok_or_else(|| fail(format!("date_trunc: the ISO year {year} is out of range")))
        }
        DatePart::Decade => first(date.year() - date.year().rem_euclid(10), 1),
        DatePart::Century => first(date.year() - (date.year() - 1).rem_euclid(100), 1),
        DatePart::Millennium => first(date.year() - (date.year() - 1).rem_euclid(1000), 1),
        DatePart::Day
        | DatePart::Hour
        | DatePart::Minute
        | DatePart::Second
        | DatePart::Millisecond
        | DatePart::Microsecond => Ok(date),
        other => Err(fail(format!("date_trunc cannot truncate to {other:?}"))),
    }
}

pub fn date_trunc(value: &ArrayRef, part: DatePart) -> Result<ArrayRef> {
    match value.data_type() {
        DataType::Date32 => {
            let dates = value.as_primitive::<Date32Type>();
            let mut out = Vec::with_capacity(dates.len());
            for d in dates.iter() {
                out.push(match d {
                    Some(d) => Some(day_of_date(truncate_date(date_of_day(d)?, part)?)),
                    None => None,
                });
            }
            Ok(Arc::new(Date32Array::from(out)))
        }
        DataType::Timestamp(..) => {
            let stamps = value.as_primitive::<TimestampMicrosecondType>();
            let mut out = Vec::with_capacity(stamps.len());
            for t in stamps.iter() {
                // An infinity is its own truncation (ADR 0062).
                let infinity = crate::infinite_times::TIMESTAMP_INFINITY;
                out.push(match t {
                    Some(t) if t.unsigned_abs() == infinity.unsigned_abs() => Some(t),
                    Some(t) => Some(truncate_stamp(t, part)?),
                    None => None,
                });
            }
            Ok(Arc::new(TimestampMicrosecondArray::from(out)))
        }
        other => Err(fail(format!("date_trunc of {other}"))),
    }
}

/// A timestamp in microseconds as a date and time; an error past the years chrono reaches.
pub(crate) fn stamp(micros: i64) -> Result<NaiveDateTime> {
    chrono::DateTime::from_timestamp_micros(micros)
        .map(|t| t.naive_utc())
        .ok_or_else(|| {
            fail(format!(
                "the timestamp {micros} microseconds from 1970 is out of range"
            ))
        })
}

fn truncate_stamp(micros: i64, part: DatePart) -> Result<i64> {
    let unit: i64 = match part {
        DatePart::Hour => 3_600_000_000,
        DatePart::Minute => 60_000_000,
        DatePart::Second => 1_000_000,
        DatePart::Millisecond => 1_000,
        DatePart::Microsecond => 1,
        _ => {
            let day = truncate_date(stamp(micros)?.date(), part)?;
            return Ok(day.and_time(NaiveTime::MIN).and_utc().timestamp_micros());
        }
    };
    Ok(micros - micros.rem_euclid(unit))
}

/// Boundaries of `part` crossed from `a` to `b` (both timestamps in microseconds).
pub fn date_diff(a: &ArrayRef, b: &ArrayRef, part: DatePart) -> Result<ArrayRef> {
    let (a, b) = (
        &crate::infinite_times::finite_only(a),
        &crate::infinite_times::finite_only(b),
    );
    let (a, b) = (
        a.as_primitive::<TimestampMicrosecondType>(),
        b.as_primitive::<TimestampMicrosecondType>(),
    );
    let mut out = Vec::with_capacity(a.len());
    for (x, y) in a.iter().zip(b.iter()) {
        let (Some(x), Some(y)) = (x, y) else {
            out.push(None);
            continue;
        };
        let (tx, ty) = (stamp(x)?, stamp(y)?);
        let months = |t: &NaiveDateTime| t.year() as i64 * 12 + t.month0() as i64;
        let value = match part {
            DatePart::Year => (ty.year() - tx.year()) as i64,
            DatePart::Quarter => months(&ty) / 3 - months(&tx) / 3,
            DatePart::Month => months(&ty) - months(&tx),
            DatePart::Week => {
                (day_of_date(ty.date()) as i64 - day_of_date(tx.date()) as i64).div_euclid(7)
            }
            DatePart::Day | DatePart::DayOfWeek | DatePart::IsoDayOfWeek | DatePart::DayOfYear => {
                day_of_date(ty.date()) as i64 - day_of_date(tx.date()) as i64
            }
            DatePart::Hour => (y.div_euclid(3_600_000_000)) - (x.div_euclid(3_600_000_000)),
            DatePart::Minute => (y.div_euclid(60_000_000)) - (x.div_euclid(60_000_000)),
            DatePart::Second => (y.div_euclid(1_000_000)) - (x.div_euclid(1_000_000)),
            DatePart::Millisecond => y.div_euclid(1_000) - x.div_euclid(1_000),
            DatePart::Microsecond => y - x,
            DatePart::IsoYear => (ty.iso_week().year() - tx.iso_week().year()) as i64,
            DatePart::Decade => (ty.year().div_euclid(10) - tx.year().div_euclid(10)) as i64,
            DatePart::Century => (ty.year().div_euclid(100) - tx.year().div_euclid(100)) as i64,
            DatePart::Millennium => {
                (ty.year().div_euclid(1000) - tx.year().div_euclid(1000)) as i64
            }
        };
        out.push(Some(value));
    }
    Ok(Arc::new(Int64Array::from(out)))
}

/// Regular expressions by pattern text, compiled once per distinct pattern in a batch.
/// The compiled regular expression of the last pattern asked for: a column's patterns are
/// most often one constant.
pub(crate) struct Patterns {
    insensitive: bool,
    last: Option<(String, regex::Regex)>,
}

impl Patterns {
    pub(crate) fn new(insensitive: bool) -> Patterns {
        Patterns {
            insensitive,
            last: None,
        }
    }

    pub(crate) fn get(&mut self, pattern: &str) -> Result<&regex::Regex> {
        if self.last.as_ref().is_none_or(|(p, _)| p != pattern) {
            let compiled = compile_regex(pattern, self.insensitive)?;
            self.last = Some((pattern.to_string(), compiled));
        }
        Ok(&self.last.as_ref().expect("just set").1)
    }
}

/// The longest regular expression compiled, in bytes: a longer one is refused before its
/// parse, which no cancel or timeout could stop.
pub const MAX_PATTERN_BYTES: usize = 1 << 20;

/// `pattern` compiled; an error quoting the pattern cut short, as every error quoting input.
pub(crate) fn compile_regex(pattern: &str, insensitive: bool) -> Result<regex::Regex> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(fail(format!(
            "invalid regular expression {}: longer than the {MAX_PATTERN_BYTES} bytes a pattern may have",
            crate::quoted_excerpt(pattern),
        )));
    }
    regex::RegexBuilder::new(pattern)
        .case_insensitive(insensitive)
        .build()
        .map_err(|e| {
            let reason = match e {
                regex::Error::Syntax(_) => "invalid syntax".to_string(),
                other => other.to_string(),
            };
            fail(format!(
                "invalid regular expression {}: {reason}",
                crate::quoted_excerpt(pattern)
            ))
        })
}

pub fn regexp_match(args: &[ArrayRef], insensitive: bool) -> Result<ArrayRef> {
    let (s, p) = (args[0].as_string::<i32>(), args[1].as_string::<i32>());
    let mut patterns = Patterns {
        insensitive,
        last: None,
    };
    let mut out = Vec::with_capacity(s.len());
    for (value, pattern) in s.iter().zip(p.iter()) {
        out.push(match (value, pattern) {
            (Some(v), Some(p)) => Some(patterns.get(p)?.is_match(v)),
            _ => None,
        });
    }
    Ok(Arc::new(BooleanArray::from(out)))
}

/// `regexp_extract(s, pattern, group)` (DuckDB): the first match's group (0: the whole
/// match); empty when nothing matches or the group took no part.
pub fn regexp_extract(args: &[ArrayRef]) -> Result<ArrayRef> {
    let (s, p) = (args[0].as_string::<i32>(), args[1].as_string::<i32>());
    let groups = args[2].as_primitive::<Int64Type>();
    let mut patterns = Patterns {
        insensitive: false,
        last: None,
    };
    let mut out = Vec::with_capacity(s.len());
    for row in 0..s.len() {
        if s.is_null(row) || p.is_null(row) || groups.is_null(row) {
            out.push(None);
            continue;
        }
        let regex = patterns.get(p.value(row))?;
        let group = capture_group(regex, groups.value(row), "regexp_extract")?;
        let found = regex.captures(s.value(row)).and_then(|c| c.get(group));
        out.push(Some(found.map_or("", |m| m.as_str()).to_string()));
    }
    Ok(Arc::new(StringArray::from(out)))
}

/// The capture group `group` of `regex`, or an error naming `function`.
fn capture_group(regex: &regex::Regex, group: i64, function: &str) -> Result<usize> {
    usize::try_from(group)
        .ok()
        .filter(|g| *g < regex.captures_len())
        .ok_or_else(|| fail(format!("{function}: the pattern has no group {group}")))
}

/// `regexp_extract_all(s, pattern, group)` (DuckDB): the group of every non-overlapping match,
/// as a list of text.
pub fn regexp_extract_all(args: &[ArrayRef]) -> Result<ArrayRef> {
    use arrow::array::{ListBuilder, StringBuilder};
    let (s, p) = (args[0].as_string::<i32>(), args[1].as_string::<i32>());
    let groups = args[2].as_primitive::<Int64Type>();
    let mut patterns = Patterns {
        insensitive: false,
        last: None,
    };
    let mut out = ListBuilder::new(StringBuilder::new());
    let mut made = StringSize::default();
    for row in 0..s.len() {
        if s.is_null(row) || p.is_null(row) || groups.is_null(row) {
            out.append(false);
            continue;
        }
        let regex = patterns.get(p.value(row))?;
        let group = capture_group(regex, groups.value(row), "regexp_extract_all")?;
        for captures in regex.captures_iter(s.value(row)) {
            let found = captures.get(group).map_or("", |m| m.as_str());
            made.add(found.len())?;
            out.values().append_value(found);
        }
        out.append(true);
    }
    Ok(Arc::new(out.finish()))
}

/// `string_split(s, separator)` (DuckDB), `string_to_array` (PostgreSQL): the pieces between
/// separators, empty ones included; an empty separator splits nothing.
pub fn string_split(args: &[ArrayRef]) -> Result<ArrayRef> {
    use arrow::array::{ListBuilder, StringBuilder};
    let (s, separators) = (args[0].as_string::<i32>(), args[1].as_string::<i32>());
    let mut out = ListBuilder::new(StringBuilder::new());
    let mut made = StringSize::default();
    for row in 0..s.len() {
        if s.is_null(row) || separators.is_null(row) {
            out.append(false);
            continue;
        }
        let (text, separator) = (s.value(row), separators.value(row));
        made.add(text.len())?;
        match separator.is_empty() {
            true => out.values().append_value(text),
            false => text
                .split(separator)
                .for_each(|piece| out.values().append_value(piece)),
        }
        out.append(true);
    }
    Ok(Arc::new(out.finish()))
}

pub fn regexp_replace(args: &[ArrayRef], global: bool, insensitive: bool) -> Result<ArrayRef> {
    let s = args[0].as_string::<i32>();
    let p = args[1].as_string::<i32>();
    let r = args[2].as_string::<i32>();
    let mut patterns = Patterns {
        insensitive,
        last: None,
    };
    let mut out = Vec::with_capacity(s.len());
    for row in 0..s.len() {
        if s.is_null(row) || p.is_null(row) || r.is_null(row) {
            out.push(None);
            continue;
        }
        let regex = patterns.get(p.value(row))?;
        // SQL writes group references as \1; the regex crate as ${1}.
        let replacement = r.value(row).replace('$', "$$");
        let replacement = regex_group_references(&replacement);
        let replaced = if global {
            regex.replace_all(s.value(row), replacement.as_str())
        } else {
            regex.replace(s.value(row), replacement.as_str())
        };
        out.push(Some(replaced.into_owned()));
    }
    Ok(Arc::new(StringArray::from(out)))
}

/// `\1` to `${1}`.
fn regex_group_references(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()).copied()
        {
            chars.next();
            out.push_str(&format!("${{{d}}}"));
            continue;
        }
        out.push(c);
    }
    out
}

/// `strftime(timestamp, format)` (DuckDB): the timestamp written by a C `strftime` format; a
/// format chrono cannot follow is an error, not a panic.
pub fn strftime(args: &[ArrayRef]) -> Result<ArrayRef> {
    use arrow::datatypes::TimestampMicrosecondType;
    let times = args[0].as_primitive::<TimestampMicrosecondType>();
    let formats = args[1].as_string::<i32>();
    let mut made = StringSize::default();
    let out = (0..times.len())
        .map(|row| {
            if times.is_null(row) || formats.is_null(row) {
                return Ok(None);
            }
            let format = formats.value(row);
            let items = chrono::format::StrftimeItems::new(format)
                .parse()
                .map_err(|_| fail(format!("strftime: the format {format:?} is not valid")))?;
            let Some(time) = chrono::DateTime::from_timestamp_micros(times.value(row)) else {
                return Ok(None);
            };
            // Timestamps carry no zone: `%z` and `%Z` write UTC's.
            let mut text = String::new();
            write!(text, "{}", time.format_with_items(items.iter()))
                .map_err(|_| fail(format!("strftime: the format {format:?} is not valid")))?;
            made.add(text.len())?;
            Ok(Some(text))
        })
        .collect::<Result<StringArray>>()?;
    Ok(Arc::new(out))
}
