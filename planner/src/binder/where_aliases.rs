//! Select-list aliases named in WHERE, as DuckDB reads them: `SELECT a + 1 AS b FROM t WHERE
//! b > 2` filters on `a + 1`. A name is an alias only where no column of the FROM clause (nor
//! of an enclosing query) has it, and only outside subqueries, whose names are their own. An
//! alias of an aggregate or a window function is replaced too, so that the error says WHERE
//! cannot filter on those.

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
