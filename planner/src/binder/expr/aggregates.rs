//! Aggregation: the state a grouped SELECT's expressions are bound over, which calls are
//! aggregates, and the ones bound in a form of their own (`GROUPING`, `avg` of times,
//! `array_agg(DISTINCT ...)`).

use arrow::datatypes::DataType;
use sqlparser::ast;

use super::aggregate_calls::{
    argument_context, bind_aggregate_call, refuse_outer_only, with_filter,
};
use super::function_calls::{function_args, function_name};
use super::subquery_values::contains_subquery;
use super::{Context, bind_generic, type_name};
use crate::binder::Binder;
use crate::binder::scope::Scope;
use crate::expr::{AggregateCall, AggregateFunction, BinaryOp, BitwiseOp, Expr, ScalarFunction};
use crate::scalar::ScalarValue;
use crate::{Result, bind_err};

/// Aggregation state while binding the expressions above a GROUP BY: expressions are bound
/// over the aggregate's output, `[group keys..., aggregates...]`.
pub struct Aggregation {
    pub input: Scope,
    pub group: Vec<Expr>,
    pub aggregates: Vec<AggregateCall>,
}

impl Aggregation {
    /// The output column of an aggregate call, added unless the same call is there already.
    pub(crate) fn column_of(&mut self, call: AggregateCall) -> Expr {
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

/// True when `expr` calls an aggregate function anywhere (outside subqueries).
pub fn contains_aggregate(expr: &ast::Expr) -> bool {
    use ast::Expr as E;
    match expr {
        E::Function(f) => {
            let name = function_name(f);
            let aggregate = aggregate_function(&name).is_some()
                || crate::binder::ordered_set::is_ordered_set(&name);
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

pub(crate) fn bind_aggregated(
    expr: &ast::Expr,
    agg: &mut Aggregation,
    binder: Option<&Binder<'_>>,
) -> Result<Expr> {
    if let ast::Expr::Function(function) = expr
        && function.over.is_none()
        && crate::binder::ordered_set::is_ordered_set(&function_name(function))
    {
        let name = function_name(function);
        return crate::binder::ordered_set::bind_ordered_set(function, &name, agg, binder);
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
    let mut plain = Context::plain_for(expr, &agg.input, "GROUP BY", binder);
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
    let Some(back) = crate::binder::ordered_set::temporal_back(&value.data_type()) else {
        return Ok(None);
    };
    refuse_outer_only(&value, arg)?;
    let func = match list.duplicate_treatment {
        Some(ast::DuplicateTreatment::Distinct) => AggregateFunction::AvgDistinct,
        _ => AggregateFunction::Avg,
    };
    let call = AggregateCall {
        func,
        arg: Some(crate::binder::ordered_set::micros_of(value)),
        data_type: DataType::Float64,
        separator: None,
        order: Vec::new(),
        filter: None,
    };
    let call = with_filter(call, function.filter.as_deref(), &agg.input, binder)?;
    let average = agg.column_of(call);
    Ok(Some(average.cast(&DataType::Int64).cast(&back)))
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
