//! GROUP BY's names for select-list items (a position or an alias, as Postgres allows) and
//! DuckDB's `GROUP BY ALL`.

use pondra_parser::ast;

use super::expr::contains_aggregate;
use super::order_by::positional;
use super::scope::{Scope, normalize};
use crate::{Result, bind_err, unsupported};

/// GROUP BY may name an output column by position or alias, as Postgres allows.
pub(super) fn resolve_group_alias<'e>(
    expr: &'e ast::Expr,
    projection: &'e [ast::SelectItem],
    scope: &Scope,
) -> Result<&'e ast::Expr> {
    if let Some(position) = positional(expr)? {
        return match projection.get(position.wrapping_sub(1)) {
            Some(ast::SelectItem::UnnamedExpr(e))
            | Some(ast::SelectItem::ExprWithAlias { expr: e, .. }) => Ok(e),
            _ => Err(bind_err!(
                "GROUP BY position {position} is not in the select list"
            )),
        };
    }
    if let ast::Expr::Identifier(ident) = expr {
        let name = normalize(ident);
        if scope.resolve(None, &name).is_err() {
            for item in projection {
                if let ast::SelectItem::ExprWithAlias { expr, alias } = item
                    && normalize(alias) == name
                {
                    return Ok(expr);
                }
            }
        }
    }
    Ok(expr)
}

/// `GROUP BY ALL` (DuckDB): by every select-list expression that holds no aggregate.
pub(super) fn group_by_all(projection: &[ast::SelectItem]) -> Result<Vec<ast::Expr>> {
    let mut group = Vec::new();
    for item in projection {
        let expr = match item {
            ast::SelectItem::UnnamedExpr(expr) | ast::SelectItem::ExprWithAlias { expr, .. } => {
                expr
            }
            _ => return Err(unsupported!("GROUP BY ALL with * in the select list")),
        };
        if !contains_aggregate(expr) {
            group.push(expr.clone());
        }
    }
    Ok(group)
}
