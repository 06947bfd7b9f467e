//! Byte strings (SQL `BLOB` / `BYTEA`, Arrow `Binary`; ADR 0066): their text form both ways,
//! and the functions over bytes (`octet_length`, `hex`, `to_base64`, `md5`, ...).

use std::fmt::Write;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BinaryArray, Int64Array, StringArray};
use arrow::datatypes::DataType;
use base64::Engine;
use pondra_planner::BlobOp;
use sha2::Digest;

use crate::{ExecError, Result};

/// DuckDB's text of bytes: printable ASCII as itself, any other byte as `\xHH`.
pub fn escaped(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len());
    for &byte in bytes {
        match byte {
            0x20..=0x7e => text.push(byte as char),
            _ => write!(text, "\\x{byte:02X}").expect("writing to a String"),
        }
    }
    text
}

fn lower_hex(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(2 * bytes.len());
    for byte in bytes {
        write!(text, "{byte:02x}").expect("writing to a String");
    }
    text
}

/// Blobs as their DuckDB text.
pub fn to_text(blobs: &ArrayRef) -> ArrayRef {
    let texts: StringArray = blobs
        .as_binary::<i32>()
        .iter()
        .map(|b| b.map(escaped))
        .collect();
    Arc::new(texts)
}

/// Text read as bytes: ASCII as itself, `\xHH` as the byte it names. Anything else is an
/// error naming the text, or NULL with `safe` (TRY_CAST).
pub fn from_text(texts: &ArrayRef, safe: bool) -> Result<ArrayRef> {
    let mut blobs = Vec::with_capacity(texts.len());
    for text in texts.as_string::<i32>() {
        blobs.push(match text.map(unescaped).transpose() {
            Ok(blob) => blob,
            Err(_) if safe => None,
            Err(message) => {
                let text = text.expect("an error comes from a value");
                return Err(ExecError::Execution(format!(
                    "conversion failed: cannot read {text:?} as a BLOB: {message}"
                )));
            }
        });
    }
    Ok(Arc::new(BinaryArray::from_iter(blobs)))
}

fn unescaped(text: &str) -> std::result::Result<Vec<u8>, String> {
    let bytes = text.as_bytes();
    let mut blob = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        if byte >= 0x80 {
            return Err("a character outside ASCII must be written as \\xHH".into());
        }
        if byte == b'\\' && bytes.get(at + 1) == Some(&b'x') {
            let digits = bytes
                .get(at + 2..at + 4)
                .and_then(|d| std::str::from_utf8(d).ok())
                .and_then(|d| u8::from_str_radix(d, 16).ok());
            let Some(value) = digits else {
                return Err(format!("a malformed escape at byte {at}"));
            };
            blob.push(value);
            at += 4;
        } else {
            blob.push(byte);
            at += 1;
        }
    }
    Ok(blob)
}

/// One of the functions over bytes.
pub fn function(op: BlobOp, args: &[ArrayRef]) -> Result<ArrayRef> {
    let bytes_of = |array: &ArrayRef| -> Vec<Option<Vec<u8>>> {
        match array.data_type() {
            DataType::Binary => array
                .as_binary::<i32>()
                .iter()
                .map(|b| b.map(<[u8]>::to_vec))
                .collect(),
            _ => array
                .as_string::<i32>()
                .iter()
                .map(|t| t.map(|t| t.as_bytes().to_vec()))
                .collect(),
        }
    };
    let values = bytes_of(&args[0]);
    let texts = |f: &dyn Fn(&[u8]) -> String| -> ArrayRef {
        Arc::new(StringArray::from_iter(
            values.iter().map(|v| v.as_deref().map(f)),
        ))
    };
    Ok(match op {
        BlobOp::OctetLength => Arc::new(Int64Array::from_iter(
            values.iter().map(|v| v.as_ref().map(|v| v.len() as i64)),
        )),
        BlobOp::Hex => texts(&|b| lower_hex(b).to_uppercase()),
        BlobOp::ToBase64 => texts(&|b| base64::engine::general_purpose::STANDARD.encode(b)),
        BlobOp::Md5 => texts(&|b| format!("{:x}", md5::compute(b))),
        BlobOp::Sha256 => texts(&|b| lower_hex(&sha2::Sha256::digest(b))),
        BlobOp::Encode => Arc::new(BinaryArray::from_iter(values)),
        BlobOp::Decode => decode(values)?,
        BlobOp::Unhex => parsed(values, "hex", unhex)?,
        BlobOp::FromBase64 => parsed(values, "base64", |t| {
            base64::engine::general_purpose::STANDARD.decode(t).ok()
        })?,
        BlobOp::Concat => {
            let right = bytes_of(&args[1]);
            Arc::new(BinaryArray::from_iter(
                values
                    .into_iter()
                    .zip(right)
                    .map(|(l, r)| Some([l?, r?].concat())),
            ))
        }
        BlobOp::Repeat => {
            let counts = arrow::compute::cast(&args[1], &DataType::Int64)?;
            let counts = counts.as_primitive::<arrow::datatypes::Int64Type>();
            let mut repeated = Vec::with_capacity(values.len());
            for (value, count) in values.into_iter().zip(counts) {
                let (Some(value), Some(count)) = (value, count) else {
                    repeated.push(None);
                    continue;
                };
                let count = usize::try_from(count.max(0)).expect("non-negative");
                crate::functions::check_string_bytes(value.len() as u128 * count as u128)?;
                repeated.push(Some(value.repeat(count)));
            }
            Arc::new(BinaryArray::from_iter(repeated))
        }
    })
}

/// `decode(blob)`: the bytes as UTF-8 text, which they must be.
fn decode(values: Vec<Option<Vec<u8>>>) -> Result<ArrayRef> {
    let mut texts = Vec::with_capacity(values.len());
    for value in values {
        texts.push(match value {
            None => None,
            Some(bytes) => Some(String::from_utf8(bytes).map_err(|_| {
                ExecError::Execution("decode: the blob is not valid UTF-8 text".into())
            })?),
        });
    }
    Ok(Arc::new(StringArray::from_iter(texts)))
}

/// Text in an encoding (hex, base64) read as the bytes it encodes; text that is not in it is
/// an error naming the encoding.
fn parsed(
    values: Vec<Option<Vec<u8>>>,
    encoding: &str,
    read: impl Fn(&[u8]) -> Option<Vec<u8>>,
) -> Result<ArrayRef> {
    let mut blobs = Vec::with_capacity(values.len());
    for value in values {
        blobs.push(match value {
            None => None,
            Some(text) => Some(read(&text).ok_or_else(|| {
                ExecError::Execution(format!(
                    "conversion failed: {:?} is not valid {encoding}",
                    String::from_utf8_lossy(&text)
                ))
            })?),
        });
    }
    Ok(Arc::new(BinaryArray::from_iter(blobs)))
}

/// Hex digits, two to a byte; an odd count starts with a lone digit, as DuckDB reads it.
fn unhex(text: &[u8]) -> Option<Vec<u8>> {
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let (head, pairs) = text.split_at(text.len() % 2);
    let mut bytes: Vec<u8> = head.iter().map(|&c| digit(c)).collect::<Option<_>>()?;
    for pair in pairs.chunks(2) {
        bytes.push(digit(pair[0])? << 4 | digit(pair[1])?);
    }
    Some(bytes)
}
