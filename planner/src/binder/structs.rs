//! Struct values (ADR 0063): `{'a': x}` literals, `struct_pack`, `row` and `(x, y)`, fields
//! by name and by position, `struct_insert`, and the common type of two structs.

use arrow::datatypes::{DataType, Field};
use sqlparser::ast;
use sqlparser::ast::BinaryOperator;

use super::expr::{Context, binary, bind_expr, common_type, distinct_values, type_name};
use super::normalize;
use crate::expr::{Expr, ScalarFunction};
use crate::scalar::ScalarValue;
use crate::{Result, bind_err};

/// `{'a': x, 'b': y}`.
pub(super) fn bind_dictionary(
    fields: &[ast::DictionaryField],
    ctx: &mut Context<'_>,
) -> Result<Expr> {
    let mut names = Vec::with_capacity(fields.len());
    let mut values = Vec::with_capacity(fields.len());
    for field in fields {
        names.push(field.key.value.clone());
        values.push(bind_expr(&field.value, ctx)?);
    }
    make_struct(names, values)
}

/// `row(x, y)` and `(x, y)`: an unnamed struct.
pub(super) fn bind_row(items: &[ast::Expr], ctx: &mut Context<'_>) -> Result<Expr> {
    let values = items
        .iter()
        .map(|item| bind_expr(item, ctx))
        .collect::<Result<Vec<_>>>()?;
    make_struct(vec![String::new(); values.len()], values)
}

/// The struct functions whose arguments are named (`struct_pack(a := 1)`), bound before the
/// generic path that refuses named arguments; `None` for any other function.
pub(super) fn bind_named_call(
    name: &str,
    function: &ast::Function,
    ctx: &mut Context<'_>,
) -> Result<Option<Expr>> {
    let (pack, insert) = (
        matches!(name, "struct_pack" | "pack"),
        name == "struct_insert",
    );
    if !pack && !insert && name != "row" {
        return Ok(None);
    }
    let ast::FunctionArguments::List(list) = &function.args else {
        return Err(bind_err!("{name} takes a list of arguments"));
    };
    let mut args = list.args.iter();
    let (mut names, mut values) = (Vec::new(), Vec::new());
    if insert {
        let Some(ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(first))) = args.next() else {
            return Err(bind_err!("struct_insert takes a struct, then named values"));
        };
        let record = bind_expr(first, ctx)?;
        let DataType::Struct(fields) = record.data_type() else {
            return Err(bind_err!(
                "struct_insert takes a struct, not {}",
                type_name(&record.data_type())
            ));
        };
        for (i, field) in fields.iter().enumerate() {
            names.push(field.name().clone());
            values.push(field_at(record.clone(), i));
        }
    }
    for arg in args {
        let (field_name, value) = match arg {
            ast::FunctionArg::Named {
                name,
                arg: ast::FunctionArgExpr::Expr(value),
                ..
            } => (normalize(name), value),
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(value)) if pack => {
                (implicit_name(value), value)
            }
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(value)) if !insert => {
                (String::new(), value)
            }
            other => return Err(bind_err!("{name} does not take the argument {other}")),
        };
        if name == "row" && !field_name.is_empty() {
            return Err(bind_err!("row takes no named arguments"));
        }
        names.push(field_name);
        values.push(bind_expr(value, ctx)?);
    }
    make_struct(names, values).map(Some)
}

/// The name `struct_pack(x)` gives an unnamed argument: the column's name, else its text.
fn implicit_name(value: &ast::Expr) -> String {
    match value {
        ast::Expr::Identifier(ident) => normalize(ident),
        ast::Expr::CompoundIdentifier(parts) => parts.last().map(normalize).unwrap_or_default(),
        other => other.to_string(),
    }
}

/// A struct of `values` (perhaps none), its fields named `names` (all empty for an unnamed
/// struct).
pub(super) fn make_struct(names: Vec<String>, values: Vec<Expr>) -> Result<Expr> {
    for (i, name) in names.iter().enumerate().filter(|(_, n)| !n.is_empty()) {
        if names[..i].iter().any(|n| n.eq_ignore_ascii_case(name)) {
            return Err(bind_err!("duplicate struct entry name \"{name}\""));
        }
    }
    let fields: Vec<Field> = names
        .into_iter()
        .zip(&values)
        .map(|(name, value)| Field::new(name, value.data_type(), true))
        .collect();
    Ok(Expr::Function {
        func: ScalarFunction::MakeStruct,
        args: values,
        data_type: DataType::Struct(fields.into()),
    })
}

/// `struct_concat(a, b, ...)` (DuckDB): the fields of every struct in order, a NULL struct
/// giving NULL fields; named and unnamed structs do not mix, and no name may repeat.
pub(super) fn struct_concat(args: &[Expr]) -> Result<Expr> {
    if args.is_empty() {
        return Err(bind_err!(
            "struct_concat: At least one argument is required"
        ));
    }
    let (mut names, mut values) = (Vec::new(), Vec::new());
    let mut named = None;
    for (position, record) in args.iter().enumerate() {
        let DataType::Struct(fields) = record.data_type() else {
            return Err(bind_err!(
                "struct_concat: Argument at position \"{}\" is not a STRUCT",
                position + 1
            ));
        };
        for (i, field) in fields.iter().enumerate() {
            let is_named = !field.name().is_empty();
            if named.is_some_and(|n| n != is_named) {
                return Err(bind_err!(
                    "struct_concat: Cannot mix named and unnamed STRUCTs"
                ));
            }
            named = Some(is_named);
            if is_named
                && names
                    .iter()
                    .any(|n: &String| n.eq_ignore_ascii_case(field.name()))
            {
                return Err(bind_err!(
                    "struct_concat: Arguments contain duplicate STRUCT entry \"{}\"",
                    field.name()
                ));
            }
            names.push(field.name().clone());
            values.push(field_at(record.clone(), i));
        }
    }
    make_struct(names, values)
}

/// The field at `index` of a struct.
pub(super) fn field_at(record: Expr, index: usize) -> Expr {
    let DataType::Struct(fields) = record.data_type() else {
        unreachable!("a field is taken from a struct")
    };
    Expr::Function {
        func: ScalarFunction::Field(index),
        data_type: fields[index].data_type().clone(),
        args: vec![record],
    }
}

/// `s.name`, `(s).name`, `s['name']`: a field by name, case-insensitively when no field has
/// the name exactly.
pub(super) fn field_by_name(record: Expr, name: &str) -> Result<Expr> {
    let data_type = record.data_type();
    let DataType::Struct(fields) = &data_type else {
        return Err(bind_err!(
            "column notation .{name} applied to type {}, which is not a composite type",
            type_name(&data_type)
        ));
    };
    let exact = fields.iter().position(|f| f.name() == name);
    let index = exact.or_else(|| {
        fields
            .iter()
            .position(|f| f.name().eq_ignore_ascii_case(name))
    });
    match index {
        Some(index) => Ok(field_at(record, index)),
        None => Err(bind_err!(
            "could not identify column \"{name}\" in record data type (its fields: {})",
            field_list(fields)
        )),
    }
}

fn field_list(fields: &arrow::datatypes::Fields) -> String {
    let names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
    names.join(", ")
}

/// `struct_extract(s, 'name')`, `struct_extract(s, i)`, `struct_extract_at(s, i)` and
/// `s['name']`: a field by a constant name or 1-based position.
pub(super) fn struct_extract(record: Expr, key: &Expr) -> Result<Expr> {
    let data_type = record.data_type();
    let DataType::Struct(fields) = &data_type else {
        return Err(bind_err!(
            "struct_extract takes a struct, not {}",
            type_name(&data_type)
        ));
    };
    match key {
        Expr::Literal(ScalarValue::Utf8(name)) => field_by_name(record, name),
        Expr::Literal(ScalarValue::Int32(_) | ScalarValue::Int64(_)) => {
            let position = match key {
                Expr::Literal(ScalarValue::Int32(p)) => i64::from(*p),
                Expr::Literal(ScalarValue::Int64(p)) => *p,
                _ => unreachable!("matched above"),
            };
            if position < 1 || position as usize > fields.len() {
                return Err(bind_err!(
                    "struct index {position} is out of range: the struct has {} fields",
                    fields.len()
                ));
            }
            Ok(field_at(record, position as usize - 1))
        }
        _ => Err(bind_err!(
            "a struct's key must be a constant name or position"
        )),
    }
}

/// `struct_position(t, v)`: the position of the first field of an unnamed struct not
/// distinct from `v`; `struct_contains(t, v)`: whether a field equals `v` (NULL when `v` is).
/// Both are NULL for a NULL struct, and NULL or false when no field matches.
pub(super) fn struct_search(name: &str, record: Expr, value: Expr) -> Result<Expr> {
    let data_type = record.data_type();
    let DataType::Struct(fields) = &data_type else {
        return Err(bind_err!(
            "{name} takes a struct, not {}",
            type_name(&data_type)
        ));
    };
    if fields.iter().any(|f| !f.name().is_empty()) {
        return Err(bind_err!("\"{name}\" can only be used on unnamed structs"));
    }
    let position = name == "struct_position";
    let null = |t: DataType| Expr::Literal(ScalarValue::Null).cast(&t);
    let is_null = |e: &Expr| Expr::IsNull(Box::new(e.clone()));
    let result_type = if position {
        DataType::Int32
    } else {
        DataType::Boolean
    };
    let mut branches = vec![(is_null(&record), null(result_type.clone()))];
    if !position {
        branches.push((is_null(&value), null(DataType::Boolean)));
    }
    for i in 0..fields.len() {
        let field = field_at(record.clone(), i);
        let (matches, result) = match position {
            true => (
                Expr::Not(Box::new(distinct_values(field, value.clone())?)),
                Expr::Literal(ScalarValue::Int32(i as i32 + 1)),
            ),
            false => (
                binary(field, &BinaryOperator::Eq, value.clone())?,
                Expr::Literal(ScalarValue::Boolean(true)),
            ),
        };
        branches.push((matches, result));
    }
    let otherwise = match position {
        true => null(DataType::Int32),
        false => Expr::Literal(ScalarValue::Boolean(false)),
    };
    Ok(Expr::Case {
        branches,
        otherwise: Some(Box::new(otherwise)),
        data_type: result_type,
    })
}

/// `regexp_extract(s, pattern, names [, options])` and `regexp_extract_all`'s form: the
/// groups as a struct named by `names`, a constant list of distinct names; `options` may ask
/// for case-insensitive matching (`'i'`).
pub(super) fn regexp_groups(name: &str, args: Vec<Expr>) -> Result<Expr> {
    if !(3..=4).contains(&args.len()) {
        return Err(bind_err!(
            "{name} takes a text, a pattern, names and options"
        ));
    }
    let names = constant_strings(&args[2])
        .filter(|n| !n.is_empty())
        .ok_or_else(|| bind_err!("{name} needs the group names as a list of text constants"))?;
    let insensitive = match args.get(3) {
        None => false,
        Some(Expr::Literal(ScalarValue::Utf8(options))) => {
            if let Some(other) = options.chars().find(|c| !matches!(c, 'i' | 'c')) {
                return Err(bind_err!("{name}: unknown option '{other}'"));
            }
            // The last of 'i' (insensitive) and 'c' (sensitive) wins.
            options.ends_with('i')
        }
        Some(_) => return Err(bind_err!("{name} needs its options as a text constant")),
    };
    let values: Vec<Expr> = names
        .iter()
        .map(|_| Expr::Literal(ScalarValue::Utf8(String::new())))
        .collect();
    // Checks the names as a struct literal would.
    let record = make_struct(names, values)?.data_type();
    let data_type = match name {
        "regexp_extract" => record,
        _ => crate::types::list_of(record),
    };
    let mut args = args.into_iter().take(2);
    let texts = vec![
        args.next().expect("a text").cast(&DataType::Utf8),
        args.next().expect("a pattern").cast(&DataType::Utf8),
    ];
    Ok(Expr::Function {
        func: ScalarFunction::RegexpGroups {
            all: name != "regexp_extract",
            insensitive,
        },
        args: texts,
        data_type,
    })
}

/// The text constants of a list literal (`['a', 'b']`), if it is one.
pub(super) fn constant_strings(list: &Expr) -> Option<Vec<String>> {
    let Expr::Function {
        func: ScalarFunction::MakeArray,
        args,
        ..
    } = list
    else {
        return None;
    };
    args.iter()
        .map(|a| match a {
            Expr::Literal(ScalarValue::Utf8(text)) => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// The type two struct types meet in, as DuckDB's: named structs by name (the fields of
/// both, each of its two sides' common type), an unnamed one by position with a struct of
/// as many fields.
pub(super) fn common_struct_type(left: &DataType, right: &DataType) -> Result<DataType> {
    let (DataType::Struct(a), DataType::Struct(b)) = (left, right) else {
        unreachable!("common_struct_type is given two structs")
    };
    let unnamed = |f: &arrow::datatypes::Fields| f.iter().all(|f| f.name().is_empty());
    let mismatch = || {
        bind_err!(
            "types {} and {} cannot be matched",
            type_name(left),
            type_name(right)
        )
    };
    if unnamed(a) || unnamed(b) {
        if a.len() != b.len() {
            return Err(mismatch());
        }
        let named = if unnamed(a) { b } else { a };
        let fields = a
            .iter()
            .zip(b.iter())
            .zip(named.iter())
            .map(|((x, y), n)| {
                let t = common_type(&[x.data_type().clone(), y.data_type().clone()])?;
                Ok(Field::new(n.name().clone(), t, true))
            })
            .collect::<Result<Vec<_>>>()?;
        return Ok(DataType::Struct(fields.into()));
    }
    let mut fields: Vec<Field> = Vec::new();
    for field in a.iter().chain(b.iter()) {
        if fields
            .iter()
            .any(|f| f.name().eq_ignore_ascii_case(field.name()))
        {
            continue;
        }
        let side = |s: &arrow::datatypes::Fields| {
            s.iter()
                .find(|f| f.name().eq_ignore_ascii_case(field.name()))
                .map_or(DataType::Null, |f| f.data_type().clone())
        };
        let t = common_type(&[side(a), side(b)]).map_err(|_| mismatch())?;
        fields.push(Field::new(field.name().clone(), t, true));
    }
    Ok(DataType::Struct(fields.into()))
}

/// The argument of a select item `unnest(x)` that may be a struct: one plain argument that
/// calls no set-returning function (binding it twice must not add one twice).
pub(super) fn unnest_argument(item: &ast::Expr) -> Option<&ast::Expr> {
    let ast::Expr::Function(function) = item else {
        return None;
    };
    if !function.name.to_string().eq_ignore_ascii_case("unnest") {
        return None;
    }
    let ast::FunctionArguments::List(list) = &function.args else {
        return None;
    };
    let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(arg))] = list.args.as_slice() else {
        return None;
    };
    let text = arg.to_string().to_lowercase();
    let calls_set_function = ["unnest", "generate_series", "range", "over"]
        .iter()
        .any(|name| text.contains(name));
    (!calls_set_function).then_some(arg)
}

/// DuckDB's `unnest(struct)` in a select list: one column per field, named as the field.
pub(super) fn unnest_fields(record: &Expr) -> Option<Vec<(Expr, String)>> {
    let DataType::Struct(fields) = record.data_type() else {
        return None;
    };
    let columns = fields.iter().enumerate().map(|(i, field)| {
        let value = Expr::Function {
            func: ScalarFunction::Field(i),
            args: vec![record.clone()],
            data_type: field.data_type().clone(),
        };
        (value, field.name().clone())
    });
    Some(columns.collect())
}
