//! The CTEs of a materialized view's query, inlined: a CTE is a name for a subquery, so every
//! read of one becomes that subquery as a derived table, and the view is planned as if it had
//! been written so (a CTE read twice is two derived tables). What a view takes written with
//! derived tables, it takes written with CTEs.

use std::ops::ControlFlow;

use sqlparser::ast::{self, VisitMut, VisitorMut};

use crate::binder::normalize;
use crate::{Result, unsupported};

/// `query` with every CTE read replaced by its subquery, and no WITH left.
pub fn inline_ctes(query: &ast::Query) -> Result<ast::Query> {
    let mut inlined = query.clone();
    inline_query(&mut inlined, &Scope::default())?;
    Ok(inlined)
}

/// The CTEs visible at a place, innermost last: each name with its query, itself inlined.
#[derive(Clone, Default)]
struct Scope {
    ctes: Vec<(String, ast::Cte)>,
}

impl Scope {
    fn find(&self, name: &ast::ObjectName) -> Option<&ast::Cte> {
        let [part] = name.0.as_slice() else {
            return None;
        };
        let ident = part.as_ident()?;
        let name = normalize(ident);
        self.ctes
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, cte)| cte)
    }
}

fn inline_query(query: &mut ast::Query, outer: &Scope) -> Result<()> {
    let mut scope = outer.clone();
    if let Some(with) = query.with.take() {
        if with.recursive {
            return Err(unsupported!("WITH RECURSIVE in a materialized view"));
        }
        for mut cte in with.cte_tables {
            // A CTE's body sees the CTEs before it, not itself (it is not recursive).
            inline_query(&mut cte.query, &scope)?;
            scope.ctes.push((normalize(&cte.alias.name), cte));
        }
    }
    inline_set_expr(&mut query.body, &scope)?;
    if let Some(order_by) = &mut query.order_by {
        inline_in_expressions(order_by, &scope)?;
    }
    if let Some(limit) = &mut query.limit_clause {
        inline_in_expressions(limit, &scope)?;
    }
    Ok(())
}

fn inline_set_expr(body: &mut ast::SetExpr, scope: &Scope) -> Result<()> {
    match body {
        ast::SetExpr::Select(select) => inline_select(select, scope),
        ast::SetExpr::Query(query) => inline_query(query, scope),
        ast::SetExpr::SetOperation { left, right, .. } => {
            inline_set_expr(left, scope)?;
            inline_set_expr(right, scope)
        }
        ast::SetExpr::Values(values) => inline_in_expressions(values, scope),
        _ => Ok(()),
    }
}

fn inline_select(select: &mut ast::Select, scope: &Scope) -> Result<()> {
    for from in &mut select.from {
        inline_table_with_joins(from, scope)?;
    }
    inline_in_expressions(&mut select.projection, scope)?;
    inline_in_expressions(&mut select.selection, scope)?;
    inline_in_expressions(&mut select.group_by, scope)?;
    inline_in_expressions(&mut select.having, scope)?;
    inline_in_expressions(&mut select.qualify, scope)?;
    inline_in_expressions(&mut select.named_window, scope)
}

fn inline_table_with_joins(from: &mut ast::TableWithJoins, scope: &Scope) -> Result<()> {
    inline_factor(&mut from.relation, scope)?;
    for join in &mut from.joins {
        inline_factor(&mut join.relation, scope)?;
        inline_in_expressions(&mut join.join_operator, scope)?;
    }
    Ok(())
}

fn inline_factor(factor: &mut ast::TableFactor, scope: &Scope) -> Result<()> {
    match factor {
        ast::TableFactor::Table {
            name,
            alias,
            args: None,
            ..
        } => {
            let Some(cte) = scope.find(name) else {
                return Ok(());
            };
            // Named by the read's alias, else the CTE's name; columns by the read's list,
            // else the CTE's.
            let alias = match alias.take() {
                Some(alias) if !alias.columns.is_empty() => alias,
                Some(alias) => ast::TableAlias {
                    columns: cte.alias.columns.clone(),
                    ..alias
                },
                None => cte.alias.clone(),
            };
            *factor = ast::TableFactor::Derived {
                lateral: false,
                subquery: Box::new(cte.query.as_ref().clone()),
                alias: Some(alias),
                sample: None,
            };
            Ok(())
        }
        ast::TableFactor::Derived { subquery, .. } => inline_query(subquery, scope),
        ast::TableFactor::NestedJoin {
            table_with_joins, ..
        } => inline_table_with_joins(table_with_joins, scope),
        other => inline_in_expressions(other, scope),
    }
}

/// Inlines the CTE reads of the subqueries in the expressions of `node` (each subquery once,
/// with its own WITH): the subqueries are taken out, inlined, and put back in the order they
/// were met.
fn inline_in_expressions<T: VisitMut>(node: &mut T, scope: &Scope) -> Result<()> {
    let mut taken = TakeSubqueries::default();
    let _ = node.visit(&mut taken);
    if taken.queries.is_empty() {
        return Ok(());
    }
    for query in &mut taken.queries {
        inline_query(query, scope)?;
    }
    let mut put_back = PutBack {
        queries: taken.queries.into_iter(),
    };
    let _ = node.visit(&mut put_back);
    assert!(put_back.queries.next().is_none(), "every subquery put back");
    Ok(())
}

/// The query of a subquery expression, if it is one.
fn subquery_of(expr: &mut ast::Expr) -> Option<&mut Box<ast::Query>> {
    match expr {
        ast::Expr::Subquery(query)
        | ast::Expr::Exists {
            subquery: query, ..
        }
        | ast::Expr::In {
            target: ast::InTarget::Subquery(query),
            ..
        } => Some(query),
        ast::Expr::Function(ast::Function {
            args: ast::FunctionArguments::Subquery(query),
            ..
        }) => Some(query),
        _ => None,
    }
}

/// A query standing in for one taken out: it holds no expression, so nothing in it is met.
fn placeholder() -> ast::Query {
    let parsed = pondra_parser::parse_sql("SELECT 1").expect("parses");
    let Some(pondra_parser::Statement::Sql(statement)) =
        parsed.into_iter().next().map(|p| p.statement)
    else {
        unreachable!("one statement")
    };
    match *statement {
        ast::Statement::Query(query) => *query,
        _ => unreachable!("a query"),
    }
}

/// Takes every subquery out of the expressions it visits, outermost first.
#[derive(Default)]
struct TakeSubqueries {
    queries: Vec<ast::Query>,
}

impl VisitorMut for TakeSubqueries {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        if let Some(query) = subquery_of(expr) {
            self.queries
                .push(std::mem::replace(query.as_mut(), placeholder()));
        }
        ControlFlow::Continue(())
    }
}

/// Puts the taken subqueries back, met in the same order.
struct PutBack {
    queries: std::vec::IntoIter<ast::Query>,
}

impl VisitorMut for PutBack {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        if let Some(query) = subquery_of(expr) {
            *query.as_mut() = self.queries.next().expect("as many as were taken");
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inlined(sql: &str) -> String {
        let parsed = pondra_parser::parse_sql(sql).unwrap();
        let pondra_parser::Statement::Sql(statement) = &parsed[0].statement else {
            panic!("SQL")
        };
        let ast::Statement::Query(query) = statement.as_ref() else {
            panic!("a query")
        };
        inline_ctes(query).unwrap().to_string()
    }

    #[test]
    fn each_read_becomes_the_subquery() {
        assert_eq!(
            inlined("WITH c AS (SELECT a FROM t) SELECT * FROM c JOIN c AS d ON c.a = d.a"),
            "SELECT * FROM (SELECT a FROM t) c JOIN (SELECT a FROM t) AS d ON c.a = d.a"
        );
    }

    #[test]
    fn a_cte_reads_earlier_ones_and_not_itself() {
        assert_eq!(
            inlined("WITH t AS (SELECT a FROM t), u AS (SELECT a FROM t) SELECT a FROM u"),
            "SELECT a FROM (SELECT a FROM (SELECT a FROM t) t) u"
        );
    }

    #[test]
    fn column_names_and_subqueries_in_expressions() {
        assert_eq!(
            inlined(
                "WITH c(x) AS (SELECT a FROM t) SELECT x FROM s WHERE s.b IN (SELECT x FROM c)"
            ),
            "SELECT x FROM s WHERE s.b IN (SELECT x FROM (SELECT a FROM t) c (x))"
        );
    }
}
