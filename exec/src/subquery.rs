//! Uncorrelated scalar subqueries are computed once, before the plan that uses them runs, and
//! become constants in its expressions. Their plans were made with the plan holding them.

use pondra_planner::{Expr, PhysicalPlan, PlanNode, ScalarValue};

use crate::pipeline::{ExecContext, execute};
use crate::{ExecError, Result};

/// The plan with every scalar subquery in its expressions replaced by its value.
pub fn resolve_subqueries(plan: &PhysicalPlan, ctx: &ExecContext) -> Result<PhysicalPlan> {
    let mut resolved = plan.clone();
    resolved.map_exprs(&mut |e| resolve_expr(e, ctx))?;
    Ok(resolved)
}

fn resolve_expr(expr: &Expr, ctx: &ExecContext) -> Result<Expr> {
    if !expr.any(&|e| matches!(e, Expr::ScalarSubquery(_))) {
        return Ok(expr.clone());
    }
    if let Expr::ScalarSubquery(subquery) = expr {
        let physical = subquery.physical.as_deref().ok_or_else(|| {
            ExecError::Execution("internal error: a subquery reached execution unplanned".into())
        })?;
        let batches = execute(physical, ctx)?;
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        if rows > 1 {
            return Err(ExecError::Execution(
                "more than one row returned by a subquery used as an expression".into(),
            ));
        }
        let data_type = expr.data_type();
        let value = match batches.iter().find(|b| b.num_rows() > 0) {
            None => ScalarValue::Null,
            Some(batch) => ScalarValue::at(batch.column(0).as_ref(), 0),
        };
        return Ok(Expr::Literal(value).cast(&data_type));
    }
    let mut failure = None;
    let mapped = expr.map_children(&mut |child| match resolve_expr(child, ctx) {
        Ok(e) => e,
        Err(e) => {
            failure.get_or_insert(e);
            child.clone()
        }
    });
    match failure {
        Some(e) => Err(e),
        None => Ok(mapped),
    }
}
