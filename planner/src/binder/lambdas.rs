//! DuckDB's list functions that take a lambda (ADR 0061): `list_transform(l, x -> x + 1)`,
//! `list_filter(l, x -> x > 0)`, `list_reduce(l, (acc, x) -> acc + x [, initial])`, in both
//! lambda spellings (`x -> ...` and `lambda x: ...`), with an optional last parameter for
//! the element's position. The body sees its parameters only.

use arrow::datatypes::DataType;
use sqlparser::ast;

use super::expr::*;
use super::scope::{Scope, ScopeColumn, normalize};
use crate::expr::{Expr, Lambda, LambdaOp};
use crate::scalar::ScalarValue;
use crate::types::list_of;
use crate::{PlanError, Result, bind_err, unsupported};

/// The lambda function `name` names, if it is one.
pub(super) fn lambda_op(name: &str) -> Option<LambdaOp> {
    Some(match name {
        "list_transform" | "array_transform" | "list_apply" | "array_apply" | "apply" => {
            LambdaOp::Transform
        }
        "list_filter" | "array_filter" | "filter" => LambdaOp::Filter,
        "list_reduce" | "array_reduce" | "reduce" => LambdaOp::Reduce,
        _ => return None,
    })
}

/// `name(list, lambda [, initial])`.
pub(super) fn bind_lambda_call(
    name: &str,
    args: &[&ast::Expr],
    ctx: &mut Context<'_>,
) -> Result<Expr> {
    if name == "invoke" {
        let body = invoked(args)?;
        return bind_expr(&body, ctx);
    }
    let Some(op) = lambda_op(name) else {
        return Err(unsupported!("a lambda as an argument of {name}"));
    };
    let most = if op == LambdaOp::Reduce { 3 } else { 2 };
    let (list, lambda, initial) = match args {
        [list, ast::Expr::Lambda(lambda)] => (list, lambda, None),
        [list, ast::Expr::Lambda(lambda), initial] if most == 3 => (list, lambda, Some(initial)),
        _ => {
            return Err(bind_err!(
                "{name} takes a list, a lambda{}",
                if most == 3 {
                    " and an initial value"
                } else {
                    ""
                }
            ));
        }
    };
    let list = bind_expr(list, ctx)?;
    let item = match list.data_type() {
        DataType::List(field) => field.data_type().clone(),
        DataType::Null => return Ok(Expr::Literal(ScalarValue::Null)),
        other => {
            return Err(bind_err!("{name} needs a list, not {}", type_name(&other)));
        }
    };
    let initial = initial.map(|e| bind_expr(e, ctx)).transpose()?;
    let accumulator = match &initial {
        Some(initial) => common_type(&[initial.data_type(), item.clone()])?,
        None => item.clone(),
    };
    let mut types = match op {
        LambdaOp::Reduce => vec![accumulator.clone(), item.clone()],
        _ => vec![item.clone()],
    };
    let names = parameter_names(lambda);
    let with_index = match names.len().checked_sub(types.len()) {
        Some(0) => false,
        Some(1) => true,
        _ => return Err(parameter_count(name, types.len())),
    };
    if with_index {
        types.push(DataType::Int64);
    }
    // Over a grouping's output the body cannot read the query's columns yet.
    let outer = match ctx {
        Context::Plain { scope, .. } => Some(scope.columns.clone()),
        Context::Aggregated(..) => None,
    };
    let (body, captured) = bind_body(&lambda.body, &names, &types, outer)?;
    let body_type = body.data_type();
    let (body, data_type) = match op {
        LambdaOp::Transform => (body, list_of(body_type)),
        // As in DuckDB, the body's value is cast to a BOOLEAN: a number holds unless 0.
        LambdaOp::Filter => (body.cast(&DataType::Boolean), list_of(item)),
        LambdaOp::Reduce => (body.cast(&accumulator), accumulator.clone()),
    };
    let initial = initial.map(|initial| initial.cast(&accumulator));
    Ok(Expr::Lambda(Box::new(Lambda {
        op,
        list,
        initial,
        captured,
        body,
        with_index,
        data_type,
    })))
}

fn parameter_names(lambda: &ast::LambdaFunction) -> Vec<String> {
    match &lambda.params {
        ast::OneOrManyWithParens::One(p) => vec![normalize(&p.name)],
        ast::OneOrManyWithParens::Many(ps) => ps.iter().map(|p| normalize(&p.name)).collect(),
    }
}

fn parameter_count(name: &str, without_index: usize) -> PlanError {
    bind_err!(
        "{name}'s lambda takes {without_index} or {} parameters",
        without_index + 1
    )
}

/// The body bound over a scope of the parameters, then the columns of the query around it
/// (`outer`) that no parameter hides. The body comes back over the parameters and then the
/// outer columns it reads, in order; those columns come back as expressions over the query.
fn bind_body(
    body: &ast::Expr,
    names: &[String],
    types: &[DataType],
    outer: Option<Vec<ScopeColumn>>,
) -> Result<(Expr, Vec<Expr>)> {
    let grouped = outer.is_none();
    let parameters = names
        .iter()
        .zip(types)
        .map(|(name, data_type)| ScopeColumn {
            qualifier: None,
            name: name.clone(),
            data_type: data_type.clone(),
            hidden: false,
            merged: false,
        });
    let visible: Vec<(usize, ScopeColumn)> = outer
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .filter(|(_, c)| !names.contains(&c.name))
        .collect();
    let scope = Scope {
        columns: parameters
            .chain(visible.iter().map(|(_, c)| c.clone()))
            .collect(),
        ungrouped: Vec::new(),
    };
    let mut ctx = Context::plain(&scope, "a lambda");
    let body = bind_expr(body, &mut ctx).map_err(|e| {
        match grouped && e.to_string().contains("does not exist") {
            true => unsupported!("a lambda reading the query's columns in a grouped query ({e})"),
            false => e,
        }
    })?;
    let read: Vec<usize> = body
        .column_indices()
        .into_iter()
        .filter(|&i| i >= names.len())
        .collect();
    let captured = read
        .iter()
        .map(|&i| {
            let (index, column) = &visible[i - names.len()];
            Expr::column(*index, column.name.clone(), column.data_type.clone())
        })
        .collect();
    let body = body.remap_columns(&|i| match read.binary_search(&i) {
        Ok(k) => names.len() + k,
        Err(_) => i,
    });
    Ok((body, captured))
}

/// `invoke(lambda x, y: body, a, b)` (DuckDB): the body with each parameter's argument in its
/// place. An argument whose value changes per call (`random()`) is refused, as is a body with
/// a lambda of its own reusing a parameter's name, which the substitution would not respect.
fn invoked(args: &[&ast::Expr]) -> Result<ast::Expr> {
    use std::ops::ControlFlow;
    let [ast::Expr::Lambda(lambda), values @ ..] = args else {
        return Err(bind_err!("invoke takes a lambda and its arguments"));
    };
    let params: Vec<String> = match &lambda.params {
        ast::OneOrManyWithParens::One(p) => vec![normalize(&p.name)],
        ast::OneOrManyWithParens::Many(ps) => ps.iter().map(|p| normalize(&p.name)).collect(),
    };
    if params.len() != values.len() {
        return Err(bind_err!(
            "invoke: the lambda takes {} arguments, given {}",
            params.len(),
            values.len()
        ));
    }
    let volatile = |e: &ast::Expr| {
        let text = e.to_string().to_lowercase();
        ["random(", "uuid(", "nextval("]
            .iter()
            .any(|f| text.contains(f))
    };
    if values.iter().any(|v| volatile(v)) {
        return Err(unsupported!(
            "invoke with an argument that changes per call"
        ));
    }
    let shadows = ast::visit_expressions(lambda.body.as_ref(), |e| match e {
        ast::Expr::Lambda(inner) => {
            let reused = match &inner.params {
                ast::OneOrManyWithParens::One(p) => params.contains(&normalize(&p.name)),
                ast::OneOrManyWithParens::Many(ps) => {
                    ps.iter().any(|p| params.contains(&normalize(&p.name)))
                }
            };
            if reused {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        }
        _ => ControlFlow::Continue(()),
    });
    if shadows.is_break() {
        return Err(unsupported!(
            "invoke of a lambda holding a lambda that reuses one of its parameters' names"
        ));
    }
    let mut body = lambda.body.as_ref().clone();
    let _ = ast::visit_expressions_mut(&mut body, |e| {
        if let ast::Expr::Identifier(ident) = e
            && let Some(at) = params.iter().position(|p| *p == normalize(ident))
        {
            *e = ast::Expr::Nested(Box::new(values[at].clone()));
        }
        ControlFlow::<()>::Continue(())
    });
    Ok(body)
}
