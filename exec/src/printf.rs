//! DuckDB's `printf(format, ...)` (C's `%` specifiers) and `format(format, ...)` (`{}` fields
//! in the fmt library's form). Arguments keep their types: an integer specifier takes
//! integers, a floating one numbers, `%s` text and the other non-numbers; a mismatch is an
//! error, as in DuckDB. NULL in any argument makes the result NULL.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, StringArray};
use arrow::datatypes::{DataType, Decimal128Type, Float64Type, Int32Type, Int64Type};

use crate::{ExecError, Result};

/// fmt's float field without a type: with a precision, that many significant digits (zeros
/// kept); without, the shortest text. Neither is a letter a format string can name.
const SIGNIFICANT: char = '\u{1}';
const SHORTEST: char = '\u{2}';

/// One argument's value in a row.
#[derive(Clone, Debug)]
enum Arg {
    Int(i128),
    Float(f64),
    Text(String),
}

fn fail(message: impl Into<String>) -> ExecError {
    ExecError::Execution(message.into())
}

/// The argument columns' values at `row`; `None` when one is NULL.
fn row_args(columns: &[(ArrayRef, ArrayRef)], row: usize) -> Option<Vec<Arg>> {
    columns
        .iter()
        .map(|(column, text)| {
            if column.is_null(row) {
                return None;
            }
            Some(match column.data_type() {
                DataType::Int32 => Arg::Int(column.as_primitive::<Int32Type>().value(row) as i128),
                DataType::Int64 => Arg::Int(column.as_primitive::<Int64Type>().value(row) as i128),
                DataType::Boolean => Arg::Int(column.as_boolean().value(row) as i128),
                DataType::Float64 => Arg::Float(column.as_primitive::<Float64Type>().value(row)),
                DataType::Decimal128(_, 0) => {
                    Arg::Int(column.as_primitive::<Decimal128Type>().value(row))
                }
                DataType::Decimal128(_, _) | DataType::Decimal64(_, _) => {
                    Arg::Float(text.as_string::<i32>().value(row).parse().ok()?)
                }
                _ => Arg::Text(text.as_string::<i32>().value(row).to_string()),
            })
        })
        .collect()
}

/// `printf` (`fmt_style` false) or `format` over the format column and the arguments.
pub fn format_rows(args: &[ArrayRef], fmt_style: bool) -> Result<ArrayRef> {
    let formats = args[0].as_string::<i32>();
    let columns = args[1..]
        .iter()
        .map(|a| Ok((a.clone(), crate::casts::cast(a, &DataType::Utf8, false)?)))
        .collect::<Result<Vec<_>>>()?;
    let mut out = Vec::with_capacity(formats.len());
    for row in 0..formats.len() {
        let values = match formats.is_valid(row) {
            true => row_args(&columns, row),
            false => None,
        };
        out.push(match values {
            Some(values) if fmt_style => Some(fmt_format(formats.value(row), &values)?),
            Some(values) => Some(printf(formats.value(row), &values)?),
            None => None,
        });
    }
    Ok(Arc::new(StringArray::from(out)))
}

/// How a field is laid out: fill, alignment, sign, `#`, zero padding, width, precision.
#[derive(Default)]
struct Spec {
    fill: Option<char>,
    align: Option<char>,
    plus: bool,
    space: bool,
    alternate: bool,
    zero: bool,
    width: usize,
    precision: Option<usize>,
    thousands: bool,
    /// fmt puts text to the left by default; C puts everything to the right.
    text_left: bool,
}

fn printf(format: &str, args: &[Arg]) -> Result<String> {
    let mut out = String::new();
    let mut chars = format.chars().peekable();
    let mut next = 0;
    let take = |next: &mut usize| -> Result<Arg> {
        let arg = args
            .get(*next)
            .cloned()
            .ok_or_else(|| fail(format!("Argument index \"{next}\" out of range")))?;
        *next += 1;
        Ok(arg)
    };
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = Spec::default();
        while let Some(&flag) = chars.peek() {
            match flag {
                '-' => spec.align = Some('<'),
                '+' => spec.plus = true,
                ' ' => spec.space = true,
                '#' => spec.alternate = true,
                '0' => spec.zero = true,
                _ => break,
            }
            chars.next();
        }
        if chars.peek() == Some(&'*') {
            chars.next();
            spec.width = count(take(&mut next)?)?;
        } else {
            spec.width = digits(&mut chars);
        }
        if chars.peek() == Some(&'.') {
            chars.next();
            spec.precision = Some(if chars.peek() == Some(&'*') {
                chars.next();
                count(take(&mut next)?)?
            } else {
                digits(&mut chars)
            });
        }
        while matches!(chars.peek(), Some('h' | 'l' | 'L' | 'q' | 'j' | 'z' | 't')) {
            chars.next();
        }
        let conversion = chars
            .next()
            .ok_or_else(|| fail("printf: the format ends in the middle of a specifier"))?;
        if conversion == '%' {
            out.push('%');
            continue;
        }
        let conversion = match conversion {
            'i' | 'u' => 'd',
            SIGNIFICANT | SHORTEST => {
                return Err(fail(format!("printf: unknown conversion %{conversion}")));
            }
            other => other,
        };
        out.push_str(&field(&take(&mut next)?, conversion, &spec)?);
    }
    Ok(out)
}

fn digits(chars: &mut std::iter::Peekable<impl Iterator<Item = char>>) -> usize {
    let mut n = 0usize;
    while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
        n = n.saturating_mul(10).saturating_add(d as usize);
        chars.next();
    }
    n.min(1 << 16)
}

fn count(arg: Arg) -> Result<usize> {
    match arg {
        Arg::Int(n) if (0..1 << 16).contains(&n) => Ok(n as usize),
        _ => Err(fail(
            "a width or precision must be a small non-negative integer",
        )),
    }
}

/// `format`'s fields: `{}`, `{n}`, `{:spec}`, `{n:spec}`; `{{` and `}}` are braces.
fn fmt_format(format: &str, args: &[Arg]) -> Result<String> {
    let mut out = String::new();
    let mut chars = format.chars().peekable();
    let mut next = 0;
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('{', Some('{')) | ('}', Some('}')) => {
                chars.next();
                out.push(c);
            }
            ('{', _) => {
                let mut inside = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(c) => inside.push(c),
                        None => return Err(fail("format: a field is not closed")),
                    }
                }
                let (index, spec) = inside.split_once(':').unwrap_or((&inside, ""));
                let index = match index.trim() {
                    "" => {
                        next += 1;
                        next - 1
                    }
                    n => n
                        .parse()
                        .map_err(|_| fail(format!("format: bad field {{{inside}}}")))?,
                };
                let arg = args
                    .get(index)
                    .ok_or_else(|| fail(format!("Argument index \"{index}\" out of range")))?;
                out.push_str(&fmt_field(arg, spec)?);
            }
            ('}', _) => return Err(fail("format: a '}' without its '{'")),
            (c, _) => out.push(c),
        }
    }
    Ok(out)
}

/// One `{:spec}` field: `[[fill]align][sign][#][0][width][,][.precision][type]`.
fn fmt_field(arg: &Arg, text: &str) -> Result<String> {
    let mut spec = Spec {
        text_left: true,
        ..Spec::default()
    };
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let is_align = |c: char| matches!(c, '<' | '>' | '^');
    if chars.len() > 1 && is_align(chars[1]) {
        spec.fill = Some(chars[0]);
        spec.align = Some(chars[1]);
        i = 2;
    } else if chars.first().is_some_and(|&c| is_align(c)) {
        spec.align = Some(chars[0]);
        i = 1;
    }
    match chars.get(i) {
        Some('+') => spec.plus = true,
        Some(' ') => spec.space = true,
        Some('-') => {}
        _ => i = i.wrapping_sub(1),
    }
    i = i.wrapping_add(1);
    if chars.get(i) == Some(&'#') {
        spec.alternate = true;
        i += 1;
    }
    if chars.get(i) == Some(&'0') {
        spec.zero = true;
        i += 1;
    }
    let mut rest = chars[i.min(chars.len())..].iter().copied().peekable();
    let rest_text: String = rest.clone().collect();
    spec.width = digits(&mut rest);
    if rest.peek() == Some(&',') {
        spec.thousands = true;
        rest.next();
    }
    if rest.peek() == Some(&'.') {
        rest.next();
        spec.precision = Some(digits(&mut rest));
    }
    let conversion = rest.next();
    if rest.next().is_some() {
        return Err(fail(format!(
            "format: the field spec {rest_text:?} is not valid"
        )));
    }
    let conversion = match (conversion, arg) {
        (Some(SIGNIFICANT | SHORTEST), _) => {
            return Err(fail(format!(
                "format: the field spec {rest_text:?} is not valid"
            )));
        }
        (Some(c), _) => c,
        (None, Arg::Int(_)) => 'd',
        (None, Arg::Float(_)) if spec.precision.is_some() => SIGNIFICANT,
        (None, Arg::Float(_)) => SHORTEST,
        (None, Arg::Text(_)) => 's',
    };
    field(arg, conversion, &spec)
}

/// An argument written by one conversion, then padded to the spec's width.
fn field(arg: &Arg, conversion: char, spec: &Spec) -> Result<String> {
    let mismatch = |kind: &str| {
        fail(format!(
            "Invalid type specifier \"{conversion}\" for formatting a value of type {kind}"
        ))
    };
    let (sign, body) = match (arg, conversion) {
        (Arg::Int(n), 'd') => (n.is_negative(), grouped(n.unsigned_abs().to_string(), spec)),
        (Arg::Int(n), 'x' | 'X' | 'o' | 'b') => {
            let magnitude = n.unsigned_abs();
            let (digits, prefix) = match conversion {
                'x' => (format!("{magnitude:x}"), "0x"),
                'X' => (format!("{magnitude:X}"), "0X"),
                'o' => (format!("{magnitude:o}"), "0"),
                _ => (format!("{magnitude:b}"), "0b"),
            };
            let prefix = if spec.alternate { prefix } else { "" };
            (n.is_negative(), format!("{prefix}{digits}"))
        }
        (Arg::Int(n), 'c') => {
            let c = u32::try_from(*n).ok().and_then(char::from_u32);
            (
                false,
                c.ok_or_else(|| fail(format!("{n} is not a character")))?
                    .to_string(),
            )
        }
        (Arg::Float(v), 'f' | 'F' | 'e' | 'E' | 'g' | 'G' | SIGNIFICANT | SHORTEST) => {
            let v = *v;
            let precision = spec.precision.unwrap_or(6);
            let body = match conversion {
                'f' | 'F' => grouped(format!("{:.*}", precision, v.abs()), spec),
                'e' | 'E' => exponent(v.abs(), precision, conversion == 'E'),
                'g' | 'G' => general(v.abs(), precision, conversion == 'G', spec.alternate),
                SIGNIFICANT => general(v.abs(), precision, false, true),
                _ => shortest(v.abs()),
            };
            (v.is_sign_negative() && v != 0.0, body)
        }
        (Arg::Text(text), 's') => {
            let text = match spec.precision {
                Some(p) => text.chars().take(p).collect(),
                None => text.clone(),
            };
            (false, text)
        }
        (Arg::Int(_), _) => return Err(mismatch("int")),
        (Arg::Float(_), _) => return Err(mismatch("float")),
        (Arg::Text(_), _) => return Err(mismatch("string")),
    };
    let sign = match (sign, spec.plus, spec.space) {
        (true, _, _) => "-",
        (false, true, _) => "+",
        (false, false, true) => " ",
        _ => "",
    };
    Ok(pad(sign, &body, spec, matches!(arg, Arg::Text(_))))
}

/// `digits` with commas between thousands when the spec asks (the part before any point).
fn grouped(digits: String, spec: &Spec) -> String {
    if !spec.thousands {
        return digits;
    }
    let (whole, fraction) = digits.split_at(digits.find('.').unwrap_or(digits.len()));
    let mut out = String::new();
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out + fraction
}

/// C's `%e`: one digit, the fraction, and a signed exponent of at least two digits.
fn exponent(v: f64, precision: usize, upper: bool) -> String {
    let text = format!("{v:.precision$e}");
    let (mantissa, power) = text.split_once('e').unwrap_or((&text, "0"));
    let power: i32 = power.parse().unwrap_or(0);
    let sign = if power < 0 { '-' } else { '+' };
    let e = if upper { 'E' } else { 'e' };
    format!("{mantissa}{e}{sign}{:02}", power.abs())
}

/// C's `%g`: `precision` significant digits, fixed or with an exponent by the value's size;
/// trailing zeros dropped unless `keep_zeros`.
fn general(v: f64, precision: usize, upper: bool, keep_zeros: bool) -> String {
    let precision = precision.max(1);
    let power = if v == 0.0 {
        0
    } else {
        v.log10().floor() as i32
    };
    if power < -4 || power >= precision as i32 {
        let text = exponent(v, precision - 1, upper);
        match keep_zeros {
            true => text,
            false => {
                let (mantissa, rest) = text.split_at(text.find(['e', 'E']).unwrap_or(text.len()));
                format!("{}{rest}", trim_zeros(mantissa))
            }
        }
    } else {
        let decimals = (precision as i32 - 1 - power).max(0) as usize;
        let text = format!("{v:.decimals$}");
        if keep_zeros {
            text
        } else {
            trim_zeros(&text).to_string()
        }
    }
}

fn trim_zeros(text: &str) -> &str {
    match text.contains('.') {
        true => text.trim_end_matches('0').trim_end_matches('.'),
        false => text,
    }
}

/// The shortest text that reads back as `v`, with an exponent past 1e16 as fmt writes.
fn shortest(v: f64) -> String {
    if v != 0.0 && !(1e-4..1e16).contains(&v) {
        let text = format!("{v:e}");
        let (mantissa, power) = text.split_once('e').unwrap_or((&text, "0"));
        let power: i32 = power.parse().unwrap_or(0);
        let sign = if power < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", power.abs());
    }
    format!("{v}")
}

/// `sign` and `body` padded to the spec's width: zeros after the sign, or the fill on the
/// side the alignment leaves (by default to the right, text to the left in fmt's form).
fn pad(sign: &str, body: &str, spec: &Spec, text: bool) -> String {
    let length = sign.chars().count() + body.chars().count();
    let missing = spec.width.saturating_sub(length);
    if missing == 0 {
        return format!("{sign}{body}");
    }
    if spec.zero && spec.align.is_none() && !text {
        return format!("{sign}{}{body}", "0".repeat(missing));
    }
    let fill = spec.fill.unwrap_or(' ').to_string();
    let align = spec
        .align
        .unwrap_or(if text && spec.text_left { '<' } else { '>' });
    let (left, right) = match align {
        '<' => (0, missing),
        '^' => (missing / 2, missing - missing / 2),
        _ => (missing, 0),
    };
    format!("{}{sign}{body}{}", fill.repeat(left), fill.repeat(right))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(values: &[i128]) -> Vec<Arg> {
        values.iter().map(|v| Arg::Int(*v)).collect()
    }

    #[test]
    fn printf_follows_c() {
        let p = |f: &str, args: &[Arg]| printf(f, args).unwrap();
        assert_eq!(
            p("%d %x %o %#x %#o", &ints(&[100; 5])),
            "100 64 144 0x64 0144"
        );
        assert_eq!(
            p("%04d|%10d|%-5d|", &ints(&[33, 1992, 3])),
            "0033|      1992|3    |"
        );
        assert_eq!(p("%*d", &ints(&[5, 10])), "   10");
        assert_eq!(p("%c", &ints(&[65])), "A");
        let near_pi = Arg::Float(3.1417);
        assert_eq!(
            p(
                "%4.2f %+.0e %E",
                &[near_pi.clone(), near_pi.clone(), near_pi]
            ),
            "3.14 +3e+00 3.141700E+00"
        );
        assert_eq!(p("%05.1f", &[Arg::Float(2.25)]), "002.2");
        assert_eq!(
            p(
                "%g|%g|%G",
                &[
                    Arg::Float(0.0001),
                    Arg::Float(123456789.0),
                    Arg::Float(1e-10)
                ]
            ),
            "0.0001|1.23457e+08|1E-10"
        );
        assert_eq!(
            p(
                "%5s|%.1s",
                &[Arg::Text("ab".into()), Arg::Text("xyz".into())]
            ),
            "   ab|x"
        );
        assert!(printf("%s", &[]).is_err());
        assert!(printf("%d", &[Arg::Text("a".into())]).is_err());
        assert!(printf("%s", &ints(&[42])).is_err());
    }

    #[test]
    fn format_follows_fmt() {
        let f = |s: &str, args: &[Arg]| fmt_format(s, args).unwrap();
        assert_eq!(f("{1} {1} {0} {0}", &ints(&[1, 2])), "2 2 1 1");
        assert_eq!(
            f(
                "{:.2}|{:.3}",
                &[Arg::Float(0.00023404094995959), Arg::Float(0.0)]
            ),
            "0.00023|0.00"
        );
        let abc = ["a", "b", "c"].map(|s| Arg::Text(s.into()));
        assert_eq!(f("{:>6}|{:<6}|{:^6}|", &abc), "     a|b     |  c   |");
        assert_eq!(f("{:*^7}", &[Arg::Text("x".into())]), "***x***");
        assert_eq!(f("{:,}", &ints(&[1234567])), "1,234,567");
        assert_eq!(
            f("{} {}", &[Arg::Float(1.5), Arg::Float(1e20)]),
            "1.5 1e+20"
        );
        assert_eq!(
            f(
                "{:>8.2f}|{:08.3f}",
                &[Arg::Float(3.14169), Arg::Float(-3.14169)]
            ),
            "    3.14|-003.142"
        );
        assert_eq!(
            f("{{}} {:+d} {:e}", &[Arg::Int(5), Arg::Float(1234.5)]),
            "{} +5 1.234500e+03"
        );
        assert_eq!(
            f("{:x} {:X} {:#x} {:o} {:b}", &ints(&[255, 255, 255, 8, 5])),
            "ff FF 0xff 10 101"
        );
        assert!(fmt_format("{:s}", &ints(&[42])).is_err());
        assert!(fmt_format("{} {}", &ints(&[1])).is_err());
    }
}
