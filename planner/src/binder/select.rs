//! A SELECT block: FROM and WHERE, then grouping, the select list, HAVING, QUALIFY, window
//! functions, set-returning functions, DISTINCT and ORDER BY, in the order they run.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema};
use pondra_parser::ast;

use super::distinct_on::distinct_on;
use super::expr::{
    Aggregation, Context, GROUPED_SUBQUERY_BASE, SET_FUNCTION_BASE, WINDOW_BASE, bind_expr,
    contains_aggregate,
};
use super::group_by::{group_by_all, resolve_group_alias};
use super::names::output_name;
use super::order_by::{output_position, sort_options};
use super::scope::{Scope, normalize};
use super::set_ops::{distinct_rows, grouping_sets, union_of_groupings};
use super::where_aliases::with_select_aliases;
use super::where_clause::{add_subqueries, filter};
use super::{Binder, columns_expression, list_picks, set_ops, star, structs, where_aliases};
use crate::expr::{Expr, SortKey};
use crate::logical::LogicalPlan;
use crate::{Result, bind_err, unsupported};

impl<'a> Binder<'a> {
    pub(super) fn bind_select(
        &self,
        select: &ast::Select,
        order_by: &[ast::OrderByExpr],
    ) -> Result<LogicalPlan> {
        // DuckDB's `FROM t` with no select list means `SELECT * FROM t`.
        let select_all;
        let select = match select.flavor == ast::SelectFlavor::FromFirstNoSelect
            && select.projection.is_empty()
        {
            true => {
                let mut all = select.clone();
                all.projection = vec![ast::SelectItem::Wildcard(Default::default())];
                select_all = all;
                &select_all
            }
            false => select,
        };
        if select.into.is_some() {
            return Err(unsupported!(
                "SELECT ... INTO: use CREATE TABLE name AS SELECT ..."
            ));
        }
        self.windows.borrow_mut().push(Vec::new());
        self.named_windows
            .borrow_mut()
            .push(select.named_window.clone());
        self.set_functions.borrow_mut().push(Vec::new());
        let plan = match &select.distinct {
            Some(ast::Distinct::On(on)) => distinct_on(select, on, order_by)
                .and_then(|select| self.bind_select_inner(&select, order_by)),
            _ => self.bind_select_inner(select, order_by),
        };
        self.set_functions.borrow_mut().pop();
        self.named_windows.borrow_mut().pop();
        self.windows.borrow_mut().pop();
        plan
    }

    fn bind_select_inner(
        &self,
        select: &ast::Select,
        order_by: &[ast::OrderByExpr],
    ) -> Result<LogicalPlan> {
        let (relations, predicates, scope) = self.bind_from(&select.from)?;
        let outer = self.outer_scope();
        let lateral =
            where_aliases::with_lateral_aliases(&select.projection, &scope, outer.as_ref());
        let with_lateral;
        let select = match lateral {
            Some(projection) => {
                with_lateral = ast::Select {
                    projection,
                    ..select.clone()
                };
                &with_lateral
            }
            None => select,
        };
        let selection = select.selection.as_ref().map(|selection| {
            where_aliases::with_aliases(selection, &select.projection, &scope, outer.as_ref())
        });
        let plan = self.bind_where(relations, predicates, &scope, selection.as_ref())?;
        let (group_by, sets) = match &select.group_by {
            ast::GroupByExpr::Expressions(exprs, modifiers) if modifiers.is_empty() => {
                grouping_sets(exprs)?
            }
            ast::GroupByExpr::All(modifiers) if modifiers.is_empty() => {
                grouping_sets(&group_by_all(&select.projection)?)?
            }
            _ => return Err(unsupported!("GROUP BY ... WITH ROLLUP / CUBE")),
        };
        let group_by = &group_by;
        // `GROUP BY ()` groups all rows into one, which a select without aggregates has too.
        let groups_by_empty_set = matches!(&select.group_by,
            ast::GroupByExpr::Expressions(exprs, _) if exprs.iter().any(set_ops::is_empty_set));
        let aggregating = !group_by.is_empty()
            || groups_by_empty_set
            || select.projection.iter().any(item_has_aggregate)
            // HAVING makes the query grouped, all its rows one group without GROUP BY, as
            // in Postgres and DuckDB.
            || select.having.is_some()
            || order_by.iter().any(|o| contains_aggregate(&o.expr));

        let aggregation = if aggregating {
            let mut group = Vec::new();
            for expr in group_by {
                let expr = resolve_group_alias(expr, &select.projection, &scope)?;
                if contains_aggregate(expr) {
                    return Err(bind_err!("aggregate functions are not allowed in GROUP BY"));
                }
                let mut ctx = Context::plain_for(expr, &scope, "GROUP BY", Some(self));
                let bound = bind_expr(expr, &mut ctx)?;
                if !group.contains(&bound) {
                    group.push(bound);
                }
            }
            Some(Aggregation {
                input: scope.clone(),
                group,
                aggregates: Vec::new(),
            })
        } else {
            None
        };

        // Correlated subqueries in the select list become joins before the projection.
        self.correlated.borrow_mut().push(Vec::new());
        let bound = self.bind_select_list(select, order_by, plan, &scope, aggregation, sets);
        self.correlated.borrow_mut().pop();
        bound
    }

    #[allow(clippy::too_many_arguments)]
    fn bind_select_list(
        &self,
        select: &ast::Select,
        order_by: &[ast::OrderByExpr],
        mut plan: LogicalPlan,
        scope: &Scope,
        mut aggregation: Option<Aggregation>,
        sets: Option<Vec<Vec<ast::Expr>>>,
    ) -> Result<LogicalPlan> {
        // The projection, with output names.
        let mut exprs = Vec::new();
        let mut names = Vec::new();
        let expanded = columns_expression::expand_columns(&select.projection, scope)?;
        for item in expanded.as_ref().unwrap_or(&select.projection) {
            match item {
                ast::SelectItem::UnnamedExpr(e) => {
                    if let Some(arg) = structs::unnest_argument(e) {
                        let record =
                            bind_in(arg, scope, aggregation.as_mut(), "SELECT", Some(self))?;
                        if let Some(fields) = structs::unnest_fields(&record) {
                            for (value, name) in fields {
                                exprs.push(value);
                                names.push(name);
                            }
                            continue;
                        }
                    }
                    exprs.push(bind_in(
                        e,
                        scope,
                        aggregation.as_mut(),
                        "SELECT",
                        Some(self),
                    )?);
                    names.push(output_name(e));
                }
                ast::SelectItem::ExprWithAlias { expr, alias } => {
                    exprs.push(bind_in(
                        expr,
                        scope,
                        aggregation.as_mut(),
                        "SELECT",
                        Some(self),
                    )?);
                    names.push(normalize(alias));
                }
                ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..) => {
                    for column in star::star_columns(item, scope)? {
                        let expr = match (column.replacement, aggregation.as_mut()) {
                            (Some(replacement), aggregation) => {
                                bind_in(replacement, scope, aggregation, "SELECT", Some(self))?
                            }
                            (None, Some(agg)) => {
                                let name = &scope.columns[column.index].name;
                                let ident = ast::Expr::Identifier(ast::Ident::new(name));
                                bind_expr(&ident, &mut Context::Aggregated(agg, None))?
                            }
                            (None, None) => {
                                let read = &scope.columns[column.index];
                                Expr::column(column.index, &read.name, read.data_type.clone())
                            }
                        };
                        exprs.push(expr);
                        names.push(column.name);
                    }
                }
                other => return Err(unsupported!("the select item {other}")),
            }
        }
        if exprs.is_empty() && !select.projection.is_empty() {
            return Err(bind_err!(
                "the SELECT list is empty after its stars' EXCLUDE lists"
            ));
        }

        let set_functions_before = self.set_function_count();
        let having = match &select.having {
            Some(h) => Some(bind_in(
                h,
                scope,
                aggregation.as_mut(),
                "HAVING",
                Some(self),
            )?),
            None => None,
        };
        // A grouped context does not name its clause: the count tells one in HAVING.
        if self.set_function_count() != set_functions_before {
            return Err(bind_err!(
                "set-returning functions are not allowed in HAVING"
            ));
        }
        let mut grouped_subqueries = Vec::new();
        let qualify_with_aliases = select
            .qualify
            .as_ref()
            .map(|q| with_select_aliases(q, &select.projection, scope));
        let mut qualify = match &qualify_with_aliases {
            Some(q) => Some(bind_in(
                q,
                scope,
                aggregation.as_mut(),
                "QUALIFY",
                Some(self),
            )?),
            None => None,
        };

        // ORDER BY keys that are not output columns are computed as hidden trailing columns.
        let visible = exprs.len();
        let distinct = match &select.distinct {
            None | Some(ast::Distinct::All) => false,
            Some(ast::Distinct::Distinct) => true,
            Some(other) => return Err(unsupported!("{other}")),
        };
        let mut sort_keys = Vec::new();
        for item in order_by {
            let index = match output_position(&item.expr, &names)? {
                Some(index) => index,
                None if distinct => {
                    return Err(bind_err!(
                        "for SELECT DISTINCT, ORDER BY expressions must appear in the select list"
                    ));
                }
                None => {
                    let expr = bind_in(
                        &item.expr,
                        scope,
                        aggregation.as_mut(),
                        "ORDER BY",
                        Some(self),
                    )?;
                    match exprs.iter().position(|e| *e == expr) {
                        Some(index) => index,
                        None => {
                            exprs.push(expr);
                            names.push(format!("__order_{}", exprs.len()));
                            exprs.len() - 1
                        }
                    }
                }
            };
            sort_keys.push((index, sort_options(item)?));
        }

        let correlated = std::mem::take(self.correlated.borrow_mut().last_mut().expect("frame"));
        let mut having = having;
        if aggregation.is_none() {
            assert_eq!(plan.schema().fields().len(), scope.columns.len());
            plan = add_subqueries(plan, correlated);
        } else if !correlated.is_empty() {
            // Joined to the aggregation's output below; their values' placeholder numbers
            // become columns after it.
            let width = aggregation
                .as_ref()
                .map_or(0, |a| a.group.len() + a.aggregates.len());
            let remap = |e: &Expr| {
                e.remap_columns(&|c| {
                    if (GROUPED_SUBQUERY_BASE..SET_FUNCTION_BASE).contains(&c) {
                        width + c - GROUPED_SUBQUERY_BASE
                    } else {
                        c
                    }
                })
            };
            exprs = exprs.iter().map(remap).collect();
            having = having.as_ref().map(remap);
            qualify = qualify.as_ref().map(remap);
            self.remap_set_functions(remap);
            grouped_subqueries = correlated;
        }
        if let Some(agg) = aggregation {
            let mut fields: Vec<Field> = agg
                .group
                .iter()
                .map(|g| Field::new(g.to_string(), g.data_type(), true))
                .collect();
            fields.extend(
                agg.aggregates
                    .iter()
                    .map(|a| Field::new(a.to_string(), a.data_type.clone(), true)),
            );
            let schema = Arc::new(Schema::new(fields));
            plan = match &sets {
                None => LogicalPlan::Aggregate {
                    input: Box::new(plan),
                    group: agg.group,
                    aggregates: agg.aggregates,
                    schema,
                },
                Some(sets) => {
                    let positions = sets
                        .iter()
                        .map(|set| {
                            set.iter()
                                .map(|e| {
                                    let e = resolve_group_alias(e, &select.projection, scope)?;
                                    let mut ctx =
                                        Context::plain_for(e, scope, "GROUP BY", Some(self));
                                    let bound = bind_expr(e, &mut ctx)?;
                                    Ok(agg
                                        .group
                                        .iter()
                                        .position(|g| *g == bound)
                                        .expect("bound before"))
                                })
                                .collect::<Result<Vec<usize>>>()
                        })
                        .collect::<Result<Vec<_>>>()?;
                    union_of_groupings(plan, &agg.group, &agg.aggregates, &positions, schema)
                }
            };
            plan = add_subqueries(plan, std::mem::take(&mut grouped_subqueries));
            if let Some(having) = having {
                plan = filter(plan, having, "HAVING")?;
            }
        }
        let windows = std::mem::take(self.windows.borrow_mut().last_mut().expect("frame"));
        if !windows.is_empty() {
            let base = plan.schema().fields().len();
            let remap = |e: &Expr| {
                e.remap_columns(&|c| {
                    if (WINDOW_BASE..GROUPED_SUBQUERY_BASE).contains(&c) {
                        base + c - WINDOW_BASE
                    } else {
                        c
                    }
                })
            };
            exprs = exprs.iter().map(remap).collect();
            let qualify = qualify.as_ref().map(remap);
            self.remap_set_functions(remap);
            let schema = crate::types::schema_with(
                &plan.schema(),
                windows
                    .iter()
                    .enumerate()
                    .map(|(i, w)| Field::new(format!("window_{i}"), w.data_type.clone(), true)),
            );
            plan = LogicalPlan::Window {
                input: Box::new(plan),
                exprs: windows,
                schema,
            };
            if let Some(predicate) = qualify {
                plan = filter(plan, predicate, "QUALIFY")?;
            }
        } else if qualify.is_some() {
            return Err(bind_err!("QUALIFY needs a window function"));
        }
        let set_functions =
            std::mem::take(self.set_functions.borrow_mut().last_mut().expect("frame"));
        match set_functions.as_slice() {
            [] => {}
            [array] => {
                // Each row once per element, the element a column after the input's.
                let base = plan.schema().fields().len();
                exprs = exprs
                    .iter()
                    .map(|e| e.remap_columns(&|c| if c >= SET_FUNCTION_BASE { base } else { c }))
                    .collect();
                plan = plan.unnest(array.clone(), "element");
            }
            arrays => {
                // Zipped, as Postgres and DuckDB do: as many rows as the longest array has
                // elements, NULL past a shorter one's end. Each call is its field of the pair.
                let zipped = list_picks::zip(arrays)?;
                let DataType::List(item) = zipped.data_type() else {
                    unreachable!("list_zip gives a list")
                };
                let element = Expr::column(
                    plan.schema().fields().len(),
                    "element",
                    item.data_type().clone(),
                );
                for expr in &mut exprs {
                    crate::tree::TreeNode::transform_up(expr, &mut |e: &mut Expr| {
                        if let Expr::Column { index, .. } = e
                            && *index >= SET_FUNCTION_BASE
                        {
                            *e = structs::field_at(element.clone(), *index - SET_FUNCTION_BASE);
                        }
                        Ok::<_, std::convert::Infallible>(())
                    })
                    .expect("infallible");
                }
                plan = plan.unnest(zipped, "element");
            }
        }
        plan = plan.project(exprs, names.clone());
        if distinct {
            plan = distinct_rows(plan);
        }
        if !sort_keys.is_empty() {
            let schema = plan.schema();
            let keys = sort_keys
                .into_iter()
                .map(|(index, (descending, nulls_first))| SortKey {
                    expr: Expr::column(
                        index,
                        schema.field(index).name(),
                        schema.field(index).data_type().clone(),
                    ),
                    descending,
                    nulls_first,
                })
                .collect();
            plan = LogicalPlan::Sort {
                input: Box::new(plan),
                keys,
                fetch: None,
            };
        }
        if names.len() > visible {
            let schema = plan.schema();
            let exprs = (0..visible).map(|i| Expr::column_of(&schema, i)).collect();
            plan = plan.project(exprs, names[..visible].to_vec());
        }
        Ok(plan)
    }
}

fn bind_in(
    expr: &ast::Expr,
    scope: &Scope,
    aggregation: Option<&mut Aggregation>,
    clause: &str,
    binder: Option<&Binder<'_>>,
) -> Result<Expr> {
    match aggregation {
        Some(agg) => bind_expr(expr, &mut Context::Aggregated(agg, binder)),
        None => bind_expr(
            expr,
            &mut Context::Plain {
                scope,
                clause,
                binder,
            },
        ),
    }
}

fn item_has_aggregate(item: &ast::SelectItem) -> bool {
    match item {
        ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
            contains_aggregate(e)
        }
        _ => false,
    }
}
