//! Select-list aliases named in WHERE, as DuckDB reads them: `SELECT a + 1 AS b FROM t WHERE
//! b > 2` filters on `a + 1`; and in the select list after them (DuckDB's lateral column
//! aliases): `SELECT a + 1 AS b, b * 2 FROM t` computes `(a + 1) * 2`. A name is an alias only where no column of the FROM clause (nor
//! of an enclosing query) has it, and only outside subqueries, whose names are their own. An
//! alias of an aggregate or a window function is replaced too, so that the error says WHERE
//! cannot filter on those. QUALIFY may name a select-list alias too (a window function's,
//! DuckDB), replaced where no column has the name.

use std::ops::ControlFlow;

use sqlparser::ast::{self, VisitMut, VisitorMut};

use super::scope::{Scope, normalize};

/// `selection` with each alias it names replaced by the aliased expression.
pub(super) fn with_aliases(
    selection: &ast::Expr,
    projection: &[ast::SelectItem],
    scope: &Scope,
    outer: Option<&Scope>,
) -> ast::Expr {
    let aliases: Vec<(String, &ast::Expr)> = projection
        .iter()
        .filter_map(|item| match item {
            ast::SelectItem::ExprWithAlias { expr, alias } => Some((normalize(alias), expr)),
            _ => None,
        })
        .collect();
    let mut selection = selection.clone();
    if aliases.is_empty() {
        return selection;
    }
    let mut rewriter = Rewriter {
        aliases,
        scope,
        outer,
        depth: 0,
    };
    let _ = selection.visit(&mut rewriter);
    selection
}

/// The select list with each alias a later item names replaced by the aliased expression
/// (itself rewritten, so aliases may chain); `None` when no item names an earlier alias.
pub(super) fn with_lateral_aliases(
    projection: &[ast::SelectItem],
    scope: &Scope,
    outer: Option<&Scope>,
) -> Option<Vec<ast::SelectItem>> {
    let aliased = |item: &ast::SelectItem| matches!(item, ast::SelectItem::ExprWithAlias { .. });
    // Only an item after the first alias can name one.
    let first = projection.iter().position(aliased)?;
    let mut rewritten = projection.to_vec();
    let mut changed = false;
    for k in first + 1..rewritten.len() {
        let (earlier, rest) = rewritten.split_at_mut(k);
        let expr = match &mut rest[0] {
            ast::SelectItem::UnnamedExpr(expr) | ast::SelectItem::ExprWithAlias { expr, .. } => {
                expr
            }
            _ => continue,
        };
        let lateral = with_aliases(expr, earlier, scope, outer);
        if lateral != *expr {
            *expr = lateral;
            changed = true;
        }
    }
    changed.then_some(rewritten)
}

struct Rewriter<'a> {
    aliases: Vec<(String, &'a ast::Expr)>,
    scope: &'a Scope,
    outer: Option<&'a Scope>,
    /// How many subqueries deep the walk is.
    depth: usize,
}

impl VisitorMut for Rewriter<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, _query: &mut ast::Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &mut ast::Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        let ast::Expr::Identifier(ident) = expr else {
            return ControlFlow::Continue(());
        };
        let name = normalize(ident);
        let is_column = |scope: &Scope| scope.resolve(None, &name).is_ok();
        if self.depth > 0 || is_column(self.scope) || self.outer.is_some_and(is_column) {
            return ControlFlow::Continue(());
        }
        if let Some((_, aliased)) = self.aliases.iter().find(|(alias, _)| *alias == name) {
            *expr = ast::Expr::Nested(Box::new((*aliased).clone()));
        }
        ControlFlow::Continue(())
    }
}

/// `predicate` with each name of a select-list alias that is not a column of `scope` replaced
/// by the aliased expression: QUALIFY may name a window function by its alias (DuckDB).
pub(super) fn with_select_aliases(
    predicate: &ast::Expr,
    projection: &[ast::SelectItem],
    scope: &Scope,
) -> ast::Expr {
    let mut predicate = predicate.clone();
    let _ = ast::visit_expressions_mut(&mut predicate, |expr| {
        if let ast::Expr::Identifier(ident) = expr
            && scope.resolve(None, &normalize(ident)).is_err()
        {
            let aliased = projection.iter().find_map(|item| match item {
                ast::SelectItem::ExprWithAlias { expr, alias }
                    if normalize(alias) == normalize(ident) =>
                {
                    Some(expr.clone())
                }
                _ => None,
            });
            if let Some(aliased) = aliased {
                *expr = ast::Expr::Nested(Box::new(aliased));
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    predicate
}
