//! ORDER BY: output columns named by position or by name, the sort options, DuckDB's
//! `ORDER BY ALL`, and the sort of a query body that is not a SELECT.

use pondra_parser::ast;

use super::Binder;
use super::expr::{Context, bind_expr};
use super::scope::{Scope, normalize};
use crate::expr::{Expr, SortKey};
use crate::logical::LogicalPlan;
use crate::{Result, bind_err, unsupported};

impl<'a> Binder<'a> {
    /// `ORDER BY ALL` (DuckDB): by every output column, left to right, each with the options.
    pub(super) fn order_by_all(
        &self,
        body: &ast::SetExpr,
        options: &ast::OrderByOptions,
    ) -> Result<Vec<ast::OrderByExpr>> {
        let width = match body {
            ast::SetExpr::Select(select) => {
                let star = select.projection.iter().any(|item| {
                    matches!(
                        item,
                        ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..)
                    )
                });
                match star || select.projection.is_empty() {
                    // The width of a star is known only once its tables are bound.
                    true => self.bind_select(select, &[])?.schema().fields().len(),
                    false => select.projection.len(),
                }
            }
            other => self.bind_set_expr(other)?.schema().fields().len(),
        };
        Ok((1..=width)
            .map(|position| ast::OrderByExpr {
                expr: ast::Expr::value(ast::Value::Number(position.to_string(), false)),
                options: options.clone(),
                with_fill: None,
            })
            .collect())
    }
}

/// `Some(n)` when the expression is the integer literal `n` (a position in the select list).
pub(super) fn positional(expr: &ast::Expr) -> Result<Option<usize>> {
    match expr {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => n
                .parse::<usize>()
                .map(Some)
                .map_err(|_| bind_err!("invalid position {n}")),
            _ => Ok(None),
        },
        _ => Ok(None),
    }
}

/// The output column an ORDER BY item names, by position or by output name.
pub(super) fn output_position(expr: &ast::Expr, names: &[String]) -> Result<Option<usize>> {
    if let Some(position) = positional(expr)? {
        if position == 0 || position > names.len() {
            return Err(bind_err!(
                "ORDER BY position {position} is not in select list"
            ));
        }
        return Ok(Some(position - 1));
    }
    if let ast::Expr::Identifier(ident) = expr {
        let name = normalize(ident);
        let mut matches = names.iter().enumerate().filter(|(_, n)| **n == name);
        if let (Some((index, _)), None) = (matches.next(), matches.next()) {
            return Ok(Some(index));
        }
    }
    Ok(None)
}

/// (descending, nulls first); NULLs sort as if larger than every value, as in Postgres.
pub(super) fn sort_options(item: &ast::OrderByExpr) -> Result<(bool, bool)> {
    let descending = match &item.options.sort {
        None | Some(ast::OrderBySort::Asc) => false,
        Some(ast::OrderBySort::Desc) => true,
        Some(_) => return Err(unsupported!("ORDER BY ... USING")),
    };
    Ok((descending, item.options.nulls_first.unwrap_or(descending)))
}

/// ORDER BY over the output of a query body that is not a SELECT (VALUES, a nested query).
pub(super) fn order_output(
    plan: LogicalPlan,
    scope: &Scope,
    order_by: &[ast::OrderByExpr],
) -> Result<LogicalPlan> {
    if order_by.is_empty() {
        return Ok(plan);
    }
    let names: Vec<String> = scope.columns.iter().map(|c| c.name.clone()).collect();
    let mut keys = Vec::new();
    for item in order_by {
        let expr = match output_position(&item.expr, &names)? {
            Some(i) => Expr::column(i, &names[i], scope.columns[i].data_type.clone()),
            None => bind_expr(&item.expr, &mut Context::plain(scope, "ORDER BY"))?,
        };
        let (descending, nulls_first) = sort_options(item)?;
        keys.push(SortKey {
            expr,
            descending,
            nulls_first,
        });
    }
    Ok(LogicalPlan::Sort {
        input: Box::new(plan),
        keys,
        fetch: None,
    })
}
