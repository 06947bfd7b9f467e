//! Text functions beyond the core ones (`TextOp`): edit distances, Jaccard similarity,
//! `ends_with`, `contains`, `translate`, `overlay`, `chr`, `ascii` and `concat_ws`. Strings are read
//! as characters, not bytes.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Float64Array, Int32Array, Int64Array, StringArray,
};
use arrow::datatypes::Int64Type;
use pondra_planner::TextOp;

use crate::{ExecError, Result};

pub fn text_function(op: TextOp, args: &[ArrayRef]) -> Result<ArrayRef> {
    let text = |i: usize| args[i].as_string::<i32>();
    Ok(match op {
        TextOp::Levenshtein => distances(text(0), text(1), |a, b| Ok(levenshtein(a, b)))?,
        TextOp::DamerauLevenshtein => {
            distances(text(0), text(1), |a, b| Ok(damerau_levenshtein(a, b)))?
        }
        TextOp::Hamming => distances(text(0), text(1), hamming)?,
        TextOp::Jaccard => {
            let mut out = Vec::with_capacity(args[0].len());
            for (a, b) in text(0).iter().zip(text(1).iter()) {
                out.push(match (a, b) {
                    (Some(a), Some(b)) => Some(jaccard(a, b)?),
                    _ => None,
                });
            }
            Arc::new(Float64Array::from(out))
        }
        TextOp::EndsWith => Arc::new(pairs(text(0), text(1), |a, b| a.ends_with(b))),
        TextOp::Contains => Arc::new(pairs(text(0), text(1), |a, b| a.contains(b))),
        TextOp::Translate => Arc::new(translate(text(0), text(1), text(2))),
        TextOp::Overlay => overlay(args),
        TextOp::Glob => Arc::new(pairs(text(0), text(1), crate::text_more::glob_matches)),
        TextOp::Chr => chr(args[0].as_primitive::<Int64Type>())?,
        TextOp::Ascii => Arc::new(
            text(0)
                .iter()
                .map(|s| s.map(|s| s.chars().next().map_or(0, |c| c as i32)))
                .collect::<Int32Array>(),
        ),
        TextOp::ConcatWs => concat_ws(args),
        TextOp::Printf => crate::printf::format_rows(args, false)?,
        TextOp::Format => crate::printf::format_rows(args, true)?,
        TextOp::Bar => crate::text_more::bar(args)?,
        TextOp::FormatBytes { decimal } => crate::text_more::format_bytes(&args[0], decimal)?,
        TextOp::SplitRegex => crate::text_more::split_regex(args)?,
        TextOp::RegexpEscape => crate::text_more::regexp_escape(&args[0])?,
        TextOp::ParseFormattedBytes => crate::text_more::parse_formatted_bytes(text(0))?,
        TextOp::LikeEscape => crate::text_more::like_escape(text(0), text(1))?,
        TextOp::ToCharTime => crate::pg_format::time_to_char(args)?,
        TextOp::ToCharNumber => crate::pg_format::number_to_char(args)?,
        TextOp::ToDate => crate::pg_format::to_date(args)?,
        TextOp::ToTimestamp => crate::pg_format::to_timestamp(args)?,
        TextOp::UrlEncode => crate::text_more::url_code(&args[0], true)?,
        TextOp::UrlDecode => crate::text_more::url_code(&args[0], false)?,
        TextOp::ToBase => crate::text_more::to_base(args)?,
        TextOp::SubstringGrapheme
        | TextOp::LeftGrapheme
        | TextOp::RightGrapheme
        | TextOp::LengthGrapheme => crate::text_more::graphemes(op, args)?,
    })
}

fn pairs(a: &StringArray, b: &StringArray, f: impl Fn(&str, &str) -> bool) -> BooleanArray {
    a.iter()
        .zip(b.iter())
        .map(|(a, b)| Some(f(a?, b?)))
        .collect()
}

fn distances(
    a: &StringArray,
    b: &StringArray,
    distance: impl Fn(&[char], &[char]) -> Result<i64>,
) -> Result<ArrayRef> {
    let mut out = Vec::with_capacity(a.len());
    for (a, b) in a.iter().zip(b.iter()) {
        out.push(match (a, b) {
            (Some(a), Some(b)) => {
                let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
                Some(distance(&a, &b)?)
            }
            _ => None,
        });
    }
    Ok(Arc::new(Int64Array::from(out)))
}

/// Insertions, deletions and substitutions from `a` to `b`, in one row of memory.
fn levenshtein(a: &[char], b: &[char]) -> i64 {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != cb))
                .min(above + 1)
                .min(row[j] + 1);
            diagonal = above;
        }
    }
    row[b.len()] as i64
}

/// Levenshtein with adjacent transpositions as one edit (the optimal string alignment form).
fn damerau_levenshtein(a: &[char], b: &[char]) -> i64 {
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    for i in 0..=a.len() {
        d[i * width] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(width) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[(i - 1) * width + j] + 1)
                .min(d[i * width + j - 1] + 1)
                .min(d[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[(i - 2) * width + j - 2] + 1);
            }
            d[i * width + j] = best;
        }
    }
    d[a.len() * width + b.len()] as i64
}

fn hamming(a: &[char], b: &[char]) -> Result<i64> {
    if a.len() != b.len() {
        return Err(ExecError::Execution(
            "mismatches (hamming) needs strings of one length".to_string(),
        ));
    }
    Ok(a.iter().zip(b).filter(|(x, y)| x != y).count() as i64)
}

/// The share of the two strings' distinct characters that both have.
fn jaccard(a: &str, b: &str) -> Result<f64> {
    if a.is_empty() || b.is_empty() {
        return Err(ExecError::Execution(
            "jaccard needs strings that are not empty".to_string(),
        ));
    }
    let (a, b): (HashSet<char>, HashSet<char>) = (a.chars().collect(), b.chars().collect());
    Ok(a.intersection(&b).count() as f64 / a.union(&b).count() as f64)
}

fn translate(text: &StringArray, from: &StringArray, to: &StringArray) -> StringArray {
    text.iter()
        .zip(from.iter())
        .zip(to.iter())
        .map(|((text, from), to)| {
            let (from, to): (Vec<char>, Vec<char>) =
                (from?.chars().collect(), to?.chars().collect());
            let mut out = String::with_capacity(text?.len());
            for c in text?.chars() {
                match from.iter().position(|f| *f == c) {
                    Some(i) => out.extend(to.get(i)),
                    None => out.push(c),
                }
            }
            Some(out)
        })
        .collect()
}

/// `overlay(s, r, start [, count])`, over characters: `s` before `start`, then `r`, then `s`
/// from `start + count` on. Without a count or with a negative one, `r`'s length is taken;
/// a start before the first character keeps nothing before `r`, as DuckDB's.
fn overlay(args: &[ArrayRef]) -> ArrayRef {
    let (text, placed) = (args[0].as_string::<i32>(), args[1].as_string::<i32>());
    let start = args[2].as_primitive::<Int64Type>();
    let count = args.get(3).map(|c| c.as_primitive::<Int64Type>());
    let overlaid: StringArray = (0..text.len())
        .map(|row| {
            if text.is_null(row) || placed.is_null(row) || start.is_null(row) {
                return None;
            }
            let (text, placed, start) = (text.value(row), placed.value(row), start.value(row));
            let placed_length = placed.chars().count() as i64;
            let count = match count {
                Some(count) if count.is_null(row) => return None,
                Some(count) if count.value(row) >= 0 => count.value(row),
                _ => placed_length,
            };
            let kept_before = start.saturating_sub(1).max(0) as usize;
            let resumed = start.saturating_add(count).saturating_sub(1).max(0) as usize;
            let mut out: String = text.chars().take(kept_before).collect();
            out.push_str(placed);
            out.extend(text.chars().skip(resumed));
            Some(out)
        })
        .collect();
    Arc::new(overlaid)
}

fn chr(codes: &arrow::array::Int64Array) -> Result<ArrayRef> {
    let mut out = Vec::with_capacity(codes.len());
    for code in codes.iter() {
        out.push(match code {
            Some(code) => {
                let c = u32::try_from(code)
                    .ok()
                    .and_then(char::from_u32)
                    .ok_or_else(|| {
                        ExecError::Execution(format!("chr: {code} is not a valid code point"))
                    })?;
                Some(c.to_string())
            }
            None => None,
        });
    }
    Ok(Arc::new(StringArray::from(out)))
}

fn concat_ws(args: &[ArrayRef]) -> ArrayRef {
    let separator = args[0].as_string::<i32>();
    let values: Vec<&StringArray> = args[1..].iter().map(|a| a.as_string::<i32>()).collect();
    let out: StringArray = (0..separator.len())
        .map(|row| {
            let separator = separator.is_valid(row).then(|| separator.value(row))?;
            let parts: Vec<&str> = values
                .iter()
                .filter(|v| v.is_valid(row))
                .map(|v| v.value(row))
                .collect();
            Some(parts.join(separator))
        })
        .collect();
    Arc::new(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    #[test]
    fn edit_distances() {
        assert_eq!(levenshtein(&chars("kitten"), &chars("sitting")), 3);
        assert_eq!(levenshtein(&chars(""), &chars("abc")), 3);
        assert_eq!(damerau_levenshtein(&chars("ca"), &chars("ac")), 1);
        assert_eq!(levenshtein(&chars("ca"), &chars("ac")), 2);
        assert_eq!(damerau_levenshtein(&chars("hello"), &chars("ehlol")), 2);
        assert_eq!(hamming(&chars("duck"), &chars("luck")).unwrap(), 1);
        assert!(hamming(&chars("a"), &chars("ab")).is_err());
    }

    #[test]
    fn jaccard_of_character_sets() {
        assert_eq!(jaccard("duck", "luck").unwrap(), 0.6);
    }
}
