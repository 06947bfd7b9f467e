//! Outer joins and table aliases in FROM.

use pondra_parser::ast;

use super::scope::{Scope, ScopeColumn, normalize};
use crate::expr::{BinaryOp, Expr, JoinKind, ScalarFunction};
use crate::logical::LogicalPlan;
use crate::{Result, bind_err};

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
