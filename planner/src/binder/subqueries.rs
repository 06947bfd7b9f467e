//! Subqueries in WHERE and in expressions, left in the plan as `Subquery` nodes for the
//! optimizer's `decorrelate` pass to turn into joins.

use pondra_parser::ast;

use super::expr;
use crate::expr::Expr;
use crate::logical::LogicalPlan;
use crate::{Result, bind_err};

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

/// The sides of `probe IN (subquery)` cast to the type they are compared in: the probe, and
/// the subquery with its one column of that type.
pub(super) fn in_subquery(probe: Expr, subquery: LogicalPlan) -> Result<(Expr, LogicalPlan)> {
    let schema = subquery.schema();
    let [field] = schema.fields().as_ref() else {
        return Err(bind_err!("a subquery after IN must return one column"));
    };
    let value = Expr::column(0, field.name(), field.data_type().clone());
    let Expr::Binary { left, right, .. } = expr::equality(probe, value.clone())? else {
        unreachable!("an equality is a binary expression")
    };
    if *right == value {
        return Ok((*left, subquery));
    }
    let name = field.name().clone();
    Ok((*left, subquery.project(vec![*right], vec![name])))
}
