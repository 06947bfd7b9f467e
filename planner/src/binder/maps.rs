//! Map values (ADR 0064): `MAP {k: v}`, `map(keys, values)`, `map_from_entries`, `m[k]`,
//! `map_extract` / `element_at`, `map_keys`, `map_values`, `map_entries`, `map_contains`,
//! and `cardinality` of a map.

use arrow::datatypes::{DataType, Field};
use pondra_catalog::map_type;
use sqlparser::ast;

use super::expr::{Context, bind_expr, common_type, type_name};
use crate::expr::{Expr, MapOp, ScalarFunction};
use crate::types::list_of;
use crate::{Result, bind_err};

/// `MAP {k1: v1, ...}`: keys brought to one type, values to another.
pub(super) fn bind_map_literal(map: &ast::Map, ctx: &mut Context<'_>) -> Result<Expr> {
    let mut keys = Vec::with_capacity(map.entries.len());
    let mut values = Vec::with_capacity(map.entries.len());
    for entry in &map.entries {
        keys.push(bind_expr(&entry.key, ctx)?);
        values.push(bind_expr(&entry.value, ctx)?);
    }
    let key_type = common_type(&keys.iter().map(Expr::data_type).collect::<Vec<_>>())?;
    let value_type = common_type(&values.iter().map(Expr::data_type).collect::<Vec<_>>())?;
    let args = keys
        .into_iter()
        .zip(values)
        .flat_map(|(k, v)| [k.cast(&key_type), v.cast(&value_type)])
        .collect();
    Ok(Expr::Function {
        func: ScalarFunction::MakeMap,
        args,
        data_type: map_type(key_type, value_type),
    })
}

/// The map functions, by name; `None` when `name` is not one (or, for `cardinality` and
/// `element_at`, when the argument is no map).
pub(super) fn map_function(name: &str, args: &[Expr]) -> Option<Result<Expr>> {
    let is_map = |e: &Expr| matches!(e.data_type(), DataType::Map(..));
    match name {
        "map" | "map_from_entries" | "map_keys" | "map_values" | "map_entries" | "map_contains"
        | "map_extract" | "map_extract_value" => {}
        "cardinality" | "element_at" if args.first().is_some_and(is_map) => {}
        "is_histogram_other_bin" => {
            return Some(match args {
                [value] => Ok(Expr::Function {
                    func: ScalarFunction::Map(MapOp::IsOtherBin),
                    args: vec![value.clone()],
                    data_type: DataType::Boolean,
                }),
                _ => Err(bind_err!("is_histogram_other_bin takes one value")),
            });
        }
        _ => return None,
    }
    Some(bind_map_function(name, args))
}

fn bind_map_function(name: &str, args: &[Expr]) -> Result<Expr> {
    let call = |op, args: Vec<Expr>, data_type| {
        Ok(Expr::Function {
            func: ScalarFunction::Map(op),
            args,
            data_type,
        })
    };
    match (name, args) {
        ("map", []) => Ok(Expr::Function {
            func: ScalarFunction::MakeMap,
            args: Vec::new(),
            data_type: map_type(DataType::Null, DataType::Null),
        }),
        ("map", [keys, values]) => {
            let (key, value) = (list_item(name, keys)?, list_item(name, values)?);
            let args = vec![
                keys.clone().cast(&list_of(key.clone())),
                values.clone().cast(&list_of(value.clone())),
            ];
            call(MapOp::FromLists, args, map_type(key, value))
        }
        ("map_from_entries", [entries]) => {
            let item = list_item(name, entries)?;
            let DataType::Struct(fields) = &item else {
                return Err(bind_err!(
                    "map_from_entries needs a list of structs of a key and a value, not {}",
                    type_name(&entries.data_type())
                ));
            };
            let [key, value] = &fields.iter().collect::<Vec<_>>()[..] else {
                return Err(bind_err!(
                    "map_from_entries needs structs of two fields, a key and a value"
                ));
            };
            let data_type = map_type(key.data_type().clone(), value.data_type().clone());
            call(MapOp::FromEntries, vec![entries.clone()], data_type)
        }
        (_, [map, rest @ ..]) => {
            let (key, value) = map_types(name, map)?;
            match (name, rest) {
                ("map_keys", []) => call(MapOp::Keys, vec![map.clone()], list_of(key)),
                ("map_values", []) => call(MapOp::Values, vec![map.clone()], list_of(value)),
                ("map_entries", []) => {
                    let entry = DataType::Struct(
                        vec![
                            Field::new("key", key, true),
                            Field::new("value", value, true),
                        ]
                        .into(),
                    );
                    call(MapOp::Entries, vec![map.clone()], list_of(entry))
                }
                ("cardinality", []) => call(MapOp::Cardinality, vec![map.clone()], DataType::Int64),
                ("map_contains", [k]) => call(
                    MapOp::Contains,
                    vec![map.clone(), k.clone().cast(&key)],
                    DataType::Boolean,
                ),
                ("map_extract_value", [k]) => element(map.clone(), k.clone()),
                ("map_extract" | "element_at", [k]) => {
                    let args = vec![map.clone(), k.clone().cast(&key)];
                    call(MapOp::Extract, args, list_of(value))
                }
                _ => Err(bind_err!("{name} does not take {} arguments", args.len())),
            }
        }
        _ => Err(bind_err!("{name} does not take {} arguments", args.len())),
    }
}

/// `m[k]`: the value of the key, NULL when the map has none.
pub(super) fn element(map: Expr, key: Expr) -> Result<Expr> {
    let (key_type, value) = map_types("a map subscript", &map)?;
    Ok(Expr::Function {
        func: ScalarFunction::Map(MapOp::Element),
        args: vec![map, key.cast(&key_type)],
        data_type: value,
    })
}

fn map_types(name: &str, map: &Expr) -> Result<(DataType, DataType)> {
    let data_type = map.data_type();
    let DataType::Map(entries, _) = &data_type else {
        return Err(bind_err!(
            "{name} needs a map, not {}",
            type_name(&data_type)
        ));
    };
    let DataType::Struct(fields) = entries.data_type() else {
        unreachable!("a map's entries are structs")
    };
    Ok((fields[0].data_type().clone(), fields[1].data_type().clone()))
}

fn list_item(name: &str, list: &Expr) -> Result<DataType> {
    match list.data_type() {
        DataType::List(item) => Ok(item.data_type().clone()),
        DataType::Null => Ok(DataType::Null),
        other => Err(bind_err!("{name} needs lists, not {}", type_name(&other))),
    }
}
