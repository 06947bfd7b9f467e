//! Arrays in expressions: `ARRAY[...]`, `ARRAY(subquery)`, `a[i]`, `x op ANY / ALL (...)`,
//! casts to `T[]`, and the array functions Postgres clients call.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field};
use sqlparser::ast::{self, BinaryOperator};

use super::expr::*;
use super::functions::{expect_arity, strings};
use super::scope::normalize;
use crate::expr::{AggregateCall, AggregateFunction, Expr, ScalarFunction};
use crate::logical::LogicalPlan;
use crate::scalar::ScalarValue;
pub use crate::types::list_of;
use crate::types::sql_type_from_ast;
use crate::{Result, bind_err, unsupported};

fn item_type(array: &DataType) -> Option<&DataType> {
    match array {
        DataType::List(item) => Some(item.data_type()),
        _ => None,
    }
}

/// The type a CAST or a typed literal names, arrays included.
pub(super) fn cast_target(data_type: &ast::DataType) -> Result<DataType> {
    use ast::ArrayElemTypeDef as A;
    if let Ok(pondra_catalog::SqlType::Vector(_)) = sql_type_from_ast(data_type) {
        return Ok(pondra_catalog::vector_type());
    }
    match data_type {
        ast::DataType::Array(
            A::SquareBracket(item, _)
            | A::AngleBracket(item)
            | A::Parenthesis(item)
            | A::Qualified(item, _),
        ) => Ok(list_of(cast_target(item)?)),
        ast::DataType::Array(_) => Err(bind_err!("an array type needs its element type")),
        other => Ok(sql_type_from_ast(other)?.to_arrow()),
    }
}

/// `target`, an instant type, in the session's zone (ADR 0067); any other type as it is.
pub(super) fn in_session_zone(target: DataType, ctx: &Context<'_>) -> DataType {
    match (&target, ctx.binder()) {
        (DataType::Timestamp(_, Some(_)), Some(binder)) => binder.instant_type(),
        _ => target,
    }
}

/// An array's text form as an array of `to` (`'{1,2}'::INT[]`, `ARRAY[]::INT[]`).
fn empty_or_text(text: &str, to: &DataType) -> Expr {
    Expr::Literal(ScalarValue::Utf8(text.to_string())).cast(to)
}

/// `ARRAY[a, b, ...]`: the elements brought to one type.
pub(super) fn bind_array(array: &ast::Array, ctx: &mut Context<'_>) -> Result<Expr> {
    let elements = &array.elem;
    // DuckDB's `[]` is a list of NULLs, of no elements, which takes any list's type.
    if elements.is_empty() && !array.named {
        return Ok(empty_or_text("{}", &list_of(DataType::Null)));
    }
    if elements.is_empty() {
        return Err(bind_err!(
            "cannot tell the type of an empty array: cast it, as in ARRAY[]::INT[]"
        ));
    }
    let elements = elements
        .iter()
        .map(|e| bind_expr(e, ctx))
        .collect::<Result<Vec<_>>>()?;
    // DuckDB's `[NULL]` is a list of NULLs that, like `[]`, takes any list's type; Postgres's
    // `ARRAY[NULL]` is an array of text.
    if !array.named && elements.iter().all(|e| e.data_type() == DataType::Null) {
        return Ok(Expr::Function {
            func: ScalarFunction::MakeArray,
            args: elements,
            data_type: list_of(DataType::Null),
        });
    }
    make_array(elements)
}

/// An array of bound elements (at least one), brought to their common type; NULLs alone make
/// an array of text.
pub(super) fn make_array(elements: Vec<Expr>) -> Result<Expr> {
    debug_assert!(!elements.is_empty());
    let types: Vec<DataType> = elements.iter().map(Expr::data_type).collect();
    let item = match common_type(&types)? {
        DataType::Null => DataType::Utf8,
        t => t,
    };
    Ok(Expr::Function {
        func: ScalarFunction::MakeArray,
        args: elements.into_iter().map(|e| e.cast(&item)).collect(),
        data_type: list_of(item),
    })
}

/// `CAST(x AS T[])`; an empty `ARRAY[]` takes the type it is cast to.
pub(super) fn bind_cast(
    inner: &ast::Expr,
    data_type: &ast::DataType,
    ctx: &mut Context<'_>,
) -> Result<Expr> {
    if let ast::Expr::Value(v) = inner
        && let ast::Value::SingleQuotedString(name) = &v.value
    {
        if is_catalog_type(data_type, "regclass") {
            return relation_oid(name, ctx);
        }
        // A function is named as `pg_proc` lists it, without the schema.
        if is_catalog_type(data_type, "regproc") {
            let bare = name.strip_prefix("pg_catalog.").unwrap_or(name);
            return Ok(Expr::Literal(ScalarValue::Utf8(bare.to_string())));
        }
    }
    if matches!(data_type, ast::DataType::Uuid) {
        return Ok(Expr::Function {
            func: crate::expr::ScalarFunction::UuidText,
            args: vec![bind_expr(inner, ctx)?.cast(&DataType::Utf8)],
            data_type: DataType::Utf8,
        });
    }
    if matches!(data_type, ast::DataType::JSON | ast::DataType::JSONB) {
        return Ok(Expr::Function {
            func: crate::expr::ScalarFunction::JsonCheck,
            args: vec![bind_expr(inner, ctx)?.cast(&DataType::Utf8)],
            data_type: DataType::Utf8,
        });
    }
    let target = in_session_zone(cast_target(data_type)?, ctx);
    match inner {
        ast::Expr::Array(array) if array.elem.is_empty() && item_type(&target).is_some() => {
            Ok(empty_or_text("{}", &target))
        }
        _ => within_nested_domain(bind_expr(inner, ctx)?.cast(&target), data_type)
            .and_then(|value| with_fixed_size(value, data_type)),
    }
}

/// A cast to DuckDB's fixed-size array `T[n]`, kept as a list: each list's length checked to
/// be `n`, an error naming both lengths otherwise.
fn with_fixed_size(value: Expr, data_type: &ast::DataType) -> Result<Expr> {
    use crate::expr::BinaryOp;
    let size = match (data_type, sql_type_from_ast(data_type)) {
        (_, Ok(pondra_catalog::SqlType::Vector(size))) => u64::from(size),
        (ast::DataType::Array(ast::ArrayElemTypeDef::SquareBracket(_, Some(size))), _) => *size,
        _ => return Ok(value),
    };
    let size = i64::try_from(size).map_err(|_| bind_err!("an array of {size} elements"))?;
    let length = super::duckdb_functions::length(std::slice::from_ref(&value))?;
    let text = |s: String| Expr::Literal(ScalarValue::Utf8(s));
    let concat = |left, right| Expr::Binary {
        op: BinaryOp::Concat,
        left: Box::new(left),
        right: Box::new(right),
    };
    let message = concat(
        concat(
            text("Cannot cast list with length ".into()),
            length.clone().cast(&DataType::Utf8),
        ),
        text(format!(" to array with length {size}")),
    );
    let wrong = Expr::Binary {
        op: BinaryOp::NotEq,
        left: Box::new(length),
        right: Box::new(Expr::Literal(ScalarValue::Int64(size))),
    };
    let data_type = value.data_type();
    let raised = Expr::Function {
        func: ScalarFunction::RaiseError,
        args: vec![message],
        data_type: data_type.clone(),
    };
    Ok(Expr::Case {
        branches: vec![(wrong, raised)],
        otherwise: Some(Box::new(value)),
        data_type,
    })
}

/// `value` (already cast) checked against the ranges of the integer names in the type it was
/// cast to, the elements of lists included (ADR 0060); such a name inside a struct or map is
/// refused, its range not being checked there yet.
fn within_nested_domain(value: Expr, data_type: &ast::DataType) -> Result<Expr> {
    use ast::ArrayElemTypeDef as A;
    match data_type {
        ast::DataType::Array(
            A::SquareBracket(item, _)
            | A::AngleBracket(item)
            | A::Parenthesis(item)
            | A::Qualified(item, _),
        ) if crate::IntegerDomain::of(item).is_some() || nested_domain(item) => {
            let list_type = value.data_type();
            let element_type = item_type(&list_type).cloned().unwrap_or(DataType::Null);
            let element = Expr::column(0, "x", element_type);
            Ok(Expr::Lambda(Box::new(crate::expr::Lambda {
                op: crate::expr::LambdaOp::Transform,
                list: value,
                initial: None,
                captured: Vec::new(),
                body: within_nested_domain(element, item)?,
                with_index: false,
                data_type: list_type,
            })))
        }
        _ if nested_domain(data_type) => Err(unsupported!(
            "casting to {data_type}: the range of a narrow integer type inside a struct or map \
             is not checked yet"
        )),
        _ => Ok(within_domain(value, data_type, false)),
    }
}

/// Whether a nested type names an integer type whose range is narrower than the width it is
/// kept in (ADR 0060) for its elements, fields, keys or values.
fn nested_domain(data_type: &ast::DataType) -> bool {
    use ast::ArrayElemTypeDef as A;
    let inner = |t: &ast::DataType| crate::IntegerDomain::of(t).is_some() || nested_domain(t);
    match data_type {
        ast::DataType::Array(
            A::SquareBracket(item, _)
            | A::AngleBracket(item)
            | A::Parenthesis(item)
            | A::Qualified(item, _),
        ) => inner(item),
        ast::DataType::Struct(fields, _) => fields.iter().any(|f| inner(&f.field_type)),
        ast::DataType::Map(key, value, _) => inner(key) || inner(value),
        _ => false,
    }
}

/// `value` (already cast) checked against the range of the integer name it was cast to, when
/// that name's range is not the width values are kept in (ADR 0060).
pub(super) fn within_domain(value: Expr, data_type: &ast::DataType, lenient: bool) -> Expr {
    match crate::IntegerDomain::of(data_type) {
        Some(domain) => Expr::Function {
            data_type: value.data_type(),
            func: ScalarFunction::IntegerRange { domain, lenient },
            args: vec![value],
        },
        None => value,
    }
}

/// `x op ANY (array or subquery)`, or ALL. Over a subquery, `= ANY` is IN and `<> ALL` is
/// NOT IN.
pub(super) fn bind_quantified(
    left: &ast::Expr,
    op: &BinaryOperator,
    right: &ast::Expr,
    all: bool,
    ctx: &mut Context<'_>,
) -> Result<Expr> {
    let quantifier = if all { "ALL" } else { "ANY" };
    if let ast::Expr::Subquery(query) = right {
        match (op, all) {
            (BinaryOperator::Eq, false) => return bind_mark(query, Some(left), false, ctx),
            (BinaryOperator::NotEq, true) => return bind_mark(query, Some(left), true, ctx),
            _ => {}
        }
    }
    let Some(op) = comparison(op) else {
        return Err(unsupported!("{op} {quantifier} (...)"));
    };
    let value = bind_expr(left, ctx)?;
    let array = match right {
        ast::Expr::Subquery(query) if is_row_value(&value) => row_array_subquery(query, ctx)?,
        ast::Expr::Subquery(query) => bind_array_subquery(query, ctx)?,
        _ => bind_expr(right, ctx)?,
    };
    quantified(value, op, all, array)
}

/// A row constructor, `(a, b)` or `row(a, b)`: an unnamed struct made in place.
pub(super) fn is_row_value(value: &Expr) -> bool {
    match value {
        Expr::Function {
            func: ScalarFunction::MakeStruct,
            data_type: DataType::Struct(fields),
            ..
        } => fields.len() > 1 && fields.iter().all(|f| f.name().is_empty()),
        _ => false,
    }
}

/// The rows of a subquery of several columns as an array of unnamed structs, for a row value
/// compared with them.
fn row_array_subquery(query: &ast::Query, ctx: &mut Context<'_>) -> Result<Expr> {
    let rows_of = |plan: LogicalPlan| {
        let schema = plan.schema();
        let columns: Vec<Expr> = schema
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| Expr::column(i, f.name(), f.data_type().clone()))
            .collect();
        let names = vec![String::new(); columns.len()];
        let row = super::structs::make_struct(names, columns)?;
        into_array(plan.project(vec![row], vec!["row".into()]))
    };
    Ok(empty_without_rows(scalar_subquery_of(query, ctx, rows_of)?))
}

/// `value op ANY | ALL (subquery)` as a comparison with the subquery's values gathered into
/// an array, which has the same NULL semantics: TRUE (FALSE for ALL) on a deciding value,
/// else NULL if a value is NULL, else FALSE (TRUE for ALL), and so over no rows.
pub(super) fn quantified_subquery(
    value: Expr,
    op: &BinaryOperator,
    all: bool,
    query: &ast::Query,
    ctx: &mut Context<'_>,
) -> Result<Expr> {
    let op = comparison(op).expect("a comparison");
    let array = match is_row_value(&value) {
        true => row_array_subquery(query, ctx)?,
        false => bind_array_subquery(query, ctx)?,
    };
    quantified(value, op, all, array)
}

fn quantified(value: Expr, op: crate::expr::BinaryOp, all: bool, array: Expr) -> Result<Expr> {
    let quantifier = if all { "ALL" } else { "ANY" };
    let array_type = array.data_type();
    let item = match item_type(&array_type) {
        Some(item) => comparison_type(&value.data_type(), item, &value)?,
        // '{a,b}' is an array of the other side's type.
        None if is_string_literal(&array) || array_type == DataType::Null => value.data_type(),
        None => {
            return Err(bind_err!(
                "{quantifier} needs an array or a subquery, not {}",
                type_name(&array_type)
            ));
        }
    };
    let rows = is_row_value(&value);
    Ok(Expr::Function {
        func: ScalarFunction::Quantified { op, all, rows },
        args: vec![value.cast(&item), array.cast(&list_of(item))],
        data_type: DataType::Boolean,
    })
}

/// `a[i]` (and `a[i][j]`, which is NULL: arrays here have one dimension).
pub(super) fn bind_subscripts(
    root: &ast::Expr,
    chain: &[ast::AccessExpr],
    ctx: &mut Context<'_>,
) -> Result<Expr> {
    // `t.a[i]` arrives as `t` then `.a` then `[i]`: the leading names are one column's.
    let names = chain
        .iter()
        .take_while(|a| matches!(a, ast::AccessExpr::Dot(ast::Expr::Identifier(_))))
        .count();
    let (mut value, chain) = match root {
        ast::Expr::Identifier(first) if names > 0 => {
            let mut parts = vec![first.clone()];
            for access in &chain[..names] {
                if let ast::AccessExpr::Dot(ast::Expr::Identifier(part)) = access {
                    parts.push(part.clone());
                }
            }
            (
                bind_expr(&ast::Expr::CompoundIdentifier(parts), ctx)?,
                &chain[names..],
            )
        }
        _ => (bind_expr(root, ctx)?, chain),
    };
    for access in chain {
        if let ast::AccessExpr::Dot(ast::Expr::Identifier(name)) = access {
            value = super::structs::field_by_name(value, &normalize(name))?;
            continue;
        }
        if let ast::AccessExpr::Subscript(ast::Subscript::Slice {
            lower_bound,
            upper_bound,
            stride,
        }) = access
        {
            // A missing bound is the first or the last place.
            let mut bound = |b: &Option<ast::Expr>, missing: i64| match b {
                Some(b) => bind_expr(b, ctx),
                None => Ok(Expr::Literal(ScalarValue::Int64(missing))),
            };
            let mut bounds = vec![bound(lower_bound, 1)?, bound(upper_bound, -1)?];
            if stride.is_some() {
                bounds.push(bound(stride, 1)?);
            }
            value = super::list_picks::slice("a slice", Some(&value), &bounds)?;
            continue;
        }
        let ast::AccessExpr::Subscript(ast::Subscript::Index { index }) = access else {
            return Err(unsupported!("the access {access}"));
        };
        let data_type = value.data_type();
        if let DataType::Struct(_) = data_type {
            let key = bind_expr(index, ctx)?;
            value = super::structs::struct_extract(value, &key)?;
            continue;
        }
        if let DataType::Map(..) = data_type {
            value = super::maps::element(value, bind_expr(index, ctx)?)?;
            continue;
        }
        // DuckDB's `s[i]`: the i-th character (from the end when negative), '' past the ends.
        if data_type == DataType::Utf8 {
            let place = bind_expr(index, ctx)?;
            value = super::list_picks::slice("a subscript", Some(&value), &[place.clone(), place])?;
            continue;
        }
        let Some(item) = item_type(&data_type).cloned() else {
            return Err(bind_err!(
                "cannot subscript a value of type {}: it is not an array",
                type_name(&data_type)
            ));
        };
        let index = integer_arg(bind_expr(index, ctx)?, "an array subscript")?;
        value = Expr::Function {
            func: ScalarFunction::ArrayElement,
            args: vec![value, index.cast(&DataType::Int64)],
            data_type: item,
        };
    }
    Ok(value)
}

/// `ARRAY(subquery)`: the subquery's one column as an array, in the subquery's order; `{}`
/// when it has no rows.
pub(super) fn bind_array_subquery(query: &ast::Query, ctx: &mut Context<'_>) -> Result<Expr> {
    Ok(empty_without_rows(scalar_subquery_of(
        query, ctx, into_array,
    )?))
}

/// An array subquery's value, `{}` rather than NULL when the subquery has no rows.
fn empty_without_rows(value: Expr) -> Expr {
    let data_type = value.data_type();
    let empty = empty_or_text("{}", &data_type);
    Expr::Function {
        func: ScalarFunction::Coalesce,
        args: vec![value, empty],
        data_type,
    }
}

/// The plan's rows aggregated into one array, ordered by the plan's ORDER BY. A sort under a
/// projection (which drops sort keys not selected) or a limit keeps its keys.
fn into_array(plan: LogicalPlan) -> Result<LogicalPlan> {
    single_column(&plan)?;
    let (input, arg, order) = match plan {
        LogicalPlan::Sort { input, keys, .. } => {
            let arg = first_column(&input);
            (*input, arg, keys)
        }
        LogicalPlan::Project { input, exprs, .. } if matches!(*input, LogicalPlan::Sort { .. }) => {
            let LogicalPlan::Sort { input, keys, .. } = *input else {
                unreachable!("matched a sort")
            };
            (*input, exprs[0].clone(), keys)
        }
        LogicalPlan::Limit { input, skip, fetch } if matches!(&*input, LogicalPlan::Project { input, .. } if matches!(**input, LogicalPlan::Sort { .. })) =>
        {
            let LogicalPlan::Project {
                input: sort, exprs, ..
            } = *input
            else {
                unreachable!("matched a projection")
            };
            let LogicalPlan::Sort { keys, .. } = &*sort else {
                unreachable!("matched a sort")
            };
            let keys = keys.clone();
            let limited = LogicalPlan::Limit {
                input: sort,
                skip,
                fetch,
            };
            (limited, exprs[0].clone(), keys)
        }
        plan => {
            let arg = first_column(&plan);
            (plan, arg, Vec::new())
        }
    };
    let data_type = list_of(arg.data_type());
    let schema = Arc::new(arrow::datatypes::Schema::new(vec![Field::new(
        "array",
        data_type.clone(),
        true,
    )]));
    let aggregate = LogicalPlan::Aggregate {
        input: Box::new(input),
        group: Vec::new(),
        aggregates: vec![AggregateCall {
            func: AggregateFunction::ArrayAgg,
            arg: Some(arg),
            data_type,
            separator: None,
            order,
            filter: None,
        }],
        schema,
    };
    // A value computed from one aggregate, the shape a correlated subquery is decorrelated in.
    let value = first_column(&aggregate);
    Ok(aggregate.project(vec![value], vec!["array".to_string()]))
}

fn first_column(plan: &LogicalPlan) -> Expr {
    let schema = plan.schema();
    let field = schema.field(0);
    Expr::column(0, field.name(), field.data_type().clone())
}

/// The array functions, by name; `None` when `name` is not one.
pub(super) fn array_function(name: &str, args: &[Expr]) -> Option<Result<Expr>> {
    matches!(
        name,
        "array_to_string" | "array_length" | "array_upper" | "array_lower" | "cardinality"
    )
    .then(|| bind_array_function(name, args))
}

fn bind_array_function(name: &str, args: &[Expr]) -> Result<Expr> {
    let arity = |n: usize| expect_arity(name, args, n);
    let array = |arg: &Expr| -> Result<Expr> {
        let t = arg.data_type();
        match t {
            DataType::List(_) => Ok(arg.clone()),
            DataType::Null => Ok(arg.clone().cast(&list_of(DataType::Utf8))),
            _ => Err(bind_err!("{name} needs an array, not {}", type_name(&t))),
        }
    };
    let (func, args, data_type) = match name {
        "array_to_string" => {
            if !(2..=3).contains(&args.len()) {
                return Err(bind_err!("{name} takes 2 or 3 arguments"));
            }
            let mut call = vec![array(&args[0])?];
            call.extend(strings(args[1..].to_vec()));
            (ScalarFunction::ArrayToString, call, DataType::Utf8)
        }
        "cardinality" => {
            arity(1)?;
            let call = vec![array(&args[0])?];
            (ScalarFunction::Cardinality, call, DataType::Int64)
        }
        _ => {
            arity(2)?;
            let dimension = integer_arg(args[1].clone(), name)?.cast(&DataType::Int64);
            let call = vec![array(&args[0])?, dimension];
            (ScalarFunction::ArrayLength, call, DataType::Int64)
        }
    };
    let value = Expr::Function {
        func,
        args,
        data_type,
    };
    if name != "array_lower" {
        return Ok(value);
    }
    // Arrays start at 1; the lower bound of an empty array is NULL, as its length is.
    Ok(Expr::Case {
        branches: vec![(
            Expr::IsNotNull(Box::new(value)),
            Expr::Literal(ScalarValue::Int64(1)),
        )],
        otherwise: None,
        data_type: DataType::Int64,
    })
}

/// True when `data_type` is the catalog type `name` (`regclass`, `regproc`).
fn is_catalog_type(data_type: &ast::DataType, name: &str) -> bool {
    match data_type {
        ast::DataType::Regclass => name == "regclass",
        ast::DataType::Custom(type_name, _) => type_name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .is_some_and(|i| i.value.eq_ignore_ascii_case(name)),
        _ => false,
    }
}

/// `'name'::regclass`: the oid of the relation `name`, as clients compare it with catalog oids.
fn relation_oid(name: &str, ctx: &Context<'_>) -> Result<Expr> {
    let bare = name.strip_prefix("pg_catalog.").unwrap_or(name);
    let oid = match crate::system_tables::catalog_table_oid(bare) {
        Some(oid) => oid,
        None => {
            let table = ctx
                .binder()
                .and_then(|b| b.snapshot_table(name.strip_prefix("public.").unwrap_or(name)))
                .ok_or_else(|| bind_err!("relation \"{name}\" does not exist"))?;
            crate::system_tables::table_oid(&table)
        }
    };
    Ok(Expr::Literal(ScalarValue::Int32(oid)))
}
