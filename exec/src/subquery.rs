//! Uncorrelated scalar subqueries are computed once, before the plan that uses them runs, and
//! become constants in its expressions.

use arrow::array::Array;
use pondra_planner::{Expr, PhysicalPlan, ScalarValue, create_physical_plan};

use crate::pipeline::{ExecContext, execute};
use crate::{ExecError, Result};

/// The plan with every scalar subquery in its expressions replaced by its value.
pub fn resolve_subqueries(plan: &PhysicalPlan, ctx: &ExecContext) -> Result<PhysicalPlan> {
    let mut resolve = |e: &Expr| resolve_expr(e, ctx);
    map_plan(plan, &mut resolve)
}

fn resolve_expr(expr: &Expr, ctx: &ExecContext) -> Result<Expr> {
    if !expr.any(&|e| matches!(e, Expr::ScalarSubquery(_))) {
        return Ok(expr.clone());
    }
    if let Expr::ScalarSubquery(subquery) = expr {
        let physical = create_physical_plan(&subquery.0);
        let batches = execute(&physical, ctx)?;
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

/// The plan with `f` applied to every expression in it (including inputs).
pub(crate) fn map_plan(
    plan: &PhysicalPlan,
    f: &mut dyn FnMut(&Expr) -> Result<Expr>,
) -> Result<PhysicalPlan> {
    let exprs = |list: &[Expr], f: &mut dyn FnMut(&Expr) -> Result<Expr>| {
        list.iter().map(&mut *f).collect::<Result<Vec<_>>>()
    };
    Ok(match plan {
        PhysicalPlan::TableScan { .. }
        | PhysicalPlan::ParquetScan { .. }
        | PhysicalPlan::WorkingTable { .. }
        | PhysicalPlan::Input { .. } => plan.clone(),
        PhysicalPlan::RecursiveCte {
            anchor,
            step,
            id,
            distinct,
        } => PhysicalPlan::RecursiveCte {
            anchor: Box::new(map_plan(anchor, f)?),
            step: Box::new(map_plan(step, f)?),
            id: *id,
            distinct: *distinct,
        },
        PhysicalPlan::Values { schema, rows } => PhysicalPlan::Values {
            schema: schema.clone(),
            rows: rows
                .iter()
                .map(|r| exprs(r, f))
                .collect::<Result<Vec<_>>>()?,
        },
        PhysicalPlan::Filter { input, predicate } => PhysicalPlan::Filter {
            input: Box::new(map_plan(input, f)?),
            predicate: f(predicate)?,
        },
        PhysicalPlan::Unnest {
            input,
            array,
            schema,
        } => PhysicalPlan::Unnest {
            input: Box::new(map_plan(input, f)?),
            array: f(array)?,
            schema: schema.clone(),
        },
        PhysicalPlan::Projection {
            input,
            exprs: list,
            schema,
        } => PhysicalPlan::Projection {
            input: Box::new(map_plan(input, f)?),
            exprs: exprs(list, f)?,
            schema: schema.clone(),
        },
        PhysicalPlan::HashAggregate {
            input,
            group,
            aggregates,
            schema,
        } => {
            let mut aggregates = aggregates.clone();
            for a in &mut aggregates {
                if let Some(arg) = &a.arg {
                    a.arg = Some(f(arg)?);
                }
                for key in &mut a.order {
                    key.expr = f(&key.expr)?;
                }
            }
            PhysicalPlan::HashAggregate {
                input: Box::new(map_plan(input, f)?),
                group: exprs(group, f)?,
                aggregates,
                schema: schema.clone(),
            }
        }
        PhysicalPlan::Sort { input, keys, fetch } => {
            let mut keys = keys.clone();
            for k in &mut keys {
                k.expr = f(&k.expr)?;
            }
            PhysicalPlan::Sort {
                input: Box::new(map_plan(input, f)?),
                keys,
                fetch: *fetch,
            }
        }
        PhysicalPlan::Window {
            input,
            exprs,
            schema,
        } => {
            let mut exprs = exprs.clone();
            for w in &mut exprs {
                for e in w.args.iter_mut().chain(w.partition_by.iter_mut()) {
                    *e = f(e)?;
                }
                for k in &mut w.order_by {
                    k.expr = f(&k.expr)?;
                }
            }
            PhysicalPlan::Window {
                input: Box::new(map_plan(input, f)?),
                exprs,
                schema: schema.clone(),
            }
        }
        PhysicalPlan::Union { inputs, schema } => PhysicalPlan::Union {
            inputs: inputs
                .iter()
                .map(|i| map_plan(i, f))
                .collect::<Result<Vec<_>>>()?,
            schema: schema.clone(),
        },
        PhysicalPlan::Limit { input, skip, fetch } => PhysicalPlan::Limit {
            input: Box::new(map_plan(input, f)?),
            skip: *skip,
            fetch: *fetch,
        },
        PhysicalPlan::HashJoin {
            left,
            right,
            kind,
            left_keys,
            right_keys,
            filter,
            schema,
            estimate,
        } => PhysicalPlan::HashJoin {
            left: Box::new(map_plan(left, f)?),
            right: Box::new(map_plan(right, f)?),
            kind: *kind,
            left_keys: exprs(left_keys, f)?,
            right_keys: exprs(right_keys, f)?,
            filter: filter.as_ref().map(&mut *f).transpose()?,
            schema: schema.clone(),
            estimate: *estimate,
        },
    })
}
