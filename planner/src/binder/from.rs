//! Outer joins and table aliases in FROM.

use pondra_parser::ast;

use super::scope::normalize;
use crate::expr::{BinaryOp, Expr, JoinKind};
use crate::logical::LogicalPlan;
use crate::{Result, bind_err};

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
