//! `SELECT DISTINCT ON (...)` (PostgreSQL), rewritten as the same select with a QUALIFY that
//! keeps each group's first row.

use pondra_parser::ast;

use super::order_by::positional;
use crate::{Result, bind_err};

/// `SELECT DISTINCT ON (k, ...) ... ORDER BY ...` (PostgreSQL): of each group of rows equal on
/// the keys, the first in the query's order; the same select with the group's first row kept
/// by `QUALIFY row_number() OVER (PARTITION BY k, ... ORDER BY ...) = 1`.
pub(super) fn distinct_on(
    select: &ast::Select,
    on: &[ast::Expr],
    order_by: &[ast::OrderByExpr],
) -> Result<ast::Select> {
    let position = |expr: &ast::Expr| -> Result<ast::Expr> {
        Ok(match positional(expr)? {
            Some(n) => match select.projection.get(n.wrapping_sub(1)) {
                Some(
                    ast::SelectItem::UnnamedExpr(e)
                    | ast::SelectItem::ExprWithAlias { expr: e, .. },
                ) => e.clone(),
                _ => return Err(bind_err!("ORDER BY position {n} is not in the select list")),
            },
            None => expr.clone(),
        })
    };
    let keys: Vec<String> = on
        .iter()
        .map(|e| Ok(position(e)?.to_string()))
        .collect::<Result<_>>()?;
    let mut order = Vec::new();
    for item in order_by {
        let mut item = item.clone();
        item.expr = position(&item.expr)?;
        order.push(item.to_string());
    }
    let order = match order.is_empty() {
        true => String::new(),
        false => format!(" ORDER BY {}", order.join(", ")),
    };
    let first = format!(
        "row_number() OVER (PARTITION BY {}{order}) = 1",
        keys.join(", ")
    );
    let mut first = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
        .try_with_sql(&first)
        .and_then(|mut parser| parser.parse_expr())
        .map_err(|e| bind_err!("DISTINCT ON: {e}"))?;
    if let Some(qualify) = &select.qualify {
        first = ast::Expr::BinaryOp {
            left: Box::new(ast::Expr::Nested(Box::new(qualify.clone()))),
            op: ast::BinaryOperator::And,
            right: Box::new(first),
        };
    }
    let mut rewritten = select.clone();
    rewritten.distinct = None;
    rewritten.qualify = Some(first);
    Ok(rewritten)
}
