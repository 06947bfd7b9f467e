//! DuckDB's `COLUMNS(...)` in a select list: an item holding it stands for one item per column
//! of the FROM clause it selects, each named as its column. `COLUMNS(*)` selects every column
//! `*` would, `COLUMNS('regex')` those whose names the regular expression finds a match in, and
//! `COLUMNS(['a', 'b'])` the columns named. In a PARTITION BY list (and so in DISTINCT ON), a
//! `COLUMNS(...)` key stands for the columns it selects.

use std::ops::ControlFlow;

use pondra_parser::ast;

use super::scope::{Scope, normalize};
use crate::{Result, bind_err, unsupported};

fn is_columns_call(expr: &ast::Expr) -> bool {
    matches!(expr, ast::Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("columns"))
}

/// The select list with each item that holds `COLUMNS(...)` expanded; `None` when none does.
pub(super) fn expand_columns(
    items: &[ast::SelectItem],
    scope: &Scope,
) -> Result<Option<Vec<ast::SelectItem>>> {
    let holds = |item: &ast::SelectItem| match item {
        ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
            ast::visit_expressions(e, |e| match is_columns_call(e) {
                true => ControlFlow::Break(()),
                false => ControlFlow::Continue(()),
            })
            .is_break()
        }
        _ => false,
    };
    if !items.iter().any(holds) {
        return Ok(None);
    }
    let mut expanded = Vec::new();
    for item in items {
        let expr = match item {
            ast::SelectItem::UnnamedExpr(e) if holds(item) => e,
            ast::SelectItem::ExprWithAlias { .. } if holds(item) => {
                return Err(unsupported!("an alias on a COLUMNS(...) item"));
            }
            other => {
                expanded.push(other.clone());
                continue;
            }
        };
        let selector = selector(expr)?;
        for column in selected(&selector, scope)? {
            let mut one = expr.clone();
            let _ = ast::visit_expressions_mut(&mut one, |e| {
                if is_columns_call(e) {
                    *e = ast::Expr::Identifier(ast::Ident::with_quote('"', column.clone()));
                }
                ControlFlow::<()>::Continue(())
            });
            expanded.push(ast::SelectItem::ExprWithAlias {
                expr: one,
                alias: ast::Ident::with_quote('"', column),
            });
        }
    }
    Ok(Some(expanded))
}

/// A list of expressions (a window's PARTITION BY, which DISTINCT ON becomes) with each that
/// is a `COLUMNS(...)` call replaced by the columns it selects.
pub(super) fn expand_columns_in_list(exprs: &[ast::Expr], scope: &Scope) -> Result<Vec<ast::Expr>> {
    let mut expanded = Vec::with_capacity(exprs.len());
    for expr in exprs {
        if !is_columns_call(expr) {
            expanded.push(expr.clone());
            continue;
        }
        let selector = selector(expr)?;
        let columns = selected(&selector, scope)?;
        expanded.extend(
            columns
                .into_iter()
                .map(|c| ast::Expr::Identifier(ast::Ident::with_quote('"', c))),
        );
    }
    Ok(expanded)
}

/// The argument of the item's `COLUMNS(...)`; an item holds one selector only.
fn selector(expr: &ast::Expr) -> Result<ast::FunctionArgExpr> {
    let mut found: Vec<ast::FunctionArgExpr> = Vec::new();
    let mut malformed = false;
    let _ = ast::visit_expressions(expr, |e| {
        if let ast::Expr::Function(f) = e
            && is_columns_call(e)
        {
            match &f.args {
                ast::FunctionArguments::List(list) if list.args.len() == 1 => match &list.args[0] {
                    ast::FunctionArg::Unnamed(arg) => found.push(arg.clone()),
                    _ => malformed = true,
                },
                _ => malformed = true,
            }
        }
        ControlFlow::<()>::Continue(())
    });
    if malformed {
        return Err(bind_err!(
            "COLUMNS takes one argument: *, a regular expression or a list of names"
        ));
    }
    let first = found
        .first()
        .cloned()
        .ok_or_else(|| bind_err!("COLUMNS without an argument"))?;
    if found.iter().any(|f| *f != first) {
        return Err(unsupported!(
            "COLUMNS(...) with different arguments in one item"
        ));
    }
    Ok(first)
}

/// The names of the scope's visible columns `selector` selects, in the scope's order.
fn selected(selector: &ast::FunctionArgExpr, scope: &Scope) -> Result<Vec<String>> {
    let visible = scope
        .columns
        .iter()
        .filter(|c| !c.hidden)
        .map(|c| c.name.clone());
    let names: Vec<String> = match selector {
        ast::FunctionArgExpr::Wildcard => visible.collect(),
        ast::FunctionArgExpr::Expr(ast::Expr::Value(v)) => match &v.value {
            ast::Value::SingleQuotedString(pattern) => {
                let regex = regex::Regex::new(pattern).map_err(|e| {
                    // The parser's message points at the pattern over several lines.
                    let text = e.to_string();
                    let why = text
                        .lines()
                        .last()
                        .unwrap_or_default()
                        .trim_start_matches("error: ");
                    bind_err!("COLUMNS('{pattern}'): not a regular expression: {why}")
                })?;
                visible.filter(|name| regex.is_match(name)).collect()
            }
            other => return Err(bind_err!("COLUMNS({other}): expected a regular expression")),
        },
        ast::FunctionArgExpr::Expr(ast::Expr::Array(array)) => {
            let mut names = Vec::new();
            for element in &array.elem {
                let name = match element {
                    ast::Expr::Value(v) => match &v.value {
                        ast::Value::SingleQuotedString(name) => name.clone(),
                        other => return Err(bind_err!("COLUMNS lists names, not {other}")),
                    },
                    ast::Expr::Identifier(ident) => normalize(ident),
                    other => return Err(bind_err!("COLUMNS lists names, not {other}")),
                };
                if !scope.columns.iter().any(|c| c.name == name) {
                    return Err(bind_err!("COLUMNS: column {name} does not exist"));
                }
                names.push(name);
            }
            names
        }
        other => return Err(unsupported!("COLUMNS({other})")),
    };
    let mut unique = Vec::new();
    for name in names {
        if !unique.contains(&name) {
            unique.push(name);
        }
    }
    if unique.is_empty() {
        return Err(bind_err!("COLUMNS(...) selects no column"));
    }
    Ok(unique)
}
