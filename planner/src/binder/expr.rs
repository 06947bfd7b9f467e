//! Binding of scalar and aggregate expressions: names to columns, literals to typed values,
//! and the implicit casts Postgres and DuckDB apply.

use arrow::datatypes::DataType;
use sqlparser::ast::{self, BinaryOperator, UnaryOperator, Value};

use super::Binder;
use super::functions::{bind_function, strings};
use super::scope::{Scope, normalize};
use crate::expr::{
    AggregateCall, AggregateFunction, BinaryOp, BitwiseOp, DatePart, Expr, ScalarFunction, SortKey,
};
use crate::logical::SubqueryKind;
use crate::scalar::ScalarValue;
use crate::types::{common_numeric_type, integer_digits, is_numeric};
use crate::{Result, bind_err, unsupported};
use pondra_catalog::{decimal_parts, decimal_type};

/// Aggregation state while binding the expressions above a GROUP BY: expressions are bound
/// over the aggregate's output, `[group keys..., aggregates...]`.
pub struct Aggregation {
    pub input: Scope,
    pub group: Vec<Expr>,
    pub aggregates: Vec<AggregateCall>,
}

impl Aggregation {
    /// The output column of an aggregate call, added unless the same call is there already.
    pub(super) fn column_of(&mut self, call: AggregateCall) -> Expr {
        let index = match self.aggregates.iter().position(|a| a == &call) {
            Some(i) => i,
            None => {
                self.aggregates.push(call.clone());
                self.aggregates.len() - 1
            }
        };
        Expr::column(self.group.len() + index, call.to_string(), call.data_type)
    }
}

/// `GROUPING(a, b, ...)`: an integer whose bits, the first argument's highest, say which of
/// the arguments the row's grouping set does not group by.
fn bind_grouping(function: &ast::Function, agg: &mut Aggregation) -> Result<Expr> {
    let args = function_args(function);
    if args.is_empty() {
        return Err(bind_err!("GROUPING needs at least one argument"));
    }
    let id = agg.column_of(AggregateCall {
        func: AggregateFunction::GroupingId,
        arg: None,
        data_type: DataType::Int64,
        separator: None,
        order: Vec::new(),
        filter: None,
    });
    let bit = |value: Expr, shift: i64| Expr::Function {
        func: ScalarFunction::Bitwise(BitwiseOp::ShiftLeft),
        args: vec![value, Expr::Literal(ScalarValue::Int64(shift))],
        data_type: DataType::Int64,
    };
    let mut result = Expr::Literal(ScalarValue::Int64(0));
    for (j, arg) in args.iter().enumerate() {
        let bound = bind_generic(arg, &mut Context::plain(&agg.input, "GROUPING"))?;
        let Some(key) = agg.group.iter().position(|g| *g == bound) else {
            return Err(bind_err!(
                "arguments of GROUPING must be grouping expressions: {arg} is not"
            ));
        };
        let grouped = Expr::Function {
            func: ScalarFunction::Bitwise(BitwiseOp::And),
            args: vec![
                Expr::Function {
                    func: ScalarFunction::Bitwise(BitwiseOp::ShiftRight),
                    args: vec![id.clone(), Expr::Literal(ScalarValue::Int64(key as i64))],
                    data_type: DataType::Int64,
                },
                Expr::Literal(ScalarValue::Int64(1)),
            ],
            data_type: DataType::Int64,
        };
        result = Expr::Binary {
            op: BinaryOp::Plus,
            left: Box::new(result),
            right: Box::new(bit(grouped, (args.len() - 1 - j) as i64)),
        };
    }
    Ok(result.cast(&DataType::Int32))
}

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
}

/// The aggregate function a name denotes, if any.
pub fn aggregate_function(name: &str) -> Option<AggregateFunction> {
    Some(match name {
        "count" => AggregateFunction::Count,
        "sum" => AggregateFunction::Sum,
        "min" => AggregateFunction::Min,
        "max" => AggregateFunction::Max,
        "avg" | "mean" => AggregateFunction::Avg,
        "stddev" | "stddev_samp" => AggregateFunction::StddevSamp,
        "stddev_pop" => AggregateFunction::StddevPop,
        "variance" | "var_samp" => AggregateFunction::VarSamp,
        "var_pop" => AggregateFunction::VarPop,
        "approx_count_distinct" => AggregateFunction::CountDistinct,
        "string_agg" | "group_concat" | "listagg" => AggregateFunction::StringAgg,
        "array_agg" | "list" => AggregateFunction::ArrayAgg,
        // Over booleans, false < true: all true is the least, any true the greatest.
        "bool_and" | "every" => AggregateFunction::Min,
        "bool_or" => AggregateFunction::Max,
        "grouping" | "grouping_id" => AggregateFunction::GroupingId,
        "product" => AggregateFunction::Product,
        "fsum" | "kahan_sum" | "sumkahan" => AggregateFunction::KahanSum,
        _ => return None,
    })
}

pub(super) fn function_name(function: &ast::Function) -> String {
    function
        .name
        .0
        .last()
        .and_then(|p| p.as_ident())
        .map(normalize)
        .unwrap_or_default()
}

/// True when `expr` calls an aggregate function anywhere (outside subqueries).
pub fn contains_aggregate(expr: &ast::Expr) -> bool {
    use ast::Expr as E;
    match expr {
        E::Function(f) => {
            let name = function_name(f);
            let aggregate =
                aggregate_function(&name).is_some() || super::ordered_set::is_ordered_set(&name);
            (f.over.is_none() && aggregate)
                || function_args(f).iter().any(|a| contains_aggregate(a))
        }
        E::BinaryOp { left, right, .. }
        | E::AnyOp { left, right, .. }
        | E::AllOp { left, right, .. }
        | E::IsDistinctFrom(left, right)
        | E::IsNotDistinctFrom(left, right) => {
            contains_aggregate(left) || contains_aggregate(right)
        }
        E::Array(array) => array.elem.iter().any(contains_aggregate),
        E::CompoundFieldAccess { root, .. } => contains_aggregate(root),
        E::UnaryOp { expr, .. }
        | E::Nested(expr)
        | E::IsNull(expr)
        | E::IsNotNull(expr)
        | E::Cast { expr, .. } => contains_aggregate(expr),
        E::Between {
            expr, low, high, ..
        } => contains_aggregate(expr) || contains_aggregate(low) || contains_aggregate(high),
        E::In {
            expr,
            target: ast::InTarget::List(list),
            ..
        } => contains_aggregate(expr) || list.iter().any(contains_aggregate),
        E::Like { expr, pattern, .. } | E::ILike { expr, pattern, .. } => {
            contains_aggregate(expr) || contains_aggregate(pattern)
        }
        E::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            operand.as_deref().is_some_and(contains_aggregate)
                || conditions
                    .iter()
                    .any(|c| contains_aggregate(&c.condition) || contains_aggregate(&c.result))
                || else_result.as_deref().is_some_and(contains_aggregate)
        }
        _ => false,
    }
}

/// True when `expr` holds a subquery anywhere.
pub fn contains_subquery(expr: &ast::Expr) -> bool {
    use ast::Expr as E;
    match expr {
        E::Subquery(_) | E::Exists { .. } => true,
        E::In {
            target: ast::InTarget::Subquery(_),
            ..
        } => true,
        E::In {
            expr,
            target: ast::InTarget::List(list),
            ..
        } => contains_subquery(expr) || list.iter().any(contains_subquery),
        E::BinaryOp { left, right, .. }
        | E::IsDistinctFrom(left, right)
        | E::IsNotDistinctFrom(left, right) => contains_subquery(left) || contains_subquery(right),
        E::UnaryOp { expr, .. }
        | E::Nested(expr)
        | E::IsNull(expr)
        | E::IsNotNull(expr)
        | E::Cast { expr, .. } => contains_subquery(expr),
        E::Between {
            expr, low, high, ..
        } => contains_subquery(expr) || contains_subquery(low) || contains_subquery(high),
        E::Function(f) => {
            matches!(f.args, ast::FunctionArguments::Subquery(_))
                || function_args(f).iter().any(|a| contains_subquery(a))
        }
        E::AnyOp { left, right, .. } | E::AllOp { left, right, .. } => {
            contains_subquery(left) || contains_subquery(right)
        }
        E::Array(array) => array.elem.iter().any(contains_subquery),
        E::CompoundFieldAccess { root, .. } => contains_subquery(root),
        E::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            operand.as_deref().is_some_and(contains_subquery)
                || conditions
                    .iter()
                    .any(|c| contains_subquery(&c.condition) || contains_subquery(&c.result))
                || else_result.as_deref().is_some_and(contains_subquery)
        }
        _ => false,
    }
}

/// The plain positional arguments of a call (`*` is returned as a wildcard expression).
/// An error for a call with a named argument (`f(x := 1)`), which no function takes yet and
/// [`function_args`] would otherwise leave out.
pub(super) fn refuse_named_arguments(function: &ast::Function) -> Result<()> {
    if let ast::FunctionArguments::List(list) = &function.args
        && let Some(named) = list.args.iter().find(|a| {
            matches!(
                a,
                ast::FunctionArg::Named { .. } | ast::FunctionArg::ExprNamed { .. }
            )
        })
    {
        return Err(unsupported!("the named argument {named}"));
    }
    Ok(())
}

pub(super) fn function_args(function: &ast::Function) -> Vec<&ast::Expr> {
    match &function.args {
        ast::FunctionArguments::List(list) => list
            .args
            .iter()
            .filter_map(|a| match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Binds one expression in a context.
pub fn bind_expr(expr: &ast::Expr, ctx: &mut Context<'_>) -> Result<Expr> {
    if let Context::Aggregated(agg, binder) = ctx {
        return bind_aggregated(expr, agg, *binder);
    }
    bind_generic(expr, ctx)
}

pub(super) fn bind_aggregated(
    expr: &ast::Expr,
    agg: &mut Aggregation,
    binder: Option<&Binder<'_>>,
) -> Result<Expr> {
    if let ast::Expr::Function(function) = expr
        && function.over.is_none()
        && super::ordered_set::is_ordered_set(&function_name(function))
    {
        let name = function_name(function);
        return super::ordered_set::bind_ordered_set(function, &name, agg, binder);
    }
    if let ast::Expr::Function(function) = expr
        && function.over.is_none()
        && let Some(func) = aggregate_function(&function_name(function))
    {
        if func == AggregateFunction::GroupingId {
            return bind_grouping(function, agg);
        }
        if func == AggregateFunction::ArrayAgg && is_distinct(function) {
            return bind_distinct_array_agg(function, agg);
        }
        if let Some(average) = temporal_average(function, func, agg, binder)? {
            return Ok(average);
        }
        let call = bind_aggregate_call(function, func, &agg.input, binder)?;
        check_boolean_aggregate(&function_name(function), &call)?;
        return Ok(agg.column_of(call));
    }
    let mut plain = Context::plain(&agg.input, "GROUP BY");
    if !contains_subquery(expr)
        && let Ok(bound) = bind_generic(expr, &mut plain)
        && let Some(index) = agg.group.iter().position(|g| g == &bound)
    {
        return Ok(Expr::column(index, expr.to_string(), bound.data_type()));
    }
    if let ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_) = expr {
        // A column of an enclosing query is one value for the whole group.
        if let (Err(_), Some(binder)) = (bind_generic(expr, &mut plain), binder) {
            let no_columns = Scope::default();
            let mut outer_only = Context::Plain {
                scope: &no_columns,
                clause: "SELECT",
                binder: Some(binder),
            };
            if let Ok(outer) = bind_generic(expr, &mut outer_only)
                && outer.has_any_outer()
            {
                return Ok(outer);
            }
        }
        // Report a missing column as such, before complaining about grouping.
        bind_generic(expr, &mut plain)?;
        return Err(bind_err!(
            "column \"{expr}\" must appear in the GROUP BY clause or be used in an aggregate function"
        ));
    }
    bind_generic(expr, &mut Context::Aggregated(agg, binder))
}

/// `bool_and`, `bool_or` and `every` take booleans only (they are bound as min and max).
pub(super) fn check_boolean_aggregate(name: &str, call: &AggregateCall) -> Result<()> {
    let boolean = ["bool_and", "bool_or", "every"].contains(&name);
    match &call.arg {
        Some(arg) if boolean && !matches!(arg.data_type(), DataType::Boolean | DataType::Null) => {
            Err(bind_err!(
                "function {name}({}) does not exist: it takes a boolean",
                type_name(&arg.data_type())
            ))
        }
        _ => Ok(()),
    }
}

/// The context an aggregate's arguments are bound in: the aggregation's input, and the row
/// of an enclosing query (`sum(x + outer.y)`).
pub(super) fn argument_context<'a>(
    input: &'a Scope,
    binder: Option<&'a Binder<'a>>,
) -> Context<'a> {
    // An uncorrelated subquery is one value computed before the query runs; a correlated one
    // (or EXISTS / IN) would need a join below the aggregation, and is refused by the clause.
    Context::Plain {
        scope: input,
        clause: "aggregate arguments",
        binder,
    }
}

/// An aggregate argument that reads an enclosing query's columns only belongs, by the
/// standard, to that query, which it would make an aggregation: refused.
pub(super) fn refuse_outer_only(arg: &Expr, written: &ast::Expr) -> Result<()> {
    if arg.has_any_outer() && arg.column_indices().is_empty() {
        return Err(unsupported!(
            "an aggregate over only an enclosing query's columns ({written})"
        ));
    }
    Ok(())
}

/// `avg` of dates, times or timestamps (DuckDB): the average of their microseconds, made a
/// time again (a date's a TIMESTAMP); `None` for any other call.
fn temporal_average(
    function: &ast::Function,
    func: AggregateFunction,
    agg: &mut Aggregation,
    binder: Option<&Binder<'_>>,
) -> Result<Option<Expr>> {
    let ast::FunctionArguments::List(list) = &function.args else {
        return Ok(None);
    };
    let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(arg))] = list.args.as_slice() else {
        return Ok(None);
    };
    if func != AggregateFunction::Avg || contains_aggregate(arg) {
        return Ok(None);
    }
    let value = bind_generic(arg, &mut argument_context(&agg.input, binder))?;
    let Some(back) = super::ordered_set::temporal_back(&value.data_type()) else {
        return Ok(None);
    };
    refuse_outer_only(&value, arg)?;
    let func = match list.duplicate_treatment {
        Some(ast::DuplicateTreatment::Distinct) => AggregateFunction::AvgDistinct,
        _ => AggregateFunction::Avg,
    };
    let call = AggregateCall {
        func,
        arg: Some(super::ordered_set::micros_of(value)),
        data_type: DataType::Float64,
        separator: None,
        order: Vec::new(),
        filter: None,
    };
    let call = with_filter(call, function.filter.as_deref(), &agg.input)?;
    let average = agg.column_of(call);
    Ok(Some(average.cast(&DataType::Int64).cast(&back)))
}

pub(super) fn bind_aggregate_call(
    function: &ast::Function,
    func: AggregateFunction,
    input: &Scope,
    binder: Option<&Binder<'_>>,
) -> Result<AggregateCall> {
    let name = func.name();
    refuse_named_arguments(function)?;
    let ast::FunctionArguments::List(list) = &function.args else {
        return Err(bind_err!("{name} needs an argument"));
    };
    let distinct = list.duplicate_treatment == Some(ast::DuplicateTreatment::Distinct);
    let func = match (func, distinct) {
        (_, false) => func,
        (AggregateFunction::Count, true) => AggregateFunction::CountDistinct,
        (AggregateFunction::Sum, true) => AggregateFunction::SumDistinct,
        (AggregateFunction::Avg, true) => AggregateFunction::AvgDistinct,
        (AggregateFunction::StringAgg, true) => AggregateFunction::StringAggDistinct,
        // min and max ignore duplicates anyway.
        (AggregateFunction::Min | AggregateFunction::Max, true) => func,
        (_, true) => return Err(unsupported!("{name}(DISTINCT ...)")),
    };

    if function.over.is_some() {
        return Err(unsupported!("window functions"));
    }
    let mut order = Vec::new();
    for clause in &list.clauses {
        let ast::FunctionArgumentClause::OrderBy(items) = clause else {
            return Err(unsupported!("{clause} inside {name}(...)"));
        };
        for item in items {
            let (descending, nulls_first) = super::sort_options(item)?;
            let expr = bind_generic(&item.expr, &mut Context::plain(input, "ORDER BY"))?;
            order.push(SortKey {
                expr,
                descending,
                nulls_first,
            });
        }
    }
    // Only these depend on the order of their input; for any other the ORDER BY is moot.
    if !matches!(
        func,
        AggregateFunction::StringAgg
            | AggregateFunction::StringAggDistinct
            | AggregateFunction::ArrayAgg
    ) {
        order.clear();
    }
    let mut args = list.args.as_slice();
    let mut separator = None;
    let mut null_separator = false;
    if matches!(
        func,
        AggregateFunction::StringAgg | AggregateFunction::StringAggDistinct
    ) {
        separator = Some(match args {
            // Without a separator, a comma (DuckDB; Postgres asks for one).
            [_] => ",".to_string(),
            [
                _,
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(ast::Expr::Value(v))),
            ] => match &v.value {
                ast::Value::SingleQuotedString(s) => s.clone(),
                // A NULL separator makes the result NULL, as in DuckDB: no value is kept.
                ast::Value::Null => {
                    null_separator = true;
                    String::new()
                }
                other => {
                    return Err(bind_err!(
                        "{name}'s separator must be a string, not {other}"
                    ));
                }
            },
            [_, other] => {
                return Err(unsupported!(
                    "{name} with a separator other than a constant string ({other})"
                ));
            }
            _ => return Err(bind_err!("{name} takes a value and a separator")),
        });
        args = &args[..1];
    }
    if args.is_empty() && func == AggregateFunction::Count {
        // `count()` (DuckDB) counts rows, as `count(*)` does.
        let call = AggregateCall::new(AggregateFunction::CountStar, None);
        return with_filter(call, function.filter.as_deref(), input);
    }
    if args.len() != 1 {
        return Err(bind_err!("{name} takes one argument, got {}", args.len()));
    }
    let arg_expr = match &args[0] {
        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard)
            if func == AggregateFunction::Count =>
        {
            let call = AggregateCall::new(AggregateFunction::CountStar, None);
            return with_filter(call, function.filter.as_deref(), input);
        }
        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => e,
        other => return Err(bind_err!("{name}: unexpected argument {other}")),
    };
    if contains_aggregate(arg_expr) {
        return Err(bind_err!("aggregate function calls cannot be nested"));
    }
    let mut arg = bind_generic(arg_expr, &mut argument_context(input, binder))?;
    refuse_outer_only(&arg, arg_expr)?;
    if null_separator {
        arg = Expr::Literal(ScalarValue::Null);
    }
    if distinct && order.iter().any(|key| key.expr != arg) {
        return Err(bind_err!(
            "in a DISTINCT aggregate, ORDER BY expressions must appear in the argument list"
        ));
    }
    let arg_type = arg.data_type();
    match func {
        AggregateFunction::Sum
        | AggregateFunction::Avg
        | AggregateFunction::SumDistinct
        | AggregateFunction::AvgDistinct
        | AggregateFunction::StddevSamp
        | AggregateFunction::StddevPop
        | AggregateFunction::VarSamp
        | AggregateFunction::VarPop
        | AggregateFunction::Product
        | AggregateFunction::KahanSum
            if !is_numeric(&arg_type) =>
        {
            if arg_type == DataType::Null {
                arg = arg.cast(&DataType::Int64);
            } else {
                return Err(bind_err!(
                    "{name}({}) is not defined: the argument must be a number",
                    type_name(&arg_type)
                ));
            }
        }
        AggregateFunction::Min | AggregateFunction::Max if arg_type == DataType::Null => {
            arg = arg.cast(&DataType::Int64);
        }
        AggregateFunction::StringAgg | AggregateFunction::StringAggDistinct => {
            arg = arg.cast(&DataType::Utf8);
        }
        _ => {}
    }
    if matches!(
        func,
        AggregateFunction::Product | AggregateFunction::KahanSum
    ) {
        arg = arg.cast(&DataType::Float64);
    }
    let data_type = func.result_type(Some(&arg.data_type()));
    let call = AggregateCall {
        func,
        arg: Some(arg),
        data_type,
        separator,
        order,
        filter: None,
    };
    with_filter(call, function.filter.as_deref(), input)
}

/// `agg(x) FILTER (WHERE c)` is `agg(CASE WHEN c THEN x END)`; `count(*)` counts `CASE WHEN c
/// THEN 1 END`.
pub(super) fn with_filter(
    call: AggregateCall,
    filter: Option<&ast::Expr>,
    input: &Scope,
) -> Result<AggregateCall> {
    let Some(filter) = filter else {
        return Ok(call);
    };
    if contains_aggregate(filter) {
        return Err(bind_err!("aggregate functions are not allowed in FILTER"));
    }
    let condition = boolean(
        bind_generic(filter, &mut Context::plain(input, "FILTER"))?,
        "FILTER",
    )?;
    if call.func == AggregateFunction::ArrayAgg {
        return Ok(AggregateCall {
            filter: Some(condition),
            ..call
        });
    }
    let (func, value) = match call.arg {
        Some(arg) => (call.func, arg),
        None => (
            AggregateFunction::Count,
            Expr::Literal(ScalarValue::Int32(1)),
        ),
    };
    let data_type = value.data_type();
    Ok(AggregateCall {
        func,
        arg: Some(Expr::Case {
            branches: vec![(condition, value)],
            otherwise: None,
            data_type,
        }),
        data_type: call.data_type,
        separator: call.separator,
        order: call.order,
        filter: call.filter,
    })
}

/// `s.a.b` or `t.s.a`: a column then fields of its structs, the column named through its
/// table when the first name is one.
fn struct_path(parts: &[ast::Ident], ctx: &mut Context<'_>) -> Result<Expr> {
    let through_table = match parts {
        [table, column, fields @ ..] if !fields.is_empty() => {
            resolve_column(ctx, Some(normalize(table)), column)
                .ok()
                .map(|c| (c, fields))
        }
        _ => None,
    };
    let (mut value, fields) = match through_table {
        Some(found) => found,
        None => (resolve_column(ctx, None, &parts[0])?, &parts[1..]),
    };
    for field in fields {
        value = super::structs::field_by_name(value, &normalize(field))?;
    }
    Ok(value)
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

impl Aggregation {
    /// The aggregation's output as an enclosing scope: grouped plain columns keep their names,
    /// so a subquery can name them; nothing else can be named.
    fn output_scope(&self) -> Scope {
        let columns = self
            .group
            .iter()
            .map(|g| match g {
                Expr::Column { index, .. } => self.input.columns[*index].clone(),
                other => super::scope::ScopeColumn {
                    qualifier: None,
                    name: String::new(),
                    data_type: other.data_type(),
                    hidden: false,
                    merged: false,
                },
            })
            .collect();
        let ungrouped = (0..self.input.columns.len())
            .filter(|i| {
                !self
                    .group
                    .iter()
                    .any(|g| matches!(g, Expr::Column { index, .. } if index == i))
            })
            .map(|i| self.input.columns[i].clone())
            .collect();
        Scope { columns, ungrouped }
    }
}

/// Where the subqueries of `ctx` bind: the scope around them, the clause, the binder, and the
/// column number of the first subquery value.
fn subquery_place<'c>(ctx: &'c Context<'_>) -> Option<(Scope, &'c str, &'c Binder<'c>, usize)> {
    match ctx {
        Context::Plain {
            scope,
            clause,
            binder: Some(binder),
        } => Some(((*scope).clone(), *clause, *binder, scope.columns.len())),
        Context::Aggregated(agg, Some(binder)) => {
            Some((agg.output_scope(), "SELECT", *binder, GROUPED_SUBQUERY_BASE))
        }
        _ => None,
    }
}

/// A subquery used as a value. An uncorrelated one is computed once before the query runs; a
/// correlated one (in WHERE) becomes a join, and its value a column after the scope's.
pub(super) fn bind_scalar_subquery(query: &ast::Query, ctx: &mut Context<'_>) -> Result<Expr> {
    scalar_subquery_of(query, ctx, Ok)
}

/// A subquery as a value: `shape` makes its bound plan into one of a single row and column.
pub(super) fn scalar_subquery_of(
    query: &ast::Query,
    ctx: &mut Context<'_>,
    shape: impl FnOnce(crate::logical::LogicalPlan) -> Result<crate::logical::LogicalPlan>,
) -> Result<Expr> {
    let Some((scope, clause, binder, base)) = subquery_place(ctx) else {
        return Err(unsupported!("a subquery here"));
    };
    let plan = shape(binder.bind_subquery(query, &scope)?)?;
    if !plan.has_any_outer() {
        return scalar_value(plan);
    }
    if clause != "WHERE" && clause != "SELECT" {
        return Err(unsupported!("correlated subqueries in {clause}"));
    }
    let data_type = single_column(&plan)?;
    let index = binder.add_pending(plan, SubqueryKind::Scalar)?;
    Ok(Expr::column(base + index, "subquery", data_type))
}

/// `EXISTS (...)` or `probe IN (...)` inside an expression: a mark join adds whether each row
/// matches as a column after the scope's.
pub(super) fn bind_mark(
    query: &ast::Query,
    probe: Option<&ast::Expr>,
    negated: bool,
    ctx: &mut Context<'_>,
) -> Result<Expr> {
    let probe = probe.map(|p| bind_expr(p, ctx)).transpose()?;
    let Some((scope, clause, binder, base)) = subquery_place(ctx) else {
        return Err(unsupported!("EXISTS and IN (subquery) here"));
    };
    if clause != "WHERE" && clause != "SELECT" {
        return Err(unsupported!("EXISTS and IN (subquery) in {clause}"));
    }
    let plan = binder.bind_subquery(query, &scope)?;
    // A correlated NOT IN, or IN as a value, has no join that keeps its NULL semantics here:
    // it compares with the subquery's values gathered for each row instead.
    // A row value IN a subquery of as many columns compares rows the same way.
    let row_probe = probe.as_ref().is_some_and(super::arrays::is_row_value);
    if let Some(probe) = &probe
        && (plan.has_any_outer() && (negated || clause == "SELECT") || row_probe)
    {
        let (op, all) = match negated {
            true => (BinaryOperator::NotEq, true),
            false => (BinaryOperator::Eq, false),
        };
        return super::arrays::quantified_subquery(probe.clone(), &op, all, query, ctx);
    }
    let (probe, plan) = match probe {
        Some(probe) => {
            let (probe, plan) = super::subqueries::in_subquery(probe, plan)?;
            (Some(probe), plan)
        }
        None => (None, plan),
    };
    let index = binder.add_pending(plan, SubqueryKind::Mark { probe })?;
    let mark = Expr::column(base + index, "mark", DataType::Boolean);
    Ok(if negated {
        Expr::Not(Box::new(mark))
    } else {
        mark
    })
}

pub(super) fn single_column(plan: &crate::logical::LogicalPlan) -> Result<DataType> {
    let schema = plan.schema();
    if schema.fields().len() != 1 {
        return Err(bind_err!(
            "a subquery used as a value must return one column, not {}",
            schema.fields().len()
        ));
    }
    Ok(schema.field(0).data_type().clone())
}

pub(super) fn scalar_value(plan: crate::logical::LogicalPlan) -> Result<Expr> {
    single_column(&plan)?;
    Ok(Expr::ScalarSubquery(crate::expr::Subquery::new(plan)))
}

/// A column of a query beyond the one directly around (nested correlated subqueries).
fn deep_column(binder: &Binder<'_>, qualifier: &Option<String>, name: &str) -> Option<Expr> {
    let scopes = binder.farther_scopes();
    scopes.iter().enumerate().find_map(|(i, scope)| {
        let index = scope.resolve(qualifier.as_deref(), name).ok()?;
        let column = &scope.columns[index];
        Some(Expr::DeepOuterColumn(Box::new(crate::expr::DeepColumn {
            depth: i + 2,
            index,
            name: column.name.clone(),
            data_type: column.data_type.clone(),
        })))
    })
}

pub(super) fn resolve_column(
    ctx: &mut Context<'_>,
    qualifier: Option<String>,
    ident: &ast::Ident,
) -> Result<Expr> {
    let Context::Plain { scope, binder, .. } = ctx else {
        unreachable!("aggregated contexts resolve names through their input scope");
    };
    let name = normalize(ident);
    let index = match scope.resolve(qualifier.as_deref(), &name) {
        Ok(index) => index,
        Err(e) => {
            // A name the subquery does not have may be a column of the query around it.
            let outer = binder.and_then(|b| b.outer_scope());
            match outer.and_then(|o| o.resolve(qualifier.as_deref(), &name).ok().map(|i| (o, i))) {
                Some((outer, index)) => {
                    let column = &outer.columns[index];
                    return Ok(Expr::OuterColumn {
                        index,
                        name: column.name.clone(),
                        data_type: column.data_type.clone(),
                    });
                }
                None => {
                    if let Some(deep) = binder.and_then(|b| deep_column(b, &qualifier, &name)) {
                        return Ok(deep);
                    }
                    let ungrouped = binder.and_then(|b| b.outer_scope()).is_some_and(|o| {
                        let scope = Scope {
                            columns: o.ungrouped,
                            ungrouped: Vec::new(),
                        };
                        scope.resolve(qualifier.as_deref(), &name).is_ok()
                    });
                    if ungrouped {
                        let display = match &qualifier {
                            Some(q) => format!("{q}.{name}"),
                            None => name,
                        };
                        return Err(bind_err!(
                            "subquery uses ungrouped column \"{display}\" from outer query"
                        ));
                    }
                    if qualifier.is_none()
                        && let Some(position) = positional(ident)
                    {
                        return by_position(scope, position);
                    }
                    // SQL's value functions written without parentheses, where no column
                    // has the name.
                    let database = binder.map_or(crate::system_tables::CATALOG, |b| b.database());
                    if qualifier.is_none()
                        && let Some(value) = super::functions::value_function(&name, database)
                    {
                        return Ok(value);
                    }
                    return Err(e);
                }
            }
        }
    };
    let column = &scope.columns[index];
    Ok(Expr::column(
        index,
        column.name.clone(),
        column.data_type.clone(),
    ))
}

/// The position a positional reference (`#2`, read as the identifier `"#2"`) names.
fn positional(ident: &ast::Ident) -> Option<usize> {
    let digits = ident.value.strip_prefix('#')?;
    let position_name = pondra_parser::positional_name(digits);
    (ident.quote_style == Some('"') && position_name == ident.value)
        .then(|| digits.parse().ok())
        .flatten()
}

/// The column at `position` (from 1) among those the FROM clause shows.
fn by_position(scope: &Scope, position: usize) -> Result<Expr> {
    let shown: Vec<usize> = (0..scope.columns.len())
        .filter(|&i| !scope.columns[i].hidden)
        .collect();
    if position == 0 {
        return Err(bind_err!("a positional reference counts from #1"));
    }
    let Some(&index) = shown.get(position - 1) else {
        return Err(bind_err!(
            "positional reference #{position} out of range: the FROM clause has {} columns",
            shown.len()
        ));
    };
    let column = &scope.columns[index];
    Ok(Expr::column(
        index,
        column.name.clone(),
        column.data_type.clone(),
    ))
}

pub(super) fn integer_arg(expr: Expr, function: &str) -> Result<Expr> {
    match expr.data_type() {
        DataType::Int32 | DataType::Int64 | DataType::Null => Ok(expr.cast(&DataType::Int64)),
        other => Err(bind_err!(
            "{function} needs integer positions, not {}",
            type_name(&other)
        )),
    }
}

pub(super) fn date_part(field: &ast::DateTimeField) -> Result<DatePart> {
    use ast::DateTimeField as F;
    Ok(match field {
        F::Year | F::Years => DatePart::Year,
        F::Quarter => DatePart::Quarter,
        F::Month | F::Months => DatePart::Month,
        F::Week(_) | F::Weeks => DatePart::Week,
        F::Day | F::Days => DatePart::Day,
        F::DayOfWeek | F::Dow => DatePart::DayOfWeek,
        F::DayOfYear | F::Doy => DatePart::DayOfYear,
        F::Hour | F::Hours => DatePart::Hour,
        F::Minute | F::Minutes => DatePart::Minute,
        F::Second | F::Seconds => DatePart::Second,
        F::Millisecond | F::Milliseconds => DatePart::Millisecond,
        F::Microsecond | F::Microseconds => DatePart::Microsecond,
        F::Isodow => DatePart::IsoDayOfWeek,
        F::Isoyear => DatePart::IsoYear,
        F::Decade => DatePart::Decade,
        F::Century => DatePart::Century,
        F::Millennium => DatePart::Millennium,
        // `EXTRACT('part' FROM x)` and parts sqlparser does not name.
        F::Custom(name) => super::functions::part_by_name(&name.value)?,
        other => return Err(unsupported!("EXTRACT({other})")),
    })
}

/// `INTERVAL '3' MONTH`, `INTERVAL '90' DAY`, `INTERVAL '1 year 2 days'`.
pub(super) fn interval_literal(interval: &ast::Interval) -> Result<ScalarValue> {
    let text = match interval.value.as_ref() {
        ast::Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::Number(s, _) => s.clone(),
            other => return Err(bind_err!("invalid interval {other}")),
        },
        other => return Err(unsupported!("the interval {other}")),
    };
    if interval.last_field.is_some() {
        return Err(unsupported!("intervals with a range of fields"));
    }
    interval_of_text(&text, interval.leading_field.as_ref())
}

/// The interval `text` says (`'1 year 2 days'`, or a number of `leading` units).
pub(super) fn interval_of_text(
    text: &str,
    leading: Option<&ast::DateTimeField>,
) -> Result<ScalarValue> {
    let mut parts: Vec<(i64, String)> = Vec::new();
    let mut words: Vec<&str> = text.split_whitespace().collect();
    // `'2 days ago'` is minus two days, as in both anchors.
    let ago = words.len() > 1 && words.last().is_some_and(|w| w.eq_ignore_ascii_case("ago"));
    if ago {
        words.pop();
    }
    let invalid = || bind_err!("invalid interval '{text}'");
    match (leading, words.as_slice()) {
        (Some(field), [number]) => {
            let n = number.parse::<i64>().map_err(|_| invalid())?;
            parts.push((n, field.to_string().to_lowercase()));
        }
        (None, words) if !words.is_empty() => {
            let mut rest = words;
            while let [first, tail @ ..] = rest {
                // A time of day, `12:34:56.789`, as both anchors write the time part.
                if let Some(micros) = clock_micros(first) {
                    parts.push((micros, "microsecond".into()));
                    rest = tail;
                    continue;
                }
                let [unit, tail @ ..] = tail else {
                    return Err(invalid());
                };
                let unit = unit.to_lowercase();
                match first.parse::<i64>() {
                    Ok(n) => parts.push((n, unit)),
                    Err(_) => parts.extend(fraction_of_unit(first, &unit).ok_or_else(invalid)?),
                }
                rest = tail;
            }
        }
        _ => return Err(invalid()),
    }
    if ago {
        for (n, _) in &mut parts {
            *n = -*n;
        }
    }
    let (mut months, mut days, mut nanos) = (0i64, 0i64, 0i64);
    let out_of_range = || bind_err!("interval out of range: '{text}'");
    for (n, unit) in parts {
        let (total, per_unit) = match unit.trim_end_matches('s') {
            "year" => (&mut months, 12),
            "quarter" => (&mut months, 3),
            "month" => (&mut months, 1),
            "week" => (&mut days, 7),
            "day" => (&mut days, 1),
            "hour" => (&mut nanos, 3_600_000_000_000),
            "minute" => (&mut nanos, 60_000_000_000),
            "second" => (&mut nanos, 1_000_000_000),
            "millisecond" => (&mut nanos, 1_000_000),
            "microsecond" => (&mut nanos, 1_000),
            other => return Err(bind_err!("unknown interval unit {other}")),
        };
        *total = n
            .checked_mul(per_unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(out_of_range)?;
    }
    Ok(ScalarValue::Interval {
        months: i32::try_from(months).map_err(|_| bind_err!("interval out of range"))?,
        days: i32::try_from(days).map_err(|_| bind_err!("interval out of range"))?,
        nanos,
    })
}

/// `1.5 days` and the like: the whole units, and the fraction carried down as DuckDB carries
/// it (a month is 30 days, a day 24 hours), as parts of the units below.
fn fraction_of_unit(number: &str, unit: &str) -> Option<Vec<(i64, String)>> {
    let value: f64 = number.parse().ok().filter(|v: &f64| v.is_finite())?;
    let micros_per = |unit: &str| -> Option<f64> {
        Some(match unit {
            "hour" => 3.6e9,
            "minute" => 6e7,
            "second" => 1e6,
            "millisecond" => 1e3,
            "microsecond" => 1.0,
            _ => return None,
        })
    };
    let singular = unit.trim_end_matches('s');
    let (months, days) = match singular {
        "year" => (value * 12.0, 0.0),
        "quarter" => (value * 3.0, 0.0),
        "month" => (value, 0.0),
        "week" => (0.0, value * 7.0),
        "day" => (0.0, value),
        other => {
            let micros = value * micros_per(other)?;
            return (micros.abs() < 9.2e15)
                .then(|| vec![(micros.round() as i64, "microsecond".into())]);
        }
    };
    let days = days + months.fract() * 30.0;
    let micros = days.fract() * 8.64e10;
    let fits = |v: f64| v.abs() < 2.1e9;
    (fits(months) && fits(days)).then(|| {
        vec![
            (months.trunc() as i64, "month".into()),
            (days.trunc() as i64, "day".into()),
            (micros.round() as i64, "microsecond".into()),
        ]
    })
}

/// `[-]H:MM[:SS[.ffffff]]` as microseconds; `None` for other words.
fn clock_micros(word: &str) -> Option<i64> {
    let (sign, clock) = match word.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, word.strip_prefix('+').unwrap_or(word)),
    };
    let mut fields = clock.split(':');
    let hours: i64 = fields.next()?.parse().ok()?;
    let minutes: i64 = fields.next()?.parse().ok()?;
    let seconds = fields.next().unwrap_or("0");
    if fields.next().is_some() || !(0..60).contains(&minutes) {
        return None;
    }
    let (whole, fraction) = seconds.split_once('.').unwrap_or((seconds, ""));
    let whole: i64 = whole.parse().ok()?;
    if !(0..60).contains(&whole)
        || fraction.len() > 6
        || !fraction.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let fraction: i64 = format!("{fraction:0<6}").parse().ok()?;
    let micros = ((hours * 60 + minutes) * 60 + whole)
        .checked_mul(1_000_000)?
        .checked_add(fraction)?;
    Some(sign * micros)
}

/// The typed value of a literal: integers are INTEGER when they fit and BIGINT otherwise,
/// numbers with a point are exact DECIMALs, numbers with an exponent are DOUBLEs.
pub fn literal(value: &Value) -> Result<ScalarValue> {
    Ok(match value {
        Value::Number(text, _) => number_literal(text)?,
        Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => ScalarValue::Utf8(s.clone()),
        // Postgres's and DuckDB's `$$text$$` and `$tag$text$tag$`: text taken as written.
        Value::DollarQuotedString(s) => ScalarValue::Utf8(s.value.clone()),
        Value::Boolean(b) => ScalarValue::Boolean(*b),
        Value::Null => ScalarValue::Null,
        other => return Err(unsupported!("the literal {other}")),
    })
}

pub(super) fn number_literal(text: &str) -> Result<ScalarValue> {
    // `5_000`: underscores between digits group them, as PostgreSQL 16 and DuckDB read them.
    if text.contains('_') {
        let bytes = text.as_bytes();
        let grouping = bytes.iter().enumerate().all(|(i, &b)| {
            b != b'_'
                || (i > 0
                    && bytes[i - 1].is_ascii_digit()
                    && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
        });
        if !grouping {
            return Err(bind_err!("invalid number {text}"));
        }
        return number_literal(&text.replace('_', ""));
    }
    if let Ok(v) = text.parse::<i64>() {
        return Ok(match i32::try_from(v) {
            Ok(small) => ScalarValue::Int32(small),
            Err(_) => ScalarValue::Int64(v),
        });
    }
    if !text.contains(['e', 'E'])
        && let Some((whole, fraction)) = text.split_once('.').or(Some((text, "")))
    {
        let digits = format!("{whole}{fraction}");
        let scale = fraction.len();
        let precision = digits.trim_start_matches('0').len().max(scale).max(1);
        if precision <= 38
            && let Ok(value) = digits.parse::<i128>()
        {
            return Ok(ScalarValue::Decimal {
                value,
                precision: precision as u8,
                scale: scale as i8,
            });
        }
    }
    text.parse::<f64>()
        .map(ScalarValue::Float64)
        .map_err(|_| bind_err!("invalid number {text}"))
}

pub(super) fn boolean(expr: Expr, what: &str) -> Result<Expr> {
    match expr.data_type() {
        DataType::Boolean => Ok(expr),
        DataType::Null => Ok(expr.cast(&DataType::Boolean)),
        // A quoted literal takes the type its place asks for, as in PostgreSQL: 'true'.
        DataType::Utf8 if is_string_literal(&expr) => Ok(expr.cast(&DataType::Boolean)),
        other => Err(bind_err!(
            "argument of {what} must be BOOLEAN, not {}",
            type_name(&other)
        )),
    }
}

/// The operand of `IS [NOT] TRUE | FALSE | UNKNOWN`: a boolean, or a number read as one
/// (non-zero is true), as DuckDB reads it.
fn truth_value(value: Expr, what: &str) -> Result<Expr> {
    match value.data_type() {
        t if is_numeric(&t) => Ok(value.cast(&DataType::Boolean)),
        _ => boolean(value, what),
    }
}

/// `x IS [NOT] TRUE` and `x IS [NOT] FALSE`: never NULL; a NULL `x` is neither true nor false.
fn truth_test(test: &ast::Expr, value: Expr) -> Result<Expr> {
    use ast::Expr as E;
    let value = truth_value(value, "IS TRUE")?;
    let asked = match test {
        E::IsTrue(_) | E::IsNotTrue(_) => value,
        _ => Expr::Not(Box::new(value)),
    };
    let holds = Expr::Function {
        func: ScalarFunction::Coalesce,
        args: vec![asked, Expr::Literal(ScalarValue::Boolean(false))],
        data_type: DataType::Boolean,
    };
    Ok(match test {
        E::IsNotTrue(_) | E::IsNotFalse(_) => Expr::Not(Box::new(holds)),
        _ => holds,
    })
}

/// Casts `expr` to `target` unless it already has that type.
pub(super) fn coerce(expr: Expr, target: &DataType) -> Expr {
    expr.cast(target)
}

pub(super) fn is_string_literal(expr: &Expr) -> bool {
    matches!(expr, Expr::Literal(ScalarValue::Utf8(_)))
}

/// The type two values are compared in; `right` is the second operand (a string literal can
/// take the other side's type, as in `d > '2024-01-01'`).
pub(super) fn comparison_type(
    left: &DataType,
    right: &DataType,
    right_expr: &Expr,
) -> Result<DataType> {
    if left == right {
        return Ok(left.clone());
    }
    if let Some(t) = common_numeric_type(left, right) {
        return Ok(t);
    }
    match (left, right) {
        (DataType::Null, t) | (t, DataType::Null) => Ok(t.clone()),
        (DataType::List(l), DataType::List(r)) => {
            let item = comparison_type(l.data_type(), r.data_type(), right_expr)?;
            Ok(super::arrays::list_of(item))
        }
        (DataType::Struct(_), DataType::Struct(_)) => {
            super::structs::common_struct_type(left, right)
        }
        (DataType::Map(..), DataType::Map(..)) => common_type(&[left.clone(), right.clone()]),
        (t, DataType::Utf8) if is_string_literal(right_expr) => Ok(t.clone()),
        (DataType::Date32 | DataType::Timestamp(..), DataType::Timestamp(..))
        | (DataType::Timestamp(..), DataType::Date32) => {
            common_type(&[left.clone(), right.clone()])
        }
        _ => Err(bind_err!(
            "cannot compare values of types {} and {}",
            type_name(left),
            type_name(right)
        )),
    }
}

/// A bitwise operator: both sides become the wider of their integer types.
fn bitwise(left: Expr, op: BitwiseOp, right: Expr) -> Result<Expr> {
    let (lt, rt) = (left.data_type(), right.data_type());
    let integer = |t: &DataType| matches!(t, DataType::Int32 | DataType::Int64 | DataType::Null);
    if !integer(&lt) || !integer(&rt) {
        return Err(bind_err!(
            "operator {} is not defined for types {} and {}: it takes integers",
            ScalarFunction::Bitwise(op).name(),
            type_name(&lt),
            type_name(&rt)
        ));
    }
    let data_type = if lt == DataType::Int64 || rt == DataType::Int64 {
        DataType::Int64
    } else {
        DataType::Int32
    };
    Ok(Expr::Function {
        func: ScalarFunction::Bitwise(op),
        args: vec![left.cast(&data_type), right.cast(&data_type)],
        data_type,
    })
}

/// `left = right`, with the casts a comparison needs.
pub fn equality(left: Expr, right: Expr) -> Result<Expr> {
    binary(left, &BinaryOperator::Eq, right)
}

/// `left >= right`, with the casts a comparison needs.
pub fn at_least(left: Expr, right: Expr) -> Result<Expr> {
    binary(left, &BinaryOperator::GtEq, right)
}

/// The comparison an operator is, if it is one.
pub(super) fn comparison(op: &BinaryOperator) -> Option<BinaryOp> {
    Some(match op {
        BinaryOperator::Eq => BinaryOp::Eq,
        BinaryOperator::NotEq => BinaryOp::NotEq,
        BinaryOperator::Lt => BinaryOp::Lt,
        BinaryOperator::LtEq => BinaryOp::LtEq,
        BinaryOperator::Gt => BinaryOp::Gt,
        BinaryOperator::GtEq => BinaryOp::GtEq,
        _ => return None,
    })
}

/// `a // b` (DuckDB): the quotient of integers as an integer, of other numbers rounded down.
fn integer_divide(left: Expr, right: Expr) -> Result<Expr> {
    let integer = |t: &DataType| {
        matches!(
            t,
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 | DataType::Null
        )
    };
    let quotient = binary(left.clone(), &BinaryOperator::Divide, right.clone())?;
    if integer(&left.data_type()) && integer(&right.data_type()) {
        return Ok(quotient);
    }
    Ok(Expr::Function {
        func: ScalarFunction::Floor,
        args: vec![quotient.cast(&DataType::Float64)],
        data_type: DataType::Float64,
    })
}

/// `a IS DISTINCT FROM b`: `a <> b` with NULL a value like any other, never NULL itself.
pub(super) fn distinct_values(left: Expr, right: Expr) -> Result<Expr> {
    let differ = binary(left.clone(), &BinaryOperator::NotEq, right.clone())?;
    let is_null = |e: &Expr| Expr::IsNull(Box::new(e.clone()));
    let yes = Expr::Literal(ScalarValue::Boolean(true));
    Ok(Expr::Case {
        branches: vec![
            (is_null(&left), Expr::IsNotNull(Box::new(right.clone()))),
            (is_null(&right), yes),
        ],
        otherwise: Some(Box::new(differ)),
        data_type: DataType::Boolean,
    })
}

pub(super) fn binary(left: Expr, op: &BinaryOperator, right: Expr) -> Result<Expr> {
    if let Some(days) = date_arithmetic(&left, op, &right)? {
        return Ok(days);
    }
    if *op == BinaryOperator::StringConcat
        && let Some(bytes) = super::blobs::concat(&left, &right)
    {
        return bytes;
    }
    if *op == BinaryOperator::StringConcat {
        // Lists concatenate as lists, in both anchors; an element joins a list at its end.
        let is_list = |e: &Expr| matches!(e.data_type(), DataType::List(_));
        let is_null = |e: &Expr| e.data_type() == DataType::Null;
        let function = match (is_list(&left), is_list(&right)) {
            (true, true) => Some("list_concat"),
            (true, false) if is_null(&right) => Some("list_concat"),
            (false, true) if is_null(&left) => Some("list_concat"),
            (true, false) => Some("list_append"),
            (false, true) => Some("list_prepend"),
            (false, false) => None,
        };
        if let Some(function) = function {
            let args = [left, right];
            return super::duckdb_functions::duckdb_function(function, &args)
                .expect("a list function");
        }
    }
    if let BinaryOperator::Multiply | BinaryOperator::Divide = op
        && let Some(scaled) =
            super::interval_ops::interval_scale(&left, *op == BinaryOperator::Divide, &right)
    {
        return scaled;
    }
    let op = match comparison(op) {
        Some(compare) => compare,
        None => match op {
            BinaryOperator::Plus => BinaryOp::Plus,
            BinaryOperator::Minus => BinaryOp::Minus,
            BinaryOperator::Multiply => BinaryOp::Multiply,
            BinaryOperator::Divide => BinaryOp::Divide,
            BinaryOperator::Modulo => BinaryOp::Modulo,
            BinaryOperator::And => BinaryOp::And,
            BinaryOperator::Or => BinaryOp::Or,
            BinaryOperator::StringConcat => BinaryOp::Concat,
            BinaryOperator::PGRegexMatch
            | BinaryOperator::PGRegexIMatch
            | BinaryOperator::PGRegexNotMatch
            | BinaryOperator::PGRegexNotIMatch => {
                let insensitive = matches!(
                    op,
                    BinaryOperator::PGRegexIMatch | BinaryOperator::PGRegexNotIMatch
                );
                let matched = Expr::Function {
                    func: ScalarFunction::RegexpMatch(insensitive),
                    args: strings(vec![left, right]),
                    data_type: DataType::Boolean,
                };
                let negated = matches!(
                    op,
                    BinaryOperator::PGRegexNotMatch | BinaryOperator::PGRegexNotIMatch
                );
                return Ok(if negated {
                    Expr::Not(Box::new(matched))
                } else {
                    matched
                });
            }
            BinaryOperator::DuckIntegerDivide => return integer_divide(left, right),
            BinaryOperator::Glob | BinaryOperator::PGStartsWith => {
                let func = match op {
                    BinaryOperator::Glob => ScalarFunction::Text(crate::expr::TextOp::Glob),
                    _ => ScalarFunction::StartsWith,
                };
                for side in [&left, &right] {
                    let t = side.data_type();
                    if !matches!(t, DataType::Utf8 | DataType::Null) {
                        return Err(bind_err!(
                            "{op} needs VARCHAR operands, not {}",
                            type_name(&t)
                        ));
                    }
                }
                return Ok(Expr::Function {
                    func,
                    args: strings(vec![left, right]),
                    data_type: DataType::Boolean,
                });
            }
            BinaryOperator::Arrow => return super::functions::json_get(vec![left, right], false),
            BinaryOperator::LongArrow => {
                return super::functions::json_get(vec![left, right], true);
            }
            BinaryOperator::HashArrow | BinaryOperator::HashLongArrow => {
                let text = matches!(op, BinaryOperator::HashLongArrow);
                return super::json_functions::path_operator(left, right, text);
            }
            // `@>` and `<@` of JSON text (PostgreSQL's jsonb containment).
            BinaryOperator::AtArrow | BinaryOperator::ArrowAt
                if [&left, &right]
                    .iter()
                    .all(|e| matches!(e.data_type(), DataType::Utf8 | DataType::Null)) =>
            {
                let (haystack, needle) = match op {
                    BinaryOperator::AtArrow => (left, right),
                    _ => (right, left),
                };
                let name = "jsonb_contains";
                return super::json_functions::json_function(name, &[haystack, needle])
                    .expect("a JSON function");
            }
            BinaryOperator::BitwiseAnd => return bitwise(left, BitwiseOp::And, right),
            BinaryOperator::BitwiseOr => return bitwise(left, BitwiseOp::Or, right),
            BinaryOperator::BitwiseXor | BinaryOperator::PGBitwiseXor => {
                return bitwise(left, BitwiseOp::Xor, right);
            }
            BinaryOperator::PGBitwiseShiftLeft => {
                return bitwise(left, BitwiseOp::ShiftLeft, right);
            }
            BinaryOperator::PGBitwiseShiftRight => {
                return bitwise(left, BitwiseOp::ShiftRight, right);
            }
            other => return Err(unsupported!("the operator {other}")),
        },
    };
    let (lt, rt) = (left.data_type(), right.data_type());
    let (left, right) = match op {
        BinaryOp::And | BinaryOp::Or => {
            let name = if op == BinaryOp::And { "AND" } else { "OR" };
            (boolean(left, name)?, boolean(right, name)?)
        }
        BinaryOp::Concat => (left.cast(&DataType::Utf8), right.cast(&DataType::Utf8)),
        op if op.is_comparison() => {
            let (left, right) = dates_beside_dates(left, right);
            let (lt, rt) = (left.data_type(), right.data_type());
            let lt = integer_constant_beside_decimal(&left, &rt).unwrap_or(lt);
            let rt = integer_constant_beside_decimal(&right, &lt).unwrap_or(rt);
            let target = if is_string_literal(&left) {
                comparison_type(&rt, &lt, &left)?
            } else {
                comparison_type(&lt, &rt, &right)?
            };
            (coerce(left, &target), coerce(right, &target))
        }
        // A date moved by an interval is a TIMESTAMP, in both anchors: its midnight moved.
        BinaryOp::Plus | BinaryOp::Minus if is_temporal(&lt) && is_interval(&rt) => {
            (at_midnight(left), right)
        }
        BinaryOp::Plus if is_interval(&lt) && is_temporal(&rt) => (at_midnight(right), left),
        _ => {
            let lt = integer_constant_beside_decimal(&left, &rt).unwrap_or(lt);
            let rt = integer_constant_beside_decimal(&right, &lt).unwrap_or(rt);
            let Some(target) = common_numeric_type(&lt, &rt) else {
                return Err(bind_err!(
                    "operator {} is not defined for types {} and {}",
                    op_symbol(op),
                    type_name(&lt),
                    type_name(&rt)
                ));
            };
            return Ok(arithmetic(op, left, right, &lt, &rt, target));
        }
    };
    Ok(Expr::Binary {
        op,
        left: Box::new(left),
        right: Box::new(right),
    })
}

/// Dates and days, as PostgreSQL and DuckDB count them: `date - date` is the INTEGER count of
/// days between them, and `date + integer`, `integer + date`, `date - integer` a DATE.
fn date_arithmetic(left: &Expr, op: &BinaryOperator, right: &Expr) -> Result<Option<Expr>> {
    let (lt, rt) = (left.data_type(), right.data_type());
    let days = |e: &Expr| e.clone().cast(&DataType::Int32);
    let integer = |t: &DataType| {
        matches!(
            t,
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64
        )
    };
    let time_call = |subtract: bool, args: Vec<Expr>, data_type: DataType| Expr::Function {
        func: ScalarFunction::TimeArithmetic { subtract },
        args,
        data_type,
    };
    let minus = *op == BinaryOperator::Minus;
    if let Some(instant) = instant_arithmetic(left, op, right)? {
        return Ok(Some(instant));
    }
    Ok(match (op, &lt, &rt) {
        // A time of day moved by an interval's time part wraps around midnight; the
        // difference of two is an interval (ADR 0065).
        (
            BinaryOperator::Plus | BinaryOperator::Minus,
            DataType::Time64(_),
            DataType::Interval(_),
        ) => Some(time_call(
            minus,
            vec![left.clone(), right.clone()],
            lt.clone(),
        )),
        (BinaryOperator::Plus, DataType::Interval(_), DataType::Time64(_)) => Some(time_call(
            false,
            vec![right.clone(), left.clone()],
            rt.clone(),
        )),
        (BinaryOperator::Minus, DataType::Time64(_), DataType::Time64(_)) => Some(time_call(
            true,
            vec![left.clone(), right.clone()],
            DataType::Interval(arrow::datatypes::IntervalUnit::MonthDayNano),
        )),
        (BinaryOperator::Minus, DataType::Date32, DataType::Date32) => {
            Some(binary(days(left), op, days(right))?)
        }
        // Two wall times differ by days and a time of day, as in both anchors.
        (
            BinaryOperator::Minus,
            DataType::Timestamp(_, None) | DataType::Date32,
            DataType::Timestamp(_, None) | DataType::Date32,
        ) => {
            let wall = DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, None);
            Some(time_call(
                true,
                vec![left.clone().cast(&wall), right.clone().cast(&wall)],
                DataType::Interval(arrow::datatypes::IntervalUnit::MonthDayNano),
            ))
        }
        (BinaryOperator::Plus | BinaryOperator::Minus, DataType::Date32, t) if integer(t) => {
            Some(binary(days(left), op, days(right))?.cast(&DataType::Date32))
        }
        (BinaryOperator::Plus, t, DataType::Date32) if integer(t) => {
            Some(binary(days(left), op, days(right))?.cast(&DataType::Date32))
        }
        _ => None,
    })
}

/// `instant - instant` (or a wall time or a date, ADR 0067): the time between them, whatever
/// the zone's clocks did. `None` for anything else; `instant ± interval` is Arrow's, which
/// moves by months and days in the zone's calendar and by the rest in elapsed time, as
/// Postgres does.
fn instant_arithmetic(left: &Expr, op: &BinaryOperator, right: &Expr) -> Result<Option<Expr>> {
    let (lt, rt) = (left.data_type(), right.data_type());
    let instant = |t: &DataType| matches!(t, DataType::Timestamp(_, Some(_)));
    let moment = |t: &DataType| matches!(t, DataType::Timestamp(..) | DataType::Date32);
    if *op != BinaryOperator::Minus
        || !(instant(&lt) || instant(&rt))
        || !(moment(&lt) && moment(&rt))
    {
        return Ok(None);
    }
    let unit = arrow::datatypes::TimeUnit::Microsecond;
    let zoned = common_type(&[lt, rt])?;
    let utc = DataType::Timestamp(unit, Some("UTC".into()));
    let absolute = |e: &Expr| {
        e.clone()
            .cast(&zoned)
            .cast(&utc)
            .cast(&DataType::Timestamp(unit, None))
    };
    Ok(Some(binary(absolute(left), op, absolute(right))?))
}

/// The decimal type an integer constant takes beside a decimal: just as many digits as it
/// has, as in DuckDB, so `1 - discount` stays as narrow as `discount` rather than growing
/// to hold any BIGINT.
fn integer_constant_beside_decimal(expr: &Expr, other: &DataType) -> Option<DataType> {
    decimal_parts(other)?;
    let value = match expr {
        Expr::Literal(ScalarValue::Int32(v)) => i64::from(*v),
        Expr::Literal(ScalarValue::Int64(v)) => *v,
        _ => return None,
    };
    let digits = value.unsigned_abs().checked_ilog10().map_or(1, |d| d + 1);
    Some(decimal_type(digits as u8, 0))
}

/// A DATE as the TIMESTAMP of its midnight; any other value as it is.
fn at_midnight(value: Expr) -> Expr {
    match value.data_type() {
        DataType::Date32 => value.cast(&DataType::Timestamp(
            arrow::datatypes::TimeUnit::Microsecond,
            None,
        )),
        _ => value,
    }
}

/// A date compared with a date moved by whole days and months (`d <= DATE '1998-12-01' -
/// INTERVAL 90 DAY`): the moved date kept a DATE, which is exact, as the timestamp it was
/// bound to falls on a midnight; so the date side is read as it is stored, and a filter on it
/// stays one a scan can prune by.
fn dates_beside_dates(left: Expr, right: Expr) -> (Expr, Expr) {
    let (lt, rt) = (left.data_type(), right.data_type());
    match (lt, rt) {
        (DataType::Date32, DataType::Timestamp(_, None)) => {
            let right = moved_date(&right).unwrap_or(right);
            (left, right)
        }
        (DataType::Timestamp(_, None), DataType::Date32) => {
            let left = moved_date(&left).unwrap_or(left);
            (left, right)
        }
        _ => (left, right),
    }
}

/// `date ± interval`, bound as a timestamp, as the DATE it equals when the interval has no
/// time part; `None` for anything else.
fn moved_date(stamp: &Expr) -> Option<Expr> {
    let Expr::Binary {
        op: op @ (BinaryOp::Plus | BinaryOp::Minus),
        left,
        right,
    } = stamp
    else {
        return None;
    };
    let Expr::Cast { expr: date, .. } = left.as_ref() else {
        return None;
    };
    let whole_days = matches!(
        right.as_ref(),
        Expr::Literal(ScalarValue::Interval { nanos: 0, .. })
    );
    (date.data_type() == DataType::Date32 && whole_days).then(|| Expr::Binary {
        op: *op,
        left: date.clone(),
        right: right.clone(),
    })
}

pub(super) fn is_temporal(t: &DataType) -> bool {
    matches!(t, DataType::Date32 | DataType::Timestamp(..))
}

pub(super) fn is_interval(t: &DataType) -> bool {
    matches!(t, DataType::Interval(_))
}

pub(super) fn op_symbol(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Plus => "+",
        BinaryOp::Minus => "-",
        BinaryOp::Multiply => "*",
        BinaryOp::Divide => "/",
        _ => "%",
    }
}

/// Arithmetic in the operands' common type. Decimal products keep every digit (the scales add);
/// decimal quotients are computed in DOUBLE.
pub(super) fn arithmetic(
    op: BinaryOp,
    left: Expr,
    right: Expr,
    lt: &DataType,
    rt: &DataType,
    target: DataType,
) -> Expr {
    let node = |l: Expr, r: Expr| Expr::Binary {
        op,
        left: Box::new(l),
        right: Box::new(r),
    };
    let Some((precision, scale)) = decimal_parts(&target) else {
        return node(left.cast(&target), right.cast(&target));
    };
    match op {
        BinaryOp::Multiply => {
            // An integer operand is a decimal of as many digits as its type holds.
            let as_decimal = |t: &DataType| decimal_parts(t).unwrap_or((integer_digits(t), 0));
            let ((p1, s1), (p2, s2)) = (as_decimal(lt), as_decimal(rt));
            let result = decimal_type((p1 + p2).min(38), s1 + s2);
            Expr::Cast {
                expr: Box::new(node(
                    left.cast(&decimal_type(p1, s1)),
                    right.cast(&decimal_type(p2, s2)),
                )),
                data_type: result,
            }
        }
        BinaryOp::Divide | BinaryOp::Modulo => node(
            left.cast(&DataType::Float64),
            right.cast(&DataType::Float64),
        ),
        // A sum or difference can carry into one more integer digit.
        _ => Expr::Cast {
            expr: Box::new(node(left.cast(&target), right.cast(&target))),
            data_type: decimal_type((precision + 1).min(38), scale),
        },
    }
}

/// A LIKE pattern with `ESCAPE e` in the matcher's form, where a backslash escapes
/// (`like_escape` in the executor); without ESCAPE, the pattern as written.
fn escaped_pattern(
    pattern: Expr,
    escape: Option<&ast::Expr>,
    ctx: &mut Context<'_>,
) -> Result<Expr> {
    let Some(escape) = escape else {
        return Ok(pattern);
    };
    let escape = bind_expr(escape, ctx)?;
    for side in [&pattern, &escape] {
        let t = side.data_type();
        if t != DataType::Utf8 && t != DataType::Null {
            return Err(bind_err!(
                "LIKE ... ESCAPE needs VARCHAR operands, not {}",
                type_name(&t)
            ));
        }
    }
    Ok(Expr::Function {
        func: ScalarFunction::Text(crate::expr::TextOp::LikeEscape),
        args: vec![pattern.cast(&DataType::Utf8), escape.cast(&DataType::Utf8)],
        data_type: DataType::Utf8,
    })
}

pub(super) fn like(
    expr: Expr,
    pattern: Expr,
    negated: bool,
    case_insensitive: bool,
) -> Result<Expr> {
    for side in [&expr, &pattern] {
        let t = side.data_type();
        if t != DataType::Utf8 && t != DataType::Null {
            return Err(bind_err!(
                "LIKE needs VARCHAR operands, not {}",
                type_name(&t)
            ));
        }
    }
    Ok(Expr::Like {
        expr: Box::new(expr.cast(&DataType::Utf8)),
        pattern: Box::new(pattern.cast(&DataType::Utf8)),
        negated,
        case_insensitive,
    })
}

/// The type the branches of a CASE or the arguments of COALESCE share.
pub(super) fn common_type(types: &[DataType]) -> Result<DataType> {
    let mut result = DataType::Null;
    for t in types {
        result = if result == *t || *t == DataType::Null {
            result
        } else if result == DataType::Null {
            t.clone()
        } else if let Some(n) = common_numeric_type(&result, t) {
            n
        } else if let (DataType::Date32 | DataType::Timestamp(..), DataType::Timestamp(..))
        | (DataType::Timestamp(..), DataType::Date32) = (&result, t)
        {
            // A date meets a timestamp at its midnight, as in both anchors; a wall time meets
            // an instant as the instant it names in the session's zone (ADR 0067).
            let zone = [&result, t].into_iter().find_map(|t| match t {
                DataType::Timestamp(_, zone) => zone.clone(),
                _ => None,
            });
            DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, zone)
        } else if let (DataType::Struct(_), DataType::Struct(_)) = (&result, t) {
            super::structs::common_struct_type(&result, t)?
        } else if let (DataType::Map(a, _), DataType::Map(b, _)) = (&result, t) {
            let (DataType::Struct(a), DataType::Struct(b)) = (a.data_type(), b.data_type()) else {
                unreachable!("a map's entries are structs")
            };
            let key = common_type(&[a[0].data_type().clone(), b[0].data_type().clone()])?;
            let value = common_type(&[a[1].data_type().clone(), b[1].data_type().clone()])?;
            pondra_catalog::map_type(key, value)
        } else if let (DataType::List(a), DataType::List(b)) = (&result, t) {
            // Lists meet where their elements do: `[]` (of NULLs) with `[1]` is an INT[].
            let element = common_type(&[a.data_type().clone(), b.data_type().clone()])?;
            crate::types::list_of(element)
        } else {
            return Err(bind_err!(
                "types {} and {} cannot be matched",
                type_name(&result),
                type_name(t)
            ));
        };
    }
    Ok(result)
}

pub(super) fn bind_case(
    operand: Option<&ast::Expr>,
    conditions: &[ast::CaseWhen],
    else_result: Option<&ast::Expr>,
    ctx: &mut Context<'_>,
) -> Result<Expr> {
    let operand = operand.map(|o| bind_expr(o, ctx)).transpose()?;
    let mut whens = Vec::new();
    let mut results = Vec::new();
    for case in conditions {
        let condition = bind_expr(&case.condition, ctx)?;
        let condition = match &operand {
            Some(value) => binary(value.clone(), &BinaryOperator::Eq, condition)?,
            None => boolean(condition, "CASE WHEN")?,
        };
        whens.push(condition);
        results.push(bind_expr(&case.result, ctx)?);
    }
    let otherwise = else_result.map(|e| bind_expr(e, ctx)).transpose()?;
    let mut types: Vec<DataType> = results.iter().map(Expr::data_type).collect();
    types.extend(otherwise.iter().map(Expr::data_type));
    let data_type = common_type(&types)?;
    Ok(Expr::Case {
        branches: whens
            .into_iter()
            .zip(results)
            .map(|(w, r)| (w, r.cast(&data_type)))
            .collect(),
        otherwise: otherwise.map(|e| Box::new(e.cast(&data_type))),
        data_type,
    })
}

/// A comparison of two row values `(a, b) op (c, d)` as PostgreSQL defines it, over their
/// fields: `=` when all are equal, `<>` when any differs, and the others in order, the first
/// field that differs deciding (`a < c OR (a = c AND b < d)`).
fn row_comparison(left: &ast::Expr, op: &BinaryOperator, right: &ast::Expr) -> Result<ast::Expr> {
    let (ast::Expr::Tuple(l), ast::Expr::Tuple(r)) = (left, right) else {
        return Err(bind_err!(
            "{right} is not a row value of as many fields as {left}"
        ));
    };
    if l.len() != r.len() {
        return Err(bind_err!("unequal number of entries in row expressions"));
    }
    let pair = |a: &ast::Expr, op: BinaryOperator, b: &ast::Expr| ast::Expr::BinaryOp {
        left: Box::new(ast::Expr::Nested(Box::new(a.clone()))),
        op,
        right: Box::new(ast::Expr::Nested(Box::new(b.clone()))),
    };
    let join = |a: ast::Expr, op: BinaryOperator, b: ast::Expr| {
        ast::Expr::Nested(Box::new(ast::Expr::BinaryOp {
            left: Box::new(a),
            op,
            right: Box::new(b),
        }))
    };
    let fields: Vec<(&ast::Expr, &ast::Expr)> = l.iter().zip(r).collect();
    Ok(match op {
        BinaryOperator::Eq | BinaryOperator::NotEq => {
            let joiner = match op {
                BinaryOperator::Eq => BinaryOperator::And,
                _ => BinaryOperator::Or,
            };
            let parts = fields.iter().map(|(a, b)| pair(a, op.clone(), b));
            parts
                .reduce(|a, b| join(a, joiner.clone(), b))
                .expect("a row has fields")
        }
        BinaryOperator::Lt | BinaryOperator::LtEq | BinaryOperator::Gt | BinaryOperator::GtEq => {
            let strict = match op {
                BinaryOperator::Lt | BinaryOperator::LtEq => BinaryOperator::Lt,
                _ => BinaryOperator::Gt,
            };
            // From the last field back: the last compares with `op` itself.
            let (last_a, last_b) = fields.last().expect("a row has fields");
            let mut decided = pair(last_a, op.clone(), last_b);
            for (a, b) in fields.iter().rev().skip(1) {
                let tied = join(pair(a, BinaryOperator::Eq, b), BinaryOperator::And, decided);
                decided = join(pair(a, strict.clone(), b), BinaryOperator::Or, tied);
            }
            decided
        }
        other => return Err(unsupported!("the operator {other} on row values")),
    })
}

fn is_distinct(function: &ast::Function) -> bool {
    matches!(&function.args, ast::FunctionArguments::List(list)
        if list.duplicate_treatment == Some(ast::DuplicateTreatment::Distinct))
}

/// `array_agg(DISTINCT x [ORDER BY x])`: the values in order (ascending unless ordered
/// otherwise), each once, NULL included once, as PostgreSQL gives them; bound as the ordered
/// `array_agg` and a pass that keeps the first of each run of equal values.
fn bind_distinct_array_agg(function: &ast::Function, agg: &mut Aggregation) -> Result<Expr> {
    let mut plain = function.clone();
    let ast::FunctionArguments::List(list) = &mut plain.args else {
        unreachable!("a DISTINCT call has an argument list")
    };
    list.duplicate_treatment = None;
    let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(value))] = list.args.as_slice()
    else {
        return Err(bind_err!("array_agg(DISTINCT ...) takes one argument"));
    };
    let value = value.clone();
    let ordered = list
        .clauses
        .iter()
        .any(|c| matches!(c, ast::FunctionArgumentClause::OrderBy(_)));
    match ordered {
        true => {
            let by_value = list.clauses.iter().all(|c| match c {
                ast::FunctionArgumentClause::OrderBy(items) => {
                    items.iter().all(|i| i.expr == value)
                }
                _ => true,
            });
            if !by_value {
                return Err(bind_err!(
                    "in an aggregate with DISTINCT, ORDER BY expressions must appear in the argument list"
                ));
            }
        }
        false => list.clauses.push(ast::FunctionArgumentClause::OrderBy(vec![
            ast::OrderByExpr {
                expr: value,
                options: ast::OrderByOptions {
                    sort: None,
                    nulls_first: None,
                },
                with_fill: None,
            },
        ])),
    }
    let call = bind_aggregate_call(&plain, AggregateFunction::ArrayAgg, &agg.input, None)?;
    let data_type = call.data_type.clone();
    let sorted = agg.column_of(call);
    Ok(Expr::Function {
        func: crate::expr::ScalarFunction::DistinctRuns,
        args: vec![sorted],
        data_type,
    })
}
