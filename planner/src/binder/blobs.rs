//! The functions over bytes (ADR 0066): `octet_length`, `hex` / `unhex`, `to_base64` /
//! `from_base64`, `encode` / `decode`, `md5`, `sha256`, `repeat` of a blob, and `||` of
//! two blobs.

use arrow::datatypes::DataType;

use super::expr::type_name;
use super::functions::expect_arity;
use crate::expr::{BlobOp, Expr, ScalarFunction};
use crate::{Result, bind_err};

/// The function over bytes `name` names, bound; `None` when `name` is not one, or (`hex`,
/// `repeat`) when its argument is not bytes or text.
pub(super) fn blob_function(name: &str, args: &[Expr]) -> Option<Result<Expr>> {
    let first = args.first().map(Expr::data_type);
    let (op, returns) = match name {
        "octet_length" => (BlobOp::OctetLength, DataType::Int64),
        "hex" | "to_hex" if matches!(first, Some(DataType::Binary | DataType::Utf8)) => {
            (BlobOp::Hex, DataType::Utf8)
        }
        "unhex" | "from_hex" => (BlobOp::Unhex, DataType::Binary),
        "to_base64" | "base64" => (BlobOp::ToBase64, DataType::Utf8),
        "from_base64" => (BlobOp::FromBase64, DataType::Binary),
        "encode" => (BlobOp::Encode, DataType::Binary),
        "decode" => (BlobOp::Decode, DataType::Utf8),
        "md5" => (BlobOp::Md5, DataType::Utf8),
        "sha256" => (BlobOp::Sha256, DataType::Utf8),
        "repeat" if first == Some(DataType::Binary) => {
            return Some(expect_arity(name, args, 2).map(|()| Expr::Function {
                func: ScalarFunction::Blob(BlobOp::Repeat),
                args: vec![args[0].clone(), args[1].clone().cast(&DataType::Int64)],
                data_type: DataType::Binary,
            }));
        }
        _ => return None,
    };
    Some(expect_arity(name, args, 1).and_then(|()| {
        Ok(Expr::Function {
            func: ScalarFunction::Blob(op),
            args: vec![argument(name, op, args[0].clone())?],
            data_type: returns,
        })
    }))
}

/// The argument as the function reads it: text where it reads text, a blob where it reads
/// bytes that only a blob holds, either where both have bytes.
fn argument(name: &str, op: BlobOp, value: Expr) -> Result<Expr> {
    let t = value.data_type();
    let wanted = match op {
        BlobOp::Unhex | BlobOp::FromBase64 | BlobOp::Encode => DataType::Utf8,
        BlobOp::ToBase64 | BlobOp::Decode => DataType::Binary,
        _ if t == DataType::Binary => DataType::Binary,
        _ => DataType::Utf8,
    };
    let fits = t == wanted
        || t == DataType::Null
        || (t == DataType::Utf8 && super::expr::is_string_literal(&value));
    if !fits {
        return Err(bind_err!(
            "function {name}({}) does not exist",
            type_name(&t)
        ));
    }
    Ok(value.cast(&wanted))
}

/// `left || right` when either is a blob: the bytes of both, as a blob. `None` when neither
/// is.
pub(super) fn concat(left: &Expr, right: &Expr) -> Option<Result<Expr>> {
    let (lt, rt) = (left.data_type(), right.data_type());
    if lt != DataType::Binary && rt != DataType::Binary {
        return None;
    }
    let side = |e: &Expr| {
        let t = e.data_type();
        match t == DataType::Binary || t == DataType::Null || super::expr::is_string_literal(e) {
            true => Ok(e.clone().cast(&DataType::Binary)),
            false => Err(bind_err!(
                "operator || is not defined for types {} and {}",
                type_name(&lt),
                type_name(&rt)
            )),
        }
    };
    Some((|| {
        Ok(Expr::Function {
            func: ScalarFunction::Blob(BlobOp::Concat),
            args: vec![side(left)?, side(right)?],
            data_type: DataType::Binary,
        })
    })())
}
