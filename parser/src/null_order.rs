//! A session's default NULL order (`SET default_null_order`, as in DuckDB): every ORDER BY
//! item that says neither NULLS FIRST nor NULLS LAST is given the session's choice, in the
//! statement's text, before it is bound. Without the setting, NULLs sort as if larger than
//! every value, as in PostgreSQL.

use std::ops::ControlFlow;

use sqlparser::ast::{self, VisitMut, VisitorMut};

/// Where NULLs go when an ORDER BY item does not say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NullOrder {
    pub first_ascending: bool,
    pub first_descending: bool,
}

impl NullOrder {
    /// PostgreSQL's: last ascending, first descending (NULL as the largest value).
    pub const POSTGRES: NullOrder = NullOrder {
        first_ascending: false,
        first_descending: true,
    };

    /// The order a `default_null_order` value names (DuckDB's names; `postgres` too).
    pub fn from_name(name: &str) -> Option<NullOrder> {
        let (first_ascending, first_descending) = match name.to_ascii_lowercase().as_str() {
            "nulls_first" | "first" | "nulls first" => (true, true),
            "nulls_last" | "last" | "nulls last" => (false, false),
            "nulls_first_on_asc_last_on_desc" | "sqlite" | "mysql" => (true, false),
            "nulls_last_on_asc_first_on_desc" | "postgres" => (false, true),
            _ => return None,
        };
        Some(NullOrder {
            first_ascending,
            first_descending,
        })
    }

    pub fn name(self) -> &'static str {
        match (self.first_ascending, self.first_descending) {
            (true, true) => "nulls_first",
            (false, false) => "nulls_last",
            (true, false) => "nulls_first_on_asc_last_on_desc",
            (false, true) => "nulls_last_on_asc_first_on_desc",
        }
    }

    fn fill(self, options: &mut ast::OrderByOptions) {
        if options.nulls_first.is_none() {
            let descending = matches!(options.sort, Some(ast::OrderBySort::Desc));
            options.nulls_first = Some(match descending {
                true => self.first_descending,
                false => self.first_ascending,
            });
        }
    }

    fn fill_all(self, items: &mut [ast::OrderByExpr]) {
        for item in items {
            self.fill(&mut item.options);
        }
    }
}

impl VisitorMut for NullOrder {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut ast::Query) -> ControlFlow<()> {
        match query.order_by.as_mut().map(|order| &mut order.kind) {
            Some(ast::OrderByKind::Expressions(items)) => self.fill_all(items),
            Some(ast::OrderByKind::All(options)) => self.fill(options),
            None => {}
        }
        // Named windows are not expressions: each query's own are filled here.
        fill_named_windows(*self, &mut query.body);
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        let ast::Expr::Function(function) = expr else {
            return ControlFlow::Continue(());
        };
        if let Some(ast::WindowType::WindowSpec(spec)) = &mut function.over {
            self.fill_all(&mut spec.order_by);
        }
        self.fill_all(&mut function.within_group);
        if let ast::FunctionArguments::List(list) = &mut function.args {
            for clause in &mut list.clauses {
                if let ast::FunctionArgumentClause::OrderBy(items) = clause {
                    self.fill_all(items);
                }
            }
        }
        ControlFlow::Continue(())
    }
}

/// The named windows of the SELECTs of a query body (both sides of a UNION included).
fn fill_named_windows(order: NullOrder, body: &mut ast::SetExpr) {
    match body {
        ast::SetExpr::Select(select) => {
            for ast::NamedWindowDefinition(_, window) in &mut select.named_window {
                if let ast::NamedWindowExpr::WindowSpec(spec) = window {
                    order.fill_all(&mut spec.order_by);
                }
            }
        }
        ast::SetExpr::SetOperation { left, right, .. } => {
            fill_named_windows(order, left);
            fill_named_windows(order, right);
        }
        _ => {}
    }
}

/// Gives every ORDER BY item in `statement` that does not say where NULLs go `order`'s choice.
pub fn apply_null_order(statement: &mut ast::Statement, mut order: NullOrder) {
    let _ = statement.visit(&mut order);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(sql: &str, order: &str) -> String {
        let dialect = sqlparser::dialect::DuckDbDialect {};
        let mut statement = sqlparser::parser::Parser::parse_sql(&dialect, sql)
            .expect("parses")
            .remove(0);
        apply_null_order(
            &mut statement,
            NullOrder::from_name(order).expect("an order"),
        );
        statement.to_string()
    }

    #[test]
    fn fills_every_order_by_that_does_not_say() {
        assert_eq!(
            applied(
                "SELECT sum(x) OVER (ORDER BY x DESC) FROM t ORDER BY a, b DESC NULLS LAST",
                "nulls_first"
            ),
            "SELECT sum(x) OVER (ORDER BY x DESC NULLS FIRST) FROM t \
             ORDER BY a NULLS FIRST, b DESC NULLS LAST"
        );
        assert_eq!(
            applied("SELECT string_agg(x, ',' ORDER BY x) FROM t", "nulls_last"),
            "SELECT string_agg(x, ',' ORDER BY x NULLS LAST) FROM t"
        );
    }
}
