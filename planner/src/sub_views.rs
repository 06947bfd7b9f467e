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
    let mut created = Created::default();
    split(&mut query, name, &mut created);
    if created.statements.is_empty() {
        return Ok(None);
    }
    let mut outer = create.clone();
    *outer.query = query;
    let mut statements = created.statements;
    statements.push((name.to_string(), outer.to_string()));
    Ok(Some(statements))
}

/// The sub-views made so far: each one's name and statement, and its name and query, which
/// a derived table that repeats the query reads instead (ADR 0084).
#[derive(Default)]
struct Created {
    statements: Vec<(String, String)>,
    queries: Vec<(ast::ObjectName, ast::Query)>,
}

/// Replaces the grouping derived tables of `query`'s FROM, when its own select nests them,
/// by scans of sub-views of `view`, which it appends to `created`, or by projections of the
/// earlier sub-view that has the same query (ADR 0084).
fn split(query: &mut ast::Query, view: &str, created: &mut Created) {
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
            let repeated = created
                .queries
                .iter()
                .find_map(|(name, earlier)| projection_of(&inner, name, earlier));
            if let Some(projection) = repeated {
                **subquery = projection;
                continue;
            }
            let sub_view = format!("{view}$sub_{}", created.statements.len() + 1);
            let name = quoted_name(&sub_view);
            let statement = format!("CREATE MATERIALIZED VIEW {name} AS {inner}");
            created.statements.push((sub_view, statement));
            created.queries.push((name.clone(), inner));
            *factor = table_scan(name, alias.clone());
        }
    }
}

/// `query` as a projection of the sub-view `name` of query `earlier`, when the two differ
/// only in their select lists and the order of their GROUP BY, and each item `query` selects
/// is one `earlier` selects under a name (ADR 0084): a grouped query has a row per group,
/// whichever of its columns it selects.
fn projection_of(
    query: &ast::Query,
    name: &ast::ObjectName,
    earlier: &ast::Query,
) -> Option<ast::Query> {
    let (ast::SetExpr::Select(mine), ast::SetExpr::Select(theirs)) =
        (query.body.as_ref(), earlier.body.as_ref())
    else {
        return None;
    };
    let plain = query.with.is_none()
        && query.order_by.is_none()
        && query.limit_clause.is_none()
        && query.fetch.is_none()
        && mine.distinct.is_none()
        && mine.top.is_none()
        && mine.into.is_none()
        && mine.qualify.is_none()
        && mine.having.is_none()
        && mine.named_window.is_empty();
    let (
        ast::GroupByExpr::Expressions(my_groups, my_modifiers),
        ast::GroupByExpr::Expressions(their_groups, their_modifiers),
    ) = (&mine.group_by, &theirs.group_by)
    else {
        return None;
    };
    let same_groups = my_modifiers.is_empty()
        && their_modifiers.is_empty()
        && my_groups.len() == their_groups.len()
        && my_groups.iter().all(|g| their_groups.contains(g))
        && their_groups.iter().all(|g| my_groups.contains(g));
    if !plain || !same_groups || without_select_list(query) != without_select_list(earlier) {
        return None;
    }
    // GROUP BY 1 or GROUP BY <alias> means another expression in each query.
    let aliases: Vec<String> = [mine, theirs]
        .iter()
        .flat_map(|select| &select.projection)
        .filter_map(|item| match item {
            ast::SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.to_lowercase()),
            _ => None,
        })
        .collect();
    let by_position_or_alias =
        |expr: &ast::Expr| matches!(expr, ast::Expr::Value(_)) || mentions(expr, &aliases);
    if my_groups.iter().any(by_position_or_alias)
        || mine.selection.iter().any(|w| mentions(w, &aliases))
    {
        return None;
    }
    let mut items = Vec::new();
    for item in &mine.projection {
        let (expr, alias) = named_item(item)?;
        let source = theirs
            .projection
            .iter()
            .filter_map(named_item)
            .find(|(e, _)| *e == expr)
            .map(|(_, name)| name)?;
        items.push(ast::SelectItem::ExprWithAlias {
            expr: ast::Expr::Identifier(source),
            alias,
        });
    }
    let mut select = mine.clone();
    select.projection = items;
    select.from = vec![ast::TableWithJoins {
        relation: table_scan(name.clone(), None),
        joins: Vec::new(),
    }];
    select.selection = None;
    select.group_by = ast::GroupByExpr::Expressions(Vec::new(), Vec::new());
    select.having = None;
    let mut projection = query.clone();
    *projection.body = ast::SetExpr::Select(select);
    Some(projection)
}

/// Whether `expr` names a column one of `names` (lower case) could be.
fn mentions(expr: &ast::Expr, names: &[String]) -> bool {
    let found = ast::visit_expressions(expr, |e| {
        let name = match e {
            ast::Expr::Identifier(ident) => Some(ident),
            ast::Expr::CompoundIdentifier(parts) => parts.last(),
            _ => None,
        };
        match name.is_some_and(|n| names.contains(&n.value.to_lowercase())) {
            true => ControlFlow::Break(()),
            false => ControlFlow::Continue(()),
        }
    });
    found.is_break()
}

/// `query` with an empty select list and no GROUP BY: what two queries that differ only in
/// those share.
fn without_select_list(query: &ast::Query) -> ast::Query {
    let mut bare = query.clone();
    if let ast::SetExpr::Select(select) = bare.body.as_mut() {
        select.projection.clear();
        select.group_by = ast::GroupByExpr::Expressions(Vec::new(), Vec::new());
    }
    bare
}

/// A select item's expression and the name of its column, when it has a name of its own: an
/// alias, or the column it references.
fn named_item(item: &ast::SelectItem) -> Option<(&ast::Expr, ast::Ident)> {
    match item {
        ast::SelectItem::ExprWithAlias { expr, alias } => Some((expr, alias.clone())),
        ast::SelectItem::UnnamedExpr(expr @ ast::Expr::Identifier(name)) => {
            Some((expr, name.clone()))
        }
        ast::SelectItem::UnnamedExpr(expr @ ast::Expr::CompoundIdentifier(parts)) => {
            Some((expr, parts.last()?.clone()))
        }
        _ => None,
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
                   JOIN (SELECT max(n) AS m FROM (SELECT k, count(*) AS n FROM t WHERE k > 0 GROUP BY k) AS c) AS b \
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

    #[test]
    fn a_repeated_aggregate_reads_the_earlier_sub_view() {
        let sql = "CREATE MATERIALIZED VIEW v AS SELECT a.k FROM \
                   (SELECT k, count(*) AS n, w AS s FROM t GROUP BY w, k) AS a JOIN \
                   (SELECT max(c.n2) AS m, c.s2 FROM (SELECT count(*) AS n2, w AS s2 FROM t GROUP BY k, w) AS c GROUP BY c.s2) AS b \
                   ON a.s = b.s2 AND a.n >= b.m";
        let statements = nested_view_statements(&create(sql), "v").unwrap().unwrap();
        let names: Vec<&str> = statements.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["v$sub_1", "v$sub_2", "v"]);
        assert!(
            statements[1]
                .1
                .contains("FROM (SELECT n AS n2, s AS s2 FROM \"v$sub_1\") AS c GROUP BY c.s2"),
            "{}",
            statements[1].1
        );
    }

    #[test]
    fn an_aggregate_differing_but_in_its_select_list_stays_a_sub_view_of_its_own() {
        let joined = |inner: &str| {
            format!(
                "CREATE MATERIALIZED VIEW v AS SELECT a.k FROM \
                 (SELECT k, count(*) AS n FROM t GROUP BY k) AS a JOIN \
                 (SELECT max(c.n) AS m FROM ({inner}) AS c) AS b ON a.n >= b.m"
            )
        };
        for inner in [
            "SELECT k, count(*) AS n FROM t WHERE k > 1 GROUP BY k",
            "SELECT k, count(*) AS n FROM t GROUP BY k HAVING count(*) > 1",
            "SELECT k, count(*) AS n FROM t GROUP BY 1",
            "SELECT k, count(*) + 1 AS n FROM t GROUP BY k",
            "SELECT k, count(*) FROM t GROUP BY k",
            "SELECT k, sum(k) AS n FROM t GROUP BY k",
        ] {
            let statements = nested_view_statements(&create(&joined(inner)), "v")
                .unwrap()
                .unwrap();
            assert_eq!(statements.len(), 4, "{inner}");
        }
    }
}
