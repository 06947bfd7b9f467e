//! Binding of scalar and aggregate expressions: names to columns, literals to typed values,
//! and the implicit casts Postgres and DuckDB apply. `bind_expr` dispatches on the kind of
//! expression; each kind's rules are in a file of this folder.

mod aggregate_calls;
mod aggregates;
mod case_when;
mod comparisons;
mod date_arithmetic;
mod function_calls;
mod identifiers;
mod literals;
mod operators;
mod subquery_values;

use arrow::datatypes::DataType;
use sqlparser::ast::{self, BinaryOperator, UnaryOperator, Value};

pub(super) use aggregate_calls::{argument_context, bind_aggregate_call, refuse_outer_only};
pub(super) use aggregates::bind_aggregated;
pub use aggregates::{Aggregation, aggregate_function, contains_aggregate};
pub(super) use case_when::{bind_case, common_type};
pub use comparisons::{at_least, equality};
pub(super) use comparisons::{
    boolean, coerce, comparison, comparison_type, distinct_values, is_string_literal, like,
};
use comparisons::{escaped_pattern, row_comparison, truth_test, truth_value};
pub(super) use function_calls::{
    date_part, function_args, function_name, integer_arg, refuse_named_arguments,
};
pub(super) use identifiers::resolve_column;
use identifiers::struct_path;
pub use literals::literal;
pub(super) use literals::{interval_literal, interval_of_text};
pub(super) use operators::binary;
pub use subquery_values::contains_subquery;
pub(super) use subquery_values::{
    bind_mark, bind_scalar_subquery, scalar_subquery_of, single_column,
};

use super::Binder;
use super::functions::bind_function;
use super::scope::{Scope, normalize};
use crate::expr::{BinaryOp, Expr, ScalarFunction};
use crate::scalar::ScalarValue;
use crate::types::is_numeric;
use crate::{Result, bind_err, unsupported};

/// Where an expression is bound.
pub enum Context<'a> {
    /// Over the columns of a scope; `clause` names the clause in errors about aggregates.
    /// With a binder, subqueries may appear (and name the scope's columns).
    Plain {
        scope: &'a Scope,
        clause: &'a str,
        binder: Option<&'a Binder<'a>>,
    },
    /// Over an aggregation's output; with a binder, subqueries may appear.
    Aggregated(&'a mut Aggregation, Option<&'a Binder<'a>>),
}

impl<'a> Context<'a> {
    /// The binder of the statement, where the context has one.
    pub fn binder(&self) -> Option<&Binder<'a>> {
        match self {
            Context::Plain { binder, .. } => *binder,
            Context::Aggregated(_, binder) => *binder,
        }
    }

    /// A plain context without subqueries.
    pub fn plain(scope: &'a Scope, clause: &'a str) -> Context<'a> {
        Context::Plain {
            scope,
            clause,
            binder: None,
        }
    }

    /// A plain context for `expr`, which sees the statement's binder when `expr` calls a
    /// typed function (found through it, ADR 0081) and holds no subquery (which a plain clause
    /// refuses). Otherwise the context is as plain as ever: with a binder, names of enclosing
    /// queries would resolve where a plain clause must not reach them.
    pub fn plain_for(
        expr: &ast::Expr,
        scope: &'a Scope,
        clause: &'a str,
        binder: Option<&'a Binder<'a>>,
    ) -> Context<'a> {
        let binder = binder.filter(|binder| {
            !subquery_values::contains_subquery(expr) && calls_typed_function(binder, expr)
        });
        Context::Plain {
            scope,
            clause,
            binder,
        }
    }
}

/// Whether `expr` calls one of the lake's typed functions.
fn calls_typed_function(binder: &Binder<'_>, expr: &ast::Expr) -> bool {
    let mut found = false;
    let _ = ast::visit_expressions(expr, |e| {
        if let ast::Expr::Function(function) = e
            && let Ok(name) = super::object_name(&function.name)
            && !binder.snapshot.functions_named(&name).is_empty()
        {
            found = true;
            return std::ops::ControlFlow::Break(());
        }
        std::ops::ControlFlow::Continue(())
    });
    found
}

/// Binds one expression in a context.
pub fn bind_expr(expr: &ast::Expr, ctx: &mut Context<'_>) -> Result<Expr> {
    if let Context::Aggregated(agg, binder) = ctx {
        return bind_aggregated(expr, agg, *binder);
    }
    bind_generic(expr, ctx)
}

/// A type as SQL users know it, for messages.
pub fn type_name(data_type: &DataType) -> String {
    match pondra_catalog::SqlType::from_arrow(data_type) {
        Some(t) => t.to_string(),
        None if *data_type == DataType::Null => "NULL".into(),
        None => match data_type {
            DataType::List(item) => format!("{}[]", type_name(item.data_type())),
            DataType::Struct(fields) => {
                let fields: Vec<String> = fields
                    .iter()
                    .map(|f| format!("{} {}", f.name(), type_name(f.data_type())))
                    .collect();
                format!("STRUCT({})", fields.join(", "))
            }
            other => other.to_string(),
        },
    }
}

pub(super) fn bind_generic(expr: &ast::Expr, ctx: &mut Context<'_>) -> Result<Expr> {
    use ast::Expr as E;
    match expr {
        E::Identifier(ident) => resolve_column(ctx, None, ident),
        E::CompoundIdentifier(parts) => match parts.as_slice() {
            // `schema.table.column` and `database.schema.table.column` (SQLAlchemy's
            // `pg_catalog.pg_class.relname`) name the column through its table.
            [.., table, column] if parts.len() <= 4 => {
                match resolve_column(ctx, Some(normalize(table)), column) {
                    Ok(bound) => Ok(bound),
                    Err(error) => struct_path(parts, ctx).map_err(|_| error),
                }
            }
            _ => struct_path(parts, ctx),
        },
        E::Dictionary(fields) => super::structs::bind_dictionary(fields, ctx),
        E::Map(map) => super::maps::bind_map_literal(map, ctx),
        E::Tuple(items) => super::structs::bind_row(items, ctx),
        E::Value(value) => Ok(Expr::Literal(literal(&value.value)?)),
        E::TypedString(typed) => {
            let target =
                super::arrays::in_session_zone(super::arrays::cast_target(&typed.data_type)?, ctx);
            let text = match &typed.value.value {
                Value::SingleQuotedString(s) => s.clone(),
                other => return Err(bind_err!("expected a quoted string, got {other}")),
            };
            Ok(Expr::Literal(ScalarValue::Utf8(text)).cast(&target))
        }
        E::Nested(inner) => bind_expr(inner, ctx),
        // Pondra compares text by bytes; the collations clients name ("default", "C") do too.
        E::Collate { expr, collation }
            if matches!(
                collation
                    .0
                    .last()
                    .and_then(|p| p.as_ident())
                    .map(|i| i.value.to_lowercase())
                    .as_deref(),
                Some("default" | "c" | "posix")
            ) =>
        {
            bind_expr(expr, ctx)
        }
        E::BinaryOp { left, op, right }
            if matches!((left.as_ref(), right.as_ref()), (E::Tuple(_), E::Tuple(_))) =>
        {
            bind_expr(&row_comparison(left, op, right)?, ctx)
        }
        E::In {
            expr: inner,
            target: ast::InTarget::List(list),
            negated,
            ..
        } if matches!(inner.as_ref(), E::Tuple(_)) => {
            let equal = |row: &ast::Expr| row_comparison(inner, &BinaryOperator::Eq, row);
            let any = list
                .iter()
                .map(equal)
                .reduce(|a, b| {
                    Ok(ast::Expr::BinaryOp {
                        left: Box::new(a?),
                        op: BinaryOperator::Or,
                        right: Box::new(b?),
                    })
                })
                .ok_or_else(|| bind_err!("IN needs at least one row"))??;
            let any = ast::Expr::Nested(Box::new(any));
            match negated {
                true => bind_expr(
                    &ast::Expr::UnaryOp {
                        op: UnaryOperator::Not,
                        expr: Box::new(any),
                    },
                    ctx,
                ),
                false => bind_expr(&any, ctx),
            }
        }
        E::BinaryOp { left, op, right } => {
            let left = bind_expr(left, ctx)?;
            let right = bind_expr(right, ctx)?;
            binary(left, op, right)
        }
        E::UnaryOp { op, expr: inner } => {
            let inner = bind_expr(inner, ctx)?;
            match op {
                UnaryOperator::Not => Ok(Expr::Not(Box::new(boolean(inner, "NOT")?))),
                UnaryOperator::Minus => match inner {
                    Expr::Literal(ScalarValue::Int32(v)) => {
                        Ok(Expr::Literal(ScalarValue::Int32(-v)))
                    }
                    Expr::Literal(ScalarValue::Int64(v)) => {
                        Ok(Expr::Literal(ScalarValue::Int64(-v)))
                    }
                    inner if is_numeric(&inner.data_type()) => Ok(Expr::Negative(Box::new(inner))),
                    inner => Err(bind_err!(
                        "cannot negate a value of type {}",
                        type_name(&inner.data_type())
                    )),
                },
                UnaryOperator::Plus => Ok(inner),
                other => Err(unsupported!("the operator {other}")),
            }
        }
        E::IsTrue(inner) | E::IsNotTrue(inner) | E::IsFalse(inner) | E::IsNotFalse(inner) => {
            truth_test(expr, bind_expr(inner, ctx)?)
        }
        E::IsUnknown(inner) | E::IsNotUnknown(inner) => {
            let value = Box::new(truth_value(bind_expr(inner, ctx)?, "IS UNKNOWN")?);
            Ok(match expr {
                E::IsUnknown(_) => Expr::IsNull(value),
                _ => Expr::IsNotNull(value),
            })
        }
        E::IsNull(inner) => Ok(Expr::IsNull(Box::new(bind_expr(inner, ctx)?))),
        E::IsNotNull(inner) => Ok(Expr::IsNotNull(Box::new(bind_expr(inner, ctx)?))),
        E::IsDistinctFrom(left, right) => {
            distinct_values(bind_expr(left, ctx)?, bind_expr(right, ctx)?)
        }
        E::IsNotDistinctFrom(left, right) => Ok(Expr::Not(Box::new(distinct_values(
            bind_expr(left, ctx)?,
            bind_expr(right, ctx)?,
        )?))),
        E::Between {
            expr: inner,
            negated,
            low,
            high,
        } => {
            let value = bind_expr(inner, ctx)?;
            let low = bind_expr(low, ctx)?;
            let high = bind_expr(high, ctx)?;
            let lower = binary(value.clone(), &BinaryOperator::GtEq, low)?;
            let upper = binary(value, &BinaryOperator::LtEq, high)?;
            let both = Expr::Binary {
                op: BinaryOp::And,
                left: Box::new(lower),
                right: Box::new(upper),
            };
            Ok(if *negated {
                Expr::Not(Box::new(both))
            } else {
                both
            })
        }
        E::In {
            expr: inner,
            target: ast::InTarget::List(list),
            negated,
            ..
        } => {
            let value = bind_expr(inner, ctx)?;
            let items = list
                .iter()
                .map(|e| bind_expr(e, ctx))
                .collect::<Result<Vec<_>>>()?;
            let mut target = value.data_type();
            for item in &items {
                target = comparison_type(&target, &item.data_type(), item)?;
            }
            Ok(Expr::InList {
                expr: Box::new(coerce(value, &target)),
                list: items.into_iter().map(|e| coerce(e, &target)).collect(),
                negated: *negated,
            })
        }
        E::Like {
            negated,
            expr: inner,
            pattern,
            escape_char,
            any: false,
        } => {
            let pattern = escaped_pattern(bind_expr(pattern, ctx)?, escape_char.as_deref(), ctx)?;
            like(bind_expr(inner, ctx)?, pattern, *negated, false)
        }
        E::ILike {
            negated,
            expr: inner,
            pattern,
            escape_char,
            any: false,
        } => {
            let pattern = escaped_pattern(bind_expr(pattern, ctx)?, escape_char.as_deref(), ctx)?;
            like(bind_expr(inner, ctx)?, pattern, *negated, true)
        }
        E::Cast {
            kind: ast::CastKind::TryCast | ast::CastKind::SafeCast,
            expr: inner,
            data_type,
            ..
        } => {
            let target = super::arrays::cast_target(data_type)?;
            let value = bind_expr(inner, ctx)?;
            let cast = match value.data_type() == target {
                true => value,
                false => Expr::Function {
                    func: crate::expr::ScalarFunction::TryCast,
                    args: vec![value],
                    data_type: target,
                },
            };
            Ok(super::arrays::within_domain(cast, data_type, true))
        }
        E::Cast {
            expr: inner,
            data_type,
            ..
        } => super::arrays::bind_cast(inner, data_type, ctx),
        E::Case {
            operand,
            conditions,
            else_result,
            ..
        } => bind_case(operand.as_deref(), conditions, else_result.as_deref(), ctx),
        E::Function(function) => bind_function(function, ctx),
        E::Interval(interval) if !matches!(interval.value.as_ref(), ast::Expr::Value(_)) => {
            super::date_functions::interval_of_expression(interval, ctx)
        }
        E::Interval(interval) => Ok(Expr::Literal(interval_literal(interval)?)),
        E::Trim {
            trim_where,
            trim_what,
            expr: inner,
            trim_characters: None,
        } => {
            let (leading, trailing) = match trim_where {
                None | Some(ast::TrimWhereField::Both) => (true, true),
                Some(ast::TrimWhereField::Leading) => (true, false),
                Some(ast::TrimWhereField::Trailing) => (false, true),
            };
            let mut args = vec![bind_expr(inner, ctx)?.cast(&DataType::Utf8)];
            if let Some(characters) = trim_what {
                args.push(bind_expr(characters, ctx)?.cast(&DataType::Utf8));
            }
            Ok(Expr::Function {
                func: ScalarFunction::Trim(leading, trailing),
                args,
                data_type: DataType::Utf8,
            })
        }
        E::Position { expr, r#in } => {
            let needle = bind_expr(expr, ctx)?.cast(&DataType::Utf8);
            let haystack = bind_expr(r#in, ctx)?.cast(&DataType::Utf8);
            Ok(Expr::Function {
                func: ScalarFunction::Position,
                args: vec![haystack, needle],
                data_type: DataType::Int64,
            })
        }
        E::Ceil { expr: inner, field } | E::Floor { expr: inner, field } => {
            if !matches!(
                field,
                ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime)
            ) {
                return Err(unsupported!("CEIL / FLOOR with a scale or a date part"));
            }
            let value = bind_expr(inner, ctx)?;
            let t = match value.data_type() {
                t @ (DataType::Int32 | DataType::Int64) => t,
                t if is_numeric(&t) || t == DataType::Null => DataType::Float64,
                t => {
                    return Err(bind_err!(
                        "CEIL / FLOOR need a number, not {}",
                        type_name(&t)
                    ));
                }
            };
            let func = if matches!(expr, E::Ceil { .. }) {
                ScalarFunction::Ceil
            } else {
                ScalarFunction::Floor
            };
            Ok(Expr::Function {
                func,
                args: vec![value.cast(&t)],
                data_type: t,
            })
        }
        E::Extract { field, expr, .. } => {
            let part = field.to_string().to_lowercase();
            let value = bind_expr(expr, ctx)?;
            if let Some(bound) = super::interval_ops::interval_part(&part, &value) {
                return bound;
            }
            let value = super::date_functions::time_of_day(value, &part)?;
            if let Some(derived) = super::date_functions::derived_part(&part, &value) {
                return derived;
            }
            let t = value.data_type();
            if !matches!(t, DataType::Date32 | DataType::Timestamp(..)) {
                return Err(bind_err!(
                    "EXTRACT needs a DATE or TIMESTAMP, not {}",
                    type_name(&t)
                ));
            }
            Ok(Expr::Function {
                func: ScalarFunction::DatePart(date_part(field)?),
                args: vec![value],
                data_type: DataType::Int64,
            })
        }
        E::Substring {
            expr,
            substring_from,
            substring_for,
            ..
        } => {
            let mut args = vec![bind_expr(expr, ctx)?.cast(&DataType::Utf8)];
            let from = match substring_from {
                Some(f) => bind_expr(f, ctx)?,
                None => Expr::Literal(ScalarValue::Int64(1)),
            };
            args.push(integer_arg(from, "SUBSTRING")?);
            if let Some(length) = substring_for {
                args.push(integer_arg(bind_expr(length, ctx)?, "SUBSTRING")?);
            }
            Ok(Expr::Function {
                func: ScalarFunction::Substring,
                args,
                data_type: DataType::Utf8,
            })
        }
        E::Overlay {
            expr,
            overlay_what,
            overlay_from,
            overlay_for,
        } => {
            let mut args = vec![
                bind_expr(expr, ctx)?,
                bind_expr(overlay_what, ctx)?,
                bind_expr(overlay_from, ctx)?,
            ];
            if let Some(count) = overlay_for {
                args.push(bind_expr(count, ctx)?);
            }
            super::text_functions::text_function("overlay", &args)
                .expect("overlay is a text function")
        }
        E::Subquery(query) => bind_scalar_subquery(query, ctx),
        E::Array(array) => super::arrays::bind_array(array, ctx),
        E::AnyOp {
            left,
            compare_op,
            right,
            ..
        } => super::arrays::bind_quantified(left, compare_op, right, false, ctx),
        E::AllOp {
            left,
            compare_op,
            right,
        } => super::arrays::bind_quantified(left, compare_op, right, true, ctx),
        E::CompoundFieldAccess { root, access_chain } => {
            super::arrays::bind_subscripts(root, access_chain, ctx)
        }
        E::Exists { subquery, negated } => bind_mark(subquery, None, *negated, ctx),
        E::In {
            expr: probe,
            target: ast::InTarget::Subquery(subquery),
            negated,
            ..
        } => bind_mark(subquery, Some(probe), *negated, ctx),
        // `x IN list` (DuckDB, read as `x IN UNNEST(list)`): whether the list holds `x`; NULL
        // for a NULL `x` or list.
        E::In {
            expr: probe,
            target: ast::InTarget::Unnest(list),
            negated,
            ..
        } => {
            let probe = bind_expr(probe, ctx)?;
            let list = bind_expr(list, ctx)?;
            let contains =
                super::duckdb_functions::duckdb_function("list_contains", &[list, probe.clone()])
                    .expect("list_contains is a DuckDB function")?;
            let contains = Expr::Case {
                branches: vec![(
                    Expr::IsNull(Box::new(probe)),
                    Expr::Literal(ScalarValue::Null).cast(&DataType::Boolean),
                )],
                otherwise: Some(Box::new(contains)),
                data_type: DataType::Boolean,
            };
            Ok(match negated {
                true => Expr::Not(Box::new(contains)),
                false => contains,
            })
        }
        E::In { .. } => Err(unsupported!("this IN")),
        other => Err(unsupported!("the expression {other}")),
    }
}

/// Window functions are computed after grouping and before the select list; their values are
/// columns numbered from here until the binder knows how wide the input is.
pub const WINDOW_BASE: usize = 1 << 40;

/// Likewise, the elements a set-returning function in the select list gives: a column after
/// the input's, once the input is known.
pub const SET_FUNCTION_BASE: usize = 1 << 42;

/// Likewise, the values of a grouped query's correlated subqueries: joined to the aggregation's
/// output, whose width is known only once the whole SELECT is bound.
pub const GROUPED_SUBQUERY_BASE: usize = 1 << 41;
