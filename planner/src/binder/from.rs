//! FROM clauses: the relations of an inner-join block and the conditions joining them (ON,
//! USING, NATURAL); outer, ASOF and LATERAL joins and joins on subqueries placed in it; table
//! aliases.

use std::sync::Arc;

use arrow::datatypes::Schema;
use pondra_parser::ast;

use super::names::object_name;
use super::scope::{Scope, ScopeColumn, normalize};
use super::where_clause::filter_predicate;
use super::{Binder, asof, expr, join_subqueries, scope};
use crate::expr::{BinaryOp, Expr, JoinKind, ScalarFunction};
use crate::logical::{LogicalPlan, SubqueryKind};
use crate::{PlanError, Result, bind_err, unsupported};

/// After `FULL JOIN ... USING (k)` (or `NATURAL FULL JOIN`), an unqualified `k` and `*` name
/// one column, `coalesce(left.k, right.k)`, as in PostgreSQL; each side's own `k` stays
/// reachable qualified. `plan` is the join of the FROM item's columns from `base` (the left
/// side's `left_width` of them first) in `joined`; the merged columns are placed before the
/// left side's copies, in the plan and in `joined`.
pub(super) fn merge_using_columns(
    plan: LogicalPlan,
    constraint: &ast::JoinConstraint,
    joined: &mut Scope,
    (base, left_width): (usize, usize),
) -> Result<LogicalPlan> {
    let ast::JoinConstraint::Using(names) = constraint else {
        return Ok(plan);
    };
    let schema = plan.schema();
    let width = schema.fields().len();
    assert_eq!(
        joined.columns.len(),
        base + width,
        "the scope covers the item's columns"
    );
    let column = |i: usize| {
        let field = schema.field(i);
        Expr::column(i, field.name(), field.data_type().clone())
    };
    // For each left key's position, the merged column placed before it.
    let mut merged: Vec<(usize, ScopeColumn, Expr)> = Vec::new();
    for name in names {
        let name = super::object_name(name)?;
        let item = &joined.columns[base..];
        let find = |range: std::ops::Range<usize>| {
            range
                .rev()
                .find(|&i| !item[i].hidden && item[i].name.eq_ignore_ascii_case(&name))
        };
        let (Some(l), Some(r)) = (find(0..left_width), find(left_width..width)) else {
            return Err(bind_err!(
                "column \"{name}\" named in USING is missing from a side"
            ));
        };
        let (left, right) = (column(l), column(r));
        let data_type = match (left.data_type(), right.data_type()) {
            (a, b) if a == b => a,
            (a, b) => crate::types::common_numeric_type(&a, &b).unwrap_or(a),
        };
        let value = Expr::Function {
            func: ScalarFunction::Coalesce,
            args: vec![left.cast(&data_type), right.cast(&data_type)],
            data_type: data_type.clone(),
        };
        let scope_column = ScopeColumn {
            qualifier: None,
            name: item[l].name.clone(),
            data_type,
            hidden: false,
            merged: false,
        };
        merged.push((l, scope_column, value));
        for copy in [base + l, base + r] {
            joined.columns[copy].hidden = true;
            joined.columns[copy].merged = true;
        }
    }
    let mut exprs = Vec::with_capacity(width + merged.len());
    let mut names = Vec::with_capacity(width + merged.len());
    let mut columns = joined.columns[..base].to_vec();
    for i in 0..width {
        for (_, scope_column, value) in merged.iter().filter(|(l, ..)| *l == i) {
            exprs.push(value.clone());
            names.push(scope_column.name.clone());
            columns.push(scope_column.clone());
        }
        exprs.push(column(i));
        names.push(schema.field(i).name().clone());
        columns.push(joined.columns[base + i].clone());
    }
    joined.columns = columns;
    Ok(plan.project(exprs, names))
}

/// An outer (or semi / anti) join of `left` (its columns first) and `right` on `on`, bound over
/// left columns then right columns. `is_right` for RIGHT JOIN (`kind` is then a left join
/// from `right`).
pub(super) fn outer_join(
    left: LogicalPlan,
    right: LogicalPlan,
    kind: JoinKind,
    on: Option<Expr>,
    left_width: usize,
    is_right: bool,
) -> Result<LogicalPlan> {
    let conjuncts = on.map(Expr::conjuncts).unwrap_or_default();
    let in_left = |e: &Expr| {
        let c = e.column_indices();
        !c.is_empty() && c.iter().all(|i| *i < left_width)
    };
    let in_right = |e: &Expr| {
        let c = e.column_indices();
        !c.is_empty() && c.iter().all(|i| *i >= left_width)
    };
    let mut keys = Vec::new();
    let mut rest = Vec::new();
    for conjunct in conjuncts {
        if let Expr::Binary {
            op: BinaryOp::Eq,
            left: l,
            right: r,
        } = &conjunct
        {
            let to_right = |e: &Expr| e.remap_columns(&|c| c - left_width);
            if in_left(l) && in_right(r) {
                keys.push(((**l).clone(), to_right(r)));
                continue;
            }
            if in_right(l) && in_left(r) {
                keys.push(((**r).clone(), to_right(l)));
                continue;
            }
        }
        rest.push(conjunct);
    }
    let filter = Expr::and_all(rest);
    // RIGHT JOIN keeps its right input whole: a right join, which builds it. Which input an
    // outer join builds is the optimizer's choice (`outer_join_sides`).
    let kind = match (kind, is_right) {
        (JoinKind::Left, true) => JoinKind::Right,
        (kind, _) => kind,
    };
    Ok(LogicalPlan::join(left, right, kind, keys, filter))
}

/// Applies a table alias's column names (`AS t(a, b)`).
pub(super) fn rename_columns(
    plan: LogicalPlan,
    alias: Option<&ast::TableAlias>,
) -> Result<LogicalPlan> {
    let Some(alias) = alias.filter(|a| !a.columns.is_empty()) else {
        return Ok(plan);
    };
    let schema = plan.schema();
    if alias.columns.len() > schema.fields().len() {
        return Err(bind_err!(
            "{} has {} columns but {} names were given",
            alias.name,
            schema.fields().len(),
            alias.columns.len()
        ));
    }
    let (exprs, names): (Vec<Expr>, Vec<String>) = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let name = alias
                .columns
                .get(i)
                .map(|c| normalize(&c.name))
                .unwrap_or_else(|| f.name().clone());
            (Expr::column(i, f.name(), f.data_type().clone()), name)
        })
        .unzip();
    Ok(plan.project(exprs, names))
}

impl<'a> Binder<'a> {
    /// Binds a FROM clause into the relations of one inner-join block, the predicates of its
    /// INNER JOIN ... ON clauses, and the scope its columns are named in.
    pub(super) fn bind_from(
        &self,
        from: &[ast::TableWithJoins],
    ) -> Result<(Vec<LogicalPlan>, Vec<Expr>, Scope)> {
        let mut relations = Vec::new();
        let mut predicates = Vec::new();
        let mut scope = Scope::default();
        if from.is_empty() {
            let plan = LogicalPlan::Values {
                schema: Arc::new(Schema::empty()),
                rows: vec![vec![]],
            };
            relations.push(plan);
            return Ok((relations, predicates, scope));
        }
        // Each joined relation is a level of the plan, which every later step walks.
        let joined: usize = from.iter().map(|item| 1 + item.joins.len()).sum();
        if joined > pondra_parser::MAX_DEPTH {
            return Err(PlanError::Parse(pondra_parser::ParseError::TooDeep));
        }
        for item in from {
            // Relations of this item not yet fixed by an outer join.
            let mut base = scope.columns.len();
            let mut item_relations: Vec<LogicalPlan> = Vec::new();
            let mut item_predicates: Vec<Expr> = Vec::new();
            let (plan, factor_scope, lateral) = self.bind_factor_after(&item.relation, &scope)?;
            if lateral {
                // It reads every relation to its left, which it joins as one.
                let left = LogicalPlan::join_block(
                    std::mem::take(&mut relations),
                    std::mem::take(&mut predicates),
                );
                let kind = SubqueryKind::Lateral {
                    join: JoinKind::Inner,
                    on: None,
                };
                item_relations.push(left.subquery(plan, kind));
                base = 0;
            } else {
                item_relations.push(plan);
            }
            scope.columns.extend(factor_scope.columns);
            for join in &item.joins {
                let (right, right_scope, lateral) =
                    self.bind_factor_after(&join.relation, &scope)?;
                let left_width = scope.columns.len() - base;
                let mut joined_scope = scope.clone();
                joined_scope.columns.extend(right_scope.columns.clone());
                use ast::JoinOperator as J;
                if let J::AsOf {
                    match_condition,
                    constraint,
                } = &join.join_operator
                {
                    if lateral {
                        return Err(unsupported!("an ASOF join to a LATERAL subquery"));
                    }
                    let left = self.collapse(
                        std::mem::take(&mut item_relations),
                        std::mem::take(&mut item_predicates),
                        base,
                    );
                    let sides = [&scope, &right_scope, &joined_scope];
                    let plan = self.bind_asof(left, right, (match_condition, constraint), sides)?;
                    let left_width = scope.columns.len() - base;
                    item_relations.push(plan(base, left_width)?);
                    hide_using_copies(constraint, &mut joined_scope, scope.columns.len(), false)?;
                    scope = joined_scope;
                    continue;
                }
                let (kind, constraint) = match &join.join_operator {
                    J::Join(c) | J::Inner(c) => (None, c),
                    J::CrossJoin(c) => (None, c),
                    J::Left(c) | J::LeftOuter(c) => (Some(JoinKind::Left), c),
                    J::Right(c) | J::RightOuter(c) => (Some(JoinKind::Left), c),
                    J::FullOuter(c) => (Some(JoinKind::Full), c),
                    J::Semi(c) | J::LeftSemi(c) => (Some(JoinKind::Semi), c),
                    J::Anti(c) | J::LeftAnti(c) => (Some(JoinKind::Anti), c),
                    other => return Err(unsupported!("the join {other:?}")),
                };
                let is_right = matches!(join.join_operator, J::Right(_) | J::RightOuter(_));
                if let ast::JoinConstraint::On(condition) = constraint
                    && expr::contains_subquery(condition)
                    && !lateral
                    && matches!(kind, None | Some(JoinKind::Left | JoinKind::Full))
                {
                    // Everything to the left, earlier FROM items too, is the join's left side.
                    let mut left_relations = std::mem::take(&mut relations);
                    left_relations.append(&mut item_relations);
                    let mut left_predicates = std::mem::take(&mut predicates);
                    left_predicates.append(&mut item_predicates);
                    let left = LogicalPlan::join_block(left_relations, left_predicates);
                    let kept = join_subqueries::Kept {
                        left: matches!(kind, Some(JoinKind::Full))
                            || kind == Some(JoinKind::Left) && !is_right,
                        right: matches!(kind, Some(JoinKind::Full)) || is_right,
                    };
                    let sides = (&scope, &right_scope);
                    let plan = self.join_on_subqueries((left, right), kept, condition, sides)?;
                    item_relations.push(plan);
                    base = 0;
                    scope = joined_scope;
                    continue;
                }
                let constraint =
                    &natural_as_using(constraint, &scope.columns[base..], &right_scope);
                let on = self.join_condition(constraint, &scope, &right_scope, &joined_scope)?;
                if kind != Some(JoinKind::Full) {
                    hide_using_copies(
                        constraint,
                        &mut joined_scope,
                        scope.columns.len(),
                        is_right,
                    )?;
                }
                if lateral {
                    let join = match kind {
                        None => JoinKind::Inner,
                        Some(JoinKind::Left) if !is_right => JoinKind::Left,
                        _ => {
                            return Err(bind_err!(
                                "a LATERAL subquery is joined by INNER or LEFT JOIN only"
                            ));
                        }
                    };
                    // Everything to the left, earlier FROM items too, is the lateral's input.
                    let mut left_relations = std::mem::take(&mut relations);
                    left_relations.append(&mut item_relations);
                    let mut left_predicates = std::mem::take(&mut predicates);
                    left_predicates.append(&mut item_predicates);
                    let left = LogicalPlan::join_block(left_relations, left_predicates);
                    let on = match join {
                        JoinKind::Inner => {
                            item_predicates.extend(on.into_iter().flat_map(Expr::conjuncts));
                            None
                        }
                        _ => on,
                    };
                    let kind = SubqueryKind::Lateral { join, on };
                    item_relations.push(left.subquery(right, kind));
                    base = 0;
                    scope = joined_scope;
                    continue;
                }
                match kind {
                    None => {
                        item_relations.push(right);
                        item_predicates.extend(on.into_iter().flat_map(Expr::conjuncts));
                        scope = joined_scope;
                    }
                    Some(kind) => {
                        // Everything to the left becomes one input of the outer join.
                        let left = self.collapse(
                            std::mem::take(&mut item_relations),
                            std::mem::take(&mut item_predicates),
                            base,
                        );
                        let on = on.map(|e| e.remap_columns(&|c| c - base));
                        let mut plan = outer_join(left, right, kind, on, left_width, is_right)?;
                        if kind == JoinKind::Full {
                            let sides = (base, left_width);
                            plan = merge_using_columns(plan, constraint, &mut joined_scope, sides)?;
                        }
                        if !kind.left_only() {
                            scope = joined_scope;
                        }
                        item_relations.push(plan);
                    }
                }
            }
            relations.extend(item_relations);
            predicates.extend(item_predicates);
        }
        Ok((relations, predicates, scope))
    }

    /// An ASOF join of `left` and `right`, bound to plans the executor runs (`asof.rs`), as a
    /// function of where the FROM item starts and how wide its left side is.
    fn bind_asof(
        &self,
        left: LogicalPlan,
        right: LogicalPlan,
        (match_condition, constraint): (&ast::Expr, &ast::JoinConstraint),
        [scope, right_scope, joined_scope]: [&Scope; 3],
    ) -> Result<impl FnOnce(usize, usize) -> Result<LogicalPlan>> {
        let on = match constraint {
            // DuckDB's `USING (k, ..., ts)`: equal keys, and the last column `l.ts >= r.ts`.
            ast::JoinConstraint::Using(names) => {
                let Some((last, keys)) = names.split_last() else {
                    return Err(bind_err!("ASOF JOIN ... USING needs the time column"));
                };
                let keys = ast::JoinConstraint::Using(keys.to_vec());
                let equal = self.join_condition(&keys, scope, right_scope, joined_scope)?;
                let name = object_name(last)?;
                let l = scope.resolve(None, &name)?;
                let r = right_scope.resolve(None, &name)?;
                let (lc, rc) = (&scope.columns[l], &right_scope.columns[r]);
                let at_or_before = expr::at_least(
                    Expr::column(l, &lc.name, lc.data_type.clone()),
                    Expr::column(scope.columns.len() + r, &rc.name, rc.data_type.clone()),
                )?;
                Expr::and_all(equal.into_iter().chain([at_or_before]).collect())
            }
            _ => self.join_condition(constraint, scope, right_scope, joined_scope)?,
        };
        let (keep_unmatched, matched) = match asof::asof_form(match_condition) {
            asof::AsofForm::DuckDb { keep_unmatched } => (keep_unmatched, None),
            asof::AsofForm::Snowflake { match_condition } => {
                let bound = self.bind_scalar(match_condition, joined_scope, "MATCH_CONDITION")?;
                (false, Some(bound))
            }
        };
        if keep_unmatched && self.views_as_leaves {
            // A view's outer joins match on equal keys only (ADR 0054).
            return Err(unsupported!("ASOF LEFT JOIN in a materialized view"));
        }
        let condition = Expr::and_all(on.into_iter().chain(matched).collect())
            .ok_or_else(|| bind_err!("an ASOF join needs a condition"))?;
        let views_as_leaves = self.views_as_leaves;
        Ok(move |base: usize, left_width: usize| {
            let condition = condition.remap_columns(&|c| c - base);
            let left_rows = match views_as_leaves {
                true => asof::LeftRows::ByValue,
                false => asof::LeftRows::Numbered,
            };
            asof::asof_join(
                left,
                right,
                condition,
                left_width,
                (keep_unmatched, left_rows),
            )
        })
    }

    /// The relations of a FROM item that starts at column `base` as one join block.
    fn collapse(
        &self,
        relations: Vec<LogicalPlan>,
        predicates: Vec<Expr>,
        base: usize,
    ) -> LogicalPlan {
        let predicates = predicates
            .into_iter()
            .map(|p| p.remap_columns(&|c| c - base))
            .collect();
        LogicalPlan::join_block(relations, predicates)
    }

    /// The condition of a join (`ON`, `USING` or `NATURAL`, as `USING`) over the joined scope.
    fn join_condition(
        &self,
        constraint: &ast::JoinConstraint,
        left: &Scope,
        right: &Scope,
        joined: &Scope,
    ) -> Result<Option<Expr>> {
        match constraint {
            ast::JoinConstraint::None => Ok(None),
            ast::JoinConstraint::On(expr) => {
                let bound = self.bind_scalar(expr, joined, "JOIN ... ON")?;
                Ok(Some(filter_predicate(bound, "JOIN ... ON")?))
            }
            ast::JoinConstraint::Using(names) => {
                let mut parts = Vec::new();
                for name in names {
                    let name = object_name(name)?;
                    let l = left.resolve(None, &name)?;
                    let r = right.resolve(None, &name)?;
                    let lc = &left.columns[l];
                    let rc = &right.columns[r];
                    parts.push(expr::equality(
                        Expr::column(l, &lc.name, lc.data_type.clone()),
                        Expr::column(left.columns.len() + r, &rc.name, rc.data_type.clone()),
                    )?);
                }
                Ok(Expr::and_all(parts))
            }
            other => Err(unsupported!("the join condition {other:?}")),
        }
    }
}

/// `NATURAL` as the `USING` of the column names both sides have (none: a cross join), as
/// PostgreSQL; any other constraint as it is.
fn natural_as_using(
    constraint: &ast::JoinConstraint,
    left: &[scope::ScopeColumn],
    right: &Scope,
) -> ast::JoinConstraint {
    if !matches!(constraint, ast::JoinConstraint::Natural) {
        return constraint.clone();
    }
    let common = left
        .iter()
        .filter(|l| !l.hidden)
        .filter(|l| right.columns.iter().any(|r| !r.hidden && r.name == l.name))
        .map(|l| ast::ObjectName::from(vec![ast::Ident::with_quote('"', l.name.clone())]))
        .collect();
    ast::JoinConstraint::Using(common)
}

/// After `JOIN ... USING (k)`, `*` and an unqualified `k` name one column, as in PostgreSQL:
/// the left side's (the right side's for a RIGHT JOIN, whose rows it always has). The other
/// copy stays reachable qualified.
fn hide_using_copies(
    constraint: &ast::JoinConstraint,
    joined: &mut Scope,
    left_width: usize,
    is_right: bool,
) -> Result<()> {
    let ast::JoinConstraint::Using(names) = constraint else {
        return Ok(());
    };
    for name in names {
        let name = object_name(name)?;
        let (left, right) = joined.columns.split_at(left_width);
        let find = |side: &[scope::ScopeColumn]| {
            side.iter()
                .rposition(|c| !c.hidden && c.name.eq_ignore_ascii_case(&name))
        };
        let (Some(l), Some(r)) = (find(left), find(right)) else {
            continue;
        };
        let hidden = match is_right {
            true => l,
            false => left_width + r,
        };
        joined.columns[hidden].hidden = true;
        joined.columns[hidden].merged = true;
    }
    Ok(())
}
