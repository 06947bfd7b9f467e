//! CASE, and the type its branches (and COALESCE's arguments) share.

use arrow::datatypes::DataType;
use sqlparser::ast::{self, BinaryOperator};

use super::comparisons::boolean;
use super::operators::binary;
use super::{Context, bind_expr, type_name};
use crate::expr::Expr;
use crate::types::common_numeric_type;
use crate::{Result, bind_err};

pub(crate) fn bind_case(
    operand: Option<&ast::Expr>,
    conditions: &[ast::CaseWhen],
    else_result: Option<&ast::Expr>,
    ctx: &mut Context<'_>,
) -> Result<Expr> {
    let operand = operand.map(|o| bind_expr(o, ctx)).transpose()?;
    let mut whens = Vec::new();
    let mut results = Vec::new();
    for case in conditions {
        let condition = bind_expr(&case.condition, ctx)?;
        let condition = match &operand {
            Some(value) => binary(value.clone(), &BinaryOperator::Eq, condition)?,
            None => boolean(condition, "CASE WHEN")?,
        };
        whens.push(condition);
        results.push(bind_expr(&case.result, ctx)?);
    }
    let otherwise = else_result.map(|e| bind_expr(e, ctx)).transpose()?;
    let mut types: Vec<DataType> = results.iter().map(Expr::data_type).collect();
    types.extend(otherwise.iter().map(Expr::data_type));
    let data_type = common_type(&types)?;
    Ok(Expr::Case {
        branches: whens
            .into_iter()
            .zip(results)
            .map(|(w, r)| (w, r.cast(&data_type)))
            .collect(),
        otherwise: otherwise.map(|e| Box::new(e.cast(&data_type))),
        data_type,
    })
}

/// The type the branches of a CASE or the arguments of COALESCE share.
pub(crate) fn common_type(types: &[DataType]) -> Result<DataType> {
    let mut result = DataType::Null;
    for t in types {
        result = if result == *t || *t == DataType::Null {
            result
        } else if result == DataType::Null {
            t.clone()
        } else if let Some(n) = common_numeric_type(&result, t) {
            n
        } else if let (DataType::Date32 | DataType::Timestamp(..), DataType::Timestamp(..))
        | (DataType::Timestamp(..), DataType::Date32) = (&result, t)
        {
            // A date meets a timestamp at its midnight, as in both anchors; a wall time meets
            // an instant as the instant it names in the session's zone (ADR 0067).
            let zone = [&result, t].into_iter().find_map(|t| match t {
                DataType::Timestamp(_, zone) => zone.clone(),
                _ => None,
            });
            DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, zone)
        } else if let (DataType::Struct(_), DataType::Struct(_)) = (&result, t) {
            crate::binder::structs::common_struct_type(&result, t)?
        } else if let (DataType::Map(a, _), DataType::Map(b, _)) = (&result, t) {
            let (DataType::Struct(a), DataType::Struct(b)) = (a.data_type(), b.data_type()) else {
                unreachable!("a map's entries are structs")
            };
            let key = common_type(&[a[0].data_type().clone(), b[0].data_type().clone()])?;
            let value = common_type(&[a[1].data_type().clone(), b[1].data_type().clone()])?;
            pondra_catalog::map_type(key, value)
        } else if let (DataType::List(a), DataType::List(b)) = (&result, t) {
            // Lists meet where their elements do: `[]` (of NULLs) with `[1]` is an INT[].
            let element = common_type(&[a.data_type().clone(), b.data_type().clone()])?;
            crate::types::list_of(element)
        } else {
            return Err(bind_err!(
                "types {} and {} cannot be matched",
                type_name(&result),
                type_name(t)
            ));
        };
    }
    Ok(result)
}
