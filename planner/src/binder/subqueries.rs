//! Subqueries in WHERE and in expressions, turned into the joins that replace them.

use pondra_catalog::Snapshot;
use pondra_parser::ast;

use super::expr;
use crate::expr::{Expr, JoinKind};
use crate::logical::LogicalPlan;
use crate::optimizer::decorrelate::{SubqueryUse, join_condition, join_scalar_by_domain, pull_up};
use crate::{Result, unsupported};

/// The AND-ed parts of a condition, looking through parentheses.
pub(super) fn split_and(expr: &ast::Expr) -> Vec<&ast::Expr> {
    match expr {
        ast::Expr::BinaryOp {
            left,
            op: ast::BinaryOperator::And,
            right,
        } => {
            let mut parts = split_and(left);
            parts.extend(split_and(right));
            parts
        }
        ast::Expr::Nested(inner) => split_and(inner),
        other => vec![other],
    }
}

/// A subquery in an expression that becomes a join adding one column.
pub(crate) enum PendingSubquery {
    /// A correlated scalar subquery: its value.
    Scalar(LogicalPlan),
    /// `EXISTS (...)` (no probe) or `probe IN (...)`: whether a row matches.
    Mark {
        plan: LogicalPlan,
        probe: Option<Expr>,
    },
}

/// Adds a pending subquery's column as column `position` of `plan`.
pub(super) fn join_pending(
    plan: LogicalPlan,
    pending: PendingSubquery,
    position: usize,
    snapshot: &Snapshot,
) -> Result<LogicalPlan> {
    match pending {
        PendingSubquery::Scalar(subquery) => join_scalar(plan, subquery, position, snapshot),
        PendingSubquery::Mark {
            plan: subquery,
            probe,
        } => {
            let kind = if probe.is_some() {
                JoinKind::MarkIn
            } else {
                JoinKind::Mark
            };
            join_filter(plan, kind, subquery, probe, position)
        }
    }
}

/// Adds a correlated scalar subquery's value as column `position` (the outer plan has exactly
/// `position` columns): a left join to the decorrelated subquery on its correlation keys.
pub(super) fn join_scalar(
    plan: LogicalPlan,
    subquery: LogicalPlan,
    position: usize,
    snapshot: &Snapshot,
) -> Result<LogicalPlan> {
    assert_eq!(plan.schema().fields().len(), position);
    if let LogicalPlan::Project { exprs, .. } = &subquery
        && exprs.iter().any(Expr::has_outer)
        && !is_scalar_aggregate(&subquery)
    {
        return join_scalar_computed_after(plan, subquery, position);
    }
    if !is_scalar_aggregate(&subquery) {
        // At most one row may match each outer row: a single join checks it as it joins.
        let (pulled_up, pulled) = pull_up(subquery, SubqueryUse::Scalar)?;
        // Without an equality to join on, every pair is checked against the pulled predicates.
        let (keys, filter) = join_condition(position, pulled);
        let joined = LogicalPlan::join(plan, pulled_up, JoinKind::Single, keys, filter);
        return Ok(keep_columns(joined, position + 1));
    }
    let (pulled_up, pulled) = match pull_up(subquery.clone(), SubqueryUse::Scalar) {
        Ok(result) => result,
        Err(_) => return join_scalar_by_domain(plan, subquery, position),
    };
    let (keys, filter) = join_condition(position, pulled);
    if keys.is_empty() || filter.is_some() {
        return join_scalar_by_domain(plan, subquery, position);
    }
    let pulled_up =
        crate::optimizer::key_domain::restrict_to_outer_keys(&plan, pulled_up, &keys, snapshot);
    let joined = LogicalPlan::join(plan, pulled_up, JoinKind::Left, keys, None);
    Ok(keep_columns(joined, position + 1))
}

/// `join_scalar` for a subquery whose value reads outer columns (`SELECT f(s.x, outer.y) FROM
/// s WHERE s.k = outer.k`): the subquery gives its input's columns and a marker, joined as
/// usual, and the value is computed over the joined row; NULL where no row matched.
fn join_scalar_computed_after(
    plan: LogicalPlan,
    subquery: LogicalPlan,
    position: usize,
) -> Result<LogicalPlan> {
    use crate::scalar::ScalarValue;
    let LogicalPlan::Project {
        input,
        exprs,
        schema,
    } = subquery
    else {
        unreachable!("a projection")
    };
    let [value] = exprs.as_slice() else {
        return Err(unsupported!(
            "a subquery used as an expression with several columns"
        ));
    };
    let input_schema = input.schema();
    let width = input_schema.fields().len();
    let mut columns = Expr::columns_of(&input_schema);
    columns.push(Expr::Literal(ScalarValue::Boolean(true)));
    let mut names: Vec<String> = input_schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    names.push("matched".into());
    let (pulled_up, pulled) = pull_up(input.project(columns, names), SubqueryUse::Scalar)?;
    // Without an equality to join on, every pair is checked against the pulled predicates.
    let (keys, filter) = join_condition(position, pulled);
    let joined = LogicalPlan::join(plan, pulled_up, JoinKind::Single, keys, filter);
    let joined_schema = joined.schema();
    let matched = Expr::column(
        position + width,
        "matched",
        arrow::datatypes::DataType::Boolean,
    );
    let value = crate::optimizer::decorrelate::to_joined(value, position);
    let data_type = value.data_type();
    let result = Expr::Case {
        branches: vec![(Expr::IsNotNull(Box::new(matched)), value)],
        otherwise: None,
        data_type,
    };
    let mut exprs: Vec<Expr> = (0..position)
        .map(|i| {
            let f = joined_schema.field(i);
            Expr::column(i, f.name(), f.data_type().clone())
        })
        .collect();
    exprs.push(result);
    let mut names: Vec<String> = joined_schema.fields()[..position]
        .iter()
        .map(|f| f.name().clone())
        .collect();
    names.push(schema.field(0).name().clone());
    Ok(joined.project(exprs, names))
}

/// The first `width` columns of `plan`.
pub(super) fn keep_columns(plan: LogicalPlan, width: usize) -> LogicalPlan {
    let schema = plan.schema();
    let (exprs, names): (Vec<Expr>, Vec<String>) = (0..width)
        .map(|i| {
            let f = schema.field(i);
            (
                Expr::column(i, f.name(), f.data_type().clone()),
                f.name().clone(),
            )
        })
        .unzip();
    plan.project(exprs, names)
}

/// True for `SELECT f(aggregates) ...` without GROUP BY: one row whatever the input.
fn is_scalar_aggregate(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::Aggregate { group, .. } => group.is_empty(),
        LogicalPlan::Project { input, .. } => is_scalar_aggregate(input),
        _ => false,
    }
}

/// `EXISTS`, `NOT EXISTS`, `IN` and `NOT IN` as semi and anti joins of `plan` (of `width`
/// columns) with the decorrelated subquery.
pub(super) fn join_filter(
    plan: LogicalPlan,
    kind: JoinKind,
    subquery: LogicalPlan,
    probe: Option<Expr>,
    width: usize,
) -> Result<LogicalPlan> {
    let (subquery, pulled) = pull_up(subquery, SubqueryUse::Filter)?;
    let (mut keys, filter) = join_condition(width, pulled);
    if let Some(probe) = probe {
        let field = subquery.schema().field(0).clone();
        let value = Expr::column(0, field.name(), field.data_type().clone());
        let Expr::Binary { left, right, .. } = expr::equality(probe, value)? else {
            unreachable!("an equality is a binary expression")
        };
        keys.insert(0, (*left, *right));
    }
    if matches!(kind, JoinKind::NullAwareAnti | JoinKind::MarkIn)
        && (keys.len() != 1 || filter.is_some())
    {
        return Err(unsupported!("NOT IN with a correlated subquery"));
    }
    Ok(LogicalPlan::join(plan, subquery, kind, keys, filter))
}
