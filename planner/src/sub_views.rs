//! Nested aggregates in a materialized view (ADR 0057): when the view's query joins, groups,
//! aggregates or ranks on its own, each derived table of its FROM that groups becomes a
//! materialized view of its own, `<view>$sub_<n>`, which the query reads under the derived
//! table's alias. A view's stream cannot hold an aggregate; a view over views can.

use std::ops::ControlFlow;

use sqlparser::ast;

use crate::Result;
use crate::binder::aggregate_function;

/// The statements that create the view `create` defines, named `name`, when it nests
/// aggregates: its sub-views in the order they must be created (each before the views that
/// read it), then the view over them; each a name and the statement's text. `None` when the
/// view nests none.
pub fn nested_view_statements(
    create: &ast::CreateView,
    name: &str,
) -> Result<Option<Vec<(String, String)>>> {
    let mut query = crate::view_ctes::inline_ctes(&create.query)?;
    let mut created = Vec::new();
    split(&mut query, name, &mut created);
    if created.is_empty() {
        return Ok(None);
    }
    let mut outer = create.clone();
    *outer.query = query;
    created.push((name.to_string(), outer.to_string()));
    Ok(Some(created))
}

/// Replaces the grouping derived tables of `query`'s FROM, when its own select nests them,
/// by scans of sub-views of `view`, whose statements it appends to `created`.
fn split(query: &mut ast::Query, view: &str, created: &mut Vec<(String, String)>) {
    let ast::SetExpr::Select(select) = query.body.as_mut() else {
        return;
    };
    if !nests(select) {
        return;
    }
    for from in &mut select.from {
        let joined = from.joins.iter_mut().map(|j| &mut j.relation);
        for factor in std::iter::once(&mut from.relation).chain(joined) {
            let ast::TableFactor::Derived {
                lateral: false,
                subquery,
                alias,
                sample: None,
            } = factor
            else {
                continue;
            };
            if !groups(subquery) {
                continue;
            }
            let mut inner = subquery.as_ref().clone();
            split(&mut inner, view, created);
            let sub_view = format!("{view}$sub_{}", created.len() + 1);
            let name = quoted_name(&sub_view);
            let statement = format!("CREATE MATERIALIZED VIEW {name} AS {inner}");
            created.push((sub_view, statement));
            *factor = table_scan(name, alias.clone());
        }
    }
}

/// Whether `select` does more than filter and project one input: what makes a grouping
/// derived table in its FROM a level of its own.
fn nests(select: &ast::Select) -> bool {
    let joins = select.from.len() > 1 || select.from.iter().any(|f| !f.joins.is_empty());
    joins || groups_by(&select.group_by) || calls(&select.projection, true)
}

/// Whether `query` is a select that groups: by a GROUP BY, or by aggregating every row.
fn groups(query: &ast::Query) -> bool {
    match query.body.as_ref() {
        ast::SetExpr::Select(select) => {
            groups_by(&select.group_by) || calls(&select.projection, false)
        }
        _ => false,
    }
}

fn groups_by(group_by: &ast::GroupByExpr) -> bool {
    match group_by {
        ast::GroupByExpr::All(_) => true,
        ast::GroupByExpr::Expressions(exprs, _) => !exprs.is_empty(),
    }
}

/// Whether a select list calls an aggregate (outside a window), or with `windows` a window
/// function.
fn calls(projection: &[ast::SelectItem], windows: bool) -> bool {
    let found = ast::visit_expressions(&projection.to_vec(), |expr| {
        let ast::Expr::Function(function) = expr else {
            return ControlFlow::Continue(());
        };
        let name = function.name.to_string().to_lowercase();
        match function.over.is_some() {
            true if windows => ControlFlow::Break(()),
            false if aggregate_function(&name).is_some() => ControlFlow::Break(()),
            _ => ControlFlow::Continue(()),
        }
    });
    found.is_break()
}

/// `name` (perhaps `schema.table`) as a quoted object name.
fn quoted_name(name: &str) -> ast::ObjectName {
    let parts = match name.split_once('.') {
        Some((schema, table)) => vec![schema, table],
        None => vec![name],
    };
    ast::ObjectName::from(
        parts
            .into_iter()
            .map(|p| ast::Ident::with_quote('"', p))
            .collect::<Vec<_>>(),
    )
}

/// A scan of table `name` under `alias`.
fn table_scan(name: ast::ObjectName, alias: Option<ast::TableAlias>) -> ast::TableFactor {
    ast::TableFactor::Table {
        name,
        alias,
        args: None,
        with_hints: Vec::new(),
        version: None,
        with_ordinality: false,
        partitions: Vec::new(),
        json_path: None,
        sample: None,
        index_directives: Vec::new(),
        inheritance: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(sql: &str) -> ast::CreateView {
        let parsed = pondra_parser::parse_sql(sql).unwrap();
        let pondra_parser::Statement::Sql(statement) = &parsed[0].statement else {
            panic!("a statement");
        };
        let ast::Statement::CreateView(create) = statement.as_ref() else {
            panic!("a view");
        };
        create.clone()
    }

    #[test]
    fn an_aggregate_over_an_aggregate_takes_a_sub_view_per_level() {
        let sql = "CREATE MATERIALIZED VIEW v AS SELECT g, max(n) AS most FROM \
                   (SELECT g, k, count(*) AS n FROM t GROUP BY g, k) AS counted GROUP BY g";
        let statements = nested_view_statements(&create(sql), "v").unwrap().unwrap();
        let names: Vec<&str> = statements.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["v$sub_1", "v"]);
        assert_eq!(
            statements[0].1,
            "CREATE MATERIALIZED VIEW \"v$sub_1\" AS SELECT g, k, count(*) AS n FROM t GROUP BY g, k"
        );
        assert!(
            statements[1]
                .1
                .contains("FROM \"v$sub_1\" AS counted GROUP BY g")
        );
    }

    #[test]
    fn nested_levels_are_created_innermost_first() {
        let sql = "CREATE MATERIALIZED VIEW v AS SELECT a.k FROM (SELECT k, count(*) AS n FROM t GROUP BY k) AS a \
                   JOIN (SELECT max(n) AS m FROM (SELECT k, count(*) AS n FROM t GROUP BY k) AS c) AS b \
                   ON a.n = b.m";
        let statements = nested_view_statements(&create(sql), "s.v")
            .unwrap()
            .unwrap();
        let names: Vec<&str> = statements.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["s.v$sub_1", "s.v$sub_2", "s.v$sub_3", "s.v"]);
        assert!(statements[2].1.contains("FROM \"s\".\"v$sub_2\" AS c"));
    }

    #[test]
    fn a_grouped_derived_table_under_filters_alone_stays_one_view() {
        let sql = "CREATE MATERIALIZED VIEW v AS SELECT g, n FROM \
                   (SELECT g, count(*) AS n FROM t GROUP BY g) AS counted WHERE n > 1";
        assert!(nested_view_statements(&create(sql), "v").unwrap().is_none());
    }
}
