//! DuckDB's aggregates made of simpler ones, over a group's rows or over each list's elements
//! (`list_aggr(l, 'kurtosis')`, `list_kurtosis(l)`): `skewness`, `kurtosis` and
//! `kurtosis_pop` from a count and sums of powers, `sem` (the standard error of the mean),
//! `favg` (a compensated mean), and `entropy`, `mad`, `median`, `mode` and `histogram` from
//! the sorted values. A formula is written once over `Parts`, which makes each part an aggregate of the
//! grouping or a list aggregate of the transformed list.

use arrow::datatypes::DataType;
use sqlparser::ast::{self, BinaryOperator};

use super::Binder;
use super::expr::*;
use crate::expr::{
    AggregateCall, AggregateFunction, Expr, Lambda, LambdaOp, ListOp, Moment, ScalarFunction,
};
use crate::scalar::ScalarValue;
use crate::types::{is_numeric, list_of};
use crate::{Result, bind_err, unsupported};

/// Whether `name` is one of these as a grouped aggregate (`median` and `mode` are bound with
/// the ordered-set aggregates there).
pub fn is_composed(name: &str) -> bool {
    matches!(
        name,
        "skewness"
            | "kurtosis"
            | "kurtosis_pop"
            | "sem"
            | "favg"
            | "entropy"
            | "mad"
            | "histogram"
            | "histogram_exact"
    )
}

/// Whether `name` is one of these over a list's elements.
pub(super) fn is_list_composed(name: &str) -> bool {
    is_composed(name) && name != "histogram_exact" || matches!(name, "median" | "mode")
}

/// Where a formula's parts come from.
enum Parts<'a> {
    /// A group's rows: each part is an aggregate of the aggregation over `value`.
    Rows {
        agg: &'a mut Aggregation,
        value: Expr,
    },
    /// Each list's elements: each part is a list aggregate over the list transformed.
    List { list: Expr, item: DataType },
}

impl Parts<'_> {
    fn item_type(&self) -> DataType {
        match self {
            Parts::Rows { value, .. } => value.data_type(),
            Parts::List { item, .. } => item.clone(),
        }
    }

    /// `func` over `f(x)` for each value `x`.
    fn aggregate(
        &mut self,
        func: AggregateFunction,
        f: impl Fn(Expr) -> Result<Expr>,
    ) -> Result<Expr> {
        match self {
            Parts::Rows { agg, value } => {
                let call = AggregateCall::new(func, Some(f(value.clone())?));
                Ok(agg.column_of(call))
            }
            Parts::List { list, item } => {
                let element = Expr::column(0, "x", item.clone());
                let body = f(element.clone())?;
                let body_type = body.data_type();
                let values = match body == element {
                    true => list.clone(),
                    false => Expr::Lambda(Box::new(Lambda {
                        op: LambdaOp::Transform,
                        list: list.clone(),
                        initial: None,
                        captured: Vec::new(),
                        body,
                        with_index: false,
                        data_type: list_of(body_type.clone()),
                    })),
                };
                Ok(Expr::Function {
                    func: ScalarFunction::ListAggregate(func),
                    args: vec![values],
                    data_type: func.result_type(Some(&body_type)),
                })
            }
        }
    }

    /// The non-NULL values in ascending order, as a list (NULL over no rows).
    fn sorted(&mut self) -> Expr {
        match self {
            Parts::Rows { agg, value } => {
                agg.column_of(super::ordered_set::sorted_values(value.clone(), false))
            }
            Parts::List { list, item } => Expr::Function {
                func: ScalarFunction::List(ListOp::Sort {
                    descending: false,
                    nulls_first: false,
                }),
                args: vec![present_elements(list, item)],
                data_type: list.data_type(),
            },
        }
    }
}

/// The elements of `list` (of `item`s) that are not NULL, in their order.
pub(super) fn present_elements(list: &Expr, item: &DataType) -> Expr {
    Expr::Lambda(Box::new(Lambda {
        op: LambdaOp::Filter,
        list: list.clone(),
        initial: None,
        captured: Vec::new(),
        body: Expr::IsNotNull(Box::new(Expr::column(0, "x", item.clone()))),
        with_index: false,
        data_type: list.data_type(),
    }))
}

/// `name(x)` over a group's rows.
pub(super) fn bind_composed(
    function: &ast::Function,
    name: &str,
    agg: &mut Aggregation,
    binder: Option<&Binder<'_>>,
) -> Result<Expr> {
    // Each passes over NULL values: FILTER's other rows as NULLs.
    let unfiltered = super::ordered_set::filter_as_nulls(function, &[0]);
    let function = &unfiltered;
    let (value, boundaries) = match function_args(function)[..] {
        [value, boundaries] if name.starts_with("histogram") => (value, Some(boundaries)),
        _ if name == "histogram_exact" => {
            return Err(bind_err!(
                "histogram_exact takes a value and a list of bins"
            ));
        }
        [value] => (value, None),
        _ => return Err(bind_err!("{name} takes one argument")),
    };
    if contains_aggregate(value) {
        return Err(bind_err!("aggregate function calls cannot be nested"));
    }
    let written = value;
    let value = bind_generic(value, &mut argument_context(&agg.input, binder))?;
    refuse_outer_only(&value, written)?;
    let value = match value.data_type() {
        DataType::Null => value.cast(&DataType::Int32),
        _ => value,
    };
    if let Some(boundaries) = boundaries {
        let exact = name == "histogram_exact";
        return binned_histogram(agg, (value, exact), boundaries, binder);
    }
    let parts = Parts::Rows { agg, value };
    let composed = compose(name, parts)?;
    // Over no rows the sorted values are NULL, but there is no uncertainty in nothing.
    Ok(match name {
        "entropy" => Expr::Function {
            func: ScalarFunction::Coalesce,
            args: vec![composed, Expr::Literal(ScalarValue::Float64(0.0))],
            data_type: DataType::Float64,
        },
        _ => composed,
    })
}

/// `name` over each element of `list`, a list of `item`s.
pub(super) fn bind_list_composed(name: &str, list: Expr, item: DataType) -> Result<Expr> {
    let item = match item {
        DataType::Null => DataType::Int32,
        item => item,
    };
    let list = list.cast(&list_of(item.clone()));
    compose(name, Parts::List { list, item })
}

fn compose(name: &str, mut parts: Parts<'_>) -> Result<Expr> {
    let item = parts.item_type();
    let numeric = is_numeric(&item);
    if !numeric && !matches!(name, "entropy" | "mode" | "median" | "histogram") {
        return Err(bind_err!(
            "{name}({}) is not defined: the argument must be a number",
            type_name(&item)
        ));
    }
    let double = |x: Expr| x.cast(&DataType::Float64);
    match name {
        "skewness" => moment_statistic(&mut parts, Moment::Skewness),
        "kurtosis" => moment_statistic(&mut parts, Moment::Kurtosis),
        "kurtosis_pop" => moment_statistic(&mut parts, Moment::KurtosisPop),
        "sem" => {
            let variance = parts.aggregate(AggregateFunction::VarPop, |x| Ok(double(x)))?;
            let count = parts.aggregate(AggregateFunction::Count, Ok)?;
            let share = super::statistics::divide(variance, double(count))?;
            Ok(sqrt(share))
        }
        "favg" => {
            let sum = parts.aggregate(AggregateFunction::KahanSum, |x| Ok(double(x)))?;
            let count = parts.aggregate(AggregateFunction::Count, Ok)?;
            super::statistics::divide(sum, double(count))
        }
        "entropy" => Ok(sorted_pick(
            &mut parts,
            ScalarFunction::SortedEntropy,
            DataType::Float64,
        )),
        "mad" => {
            let deviation = sorted_pick(&mut parts, ScalarFunction::SortedMad, DataType::Float64);
            // A deviation is in its values' unit: a decimal's type is kept, as DuckDB's.
            Ok(match item {
                DataType::Decimal64(..) | DataType::Decimal128(..) => deviation.cast(&item),
                _ => deviation,
            })
        }
        "mode" => Ok(sorted_pick(&mut parts, ScalarFunction::SortedMode, item)),
        "histogram" => {
            let data_type = pondra_catalog::map_type(item, DataType::Int64);
            let histogram = ScalarFunction::Map(crate::expr::MapOp::Histogram);
            Ok(sorted_pick(&mut parts, histogram, data_type))
        }
        "median" => {
            // A median of numbers is interpolated; of anything else, the lower middle value.
            let (continuous, data_type) = match numeric {
                true => (true, DataType::Float64),
                false => (false, item),
            };
            let sorted = parts.sorted();
            Ok(Expr::Function {
                func: ScalarFunction::SortedQuantile { continuous },
                args: vec![sorted, Expr::Literal(ScalarValue::Float64(0.5))],
                data_type,
            })
        }
        _ => unreachable!("{name} is a composed aggregate"),
    }
}

/// `histogram(x, boundaries)` (DuckDB): per boundary, the count of values above the one
/// before and at most it; with `exact` (`histogram_exact(x, bins)`), of values equal to it.
/// The boundaries a constant list.
fn binned_histogram(
    agg: &mut Aggregation,
    (value, exact): (Expr, bool),
    boundaries: &ast::Expr,
    binder: Option<&Binder<'_>>,
) -> Result<Expr> {
    let item = value.data_type();
    let bounds = bind_generic(boundaries, &mut argument_context(&agg.input, binder))?;
    if !bounds.column_indices().is_empty() || bounds.has_any_outer() {
        return Err(unsupported!("histogram with boundaries that vary by row"));
    }
    let bounds = match bounds.data_type() {
        DataType::List(_) | DataType::Null => bounds.cast(&list_of(item.clone())),
        other => {
            return Err(bind_err!(
                "histogram's boundaries must be a list, not {}",
                type_name(&other)
            ));
        }
    };
    let sorted = agg.column_of(super::ordered_set::sorted_values(value, false));
    Ok(Expr::Function {
        func: ScalarFunction::Map(match exact {
            true => crate::expr::MapOp::ExactBins,
            false => crate::expr::MapOp::Bins,
        }),
        args: vec![sorted, bounds],
        data_type: pondra_catalog::map_type(item, DataType::Int64),
    })
}

/// A pick from the sorted non-NULL values.
fn sorted_pick(parts: &mut Parts<'_>, func: ScalarFunction, data_type: DataType) -> Expr {
    Expr::Function {
        func,
        args: vec![parts.sorted()],
        data_type,
    }
}

/// `moment` from the count of values and the sums of their first four powers, as DOUBLEs.
fn moment_statistic(parts: &mut Parts<'_>, moment: Moment) -> Result<Expr> {
    let mut args = vec![parts.aggregate(AggregateFunction::Count, Ok)?];
    for power in 1..=4 {
        let sum = parts.aggregate(AggregateFunction::Sum, |x| {
            let x = x.cast(&DataType::Float64);
            let mut product = x.clone();
            for _ in 1..power {
                product = binary(product, &BinaryOperator::Multiply, x.clone())?;
            }
            Ok(product)
        })?;
        args.push(sum);
    }
    Ok(Expr::Function {
        func: ScalarFunction::MomentStatistic(moment),
        args,
        data_type: DataType::Float64,
    })
}

fn sqrt(value: Expr) -> Expr {
    Expr::Function {
        func: ScalarFunction::Sqrt,
        args: vec![value],
        data_type: DataType::Float64,
    }
}
