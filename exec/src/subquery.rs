//! Uncorrelated scalar subqueries are computed once, before the plan that uses them runs, and
//! become constants in its expressions. Their plans were made with the plan holding them.

use arrow::array::Array;
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
            Some(batch) => scalar_at(batch.column(0).as_ref(), 0)?,
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

/// The value at `row` of an array.
fn scalar_at(array: &dyn Array, row: usize) -> Result<ScalarValue> {
    use arrow::array::AsArray;
    use arrow::datatypes::*;
    if array.is_null(row) {
        return Ok(ScalarValue::Null);
    }
    Ok(match array.data_type() {
        DataType::Boolean => ScalarValue::Boolean(array.as_boolean().value(row)),
        DataType::Int32 => ScalarValue::Int32(array.as_primitive::<Int32Type>().value(row)),
        DataType::Int64 => ScalarValue::Int64(array.as_primitive::<Int64Type>().value(row)),
        DataType::Float64 => ScalarValue::Float64(array.as_primitive::<Float64Type>().value(row)),
        DataType::Decimal64(precision, scale) => ScalarValue::Decimal {
            value: array.as_primitive::<Decimal64Type>().value(row).into(),
            precision: *precision,
            scale: *scale,
        },
        DataType::Decimal128(precision, scale) => ScalarValue::Decimal {
            value: array.as_primitive::<Decimal128Type>().value(row),
            precision: *precision,
            scale: *scale,
        },
        DataType::Utf8 => ScalarValue::Utf8(array.as_string::<i32>().value(row).to_string()),
        DataType::Date32 => ScalarValue::Date32(array.as_primitive::<Date32Type>().value(row)),
        DataType::Timestamp(TimeUnit::Microsecond, None) => ScalarValue::TimestampMicros(
            array.as_primitive::<TimestampMicrosecondType>().value(row),
        ),
        _ => ScalarValue::Single(array.slice(row, 1)),
    })
}
