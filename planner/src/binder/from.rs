//! Outer joins and table aliases in FROM.

use pondra_parser::ast;

use pondra_catalog::Snapshot;

use super::scope::normalize;
use crate::cardinality::estimate;
use crate::expr::{BinaryOp, Expr, JoinKind};
use crate::logical::LogicalPlan;
use crate::{Result, bind_err};

/// An outer (or semi / anti) join of `left` (its columns first) and `right` on `on`, bound over
/// left columns then right columns. `is_right` for RIGHT JOIN, bound as a left join (`kind`)
/// from `right`.
pub(super) fn outer_join(
    left: LogicalPlan,
    right: LogicalPlan,
    kind: JoinKind,
    on: Option<Expr>,
    left_width: usize,
    is_right: bool,
    snapshot: &Snapshot,
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
    if kind != JoinKind::Left {
        return Ok(LogicalPlan::join(left, right, kind, keys, filter));
    }
    // The input kept whole (the left one of LEFT JOIN, the right one of RIGHT JOIN) is built
    // into the hash table when the other is much larger: a right join, which streams the
    // larger input and emits the kept rows nothing matched at the end.
    let (kept, other) = if is_right {
        (&right, &left)
    } else {
        (&left, &right)
    };
    let build_kept = !keys.is_empty()
        && estimate(other, snapshot).rows > BUILD_KEPT_RATIO * estimate(kept, snapshot).rows;
    Ok(match (is_right, build_kept) {
        (false, false) => LogicalPlan::join(left, right, JoinKind::Left, keys, filter),
        (true, true) => LogicalPlan::join(left, right, JoinKind::Right, keys, filter),
        (false, true) => swapped_join(left, right, JoinKind::Right, keys, filter, left_width),
        (true, false) => swapped_join(left, right, JoinKind::Left, keys, filter, left_width),
    })
}

/// How many times larger than the input an outer join keeps whole the other input must be
/// estimated for the kept one to be built.
const BUILD_KEPT_RATIO: f64 = 2.0;

/// `left` joined to `right` as `kind` with the inputs swapped (`right` probes, `left` is
/// built), then the columns back in order: left's, then right's.
fn swapped_join(
    left: LogicalPlan,
    right: LogicalPlan,
    kind: JoinKind,
    keys: Vec<(Expr, Expr)>,
    filter: Option<Expr>,
    left_width: usize,
) -> LogicalPlan {
    let right_width = right.schema().fields().len();
    let swap = |c: usize| {
        if c < left_width {
            c + right_width
        } else {
            c - left_width
        }
    };
    let keys = keys.into_iter().map(|(l, r)| (r, l)).collect();
    let filter = filter.map(|f| f.remap_columns(&swap));
    let joined = LogicalPlan::join(right, left, kind, keys, filter);
    let schema = joined.schema();
    let (exprs, names): (Vec<Expr>, Vec<String>) = (0..left_width + right_width)
        .map(|c| {
            let position = swap(c);
            let field = schema.field(position);
            (
                Expr::column(position, field.name(), field.data_type().clone()),
                field.name().clone(),
            )
        })
        .unzip();
    joined.project(exprs, names)
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
