//! Window functions: `f(...) OVER (PARTITION BY ... ORDER BY ... frame)`.

use arrow::datatypes::DataType;
use pondra_parser::{EXCLUDE_CURRENT_ROW, EXCLUDE_GROUP, EXCLUDE_TIES};
use sqlparser::ast;

use super::expr::*;
use crate::expr::{
    AggregateFunction, Expr, Frame, FrameBound, FrameExclusion, FrameOffset, FrameUnits, SortKey,
    WindowExpr, WindowFunction,
};
use crate::scalar::ScalarValue;
use crate::types::is_numeric;
use crate::{Result, bind_err, unsupported};

pub(super) fn bind_window(
    function: &ast::Function,
    name: &str,
    over: &ast::WindowType,
    ctx: &mut Context<'_>,
) -> Result<Expr> {
    let binder = match ctx {
        Context::Plain {
            binder: Some(b), ..
        }
        | Context::Aggregated(_, Some(b)) => *b,
        _ => return Err(unsupported!("window functions here")),
    };
    if let Some(picked) = picked_from_frame(function, name, over, ctx) {
        return picked;
    }
    let spec = &resolve_window(binder, over, 0)?;
    let exclude = exclusion_of(spec)?;
    let ignore_nulls = check_call_clauses(function, name)?;
    let star = matches!(
        &function.args,
        ast::FunctionArguments::List(list) if matches!(
            list.args.as_slice(),
            [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard)]
        )
    );
    let mut args = Vec::new();
    if !star {
        for a in function_args(function) {
            args.push(bind_expr(a, ctx)?);
        }
    }
    // `fill(x ORDER BY k)`: interpolated along `k` rather than the window's order, which
    // comes in as a second argument.
    let argument_order = argument_order(function);
    if let Some(items) = argument_order {
        let [item] = items else {
            return Err(bind_err!(
                "FILL functions must have only one ORDER BY expression"
            ));
        };
        let key = bind_expr(&item.expr, ctx)?;
        if !subtracts(&key.data_type()) {
            return Err(bind_err!("FILL ordering must support subtraction"));
        }
        args.push(key);
    }
    let (func, args, data_type) = window_call(name, args, star)?;
    let passes_over_nulls = matches!(
        func,
        WindowFunction::Lag
            | WindowFunction::Lead
            | WindowFunction::FirstValue
            | WindowFunction::LastValue
            | WindowFunction::NthValue
    );
    if ignore_nulls && !passes_over_nulls {
        return Err(bind_err!(
            "IGNORE NULLS applies to lag, lead, first_value, last_value and nth_value, not {name}"
        ));
    }
    let (func, args) = match &function.filter {
        Some(filter) => {
            let condition = boolean(bind_expr(filter, ctx)?, "FILTER")?;
            filtered(name, func, args, condition)?
        }
        None => (func, args),
    };
    let partition_exprs = match ctx {
        Context::Plain { scope, .. } => {
            super::columns_expression::expand_columns_in_list(&spec.partition_by, scope)?
        }
        Context::Aggregated(..) => spec.partition_by.clone(),
    };
    let partition_by = partition_exprs
        .iter()
        .map(|e| bind_expr(e, ctx))
        .collect::<Result<Vec<_>>>()?;
    let mut order_by = Vec::new();
    for item in &spec.order_by {
        let descending = matches!(item.options.sort, Some(ast::OrderBySort::Desc));
        order_by.push(SortKey {
            expr: bind_expr(&item.expr, ctx)?,
            descending,
            nulls_first: item.options.nulls_first.unwrap_or(descending),
        });
    }
    if func == WindowFunction::Fill && argument_order.is_none() {
        check_fill_order(&order_by)?;
    }
    let frame = window_frame(spec.window_frame.as_ref(), &order_by, exclude, ctx)?;
    let inputs = args
        .iter()
        .chain(&partition_by)
        .chain(order_by.iter().map(|key| &key.expr));
    for input in inputs {
        for column in input.column_indices() {
            if (WINDOW_BASE..GROUPED_SUBQUERY_BASE).contains(&column) {
                return Err(bind_err!("window function calls cannot be nested"));
            }
            if column >= SET_FUNCTION_BASE {
                return Err(unsupported!("UNNEST in a window function's inputs"));
            }
        }
    }
    let window = WindowExpr {
        func,
        args,
        partition_by,
        order_by,
        frame,
        data_type: data_type.clone(),
        ignore_nulls,
    };
    let index = binder.add_window(window)?;
    Ok(Expr::column(WINDOW_BASE + index, name, data_type))
}

/// The aggregates computed from a frame's values sorted (`median`, `mode`, `mad`, the
/// quantiles), composed of several (`skewness`, `entropy`, ...) or picked from them (`first`,
/// `any_value`, `bit_and`, ...) over a window: the frame's
/// values gathered as a list (`array_agg(x) OVER ...`), and the list's aggregate; `None` for
/// other calls.
fn picked_from_frame(
    function: &ast::Function,
    name: &str,
    over: &ast::WindowType,
    ctx: &mut Context<'_>,
) -> Option<Result<Expr>> {
    if let Some(distinct) = distinct_over_frame(function, name, over, ctx) {
        return Some(distinct);
    }
    if matches!(name, "string_agg" | "group_concat" | "listagg") {
        return Some(string_agg_over_frame(function, name, over, ctx));
    }
    let args = function_args(function);
    let quantile = matches!(name, "quantile_cont" | "quantile_disc" | "quantile");
    // Aggregates the window engine has no state for, but lists can fold.
    let folded = aggregate_function(name).is_none()
        && matches!(
            name,
            "first" | "last" | "any_value" | "arbitrary" | "bit_and" | "bit_or" | "bit_xor"
        );
    let composed =
        folded || super::composed_aggregates::is_list_composed(name) && name != "histogram";
    let fraction = match (quantile, composed, args.as_slice()) {
        (true, _, [value, fraction]) => Some((*value, *fraction)),
        (false, true, [_]) => None,
        _ => return None,
    };
    let values = match gather_frame(function, fraction.map(|(value, _)| value), over, ctx) {
        Ok(values) => values,
        Err(e) => return Some(Err(e)),
    };
    match fraction {
        Some((_, fraction)) => Some(super::ordered_set::list_quantile(name, values, fraction)),
        None => super::duckdb_functions::duckdb_function(&format!("list_{name}"), &[values]),
    }
}

/// `string_agg(x, separator) OVER ...`: the frame's values gathered as a list and joined, the
/// NULLs passed over (NULL when none is left); FILTER's other rows count as NULLs.
fn string_agg_over_frame(
    function: &ast::Function,
    name: &str,
    over: &ast::WindowType,
    ctx: &mut Context<'_>,
) -> Result<Expr> {
    let unfiltered = super::ordered_set::filter_as_nulls(function, &[0]);
    let (value, separator) = match function_args(&unfiltered).as_slice() {
        [value] => ((*value).clone(), None),
        [value, separator] => ((*value).clone(), Some((*separator).clone())),
        _ => return Err(bind_err!("{name} takes a value and a separator")),
    };
    let values = gather_frame(&unfiltered, Some(&value), over, ctx)?;
    let separator = match separator {
        Some(separator) => bind_expr(&separator, ctx)?,
        None => Expr::Literal(ScalarValue::Utf8(",".into())),
    };
    let aggregate = Expr::Literal(ScalarValue::Utf8("string_agg".into()));
    super::duckdb_functions::duckdb_function("list_aggr", &[values, aggregate, separator])
        .unwrap_or_else(|| Err(bind_err!("list_aggr is not a list function")))
}

/// `count | sum | avg | min | max(DISTINCT x) OVER ...`: the frame's values gathered as a list
/// (`array_agg(x) OVER ...`), each once (`list_distinct`, which drops NULLs), and the list's
/// aggregate; `None` for other calls.
fn distinct_over_frame(
    function: &ast::Function,
    name: &str,
    over: &ast::WindowType,
    ctx: &mut Context<'_>,
) -> Option<Result<Expr>> {
    let ast::FunctionArguments::List(list) = &function.args else {
        return None;
    };
    let one_value = matches!(
        list.args.as_slice(),
        [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(_))]
    );
    if list.duplicate_treatment != Some(ast::DuplicateTreatment::Distinct)
        || !one_value
        || !matches!(name, "count" | "sum" | "avg" | "min" | "max")
    {
        return None;
    }
    let mut each_value = function.clone();
    if let ast::FunctionArguments::List(list) = &mut each_value.args {
        list.duplicate_treatment = None;
    }
    Some(fold_distinct(&each_value, name, over, ctx))
}

/// See `distinct_over_frame`: `function` is the call without its DISTINCT.
fn fold_distinct(
    function: &ast::Function,
    name: &str,
    over: &ast::WindowType,
    ctx: &mut Context<'_>,
) -> Result<Expr> {
    let values = gather_frame(function, None, over, ctx)?;
    let list_function = |name: &str, args: &[Expr]| {
        super::duckdb_functions::duckdb_function(name, args)
            .unwrap_or_else(|| Err(bind_err!("{name} is not a list function")))
    };
    let distinct = list_function("list_distinct", &[values])?;
    let folded = list_function(&format!("list_{name}"), &[distinct])?;
    // A frame without rows gathers no list: no values, counted as none.
    Ok(match name {
        "count" => Expr::Function {
            func: crate::expr::ScalarFunction::Coalesce,
            args: vec![folded, Expr::Literal(ScalarValue::Int64(0))],
            data_type: DataType::Int64,
        },
        _ => folded,
    })
}

/// The values of `function`'s frames as a list: the call made `array_agg(...) OVER ...`, with
/// its FILTER; with `value`, of that argument alone.
fn gather_frame(
    function: &ast::Function,
    value: Option<&ast::Expr>,
    over: &ast::WindowType,
    ctx: &mut Context<'_>,
) -> Result<Expr> {
    let mut gather = function.clone();
    gather.name = ast::ObjectName::from(vec![ast::Ident::new("array_agg")]);
    if let (Some(value), ast::FunctionArguments::List(list)) = (value, &mut gather.args) {
        list.args = vec![ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(
            value.clone(),
        ))];
    }
    bind_window(&gather, "array_agg", over, ctx)
}

/// The window an OVER clause names, with what the OVER adds to a named window (`OVER w`,
/// `OVER (w ORDER BY ...)`) merged in: a reference may add an ORDER BY to a window without
/// one, and a frame.
fn resolve_window(
    binder: &super::Binder<'_>,
    over: &ast::WindowType,
    depth: usize,
) -> Result<ast::WindowSpec> {
    if depth > 16 {
        return Err(bind_err!("named windows refer to each other in a cycle"));
    }
    let named = |name: &ast::Ident| -> Result<ast::WindowSpec> {
        match binder.named_window(name) {
            Some(ast::NamedWindowExpr::WindowSpec(spec)) => {
                resolve_window(binder, &ast::WindowType::WindowSpec(spec), depth + 1)
            }
            Some(ast::NamedWindowExpr::NamedWindow(other)) => {
                resolve_window(binder, &ast::WindowType::NamedWindow(other), depth + 1)
            }
            None => Err(bind_err!("window \"{}\" does not exist", name.value)),
        }
    };
    let spec = match over {
        ast::WindowType::NamedWindow(name) => return named(name),
        ast::WindowType::WindowSpec(spec) => spec,
    };
    let Some(name) = spec
        .window_name
        .as_ref()
        .filter(|name| !is_exclusion_marker(&name.value))
    else {
        return Ok(spec.clone());
    };
    let mut base = named(name)?;
    if !spec.partition_by.is_empty() {
        return Err(bind_err!(
            "cannot override PARTITION BY clause of window \"{}\"",
            name.value
        ));
    }
    if !spec.order_by.is_empty() {
        if !base.order_by.is_empty() {
            return Err(bind_err!(
                "cannot override ORDER BY clause of window \"{}\"",
                name.value
            ));
        }
        base.order_by = spec.order_by.clone();
    }
    if spec.window_frame.is_some() {
        base.window_frame = spec.window_frame.clone();
    }
    Ok(base)
}

fn is_exclusion_marker(name: &str) -> bool {
    [EXCLUDE_CURRENT_ROW, EXCLUDE_GROUP, EXCLUDE_TIES].contains(&name)
}

/// The frame exclusion the parser put in the window name's place (`EXCLUDE ...`); any other
/// window name refers to a named window.
fn exclusion_of(spec: &ast::WindowSpec) -> Result<FrameExclusion> {
    let Some(name) = &spec.window_name else {
        return Ok(FrameExclusion::NoOthers);
    };
    Ok(match name.value.as_str() {
        EXCLUDE_CURRENT_ROW => FrameExclusion::CurrentRow,
        EXCLUDE_GROUP => FrameExclusion::Group,
        EXCLUDE_TIES => FrameExclusion::Ties,
        _ => return Err(unsupported!("named windows")),
    })
}

/// Refuses what a window function call may carry besides its arguments and OVER, which would
/// otherwise be dropped unseen; whether it says IGNORE NULLS.
fn check_call_clauses(function: &ast::Function, name: &str) -> Result<bool> {
    if !function.within_group.is_empty() {
        return Err(unsupported!("WITHIN GROUP on window functions"));
    }
    let mut ignore_nulls = function.null_treatment == Some(ast::NullTreatment::IgnoreNulls);
    if let ast::FunctionArguments::List(list) = &function.args {
        if list.duplicate_treatment == Some(ast::DuplicateTreatment::Distinct) {
            return Err(unsupported!("DISTINCT in window functions"));
        }
        for clause in &list.clauses {
            match clause {
                ast::FunctionArgumentClause::IgnoreOrRespectNulls(treatment) => {
                    ignore_nulls |= *treatment == ast::NullTreatment::IgnoreNulls;
                }
                ast::FunctionArgumentClause::OrderBy(_) if name == "fill" => {}
                other => return Err(unsupported!("{other} in a window function's arguments")),
            }
        }
    }
    Ok(ignore_nulls)
}

/// `agg(x) FILTER (WHERE c) OVER (...)`: the aggregate of `CASE WHEN c THEN x END`, for the
/// aggregates that pass over NULLs (`count(*)` counts the rows where `c` holds).
fn filtered(
    name: &str,
    func: WindowFunction,
    mut args: Vec<Expr>,
    condition: Expr,
) -> Result<(WindowFunction, Vec<Expr>)> {
    let when = |value: Expr| {
        let data_type = value.data_type();
        Expr::Case {
            branches: vec![(condition.clone(), value)],
            otherwise: None,
            data_type,
        }
    };
    match func {
        WindowFunction::Aggregate(AggregateFunction::CountStar) => Ok((
            WindowFunction::Aggregate(AggregateFunction::Count),
            vec![when(Expr::Literal(ScalarValue::Int64(1)))],
        )),
        WindowFunction::Aggregate(AggregateFunction::ArrayAgg) => {
            Err(unsupported!("FILTER on {name} as a window function"))
        }
        WindowFunction::Aggregate(_) if args.len() == 1 => {
            let value = args.remove(0);
            Ok((func, vec![when(value)]))
        }
        _ => Err(bind_err!(
            "FILTER is not implemented for non-aggregate window functions ({name})"
        )),
    }
}

/// The function a window call names, its arguments as it takes them, and its result type.
fn window_call(
    name: &str,
    mut args: Vec<Expr>,
    star: bool,
) -> Result<(WindowFunction, Vec<Expr>, DataType)> {
    let ranking = match name {
        "row_number" => Some((WindowFunction::RowNumber, DataType::Int64)),
        "rank" => Some((WindowFunction::Rank, DataType::Int64)),
        "dense_rank" => Some((WindowFunction::DenseRank, DataType::Int64)),
        "percent_rank" => Some((WindowFunction::PercentRank, DataType::Float64)),
        "cume_dist" => Some((WindowFunction::CumeDist, DataType::Float64)),
        _ => None,
    };
    if let Some((func, data_type)) = ranking {
        if !args.is_empty() || star {
            return Err(bind_err!("{name} takes no arguments"));
        }
        return Ok((func, args, data_type));
    }
    match name {
        "ntile" => {
            expect_arguments(name, &args, 1)?;
            let buckets = integer_argument(name, args.remove(0))?;
            Ok((WindowFunction::Ntile, vec![buckets], DataType::Int64))
        }
        "lag" | "lead" => lag_or_lead(name, args),
        "fill" => {
            if args.len() != 2 {
                expect_arguments(name, &args, 1)?;
            }
            let t = args[0].data_type();
            if !subtracts(&t) {
                return Err(bind_err!("FILL argument must support subtraction"));
            }
            Ok((WindowFunction::Fill, args, t))
        }
        "first_value" | "last_value" => {
            expect_arguments(name, &args, 1)?;
            let func = match name {
                "first_value" => WindowFunction::FirstValue,
                _ => WindowFunction::LastValue,
            };
            let t = args[0].data_type();
            Ok((func, args, t))
        }
        "nth_value" => {
            expect_arguments(name, &args, 2)?;
            let n = integer_argument(name, args.remove(1))?;
            let t = args[0].data_type();
            Ok((WindowFunction::NthValue, vec![args.remove(0), n], t))
        }
        other => window_aggregate(other, args, star),
    }
}

/// Whether `fill` can draw a line through values of the type.
fn subtracts(data_type: &DataType) -> bool {
    is_numeric(data_type)
        || matches!(
            data_type,
            DataType::Date32 | DataType::Timestamp(_, _) | DataType::Null
        )
}

/// `fill` reads positions on one ORDER BY key, so it needs exactly one that subtracts.
/// The ORDER BY inside a call's parentheses, if it has one.
fn argument_order(function: &ast::Function) -> Option<&[ast::OrderByExpr]> {
    let ast::FunctionArguments::List(list) = &function.args else {
        return None;
    };
    list.clauses.iter().find_map(|clause| match clause {
        ast::FunctionArgumentClause::OrderBy(items) => Some(items.as_slice()),
        _ => None,
    })
}

fn check_fill_order(order_by: &[SortKey]) -> Result<()> {
    let [key] = order_by else {
        return Err(bind_err!(
            "FILL functions must have only one ORDER BY expression"
        ));
    };
    match subtracts(&key.expr.data_type()) {
        true => Ok(()),
        false => Err(bind_err!("FILL ordering must support subtraction")),
    }
}

fn expect_arguments(name: &str, args: &[Expr], count: usize) -> Result<()> {
    match args.len() == count {
        true => Ok(()),
        false if count == 1 => Err(bind_err!("{name} takes one argument")),
        false => Err(bind_err!("{name} takes {count} arguments")),
    }
}

/// An integer argument (a bucket count, a row number) as a BIGINT.
fn integer_argument(name: &str, arg: Expr) -> Result<Expr> {
    match arg.data_type() {
        DataType::Int32 | DataType::Int64 | DataType::Null => Ok(arg.cast(&DataType::Int64)),
        other => Err(bind_err!(
            "{name} needs an integer argument, not {}",
            type_name(&other)
        )),
    }
}

fn lag_or_lead(name: &str, args: Vec<Expr>) -> Result<(WindowFunction, Vec<Expr>, DataType)> {
    if args.is_empty() || args.len() > 3 {
        return Err(bind_err!("{name} takes 1 to 3 arguments"));
    }
    let t = args[0].data_type();
    // The offset may vary by row, and a negative one looks the other way, as in DuckDB.
    let offset = match args.get(1) {
        None => Expr::Literal(ScalarValue::Int64(1)),
        Some(offset) => integer_argument(name, offset.clone())?,
    };
    let default = args
        .get(2)
        .cloned()
        .unwrap_or(Expr::Literal(ScalarValue::Null));
    let args = vec![args[0].clone(), offset, default.cast(&t)];
    let func = match name {
        "lag" => WindowFunction::Lag,
        _ => WindowFunction::Lead,
    };
    Ok((func, args, t))
}

fn window_aggregate(
    name: &str,
    args: Vec<Expr>,
    star: bool,
) -> Result<(WindowFunction, Vec<Expr>, DataType)> {
    match aggregate_function(name) {
        // `count()` (DuckDB) counts rows, as `count(*)` does.
        Some(AggregateFunction::Count) if star || args.is_empty() => Ok((
            WindowFunction::Aggregate(AggregateFunction::CountStar),
            args,
            DataType::Int64,
        )),
        Some(AggregateFunction::StringAgg | AggregateFunction::GroupingId) => {
            Err(unsupported!("{name} as a window function"))
        }
        Some(agg) => {
            expect_arguments(name, &args, 1)?;
            let t = args[0].data_type();
            if matches!(agg, AggregateFunction::Sum | AggregateFunction::Avg) && !is_numeric(&t) {
                return Err(bind_err!("{name}({}) is not defined", type_name(&t)));
            }
            Ok((
                WindowFunction::Aggregate(agg),
                args,
                agg.result_type(Some(&t)),
            ))
        }
        None => Err(bind_err!("window function {name} does not exist")),
    }
}

/// The frame of a window: as written, or by default RANGE from the partition's start to the
/// current row's last peer with ORDER BY, the whole partition without.
pub(super) fn window_frame(
    frame: Option<&ast::WindowFrame>,
    order_by: &[SortKey],
    exclude: FrameExclusion,
    ctx: &mut Context<'_>,
) -> Result<Frame> {
    let Some(frame) = frame else {
        let end = match order_by.is_empty() {
            true => FrameBound::UnboundedFollowing,
            false => FrameBound::CurrentRow,
        };
        let mut frame = Frame::range(FrameBound::UnboundedPreceding, end);
        frame.exclude = exclude;
        return Ok(frame);
    };
    let units = match frame.units {
        ast::WindowFrameUnits::Rows => FrameUnits::Rows,
        ast::WindowFrameUnits::Range => FrameUnits::Range,
        ast::WindowFrameUnits::Groups => FrameUnits::Groups,
    };
    let start = frame_bound(&frame.start_bound, units, "starting", ctx)?;
    let end = match &frame.end_bound {
        Some(b) => frame_bound(b, units, "ending", ctx)?,
        None => FrameBound::CurrentRow,
    };
    check_bound_order(&start, &end)?;
    match units {
        FrameUnits::Groups if order_by.is_empty() => {
            return Err(bind_err!("GROUPS mode requires an ORDER BY clause"));
        }
        FrameUnits::Range => {
            for bound in [&start, &end] {
                if let FrameBound::Preceding(offset) | FrameBound::Following(offset) = bound {
                    check_range_offset(offset, order_by)?;
                }
            }
        }
        _ => {}
    }
    Ok(Frame {
        units,
        start,
        end,
        exclude,
    })
}

/// Refuses the frames PostgreSQL refuses: ones that would end before they start whatever the
/// row.
fn check_bound_order(start: &FrameBound, end: &FrameBound) -> Result<()> {
    match (start, end) {
        (FrameBound::UnboundedFollowing, _) => {
            Err(bind_err!("frame start cannot be UNBOUNDED FOLLOWING"))
        }
        (_, FrameBound::UnboundedPreceding) => {
            Err(bind_err!("frame end cannot be UNBOUNDED PRECEDING"))
        }
        (FrameBound::CurrentRow, FrameBound::Preceding(_)) => Err(bind_err!(
            "frame starting from current row cannot have preceding rows"
        )),
        (FrameBound::Following(_), FrameBound::Preceding(_) | FrameBound::CurrentRow) => Err(
            bind_err!("frame starting from following row cannot have preceding rows"),
        ),
        _ => Ok(()),
    }
}

fn frame_bound(
    bound: &ast::WindowFrameBound,
    units: FrameUnits,
    which: &str,
    ctx: &mut Context<'_>,
) -> Result<FrameBound> {
    Ok(match bound {
        ast::WindowFrameBound::CurrentRow => FrameBound::CurrentRow,
        ast::WindowFrameBound::Preceding(None) => FrameBound::UnboundedPreceding,
        ast::WindowFrameBound::Following(None) => FrameBound::UnboundedFollowing,
        ast::WindowFrameBound::Preceding(Some(e)) => {
            FrameBound::Preceding(frame_offset(e, units, which, ctx)?)
        }
        ast::WindowFrameBound::Following(Some(e)) => {
            FrameBound::Following(frame_offset(e, units, which, ctx)?)
        }
    })
}

/// A frame offset: a constant, not NULL and not negative; a count of rows or groups for
/// ROWS and GROUPS frames.
fn frame_offset(
    expr: &ast::Expr,
    units: FrameUnits,
    which: &str,
    ctx: &mut Context<'_>,
) -> Result<FrameOffset> {
    let bound = bind_expr(expr, ctx)?;
    let Some(value) = constant(&bound) else {
        return Err(unsupported!(
            "the frame offset {expr}, which is not a constant"
        ));
    };
    if value == ScalarValue::Null {
        return Err(bind_err!("frame {which} offset must not be null"));
    }
    if is_negative(&value) {
        return Err(bind_err!("frame {which} offset must not be negative"));
    }
    if units == FrameUnits::Range {
        return Ok(FrameOffset::Distance(value));
    }
    match value {
        ScalarValue::Int32(n) => Ok(FrameOffset::Count(n as u64)),
        ScalarValue::Int64(n) => Ok(FrameOffset::Count(n as u64)),
        other => Err(bind_err!(
            "frame {which} offset must be an integer, not {}",
            type_name(&other.data_type())
        )),
    }
}

/// The value of a constant expression: a literal, perhaps cast or negated.
fn constant(expr: &Expr) -> Option<ScalarValue> {
    match expr {
        Expr::Literal(value) => Some(value.clone()),
        Expr::Cast { expr, data_type } => {
            let value = constant(expr)?.to_array(1);
            let cast = arrow::compute::cast(&value, data_type).ok()?;
            Some(ScalarValue::at(cast.as_ref(), 0))
        }
        Expr::Negative(inner) => match constant(inner)? {
            ScalarValue::Int32(n) => n.checked_neg().map(ScalarValue::Int32),
            ScalarValue::Int64(n) => n.checked_neg().map(ScalarValue::Int64),
            ScalarValue::Float64(n) => Some(ScalarValue::Float64(-n)),
            ScalarValue::Decimal {
                value,
                precision,
                scale,
            } => Some(ScalarValue::Decimal {
                value: -value,
                precision,
                scale,
            }),
            _ => None,
        },
        _ => None,
    }
}

/// Whether an offset lies below zero; an interval does when any of its parts does, which
/// would let a frame bound move against the rows' order.
fn is_negative(value: &ScalarValue) -> bool {
    match value {
        ScalarValue::Int32(n) => *n < 0,
        ScalarValue::Int64(n) => *n < 0,
        ScalarValue::Float64(n) => *n < 0.0 || n.is_nan(),
        ScalarValue::Decimal { value, .. } => *value < 0,
        ScalarValue::Interval {
            months,
            days,
            nanos,
        } => *months < 0 || *days < 0 || *nanos < 0,
        _ => false,
    }
}

/// A RANGE offset needs one ORDER BY key it can be added to: a number to a number, an
/// interval to a date or a timestamp.
fn check_range_offset(offset: &FrameOffset, order_by: &[SortKey]) -> Result<()> {
    let [key] = order_by else {
        return Err(bind_err!(
            "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column"
        ));
    };
    let FrameOffset::Distance(value) = offset else {
        return Ok(());
    };
    let key_type = key.expr.data_type();
    let offset_type = value.data_type();
    let fits = match &key_type {
        t if is_numeric(t) => is_numeric(&offset_type),
        DataType::Date32 | DataType::Timestamp(_, None) => {
            matches!(offset_type, DataType::Interval(_))
        }
        DataType::Timestamp(_, Some(_)) => {
            return Err(unsupported!(
                "RANGE offsets over timestamps with a time zone"
            ));
        }
        _ => false,
    };
    if !fits {
        return Err(bind_err!(
            "RANGE with offset PRECEDING/FOLLOWING is not supported for column type {} and offset type {}",
            type_name(&key_type),
            type_name(&offset_type)
        ));
    }
    Ok(())
}
