//! More of DuckDB's text functions: `bar`, `format_bytes` (and its decimal form),
//! `string_split_regex`, `regexp_escape`, `url_encode` / `url_decode` and `to_base`.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int64Array, ListBuilder, StringArray, StringBuilder};
use arrow::datatypes::{Float64Type, Int64Type};

use pondra_planner::TextOp;

use crate::{ExecError, Result};

fn fail(message: impl Into<String>) -> ExecError {
    ExecError::Execution(message.into())
}

/// The widest bar drawn, in characters.
const MOST_BAR_WIDTH: i64 = 1000;

/// `bar(x, min, max, width)`: `x`'s place between `min` and `max` as a bar of block
/// characters, eighths included, padded with spaces to `width`.
pub fn bar(args: &[ArrayRef]) -> Result<ArrayRef> {
    let numbers: Vec<_> = args[..3]
        .iter()
        .map(|a| a.as_primitive::<Float64Type>())
        .collect();
    let widths = args[3].as_primitive::<Int64Type>();
    const EIGHTHS: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
    let mut out = Vec::with_capacity(widths.len());
    for row in 0..widths.len() {
        if numbers.iter().any(|n| n.is_null(row)) || widths.is_null(row) {
            out.push(None);
            continue;
        }
        let (x, low, high) = (
            numbers[0].value(row),
            numbers[1].value(row),
            numbers[2].value(row),
        );
        let width = widths.value(row);
        if !(1..=MOST_BAR_WIDTH).contains(&width) {
            return Err(fail(format!(
                "bar: the width must be 1 to {MOST_BAR_WIDTH}, not {width}"
            )));
        }
        if high.partial_cmp(&low) != Some(std::cmp::Ordering::Greater) {
            return Err(fail("bar: the maximum must be greater than the minimum"));
        }
        let fraction = ((x - low) / (high - low)).clamp(0.0, 1.0);
        let total = if fraction.is_nan() {
            0.0
        } else {
            fraction * width as f64
        };
        let full = total.floor() as usize;
        let mut text: String = "█".repeat(full);
        let eighth = ((total - full as f64) * 8.0).floor() as usize;
        if (full as i64) < width && eighth > 0 {
            text.push(EIGHTHS[eighth.min(7)]);
        }
        let drawn = text.chars().count();
        text.push_str(&" ".repeat(width as usize - drawn));
        out.push(Some(text));
    }
    Ok(Arc::new(StringArray::from(out)))
}

/// `format_bytes(n)`: a size in bytes in powers of 1024 (`1.5 KiB`), or of 1000 (`1.5 kB`)
/// when `decimal`; under one unit, `n bytes`.
pub fn format_bytes(sizes: &ArrayRef, decimal: bool) -> Result<ArrayRef> {
    let (base, units) = match decimal {
        true => (1000u64, ["kB", "MB", "GB", "TB", "PB", "EB"]),
        false => (1024u64, ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]),
    };
    let out: StringArray = sizes
        .as_primitive::<Int64Type>()
        .iter()
        .map(|n| {
            let n = n?;
            let magnitude = n.unsigned_abs();
            if magnitude == 1 {
                return Some(format!("{n} byte"));
            }
            if magnitude < base {
                return Some(format!("{n} bytes"));
            }
            // The largest unit not above the size; tenths cut, not rounded, as DuckDB writes.
            let mut unit = base;
            let mut name = 0;
            while magnitude / unit >= base && name + 1 < units.len() {
                unit *= base;
                name += 1;
            }
            let (whole, tenths) = (magnitude / unit, magnitude % unit * 10 / unit);
            let sign = if n < 0 { "-" } else { "" };
            Some(format!("{sign}{whole}.{tenths} {}", units[name]))
        })
        .collect();
    Ok(Arc::new(out))
}

/// `parse_formatted_bytes(s)`: a number (decimals and exponents allowed) and a unit, `B` /
/// `byte(s)`, `KB` ... `PB` (powers of 1000) or `KiB` ... `PiB` (of 1024), in any case and
/// spacing, as a count of bytes, rounded down as DuckDB does.
pub fn parse_formatted_bytes(texts: &StringArray) -> Result<ArrayRef> {
    let out = texts
        .iter()
        .map(|text| text.map(byte_count).transpose())
        .collect::<Result<Int64Array>>()?;
    Ok(Arc::new(out))
}

fn byte_count(text: &str) -> Result<i64> {
    let text = text.trim();
    let number_end = text
        .char_indices()
        .find(|&(i, c)| {
            let sign = (c == '-' || c == '+') && (i == 0 || text[..i].ends_with(['e', 'E']));
            !(c.is_ascii_digit() || c == '.' || sign || (i > 0 && (c == 'e' || c == 'E')))
        })
        .map_or(text.len(), |(i, _)| i);
    let (number, unit) = text.split_at(number_end);
    if !number.chars().any(|c| c.is_ascii_digit()) {
        return Err(ExecError::Execution(
            "Memory must have a number (e.g. 1GB)".into(),
        ));
    }
    let value: f64 = number
        .parse()
        .map_err(|_| ExecError::Execution(format!("Invalid memory limit: '{number}'")))?;
    if value < 0.0 {
        return Err(ExecError::Execution("Memory cannot be negative".into()));
    }
    let unit = unit.trim().to_ascii_lowercase();
    let multiplier: f64 = match unit.as_str() {
        "b" | "byte" | "bytes" => 1.0,
        "kb" | "kilobyte" | "kilobytes" => 1e3,
        "mb" | "megabyte" | "megabytes" => 1e6,
        "gb" | "gigabyte" | "gigabytes" => 1e9,
        "tb" | "terabyte" | "terabytes" => 1e12,
        "pb" | "petabyte" | "petabytes" => 1e15,
        "kib" => 1024.0,
        "mib" => 1024f64.powi(2),
        "gib" => 1024f64.powi(3),
        "tib" => 1024f64.powi(4),
        "pib" => 1024f64.powi(5),
        _ => {
            return Err(ExecError::Execution(format!(
                "Unknown unit for memory: '{unit}' (expected: KB, MB, GB, TB for 1000^i units \
                 or KiB, MiB, GiB, TiB for 1024^i units)"
            )));
        }
    };
    let bytes = (value * multiplier).floor();
    if bytes >= i64::MAX as f64 {
        return Err(ExecError::Execution(
            "Memory value out of range: value is too large".into(),
        ));
    }
    Ok(bytes as i64)
}

/// A LIKE pattern with its own escape character as one in the matcher's form, where `\`
/// escapes: `e` before a character makes it literal, and a backslash that `e` does not
/// escape is literal too. An empty escape turns escaping off; NULL makes the match NULL.
pub fn like_escape(patterns: &StringArray, escapes: &StringArray) -> Result<ArrayRef> {
    let mut out = Vec::with_capacity(patterns.len());
    for (pattern, escape) in patterns.iter().zip(escapes.iter()) {
        let (Some(pattern), Some(escape)) = (pattern, escape) else {
            out.push(None);
            continue;
        };
        let mut escape_chars = escape.chars();
        let escape = escape_chars.next();
        if escape_chars.next().is_some() {
            return Err(ExecError::Execution(
                "Invalid escape string. Escape string must be empty or one character.".into(),
            ));
        }
        let mut rewritten = String::with_capacity(pattern.len() + 2);
        let mut chars = pattern.chars();
        while let Some(c) = chars.next() {
            if Some(c) == escape {
                let Some(escaped) = chars.next() else {
                    return Err(ExecError::Execution(
                        "Like pattern must not end with escape character".into(),
                    ));
                };
                rewritten.push('\\');
                rewritten.push(escaped);
            } else if c == '\\' {
                rewritten.push_str("\\\\");
            } else {
                rewritten.push(c);
            }
        }
        out.push(Some(rewritten));
    }
    Ok(Arc::new(StringArray::from(out)))
}

/// `string_split_regex(s, pattern)`: the pieces between the pattern's matches.
pub fn split_regex(args: &[ArrayRef]) -> Result<ArrayRef> {
    let (texts, patterns) = (args[0].as_string::<i32>(), args[1].as_string::<i32>());
    let mut builder = ListBuilder::new(StringBuilder::new());
    let mut compiled: Option<(String, regex::Regex)> = None;
    for row in 0..texts.len() {
        if texts.is_null(row) || patterns.is_null(row) {
            builder.append_null();
            continue;
        }
        let pattern = patterns.value(row);
        if compiled.as_ref().is_none_or(|(p, _)| p != pattern) {
            let regex = crate::functions::compile_regex(pattern, false)?;
            compiled = Some((pattern.to_string(), regex));
        }
        let (_, regex) = compiled.as_ref().expect("compiled above");
        for piece in regex.split(texts.value(row)) {
            builder.values().append_value(piece);
        }
        builder.append(true);
    }
    Ok(Arc::new(builder.finish()))
}

/// `regexp_escape(s)`: `s` with every character a pattern gives meaning escaped.
pub fn regexp_escape(texts: &ArrayRef) -> Result<ArrayRef> {
    let out: StringArray = texts
        .as_string::<i32>()
        .iter()
        .map(|s| s.map(regex::escape))
        .collect();
    Ok(Arc::new(out))
}

/// `url_encode(s)`: every byte but letters, digits and `-._~` as `%XX`; `url_decode` back.
pub fn url_code(texts: &ArrayRef, encode: bool) -> Result<ArrayRef> {
    let texts = texts.as_string::<i32>();
    let mut out = Vec::with_capacity(texts.len());
    for text in texts.iter() {
        out.push(match text {
            Some(text) if encode => Some(url_encode(text)),
            Some(text) => Some(url_decode(text)?),
            None => None,
        });
    }
    Ok(Arc::new(StringArray::from(out)))
}

fn url_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(byte as char)
            }
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

fn url_decode(text: &str) -> Result<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (b'+', _) => {
                out.push(b' ');
                i += 1;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out)
        .map_err(|_| fail(format!("url_decode: {text:?} is not UTF-8 once decoded")))
}

/// `to_base(n, radix [, length])`: `n` (not negative) in `radix` (2 to 36), upper-case,
/// zero-filled on the left to `length`.
pub fn to_base(args: &[ArrayRef]) -> Result<ArrayRef> {
    let numbers = args[0].as_primitive::<Int64Type>();
    let radixes = args[1].as_primitive::<Int64Type>();
    let lengths = args[2].as_primitive::<Int64Type>();
    let mut out = Vec::with_capacity(numbers.len());
    for row in 0..numbers.len() {
        if numbers.is_null(row) || radixes.is_null(row) || lengths.is_null(row) {
            out.push(None);
            continue;
        }
        let (n, radix, length) = (numbers.value(row), radixes.value(row), lengths.value(row));
        if n < 0 {
            return Err(fail(format!("to_base: {n} is negative")));
        }
        if !(2..=36).contains(&radix) {
            return Err(fail(format!(
                "to_base: the radix must be 2 to 36, not {radix}"
            )));
        }
        if !(0..=64).contains(&length) {
            return Err(fail(format!(
                "to_base: the length must be 0 to 64, not {length}"
            )));
        }
        let mut digits = Vec::new();
        let mut rest = n as u64;
        loop {
            let digit = char::from_digit((rest % radix as u64) as u32, radix as u32)
                .expect("a digit below the radix");
            digits.push(digit.to_ascii_uppercase());
            rest /= radix as u64;
            if rest == 0 {
                break;
            }
        }
        while digits.len() < length as usize {
            digits.push('0');
        }
        out.push(Some(digits.iter().rev().collect::<String>()));
    }
    Ok(Arc::new(StringArray::from(out)))
}

/// The grapheme clusters (what a reader sees as one character, `🤦🏼‍♂️` included) of
/// `text` in the range DuckDB's substring gives for `start` and `length`: from 1, from the
/// end when negative, and before `start` when `length` is negative.
fn grapheme_range(count: i64, start: i64, length: i64) -> std::ops::Range<usize> {
    let begin = match start {
        s if s > 0 => s - 1,
        0 => -1,
        s => count + s,
    };
    let (from, to) = match length >= 0 {
        true => (begin, begin.saturating_add(length)),
        false => (begin.saturating_add(length), begin),
    };
    let clamp = |i: i64| i.clamp(0, count) as usize;
    clamp(from)..clamp(to).max(clamp(from))
}

/// `substring_grapheme(s, start, length)`, `left_grapheme(s, n)`, `right_grapheme(s, n)`
/// (a negative `n` leaves out that many from the other end) and `length_grapheme(s)`.
pub fn graphemes(op: TextOp, args: &[ArrayRef]) -> Result<ArrayRef> {
    use unicode_segmentation::UnicodeSegmentation;
    let texts = args[0].as_string::<i32>();
    let number = |i: usize, row: usize| -> Option<i64> {
        let n = args.get(i)?.as_primitive::<Int64Type>();
        n.is_valid(row).then(|| n.value(row))
    };
    if op == TextOp::LengthGrapheme {
        let out: arrow::array::Int64Array = texts
            .iter()
            .map(|t| t.map(|t| t.graphemes(true).count() as i64))
            .collect();
        return Ok(Arc::new(out));
    }
    let mut out = Vec::with_capacity(texts.len());
    for row in 0..texts.len() {
        let (Some(text), Some(first)) = (
            texts.is_valid(row).then(|| texts.value(row)),
            number(1, row),
        ) else {
            out.push(None);
            continue;
        };
        let clusters: Vec<&str> = text.graphemes(true).collect();
        let count = clusters.len() as i64;
        let range = match op {
            TextOp::SubstringGrapheme => match number(2, row) {
                Some(length) => grapheme_range(count, first, length),
                None => {
                    out.push(None);
                    continue;
                }
            },
            TextOp::LeftGrapheme if first >= 0 => 0..first.min(count) as usize,
            TextOp::LeftGrapheme => 0..(count + first).max(0) as usize,
            _ if first >= 0 => (count - first).max(0) as usize..count as usize,
            _ => first.unsigned_abs().min(count as u64) as usize..count as usize,
        };
        out.push(Some(clusters[range].concat()));
    }
    Ok(Arc::new(StringArray::from(out)))
}

/// One step of a GLOB pattern.
enum GlobPiece {
    /// `*`: any run of characters.
    Run,
    /// `?`: any one character.
    One,
    Char(char),
    /// `[...]`: one character in (or, with `!`, not in) the ranges.
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

impl GlobPiece {
    fn matches(&self, c: char) -> bool {
        match self {
            GlobPiece::Run | GlobPiece::One => true,
            GlobPiece::Char(p) => *p == c,
            GlobPiece::Class { negated, ranges } => {
                ranges.iter().any(|(low, high)| (*low..=*high).contains(&c)) != *negated
            }
        }
    }
}

/// The pieces of a GLOB pattern; `None` for one no text matches (an unclosed `[`, a
/// trailing `\`). A `]` first in a class is one of its characters.
fn glob_pieces(pattern: &str) -> Option<Vec<GlobPiece>> {
    let mut chars = pattern.chars().peekable();
    let mut pieces = Vec::new();
    while let Some(c) = chars.next() {
        pieces.push(match c {
            '*' => GlobPiece::Run,
            '?' => GlobPiece::One,
            '\\' => GlobPiece::Char(chars.next()?),
            '[' => {
                let negated = chars.next_if_eq(&'!').is_some();
                let mut ranges = Vec::new();
                let mut first = true;
                loop {
                    let low = chars.next()?;
                    if low == ']' && !first {
                        break;
                    }
                    first = false;
                    let high = match chars.peek() {
                        Some('-') => {
                            chars.next();
                            match chars.next()? {
                                ']' => {
                                    ranges.extend([(low, low), ('-', '-')]);
                                    break;
                                }
                                high => high,
                            }
                        }
                        _ => low,
                    };
                    ranges.push((low, high));
                }
                GlobPiece::Class { negated, ranges }
            }
            c => GlobPiece::Char(c),
        });
    }
    Some(pieces)
}

/// Whether the whole of `text` matches the GLOB `pattern`. Backtracks only to the last `*`,
/// so the cost is at most the product of the lengths, never exponential.
pub fn glob_matches(text: &str, pattern: &str) -> bool {
    let Some(pieces) = glob_pieces(pattern) else {
        return false;
    };
    let text: Vec<char> = text.chars().collect();
    let (mut t, mut p) = (0, 0);
    let mut last_run: Option<(usize, usize)> = None;
    while t < text.len() {
        match pieces.get(p) {
            Some(GlobPiece::Run) => {
                last_run = Some((p + 1, t));
                p += 1;
            }
            Some(piece) if piece.matches(text[t]) => (p, t) = (p + 1, t + 1),
            _ => match last_run {
                Some((after, from)) => {
                    last_run = Some((after, from + 1));
                    (p, t) = (after, from + 1);
                }
                None => return false,
            },
        }
    }
    pieces[p..]
        .iter()
        .all(|piece| matches!(piece, GlobPiece::Run))
}

#[cfg(test)]
mod tests {

    #[test]
    fn glob_patterns_match_as_duckdb_does() {
        let cases = [
            ("aaa", "a?a", true),
            ("aaa", "????*", false),
            ("ababac", "*abac", true),
            ("b3", "[abc0-9][abc0-9]", true),
            ("a", "[!0-9]", true),
            ("*", "\\*", true),
            ("a", "\\*", false),
            ("3]", "[]3][]]", true),
            ("3", "[3", false),
            ("3", "\\", false),
            ("1245", "**1***2*******4*5***", true),
            ("6", "[1-35-7]", true),
            ("4", "[1-35-7]", false),
            ("abc", "*[", false),
        ];
        for (text, pattern, expected) in cases {
            assert_eq!(
                glob_matches(text, pattern),
                expected,
                "{text} GLOB {pattern}"
            );
        }
        let long = format!("{}c", "a".repeat(35));
        assert!(!glob_matches(&long, "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b"));
    }
    use super::*;

    #[test]
    fn grapheme_ranges_follow_duckdbs_substring() {
        assert_eq!(grapheme_range(6, 2, 3), 1..4);
        assert_eq!(grapheme_range(6, 0, 3), 0..2);
        assert_eq!(grapheme_range(6, -2, 2), 4..6);
        assert_eq!(grapheme_range(6, 4, -2), 1..3);
        assert_eq!(grapheme_range(6, 9, 2), 6..6);
        assert_eq!(grapheme_range(6, 1, i64::MAX), 0..6);
    }

    #[test]
    fn urls_round_trip() {
        assert_eq!(url_encode("a b/c"), "a%20b%2Fc");
        assert_eq!(url_decode("a%20b%2Fc").unwrap(), "a b/c");
        assert_eq!(url_decode("100%").unwrap(), "100%");
    }
}
