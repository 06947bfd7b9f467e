//! Vectorized evaluation of bound expressions: one Arrow kernel call per operator per batch.
//! A value the same for every row (a literal, or an expression of literals only) stays one
//! value: kernels take it as a scalar instead of a column of copies.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Datum, Float64Array, Int64Array, RecordBatch, Scalar,
    StringArray, UInt32Array, new_null_array,
};
use arrow::compute::kernels::{boolean, cmp, comparison, numeric};
use arrow::compute::{is_not_null, is_null, nullif, take};
use arrow::datatypes::{DataType, Float64Type, Int32Type, Int64Type};
use pondra_planner::{BinaryOp, Expr, ScalarFunction};

use crate::{ExecError, Result};
use crate::{arrays, functions};

/// An expression's value over a batch.
#[derive(Clone)]
enum Value {
    /// One value per row.
    Column(ArrayRef),
    /// One value for every row, as an array of one element.
    Constant(ArrayRef),
}

impl Value {
    fn into_array(self, rows: usize) -> Result<ArrayRef> {
        match self {
            Value::Column(array) => Ok(array),
            Value::Constant(one) if rows == 1 => Ok(one),
            Value::Constant(one) => {
                // A wide constant (a long string) repeated on every row may be large.
                let bytes = crate::memory::array_bytes(&one) as u128 * rows as u128;
                if matches!(one.data_type(), DataType::Utf8) {
                    functions::check_string_bytes(bytes)?;
                } else {
                    crate::control::check_allocation(bytes.min(usize::MAX as u128) as usize)?;
                }
                Ok(take(&one, &UInt32Array::from_value(0, rows), None)?)
            }
        }
    }

    /// The value as a kernel argument: a column, or a scalar the kernel broadcasts.
    fn datum(&self) -> Box<dyn Datum> {
        match self {
            Value::Column(array) => Box::new(array.clone()),
            Value::Constant(one) => Box::new(Scalar::new(one.clone())),
        }
    }

    fn data_type(&self) -> &DataType {
        match self {
            Value::Column(array) | Value::Constant(array) => array.data_type(),
        }
    }

    /// Applies a kernel that maps values one to one, keeping a constant constant.
    fn map(self, kernel: impl FnOnce(&ArrayRef) -> Result<ArrayRef>) -> Result<Value> {
        Ok(match self {
            Value::Column(array) => Value::Column(kernel(&array)?),
            Value::Constant(one) => Value::Constant(kernel(&one)?),
        })
    }
}

/// Each of `exprs` over `batch`, in order.
pub fn evaluate_all(exprs: &[Expr], batch: &RecordBatch) -> Result<Vec<ArrayRef>> {
    exprs.iter().map(|e| evaluate(e, batch)).collect()
}

/// Evaluates `expr` over every row of `batch`.
pub fn evaluate(expr: &Expr, batch: &RecordBatch) -> Result<ArrayRef> {
    value(expr, batch)?.into_array(batch.num_rows())
}

fn value(expr: &Expr, batch: &RecordBatch) -> Result<Value> {
    let rows = batch.num_rows();
    match expr {
        Expr::Column { index, .. } => Ok(Value::Column(batch.column(*index).clone())),
        Expr::Literal(literal) => Ok(Value::Constant(literal.to_array(1))),
        Expr::Binary { op, left, right } => {
            let l = value(left, batch)?;
            let r = value(right, batch)?;
            binary_values(*op, l, r, rows)
        }
        Expr::Not(inner) => {
            value(inner, batch)?.map(|v| Ok(Arc::new(boolean::not(v.as_boolean())?)))
        }
        Expr::Negative(inner) => value(inner, batch)?.map(|v| Ok(numeric::neg(v)?)),
        Expr::IsNull(inner) => value(inner, batch)?.map(|v| Ok(Arc::new(is_null(v)?))),
        Expr::IsNotNull(inner) => value(inner, batch)?.map(|v| Ok(Arc::new(is_not_null(v)?))),
        Expr::Cast { expr, data_type } => {
            value(expr, batch)?.map(|v| cast_value(v, data_type, false))
        }
        Expr::Case {
            branches,
            otherwise,
            data_type,
        } => Ok(Value::Column(case(
            batch,
            branches,
            otherwise.as_deref(),
            data_type,
        )?)),
        Expr::InList {
            expr,
            list,
            negated,
        } => {
            let probe = value(expr, batch)?;
            if let Some(hits) = in_long_constant_list(&probe, list, batch)? {
                let hits = Arc::new(hits);
                return match *negated {
                    true => Ok(Value::Column(Arc::new(boolean::not(&hits)?))),
                    false => Ok(Value::Column(hits)),
                };
            }
            let mut any: Option<Value> = None;
            for item in list {
                let item = value(item, batch)?;
                let hit = binary_values(BinaryOp::Eq, probe.clone(), item, rows)?;
                any = Some(match any {
                    None => hit,
                    Some(previous) => binary_values(BinaryOp::Or, previous, hit, rows)?,
                });
            }
            let any =
                any.unwrap_or_else(|| Value::Constant(Arc::new(BooleanArray::from(vec![false]))));
            if *negated {
                any.map(|v| Ok(Arc::new(boolean::not(v.as_boolean())?)))
            } else {
                Ok(any)
            }
        }
        Expr::Like {
            expr,
            pattern,
            negated,
            case_insensitive,
        } => {
            let text = value(expr, batch)?;
            let pattern = value(pattern, batch)?;
            let pieces = match (&pattern, case_insensitive) {
                (Value::Constant(p), false)
                    if p.data_type() == &DataType::Utf8 && p.is_valid(0) =>
                {
                    crate::like::PiecePattern::parse(p.as_string::<i32>().value(0))
                }
                _ => None,
            };
            let like = |v: &ArrayRef| -> Result<ArrayRef> {
                if let Some(matched) = pieces.as_ref().and_then(|p| p.evaluate(v, *negated)) {
                    return Ok(matched);
                }
                let p = pattern.datum();
                let result = match (negated, case_insensitive) {
                    (false, false) => comparison::like(v, p.as_ref())?,
                    (true, false) => comparison::nlike(v, p.as_ref())?,
                    (false, true) => comparison::ilike(v, p.as_ref())?,
                    (true, true) => comparison::nilike(v, p.as_ref())?,
                };
                Ok(Arc::new(result))
            };
            match (text, &pattern) {
                (Value::Constant(v), Value::Constant(_)) => Ok(Value::Constant(like(&v)?)),
                (v, _) => Ok(Value::Column(like(&v.into_array(rows)?)?)),
            }
        }
        Expr::OuterColumn { name, .. } => Err(ExecError::Execution(format!(
            "outer column {name} reached the executor: the subquery was not decorrelated"
        ))),
        Expr::DeepOuterColumn(column) => Err(ExecError::Execution(format!(
            "outer column {} reached the executor: the subquery was not decorrelated",
            column.name
        ))),
        Expr::Lambda(lambda) => Ok(Value::Column(crate::lambdas::evaluate_lambda(
            lambda, batch,
        )?)),
        Expr::Python(call) => {
            let args = call
                .args
                .iter()
                .map(|arg| value(arg, batch)?.into_array(rows))
                .collect::<Result<Vec<_>>>()?;
            let values = crate::python::evaluate_python(call, args, rows)?;
            Ok(Value::Column(values))
        }
        Expr::ScalarSubquery(_) => Err(ExecError::Execution(
            "a scalar subquery reached the executor uncomputed".into(),
        )),
        Expr::Function {
            func: ScalarFunction::TryCast,
            args,
            data_type,
        } => value(&args[0], batch)?.map(|v| cast_value(v, data_type, true)),
        Expr::Function {
            func: ScalarFunction::RaiseError,
            args,
            data_type,
        } => {
            let messages = value(&args[0], batch)?.into_array(rows)?;
            let messages = messages.as_string::<i32>();
            match messages.iter().flatten().next() {
                Some(message) => Err(ExecError::Execution(message.to_string())),
                None => Ok(Value::Column(new_null_array(data_type, rows))),
            }
        }
        Expr::Function {
            func: ScalarFunction::MakeStruct,
            args,
            data_type,
        } => typed_call(args, batch, |values, rows| {
            crate::structs::make(values, data_type, rows)
        }),
        Expr::Function {
            func: ScalarFunction::MakeMap,
            args,
            data_type,
        } => typed_call(args, batch, |values, rows| {
            crate::maps::make(values, data_type, rows)
        }),
        Expr::Function {
            func: ScalarFunction::Map(op),
            args,
            data_type,
        } => typed_call(args, batch, |values, _| {
            crate::maps::map_function(*op, values, data_type)
        }),
        Expr::Function {
            func: ScalarFunction::Json(op),
            args,
            data_type,
        } => typed_call(args, batch, |values, rows| {
            crate::json::json_function(*op, values, data_type, rows)
        }),
        Expr::Function {
            func: ScalarFunction::Model(op),
            args,
            ..
        } => typed_call(args, batch, |values, rows| {
            crate::models::evaluate_model(*op, values, rows)
        }),
        Expr::Function {
            func: ScalarFunction::RegexpGroups { all, insensitive },
            args,
            data_type,
        } => typed_call(args, batch, |values, _| {
            crate::regexp_groups::regexp_groups(values, data_type, *all, *insensitive)
        }),
        Expr::Function {
            func: ScalarFunction::Random,
            ..
        } => Ok(Value::Column(crate::math_functions::random(rows))),
        Expr::Function {
            func: ScalarFunction::RandomUuid,
            ..
        } => Ok(Value::Column(crate::uuids::random_uuids(rows))),
        Expr::Function {
            func: ScalarFunction::Coalesce,
            args,
            data_type,
        } => {
            // Later arguments are evaluated only for the rows still NULL, as in Postgres.
            let branches: Vec<(Expr, Expr)> = args
                .iter()
                .map(|a| (Expr::IsNotNull(Box::new(a.clone())), a.clone()))
                .collect();
            Ok(Value::Column(case(batch, &branches, None, data_type)?))
        }
        Expr::Function { func, args, .. } => {
            let args = args
                .iter()
                .map(|a| value(a, batch))
                .collect::<Result<Vec<_>>>()?;
            if args.iter().all(|a| matches!(a, Value::Constant(_))) && !args.is_empty() {
                let args = args
                    .into_iter()
                    .map(|a| a.into_array(1))
                    .collect::<Result<Vec<_>>>()?;
                return Ok(Value::Constant(function(*func, &args)?));
            }
            let args = args
                .into_iter()
                .map(|a| a.into_array(rows))
                .collect::<Result<Vec<_>>>()?;
            Ok(Value::Column(function(*func, &args)?))
        }
    }
}

/// A call whose result needs the call's type (a struct's field names): `call` gets the
/// arguments' values and the row count, one row when all the arguments are constant.
fn typed_call(
    args: &[Expr],
    batch: &RecordBatch,
    call: impl Fn(&[ArrayRef], usize) -> Result<ArrayRef>,
) -> Result<Value> {
    let values = args
        .iter()
        .map(|a| value(a, batch))
        .collect::<Result<Vec<_>>>()?;
    let constant = values.iter().all(|v| matches!(v, Value::Constant(_)));
    let rows = if constant { 1 } else { batch.num_rows() };
    let values = values
        .into_iter()
        .map(|v| v.into_array(rows))
        .collect::<Result<Vec<_>>>()?;
    let made = call(&values, rows)?;
    Ok(match constant {
        true => Value::Constant(made),
        false => Value::Column(made),
    })
}

/// A value cast to `to` as CAST does (TRY_CAST with `safe`: NULL where a value cannot be
/// cast), nested types included: lists and structs cast element by element and field by
/// field by the same rules.
pub(crate) fn cast_value(v: &ArrayRef, to: &DataType, safe: bool) -> Result<ArrayRef> {
    match (v.data_type(), to) {
        (from, to) if from == to => Ok(v.clone()),
        (from, to) if crate::decimal::keeps_values(from, to) => {
            crate::decimal::cast_keeping_values(v, from, to)
        }
        (DataType::Utf8, DataType::List(_)) => {
            crate::nested_text::parse_list(v.as_string(), to, safe)
        }
        (DataType::List(_), DataType::Utf8) => arrays::to_text(v),
        (DataType::List(_), DataType::List(item)) => {
            let lists = v.as_list::<i32>();
            let values = cast_value(lists.values(), item.data_type(), safe)?;
            Ok(Arc::new(arrow::array::ListArray::try_new(
                item.clone(),
                lists.offsets().clone(),
                values,
                lists.nulls().cloned(),
            )?))
        }
        (DataType::Struct(_), DataType::Struct(fields)) => crate::structs::cast(v, fields, safe),
        (DataType::Map(..), DataType::Map(..)) => crate::maps::cast(v, to, safe),
        (DataType::Struct(_) | DataType::Map(..), DataType::Utf8) => crate::structs::to_text(v),
        (DataType::Utf8, DataType::Map(..)) => {
            crate::nested_text::parse_map(v.as_string(), to, safe)
        }
        (DataType::Utf8, DataType::Struct(fields)) => {
            crate::nested_text::parse_struct(v.as_string(), fields, to, safe)
        }
        _ => crate::casts::cast(v, to, safe),
    }
}

/// CASE evaluated lazily: each WHEN only on the rows no earlier WHEN took, each THEN only on
/// the rows its WHEN took, so a branch that is not taken cannot fail (division by zero).
fn case(
    batch: &RecordBatch,
    branches: &[(Expr, Expr)],
    otherwise: Option<&Expr>,
    data_type: &DataType,
) -> Result<ArrayRef> {
    let rows = batch.num_rows();
    // (piece, row in piece) for every input row; piece 0 is all NULL.
    let mut pieces: Vec<ArrayRef> = vec![new_null_array(data_type, 1)];
    let mut picks: Vec<(usize, usize)> = vec![(0, 0); rows];
    let mut undecided: Vec<u32> = (0..rows as u32).collect();
    let subset = |indices: &[u32]| -> Result<RecordBatch> {
        let indices = arrow::array::UInt32Array::from(indices.to_vec());
        Ok(arrow::compute::take_record_batch(batch, &indices)?)
    };
    // Evaluates `expr` on `rows` and records where each of their values is.
    let mut place = |expr: &Expr, rows: &[u32], pieces: &mut Vec<ArrayRef>| -> Result<()> {
        let values = evaluate(expr, &subset(rows)?)?;
        let values = if values.data_type() == data_type {
            values
        } else {
            arrow::compute::cast(&values, data_type)?
        };
        pieces.push(values);
        let piece = pieces.len() - 1;
        for (position, row) in rows.iter().enumerate() {
            picks[*row as usize] = (piece, position);
        }
        Ok(())
    };
    for (when, then) in branches {
        if undecided.is_empty() {
            break;
        }
        let candidates = subset(&undecided)?;
        let mask = evaluate(when, &candidates)?;
        let mask = functions::nulls_as_false(mask.as_boolean());
        let mut rows_taken: Vec<u32> = Vec::new();
        let mut rest: Vec<u32> = Vec::new();
        for (i, row) in undecided.iter().enumerate() {
            if mask.value(i) {
                rows_taken.push(*row);
            } else {
                rest.push(*row);
            }
        }
        if !rows_taken.is_empty() {
            place(then, &rows_taken, &mut pieces)?;
        }
        undecided = rest;
    }
    if let Some(otherwise) = otherwise
        && !undecided.is_empty()
    {
        place(otherwise, &undecided, &mut pieces)?;
    }
    let refs: Vec<&dyn Array> = pieces.iter().map(|p| p.as_ref()).collect();
    Ok(arrow::compute::interleave(&refs, &picks)?)
}

/// A binary operator over two values; constant when both are.
fn binary_values(op: BinaryOp, l: Value, r: Value, rows: usize) -> Result<Value> {
    if let (Value::Constant(l), Value::Constant(r)) = (&l, &r) {
        return Ok(Value::Constant(binary(op, l, r)?));
    }
    if matches!(op, BinaryOp::And | BinaryOp::Or | BinaryOp::Concat)
        || is_null_comparison(op, l.data_type(), r.data_type())
        || matches!(
            l.data_type(),
            DataType::List(_) | DataType::Struct(_) | DataType::Map(..)
        )
    {
        let (l, r) = (l.into_array(rows)?, r.into_array(rows)?);
        return Ok(Value::Column(binary(op, &l, &r)?));
    }
    Ok(Value::Column(arithmetic(
        op,
        l.datum().as_ref(),
        r.datum().as_ref(),
    )?))
}

fn is_null_comparison(op: BinaryOp, l: &DataType, r: &DataType) -> bool {
    op.is_comparison() && (l == &DataType::Null || r == &DataType::Null)
}

/// A comparison of two columns of one type.
pub(crate) fn compare(op: BinaryOp, l: &ArrayRef, r: &ArrayRef) -> Result<ArrayRef> {
    binary(op, l, r)
}

fn binary(op: BinaryOp, l: &ArrayRef, r: &ArrayRef) -> Result<ArrayRef> {
    if is_null_comparison(op, l.data_type(), r.data_type()) {
        return Ok(new_null_array(&DataType::Boolean, l.len()));
    }
    let nested = matches!(
        l.data_type(),
        DataType::List(_) | DataType::Struct(_) | DataType::Map(..)
    );
    if op.is_comparison() && nested {
        return arrays::compare(op, l, r);
    }
    let canonical;
    let (l, r) = match op.is_comparison() && l.data_type().is_floating() {
        true => {
            canonical = [l, r].map(crate::float_equality::canonical_floats);
            (canonical[0].as_ref(), canonical[1].as_ref())
        }
        false => (l.as_ref(), r.as_ref()),
    };
    Ok(match op {
        BinaryOp::And => Arc::new(boolean::and_kleene(l.as_boolean(), r.as_boolean())?),
        BinaryOp::Or => Arc::new(boolean::or_kleene(l.as_boolean(), r.as_boolean())?),
        BinaryOp::Concat => {
            if let (Some(a), Some(b)) = (l.as_string_opt::<i32>(), r.as_string_opt::<i32>()) {
                // A constant side is repeated on every row.
                let rows = a.len().max(b.len()) as u128;
                let side = |s: &StringArray| {
                    functions::string_bytes(s) as u128 * rows / (s.len().max(1) as u128)
                };
                let bytes = side(a) + side(b);
                functions::check_string_bytes(bytes)?;
            }
            arrow::compute::kernels::concat_elements::concat_elements_dyn(l, r)?
        }
        _ => arithmetic(op, &l, &r)?,
    })
}

/// The arithmetic and comparison operators, whose kernels broadcast a scalar side.
fn arithmetic(op: BinaryOp, l: &dyn Datum, r: &dyn Datum) -> Result<ArrayRef> {
    if let Some(result) = crate::decimal::unchecked(op, l, r) {
        return result;
    }
    if matches!(op, BinaryOp::Divide | BinaryOp::Modulo) {
        check_float_divisor(r)?;
    }
    Ok(match op {
        BinaryOp::Plus => numeric::add(l, r)?,
        BinaryOp::Minus => numeric::sub(l, r)?,
        BinaryOp::Multiply => numeric::mul(l, r)?,
        BinaryOp::Divide => numeric::div(l, r)?,
        BinaryOp::Modulo => numeric::rem(l, r)?,
        BinaryOp::Eq => Arc::new(cmp::eq(l, r)?),
        BinaryOp::NotEq => Arc::new(cmp::neq(l, r)?),
        BinaryOp::Lt => Arc::new(cmp::lt(l, r)?),
        BinaryOp::LtEq => Arc::new(cmp::lt_eq(l, r)?),
        BinaryOp::Gt => Arc::new(cmp::gt(l, r)?),
        BinaryOp::GtEq => Arc::new(cmp::gt_eq(l, r)?),
        BinaryOp::And | BinaryOp::Or | BinaryOp::Concat => {
            unreachable!("logical operators and || take whole columns")
        }
    })
}

/// A DOUBLE divided by zero is an error, as in PostgreSQL (Arrow would give infinity or NaN;
/// integers and decimals fail in their kernels already).
fn check_float_divisor(divisor: &dyn Datum) -> Result<()> {
    let (values, _) = divisor.get();
    let zero = match values.data_type() {
        DataType::Float64 => values
            .as_primitive::<arrow::datatypes::Float64Type>()
            .values()
            .iter()
            .zip(0..)
            .any(|(v, i)| *v == 0.0 && values.is_valid(i)),
        DataType::Float32 => values
            .as_primitive::<arrow::datatypes::Float32Type>()
            .values()
            .iter()
            .zip(0..)
            .any(|(v, i)| *v == 0.0 && values.is_valid(i)),
        _ => false,
    };
    match zero {
        true => Err(ExecError::Execution("division by zero".into())),
        false => Ok(()),
    }
}

fn function(func: ScalarFunction, args: &[ArrayRef]) -> Result<ArrayRef> {
    match func {
        ScalarFunction::Coalesce => unreachable!("coalesce is evaluated lazily, as a CASE"),
        ScalarFunction::NullIf => {
            let equal = binary(BinaryOp::Eq, &args[0], &args[1])?;
            Ok(nullif(&args[0], equal.as_boolean())?)
        }
        ScalarFunction::Abs => {
            let value = &args[0];
            Ok(match value.data_type() {
                DataType::Int32 => Arc::new(
                    value
                        .as_primitive::<Int32Type>()
                        .try_unary::<_, Int32Type, _>(|v| {
                            v.checked_abs().ok_or_else(|| {
                                arrow::error::ArrowError::ArithmeticOverflow("abs".into())
                            })
                        })?,
                ),
                DataType::Int64 => Arc::new(
                    value
                        .as_primitive::<Int64Type>()
                        .try_unary::<_, Int64Type, _>(|v| {
                            v.checked_abs().ok_or_else(|| {
                                arrow::error::ArrowError::ArithmeticOverflow("abs".into())
                            })
                        })?,
                ),
                DataType::Float64 => Arc::new(
                    value
                        .as_primitive::<Float64Type>()
                        .unary::<_, Float64Type>(f64::abs),
                ),
                DataType::Decimal64(p, s) => Arc::new(
                    value
                        .as_primitive::<arrow::datatypes::Decimal64Type>()
                        .unary::<_, arrow::datatypes::Decimal64Type>(i64::abs)
                        .with_precision_and_scale(*p, *s)?,
                ),
                DataType::Decimal128(p, s) => Arc::new(
                    value
                        .as_primitive::<arrow::datatypes::Decimal128Type>()
                        .unary::<_, arrow::datatypes::Decimal128Type>(i128::abs)
                        .with_precision_and_scale(*p, *s)?,
                ),
                other => {
                    return Err(ExecError::Execution(format!("abs of {other}")));
                }
            })
        }
        ScalarFunction::Lower | ScalarFunction::Upper => {
            let strings = args[0].as_string::<i32>();
            let mapped: StringArray = strings
                .iter()
                .map(|s| {
                    s.map(|s| {
                        if func == ScalarFunction::Lower {
                            s.to_lowercase()
                        } else {
                            s.to_uppercase()
                        }
                    })
                })
                .collect();
            Ok(Arc::new(mapped))
        }
        ScalarFunction::Length => {
            let strings = args[0].as_string::<i32>();
            let lengths: Int64Array = strings
                .iter()
                .map(|s| s.map(|s| s.chars().count() as i64))
                .collect();
            Ok(Arc::new(lengths))
        }
        ScalarFunction::DatePart(part) => crate::date_parts::date_part(&args[0], part),
        ScalarFunction::Substring => {
            let strings = args[0].as_string::<i32>();
            let starts = args[1].as_primitive::<Int64Type>();
            let lengths = args.get(2).map(|l| l.as_primitive::<Int64Type>());
            let mut out = arrow::array::StringBuilder::with_capacity(strings.len(), 0);
            for row in 0..strings.len() {
                let length = lengths.map(|l| l.is_valid(row).then(|| l.value(row)));
                if strings.is_null(row) || starts.is_null(row) || length == Some(None) {
                    out.append_null();
                    continue;
                }
                let length = length.flatten();
                if length.is_some_and(|l| l < 0) {
                    return Err(ExecError::Execution(
                        "negative substring length not allowed".into(),
                    ));
                }
                out.append_value(substring(strings.value(row), starts.value(row), length));
            }
            Ok(Arc::new(out.finish()))
        }
        ScalarFunction::Ceil => functions::round_to_whole(&args[0], true),
        ScalarFunction::Floor => functions::round_to_whole(&args[0], false),
        ScalarFunction::Sqrt => functions::math(
            &args[0],
            f64::sqrt,
            Some(("cannot take square root of a negative number", |v| v >= 0.0)),
        ),
        ScalarFunction::Ln => functions::math(
            &args[0],
            f64::ln,
            Some(("cannot take logarithm of zero or a negative number", |v| {
                v > 0.0
            })),
        ),
        ScalarFunction::Exp => functions::math(&args[0], f64::exp, None),
        ScalarFunction::Power => functions::power(&args[0], &args[1]),
        ScalarFunction::Trim(leading, trailing) => functions::trim(args, leading, trailing),
        ScalarFunction::Replace => functions::replace(args),
        ScalarFunction::Concat => functions::concat(args),
        ScalarFunction::Position => functions::position(args),
        ScalarFunction::StartsWith => functions::starts_with(args),
        ScalarFunction::Left => functions::left_right(args, true),
        ScalarFunction::Right => functions::left_right(args, false),
        ScalarFunction::Reverse => functions::reverse(args),
        ScalarFunction::Repeat => functions::repeat(args),
        ScalarFunction::Blob(op) => crate::blobs::function(op, args),
        ScalarFunction::Interval(op) => crate::interval_ops::function(op, args),
        ScalarFunction::Pad { left } => functions::pad(args, left),
        ScalarFunction::SplitPart => functions::split_part(args),
        ScalarFunction::TryCast => unreachable!("TRY_CAST is evaluated with its target type"),
        ScalarFunction::SortedQuantile { continuous } => {
            crate::ordered_set::quantile(&args[0], &args[1], continuous)
        }
        ScalarFunction::SortedMode => crate::ordered_set::mode(&args[0]),
        ScalarFunction::SortedTopK => crate::ordered_set::top_k(&args[0], &args[1]),
        ScalarFunction::ModeInOrder => crate::ordered_set::mode_in_order(&args[0]),
        ScalarFunction::Random => unreachable!("random() is drawn per row with the batch"),
        ScalarFunction::Model(_) => unreachable!("a model's answers are asked batch by batch"),
        ScalarFunction::SortedEntropy => crate::ordered_set::entropy(&args[0]),
        ScalarFunction::SortedMad => crate::ordered_set::median_absolute_deviation(&args[0]),
        ScalarFunction::MomentStatistic(moment) => crate::moments::moment_statistic(args, moment),
        ScalarFunction::JsonGet { text } => crate::json::json_get(args, text),
        ScalarFunction::JsonCheck => crate::json::json_check(&args[0]),
        ScalarFunction::UuidText => crate::uuids::uuid_text(&args[0]),
        ScalarFunction::FiniteOnly => Ok(crate::infinite_times::finite_only(&args[0])),
        ScalarFunction::RandomUuid => unreachable!("UUIDs are drawn per row with the batch"),
        ScalarFunction::MakeDate => crate::date_makers::make_date(args),
        ScalarFunction::MakeTimestamp => crate::date_makers::make_timestamp(args),
        ScalarFunction::Age => crate::date_makers::age(args),
        ScalarFunction::LastDay => crate::date_makers::last_day(&args[0]),
        ScalarFunction::IntervalOf(part) => crate::date_makers::interval_of(&args[0], part),
        ScalarFunction::TruncDigits => crate::math_functions::cut_digits(&args[0], &args[1], false),
        ScalarFunction::RoundBankers => crate::math_functions::cut_digits(&args[0], &args[1], true),
        ScalarFunction::Math(op) => crate::math_functions::math_function(op, args),
        ScalarFunction::Text(op) => crate::text_functions::text_function(op, args),
        ScalarFunction::IntegerRange { domain, lenient } => {
            crate::casts::integer_range(&args[0], domain, lenient)
        }
        ScalarFunction::Strftime => functions::strftime(args),
        ScalarFunction::RegexpExtract => functions::regexp_extract(args),
        ScalarFunction::RegexpExtractAll => functions::regexp_extract_all(args),
        ScalarFunction::TimeBucket => crate::date_parts::time_bucket(args),
        ScalarFunction::BitFold(op) => functions::bit_fold(&args[0], op),
        ScalarFunction::List(op) => crate::list_functions::list_function(op, args),
        ScalarFunction::Strptime { lenient, zoned } => {
            crate::strptime::strptime(args, lenient, zoned)
        }
        ScalarFunction::StringSplit => functions::string_split(args),
        ScalarFunction::DistinctRuns => crate::ordered_set::distinct_runs(&args[0]),
        ScalarFunction::Greatest => functions::extreme(args, true),
        ScalarFunction::Least => functions::extreme(args, false),
        ScalarFunction::DateTrunc(part) => functions::date_trunc(&args[0], part),
        ScalarFunction::RegexpMatch(insensitive) => functions::regexp_match(args, insensitive),
        ScalarFunction::RegexpReplace(global, insensitive) => {
            functions::regexp_replace(args, global, insensitive)
        }
        ScalarFunction::DateDiff(part) => functions::date_diff(&args[0], &args[1], part),
        ScalarFunction::DateSub(part) => crate::date_parts::date_sub(&args[0], &args[1], part),
        ScalarFunction::ListAggregate(func) => {
            // The separator is a constant: any row's (a batch of no rows has none to join).
            let separator = match args.get(1) {
                Some(separator) if !separator.is_empty() && separator.is_valid(0) => {
                    Some(separator.as_string::<i32>().value(0).to_string())
                }
                Some(_) => Some(String::new()),
                None => None,
            };
            crate::aggregate::aggregate_lists(func, &args[0], separator)
        }
        ScalarFunction::Bitwise(op) => functions::bitwise(&args[0], &args[1], op),
        ScalarFunction::MakeArray => arrays::make(args),
        ScalarFunction::ArrayElement => arrays::element(&args[0], &args[1]),
        ScalarFunction::ArrayLength => arrays::length(&args[0], &args[1]),
        ScalarFunction::Cardinality => arrays::cardinality(&args[0]),
        ScalarFunction::VectorDistance(distance) => {
            crate::vectors::vector_distance(distance, &args[0], &args[1])
        }
        ScalarFunction::ArrayToString => arrays::join(args),
        ScalarFunction::Quantified { op, all, rows } => {
            arrays::quantified(op, all, rows, &args[0], &args[1])
        }
        ScalarFunction::Series { inclusive } => arrays::series(args, inclusive),
        ScalarFunction::TimeSeries { inclusive } => crate::date_parts::time_series(args, inclusive),
        ScalarFunction::KeyHash => Ok(Arc::new(crate::key_hash::key_hashes(args)?)),
        ScalarFunction::ExpandArray => arrays::expand(&args[0]),
        ScalarFunction::InjectedPanic => {
            let text = args[0].as_string::<i32>();
            let message = (0..text.len())
                .find(|&r| text.is_valid(r))
                .map(|r| text.value(r));
            panic!("pondra_panic: {}", message.unwrap_or("NULL"));
        }
        ScalarFunction::Field(index) => crate::structs::field(&args[0], index),
        ScalarFunction::MakeStruct => unreachable!("a struct is built with its type"),
        ScalarFunction::RaiseError => unreachable!("error() is evaluated with the batch"),
        ScalarFunction::TimeArithmetic { subtract } => {
            crate::date_makers::time_arithmetic(&args[0], &args[1], subtract)
        }
        ScalarFunction::RegexpGroups { .. } => {
            unreachable!("regexp groups are made with their type")
        }
        ScalarFunction::MakeMap | ScalarFunction::Map(_) => {
            unreachable!("maps are made with their type")
        }
        ScalarFunction::Json(_) => unreachable!("JSON functions are made with their type"),
        ScalarFunction::Round => {
            let values = args[0].as_primitive::<Float64Type>();
            let digits = args.get(1).map(|d| d.as_primitive::<Int64Type>());
            let rounded: Float64Array = values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let places = match digits {
                        Some(d) if d.is_null(i) => return None,
                        Some(d) => d.value(i),
                        None => 0,
                    };
                    v.map(|v| {
                        let factor = 10f64.powi(places as i32);
                        (v * factor).round() / factor
                    })
                })
                .collect();
            Ok(Arc::new(rounded))
        }
    }
}

/// SQL's SUBSTRING: characters from the 1-based `start`, `length` of them; positions before
/// the first character count against the length, as in Postgres.
fn substring(text: &str, start: i64, length: Option<i64>) -> &str {
    let first = (start.max(1) - 1) as usize;
    let last = length.map(|l| (start.saturating_add(l).max(1) - 1) as usize);
    let byte_at = |chars: usize| {
        text.char_indices()
            .map(|(i, _)| i)
            .chain([text.len()])
            .nth(chars)
            .unwrap_or(text.len())
    };
    let begin = byte_at(first);
    let end = last.map_or(text.len(), byte_at).max(begin);
    &text[begin..end]
}

/// `probe IN (list)` by a hash set, when the probe is a column and the list many constants of
/// its type; `None` otherwise.
fn in_long_constant_list(
    probe: &Value,
    list: &[Expr],
    batch: &RecordBatch,
) -> Result<Option<BooleanArray>> {
    let Value::Column(probe) = probe else {
        return Ok(None);
    };
    if list.len() < crate::in_set::FEWEST_FOR_SET {
        return Ok(None);
    }
    let mut constants = Vec::with_capacity(list.len());
    for item in list {
        match value(item, batch)? {
            Value::Constant(one) if one.data_type() == probe.data_type() => constants.push(one),
            _ => return Ok(None),
        }
    }
    crate::in_set::in_constants(probe, &constants).map(Some)
}

#[cfg(test)]
mod tests {
    use super::substring;

    #[test]
    fn substring_counts_characters_from_one() {
        assert_eq!(substring("héllo", 2, Some(3)), "éll");
        assert_eq!(substring("hello", 0, Some(2)), "h");
        assert_eq!(substring("hello", 4, None), "lo");
        assert_eq!(substring("hello", 9, Some(2)), "");
    }
}
