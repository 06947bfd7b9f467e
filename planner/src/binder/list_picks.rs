//! DuckDB's list functions that pick elements by place or by another list: `list_slice` /
//! `array_slice` (lists and text, and `l[a:b]`), `list_select`, `list_where`, `list_resize`,
//! `flatten`, `list_has_any`, `list_has_all`, `list_intersect` and `list_zip`.

use arrow::datatypes::DataType;

use super::expr::*;
use crate::expr::{Expr, ListOp, ScalarFunction};
use crate::scalar::ScalarValue;
use crate::types::list_of;
use crate::{Result, bind_err};

/// The bound call, or `None` when `name` is none of these functions.
pub(super) fn list_pick_function(name: &str, args: &[Expr]) -> Option<Result<Expr>> {
    Some(match name {
        "list_slice" | "array_slice" => slice(name, args.first(), &args[1.min(args.len())..]),
        "list_select" | "array_select" => select_or_where(name, args, ListOp::Select),
        "list_where" | "array_where" => select_or_where(name, args, ListOp::Where),
        "list_resize" | "array_resize" => resize(name, args),
        "flatten" => flatten(args),
        "list_has_any" | "array_has_any" => two_lists(name, args, ListOp::HasAny),
        "list_has_all" | "array_has_all" => two_lists(name, args, ListOp::HasAll),
        "list_intersect" | "array_intersect" => two_lists(name, args, ListOp::Intersect),
        "list_zip" | "array_zip" => zip(args),
        _ => return None,
    })
}

fn call(op: ListOp, args: Vec<Expr>, data_type: DataType) -> Expr {
    Expr::Function {
        func: ScalarFunction::List(op),
        args,
        data_type,
    }
}

fn list_type(name: &str, arg: &Expr) -> Result<DataType> {
    match arg.data_type() {
        t @ DataType::List(_) => Ok(t),
        DataType::Null => Ok(list_of(DataType::Int32)),
        other => Err(bind_err!("{name} needs a list, not {}", type_name(&other))),
    }
}

/// An integer argument (a place, a size, a code point) as a BIGINT.
pub(super) fn integer(name: &str, arg: &Expr) -> Result<Expr> {
    match arg.data_type() {
        DataType::Int32 | DataType::Int64 | DataType::Null => {
            Ok(arg.clone().cast(&DataType::Int64))
        }
        other => Err(bind_err!(
            "{name} needs an integer, not {}",
            type_name(&other)
        )),
    }
}

/// `list_slice(x, begin, end [, step])` over a list or text; a missing bound (`l[:2]`) is the
/// first or the last place.
pub(super) fn slice(name: &str, value: Option<&Expr>, bounds: &[Expr]) -> Result<Expr> {
    let (Some(value), 2..=3) = (value, bounds.len()) else {
        return Err(bind_err!("{name} takes a list, a begin, an end and a step"));
    };
    let data_type = match value.data_type() {
        DataType::Utf8 => DataType::Utf8,
        _ => list_type(name, value)?,
    };
    let mut args = vec![value.clone().cast(&data_type)];
    for bound in bounds {
        args.push(integer(name, bound)?);
    }
    if bounds.len() == 2 {
        args.push(Expr::Literal(ScalarValue::Int64(1)));
    }
    Ok(call(ListOp::Slice, args, data_type))
}

fn select_or_where(name: &str, args: &[Expr], op: ListOp) -> Result<Expr> {
    let [list, chosen] = args else {
        return Err(bind_err!("{name} takes two lists"));
    };
    let data_type = list_type(name, list)?;
    let wanted = match op {
        ListOp::Where => list_of(DataType::Boolean),
        _ => list_of(DataType::Int64),
    };
    match chosen.data_type() {
        DataType::List(_) | DataType::Null => {}
        other => {
            return Err(bind_err!(
                "{name} needs a list as its second argument, not {}",
                type_name(&other)
            ));
        }
    }
    let args = vec![list.clone().cast(&data_type), chosen.clone().cast(&wanted)];
    Ok(call(op, args, data_type))
}

fn resize(name: &str, args: &[Expr]) -> Result<Expr> {
    if !(2..=3).contains(&args.len()) {
        return Err(bind_err!(
            "{name} takes a list, a size and a value to fill with"
        ));
    }
    let data_type = list_type(name, &args[0])?;
    let DataType::List(item) = &data_type else {
        unreachable!("list_type gives lists");
    };
    let fill = args
        .get(2)
        .cloned()
        .unwrap_or(Expr::Literal(ScalarValue::Null))
        .cast(item.data_type());
    let args = vec![
        args[0].clone().cast(&data_type),
        integer(name, &args[1])?,
        fill,
    ];
    Ok(call(ListOp::Resize, args, data_type))
}

fn flatten(args: &[Expr]) -> Result<Expr> {
    let [lists] = args else {
        return Err(bind_err!("flatten takes one list of lists"));
    };
    match lists.data_type() {
        DataType::List(item) if matches!(item.data_type(), DataType::List(_)) => Ok(call(
            ListOp::Flatten,
            vec![lists.clone()],
            item.data_type().clone(),
        )),
        DataType::Null => Ok(Expr::Literal(ScalarValue::Null)),
        other => Err(bind_err!(
            "flatten needs a list of lists, not {}",
            type_name(&other)
        )),
    }
}

/// `list_has_any`, `list_has_all` and `list_intersect`: both lists in their common type.
fn two_lists(name: &str, args: &[Expr], op: ListOp) -> Result<Expr> {
    let [a, b] = args else {
        return Err(bind_err!("{name} takes two lists"));
    };
    let (a_type, b_type) = (list_type(name, a)?, list_type(name, b)?);
    let data_type = common_type(&[a_type, b_type])?;
    let result = match op {
        ListOp::Intersect => data_type.clone(),
        _ => DataType::Boolean,
    };
    Ok(call(
        op,
        vec![a.clone().cast(&data_type), b.clone().cast(&data_type)],
        result,
    ))
}

/// `list_zip(l1, l2, ... [, truncate])`: a list of unnamed structs, the i-th of the i-th
/// elements, as long as the longest list (NULL past a shorter one's end, a NULL list being
/// empty), or with `truncate` as the shortest.
pub(super) fn zip(args: &[Expr]) -> Result<Expr> {
    let (lists, truncate) = match args.split_last() {
        Some((last, lists)) if last.data_type() == DataType::Boolean && !lists.is_empty() => {
            (lists, last.clone())
        }
        _ => (args, Expr::Literal(ScalarValue::Boolean(false))),
    };
    if lists.is_empty() {
        return Err(bind_err!("list_zip needs at least one list"));
    }
    let mut bound = Vec::with_capacity(lists.len() + 1);
    let mut fields = Vec::with_capacity(lists.len());
    for list in lists {
        let list_type = list_type("list_zip", list)?;
        let DataType::List(item) = &list_type else {
            unreachable!("list_type gives a list")
        };
        fields.push(arrow::datatypes::Field::new(
            "",
            item.data_type().clone(),
            true,
        ));
        bound.push(list.clone().cast(&list_type));
    }
    bound.push(truncate);
    let data_type = list_of(DataType::Struct(fields.into()));
    Ok(call(ListOp::Zip, bound, data_type))
}
