//! Scalar functions by name: arity, argument types and result type.

use arrow::datatypes::DataType;
use sqlparser::ast;

use super::expr::*;
use super::window::bind_window;
use crate::expr::{DatePart, Expr, ScalarFunction};
use crate::scalar::ScalarValue;
use crate::types::is_numeric;
use crate::{Result, bind_err, unsupported};

/// `json -> key` and the like (see [`ScalarFunction::JsonGet`]): the key as text, or an
/// integer index.
pub(super) fn json_get(args: Vec<Expr>, text: bool) -> Result<Expr> {
    let mut args = args.into_iter();
    let document = args.next().expect("two args").cast(&DataType::Utf8);
    let key = args.next().expect("two args");
    let key = match key.data_type() {
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => {
            key.cast(&DataType::Int64)
        }
        _ => key.cast(&DataType::Utf8),
    };
    Ok(Expr::Function {
        func: ScalarFunction::JsonGet { text },
        args: vec![document, key],
        data_type: DataType::Utf8,
    })
}

/// `sign(x)`: -1, 0 or 1 by the sign of a number, NULL for NULL; of the number's type for
/// integers and DOUBLE (as PostgreSQL), an INTEGER for decimals.
fn sign(value: Expr) -> Result<Expr> {
    let t = value.data_type();
    if !is_numeric(&t) {
        return Err(bind_err!("function sign({}) does not exist", type_name(&t)));
    }
    let result = match t {
        DataType::Int64 | DataType::Float64 => t,
        _ => DataType::Int32,
    };
    let zero = Expr::Literal(ScalarValue::Int32(0));
    let one = |v: i32| Expr::Literal(ScalarValue::Int32(v)).cast(&result);
    let branches = vec![
        (
            binary(value.clone(), &ast::BinaryOperator::Gt, zero.clone())?,
            one(1),
        ),
        (
            binary(value.clone(), &ast::BinaryOperator::Lt, zero.clone())?,
            one(-1),
        ),
        (binary(value, &ast::BinaryOperator::Eq, zero)?, one(0)),
    ];
    Ok(Expr::Case {
        branches,
        otherwise: None,
        data_type: result,
    })
}

pub(super) fn bind_function(function: &ast::Function, ctx: &mut Context<'_>) -> Result<Expr> {
    let name = function_name(function);
    if function.over.is_none()
        && let Some(bound) = super::structs::bind_named_call(&name, function, ctx)?
    {
        return Ok(bound);
    }
    refuse_named_arguments(function)?;
    if function.over.is_none()
        && let ast::FunctionArguments::None | ast::FunctionArguments::List(_) = &function.args
        && function_args(function).is_empty()
        && let Some(bound) = super::clock::clock_function(&name, &[], ctx)
    {
        return bound;
    }
    if let Some(over) = &function.over {
        return bind_window(function, &name, over, ctx);
    }
    if aggregate_function(&name).is_some() {
        let clause = match ctx {
            Context::Plain { clause, .. } => *clause,
            Context::Aggregated(..) => "this place",
        };
        return Err(bind_err!("aggregate functions are not allowed in {clause}"));
    }
    if function.over.is_some() {
        return Err(unsupported!("window functions"));
    }
    if let ("array", ast::FunctionArguments::Subquery(query)) = (name.as_str(), &function.args) {
        return super::arrays::bind_array_subquery(query, ctx);
    }
    let ast_args = function_args(function);
    if ast_args.iter().any(|a| matches!(a, ast::Expr::Lambda(_))) {
        return super::lambdas::bind_lambda_call(&name, &ast_args, ctx);
    }
    // `unnest(generate_series(...))` (DuckDB): the series is the array unnested, as DuckDB's
    // generate_series is a list outside FROM; alone in a select list it is Postgres's rows.
    if let ("unnest", [ast::Expr::Function(inner)]) = (name.as_str(), ast_args.as_slice())
        && function_name(inner) == "generate_series"
        && inner.over.is_none()
    {
        let series_args = function_args(inner)
            .into_iter()
            .map(|a| bind_expr(a, ctx))
            .collect::<Result<Vec<_>>>()?;
        let series = super::table_functions::set_function_array("generate_series", series_args)?;
        return super::table_functions::select_list_set_function(&name, vec![series], ctx);
    }
    let args = ast_args
        .iter()
        .map(|a| bind_expr(a, ctx))
        .collect::<Result<Vec<_>>>()?;
    // A typed SQL function of the name comes before a built-in one (ADR 0081), as a macro does.
    if let Some(bound) = super::sql_functions::bind_typed_call(&name, &ast_args, &args, ctx)? {
        return Ok(bound);
    }
    match name.as_str() {
        "unnest" | "generate_series" | "_pg_expandarray" => {
            return super::table_functions::select_list_set_function(&name, args, ctx);
        }
        name if super::json_functions::is_json_set_function(name) => {
            return super::table_functions::select_list_set_function(name, args, ctx);
        }
        // As in DuckDB, whose `range` it is: an array outside FROM.
        "range" => return super::table_functions::set_function_array(&name, args),
        _ => {}
    }
    let arity = |n: usize| expect_arity(&name, &args, n);
    if name == "struct_concat" {
        return super::structs::struct_concat(&args);
    }
    if let "struct_extract" | "struct_extract_at" = name.as_str() {
        arity(2)?;
        let mut args = args;
        let key = args.pop().expect("two arguments");
        return super::structs::struct_extract(args.pop().expect("two arguments"), &key);
    }
    if name == "constant_or_null" {
        return constant_or_null(args);
    }
    if name == "assert_true" {
        return assert_true(args);
    }
    if name == "error" {
        arity(1)?;
        let message = args[0].clone().cast(&DataType::Utf8);
        return Ok(Expr::Function {
            func: ScalarFunction::RaiseError,
            args: vec![message],
            data_type: DataType::Null,
        });
    }
    if let "struct_position" | "struct_contains" = name.as_str() {
        arity(2)?;
        let mut args = args;
        let value = args.pop().expect("two arguments");
        return super::structs::struct_search(&name, args.pop().expect("two arguments"), value);
    }
    if let Some(bound) = super::blobs::blob_function(&name, &args) {
        return bound;
    }
    if let Some(bound) = super::json_functions::json_function(&name, &args) {
        return bound;
    }
    if let Some(bound) = crate::models::model_call(&name, &args) {
        return bound;
    }
    let (func, args, data_type) = match name.as_str() {
        "coalesce" => {
            if args.is_empty() {
                return Err(bind_err!("coalesce needs at least one argument"));
            }
            let types: Vec<DataType> = args.iter().map(Expr::data_type).collect();
            let t = common_type(&types)?;
            let args = args.into_iter().map(|a| a.cast(&t)).collect();
            (ScalarFunction::Coalesce, args, t)
        }
        "nullif" => {
            arity(2)?;
            let t = args[0].data_type();
            let mut args = args;
            let second = args.pop().expect("two args");
            let target = comparison_type(&t, &second.data_type(), &second)?;
            let first = args.pop().expect("two args");
            let data_type = first.data_type();
            // Compared in the common type, returned in the first argument's, as in Postgres.
            let compared = Expr::Function {
                func: ScalarFunction::NullIf,
                args: vec![first.cast(&target), second.cast(&target)],
                data_type: target,
            };
            if data_type == DataType::Null {
                return Ok(compared);
            }
            return Ok(compared.cast(&data_type));
        }
        "abs" => {
            arity(1)?;
            let t = args[0].data_type();
            if !is_numeric(&t) {
                return Err(bind_err!("abs needs a number, not {}", type_name(&t)));
            }
            (ScalarFunction::Abs, args, t)
        }
        "lower" | "upper" | "length" => {
            arity(1)?;
            let args: Vec<Expr> = args.into_iter().map(|a| a.cast(&DataType::Utf8)).collect();
            match name.as_str() {
                "lower" => (ScalarFunction::Lower, args, DataType::Utf8),
                "upper" => (ScalarFunction::Upper, args, DataType::Utf8),
                _ => (ScalarFunction::Length, args, DataType::Int64),
            }
        }
        "round" => {
            if args.is_empty() || args.len() > 2 {
                return Err(bind_err!("round takes 1 or 2 arguments"));
            }
            let mut args = args;
            args[0] = args[0].clone().cast(&DataType::Float64);
            if args.len() == 2 {
                args[1] = args[1].clone().cast(&DataType::Int64);
            }
            (ScalarFunction::Round, args, DataType::Float64)
        }
        "ceil" | "ceiling" | "floor" => {
            arity(1)?;
            let t = match args[0].data_type() {
                t @ (DataType::Int32 | DataType::Int64) => t,
                t if is_numeric(&t) || t == DataType::Null => DataType::Float64,
                t => return Err(bind_err!("{name} needs a number, not {}", type_name(&t))),
            };
            let func = if name == "floor" {
                ScalarFunction::Floor
            } else {
                ScalarFunction::Ceil
            };
            (func, args.into_iter().map(|a| a.cast(&t)).collect(), t)
        }
        "sqrt" | "ln" | "exp" | "power" | "pow" => {
            let (func, n) = match name.as_str() {
                "sqrt" => (ScalarFunction::Sqrt, 1),
                "ln" => (ScalarFunction::Ln, 1),
                "exp" => (ScalarFunction::Exp, 1),
                _ => (ScalarFunction::Power, 2),
            };
            arity(n)?;
            numbers(&name, &args)?;
            let args = args
                .into_iter()
                .map(|a| a.cast(&DataType::Float64))
                .collect();
            (func, args, DataType::Float64)
        }
        "trim" | "btrim" | "ltrim" | "rtrim" => {
            if !(1..=2).contains(&args.len()) {
                return Err(bind_err!(
                    "{name} takes a string and the characters to remove"
                ));
            }
            let func = ScalarFunction::Trim(name != "rtrim", name != "ltrim");
            (func, strings(args), DataType::Utf8)
        }
        "replace" => {
            arity(3)?;
            (ScalarFunction::Replace, strings(args), DataType::Utf8)
        }
        "concat" => (ScalarFunction::Concat, strings(args), DataType::Utf8),
        "strpos" | "instr" => {
            arity(2)?;
            (ScalarFunction::Position, strings(args), DataType::Int64)
        }
        "starts_with" | "prefix" => {
            arity(2)?;
            (ScalarFunction::StartsWith, strings(args), DataType::Boolean)
        }
        #[cfg(feature = "fault-injection")]
        "pondra_panic" => {
            arity(1)?;
            (ScalarFunction::InjectedPanic, strings(args), DataType::Utf8)
        }
        "left" | "right" | "repeat" => {
            arity(2)?;
            let mut args = args;
            let count = integer_arg(args.pop().expect("two args"), &name)?;
            let mut args = strings(args);
            args.push(count);
            let func = match name.as_str() {
                "left" => ScalarFunction::Left,
                "right" => ScalarFunction::Right,
                _ => ScalarFunction::Repeat,
            };
            (func, args, DataType::Utf8)
        }
        "regexp_matches" | "regexp_like" | "regexp_replace" => {
            let replace = name == "regexp_replace";
            let (min, max) = if replace { (3, 4) } else { (2, 3) };
            if args.len() < min || args.len() > max {
                return Err(bind_err!("{name} takes {min} or {max} arguments"));
            }
            let mut args = strings(args);
            let flags = if args.len() == max {
                match args.pop() {
                    Some(Expr::Literal(ScalarValue::Utf8(flags))) => flags,
                    _ => return Err(bind_err!("{name} needs its flags as a string literal")),
                }
            } else {
                String::new()
            };
            if let Some(bad) = flags.chars().find(|c| !matches!(c, 'g' | 'i' | 'c')) {
                return Err(bind_err!("{name}: unknown flag '{bad}'"));
            }
            let insensitive = flags.contains('i');
            if replace {
                let func = ScalarFunction::RegexpReplace(flags.contains('g'), insensitive);
                (func, args, DataType::Utf8)
            } else {
                (
                    ScalarFunction::RegexpMatch(insensitive),
                    args,
                    DataType::Boolean,
                )
            }
        }
        "substring" | "substr" => {
            if !(2..=3).contains(&args.len()) {
                return Err(bind_err!("{name} takes 2 or 3 arguments"));
            }
            let mut args = args.into_iter();
            let mut call = strings(args.by_ref().take(1).collect());
            for bound in args {
                call.push(integer_arg(bound, &name)?);
            }
            (ScalarFunction::Substring, call, DataType::Utf8)
        }
        "lpad" | "rpad" => {
            if !(2..=3).contains(&args.len()) {
                return Err(bind_err!("{name} takes 2 or 3 arguments"));
            }
            let mut args = args.into_iter();
            let text = args.next().expect("two args").cast(&DataType::Utf8);
            let length = integer_arg(args.next().expect("two args"), &name)?;
            let fill = args
                .next()
                .map_or(Expr::Literal(ScalarValue::Utf8(" ".into())), |f| {
                    f.cast(&DataType::Utf8)
                });
            let func = ScalarFunction::Pad {
                left: name == "lpad",
            };
            (func, vec![text, fill, length], DataType::Utf8)
        }
        "split_part" => {
            arity(3)?;
            let mut args = args;
            let field = integer_arg(args.pop().expect("three args"), &name)?;
            let mut args = strings(args);
            args.push(field);
            (ScalarFunction::SplitPart, args, DataType::Utf8)
        }
        "sign" => {
            arity(1)?;
            return sign(args.into_iter().next().expect("one arg"));
        }
        "json_extract" | "json_extract_string" | "json_extract_path" | "json_extract_path_text" => {
            arity(2)?;
            let text = name.ends_with("string") || name.ends_with("text");
            return json_get(args, text);
        }
        "regexp_extract" | "regexp_extract_all"
            if matches!(args.get(2).map(Expr::data_type), Some(DataType::List(_))) =>
        {
            return super::structs::regexp_groups(&name, args);
        }
        "regexp_extract" | "regexp_extract_all" => {
            if !(2..=3).contains(&args.len()) {
                return Err(bind_err!("{name} takes 2 or 3 arguments"));
            }
            let mut args = args.into_iter();
            let mut call = strings(args.by_ref().take(2).collect());
            let group = args.next().unwrap_or(Expr::Literal(ScalarValue::Int64(0)));
            call.push(integer_arg(group, &name)?);
            match name.as_str() {
                "regexp_extract" => (ScalarFunction::RegexpExtract, call, DataType::Utf8),
                _ => (
                    ScalarFunction::RegexpExtractAll,
                    call,
                    crate::types::list_of(DataType::Utf8),
                ),
            }
        }
        "strptime" | "try_strptime" => {
            arity(2)?;
            let mut args = args.into_iter();
            let text = args.next().expect("two args").cast(&DataType::Utf8);
            let format = args.next().expect("two args");
            let format = match format.data_type() {
                DataType::List(_) => format.cast(&crate::types::list_of(DataType::Utf8)),
                _ => format.cast(&DataType::Utf8),
            };
            let lenient = name == "try_strptime";
            // A format that reads an offset gives an instant, as in DuckDB.
            let zoned = super::structs::constant_strings(&format)
                .or_else(|| match &format {
                    Expr::Literal(ScalarValue::Utf8(text)) => Some(vec![text.clone()]),
                    _ => None,
                })
                .is_some_and(|formats| formats.iter().all(|f| f.contains("%z")));
            let zone = zoned.then(|| "UTC".into());
            let stamp = DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, zone);
            (
                ScalarFunction::Strptime { lenient, zoned },
                vec![text, format],
                stamp,
            )
        }
        "string_split" | "str_split" | "string_to_array" => {
            arity(2)?;
            let list = crate::types::list_of(DataType::Utf8);
            (ScalarFunction::StringSplit, strings(args), list)
        }
        "epoch" | "julian" | "era" | "timezone_hour" | "timezone_minute" => {
            arity(1)?;
            if let Some(bound) = super::interval_ops::interval_part(&name, &args[0]) {
                return bound;
            }
            return super::date_functions::derived_part(&name, &args[0])
                .expect("epoch, julian, era and the zone's parts are derived parts");
        }
        // `timezone(value)` is the zone's offset; `timezone(zone, value)` is AT TIME ZONE,
        // not built.
        "timezone" if args.len() == 1 => {
            return super::date_functions::derived_part(&name, &args[0])
                .expect("timezone is a derived part");
        }
        "strftime" => {
            arity(2)?;
            let mut args = args;
            // DuckDB takes the format first too: `strftime('%Y', d)`.
            let temporal =
                |e: &Expr| matches!(e.data_type(), DataType::Timestamp(..) | DataType::Date32);
            if args[0].data_type() == DataType::Utf8 && temporal(&args[1]) {
                args.swap(0, 1);
            }
            let mut args = args.into_iter();
            let time = args.next().expect("two args");
            let time = match time.data_type() {
                DataType::Timestamp(..) | DataType::Null | DataType::Date32 => time,
                other => {
                    return Err(bind_err!(
                        "function strftime({}, ...) does not exist",
                        type_name(&other)
                    ));
                }
            };
            let time = time.cast(&DataType::Timestamp(
                arrow::datatypes::TimeUnit::Microsecond,
                None,
            ));
            let format = args.next().expect("two args").cast(&DataType::Utf8);
            (ScalarFunction::Strftime, vec![time, format], DataType::Utf8)
        }
        "typeof" | "pg_typeof" => {
            arity(1)?;
            let name = type_name(&args[0].data_type());
            return Ok(Expr::Literal(ScalarValue::Utf8(name)));
        }
        "reverse" => {
            arity(1)?;
            (ScalarFunction::Reverse, strings(args), DataType::Utf8)
        }
        "greatest" | "least" => {
            if args.is_empty() {
                return Err(bind_err!("{name} needs at least one argument"));
            }
            let types: Vec<DataType> = args.iter().map(Expr::data_type).collect();
            let t = common_type(&types)?;
            let func = if name == "greatest" {
                ScalarFunction::Greatest
            } else {
                ScalarFunction::Least
            };
            (func, args.into_iter().map(|a| a.cast(&t)).collect(), t)
        }
        "date_part" | "datepart" | "date_trunc" | "datetrunc" | "date_diff" | "datediff"
        | "date_sub" | "datesub" => {
            let between = name.contains("diff") || name.contains("sub");
            let n = if between { 3 } else { 2 };
            arity(n)?;
            // A difference with an untyped NULL is NULL, whatever the other side's type (a
            // TIME has no date parts to count, but there is nothing to count).
            if between && args[1..].iter().any(|a| a.data_type() == DataType::Null) {
                return Ok(Expr::Literal(ScalarValue::Null).cast(&DataType::Int64));
            }
            if let (Expr::Literal(ScalarValue::Utf8(part)), false) = (&args[0], between) {
                let of_interval = match name.contains("trunc") {
                    true => super::interval_ops::interval_trunc(part, &args[1]),
                    false => super::interval_ops::interval_part(part, &args[1]),
                };
                if let Some(bound) = of_interval {
                    return bound;
                }
            }
            if !between
                && !name.contains("trunc")
                && let Some(names) = super::structs::constant_strings(&args[0])
            {
                return super::date_functions::date_part_struct(names, args[1].clone());
            }
            let mut args = args;
            if let (Expr::Literal(ScalarValue::Utf8(part)), false) =
                (&args[0], name.contains("trunc"))
            {
                let part = part.clone();
                for value in &mut args[1..] {
                    *value = super::date_functions::time_of_day(value.clone(), &part)?;
                }
            }
            if let (Expr::Literal(ScalarValue::Utf8(part)), false) = (&args[0], between)
                && !name.contains("trunc")
                && let Some(derived) = super::date_functions::derived_part(part, &args[1])
            {
                return derived;
            }
            let part = match &args[0] {
                Expr::Literal(ScalarValue::Utf8(part)) if name.contains("trunc") => {
                    super::date_functions::trunc_part(part)?
                }
                // DuckDB counts a Julian day as a day, a year-week as a week.
                Expr::Literal(ScalarValue::Utf8(part)) => match part.to_lowercase().as_str() {
                    "julian" => DatePart::Day,
                    "yearweek" => DatePart::Week,
                    _ => part_by_name(part)?,
                },
                _ if name.contains("trunc")
                    && matches!(args[1].data_type(), DataType::Interval(_)) =>
                {
                    return Ok(super::interval_ops::dynamic_interval_trunc(
                        args[0].clone(),
                        args[1].clone(),
                    ));
                }
                _ if name.contains("trunc") => {
                    return super::date_functions::dynamic_date_trunc(
                        args[0].clone(),
                        args[1].clone(),
                    );
                }
                _ if matches!(name.as_str(), "date_part" | "datepart") => {
                    return super::date_functions::dynamic_date_part(
                        args[0].clone(),
                        args[1].clone(),
                    );
                }
                _ => return Err(bind_err!("{name} needs the part as a string literal")),
            };
            let values: Vec<Expr> = args[1..].to_vec();
            for v in &values {
                let t = v.data_type();
                if !matches!(
                    t,
                    DataType::Date32 | DataType::Timestamp(..) | DataType::Null
                ) {
                    return Err(bind_err!(
                        "{name} needs a DATE or TIMESTAMP, not {}",
                        type_name(&t)
                    ));
                }
            }
            if name.contains("trunc") {
                return Ok(super::date_functions::date_trunc(part, values[0].clone()));
            } else if between {
                // date_diff counts the boundaries crossed; date_sub (DuckDB) the whole parts.
                let ts = DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, None);
                let values = values.into_iter().map(|v| v.cast(&ts)).collect();
                let func = match name.contains("diff") {
                    true => ScalarFunction::DateDiff(part),
                    false => ScalarFunction::DateSub(part),
                };
                (func, values, DataType::Int64)
            } else {
                (ScalarFunction::DatePart(part), values, DataType::Int64)
            }
        }
        _ => {
            if let Some(bound) = super::maps::map_function(&name, &args) {
                return bound;
            }
            if let Some(bound) = super::interval_ops::interval_epoch_units(&name, &args) {
                return bound;
            }
            if let Some(bound) = super::date_functions::temporal_epoch_units(&name, &args) {
                return bound;
            }
            if let Some(bound) = super::duckdb_functions::duckdb_function(&name, &args) {
                return bound;
            }
            // `age(x)`: from midnight of the current date, as in Postgres.
            if let ("age", [value]) = (name.as_str(), args.as_slice()) {
                let today = super::clock::clock_function("current_date", &[], ctx)
                    .expect("current_date is a clock function")?;
                let both = [today, value.clone()];
                return super::date_functions::date_function("age", &both)
                    .expect("age is a date function");
            }
            if let Some(bound) = super::date_functions::date_function(&name, &args) {
                return bound;
            }
            if let Some(bound) = super::list_picks::list_pick_function(&name, &args) {
                return bound;
            }
            if let Some(bound) = super::math_functions::math_function(&name, &args) {
                return bound;
            }
            if name == "random" {
                return super::math_functions::random(&args);
            }
            if matches!(name.as_str(), "gen_random_uuid" | "uuid") {
                expect_arity(&name, &args, 0)?;
                return Ok(Expr::Function {
                    func: ScalarFunction::RandomUuid,
                    args: Vec::new(),
                    data_type: DataType::Utf8,
                });
            }
            if let Some(bound) = super::text_functions::text_function(&name, &args) {
                return bound;
            }
            if let Some(bound) = super::pg_format::pg_format_function(&name, &args, ctx) {
                return bound;
            }
            if let Some(bound) = super::arrays::array_function(&name, &args) {
                return bound;
            }
            if let Some(bound) = super::vectors::vector_function(&name, &args) {
                return bound;
            }
            if name == "getvariable" {
                return match (args.as_slice(), ctx.binder()) {
                    ([Expr::Literal(ScalarValue::Utf8(variable))], Some(binder)) => {
                        Ok(Expr::Literal(binder.variable(variable)))
                    }
                    ([Expr::Literal(ScalarValue::Utf8(_))], None) => Err(unsupported!(
                        "getvariable() here: variables belong to a session"
                    )),
                    _ => Err(bind_err!(
                        "getvariable takes a variable's name as constant text"
                    )),
                };
            }
            if matches!(name.as_str(), "current_database" | "current_catalog") && args.is_empty() {
                let database = ctx
                    .binder()
                    .map_or(crate::system_tables::CATALOG, |b| b.database());
                return Ok(Expr::Literal(ScalarValue::Utf8(database.to_string())));
            }
            if let ("pg_total_relation_size" | "pg_relation_size" | "pg_table_size", [oid]) =
                (name.as_str(), args.as_slice())
                && let Some(binder) = ctx.binder()
            {
                return Ok(binder.relation_sizes(oid.clone()));
            }
            if let (
                Some(binder),
                "current_setting",
                Some(Expr::Literal(ScalarValue::Utf8(setting))),
            ) = (ctx.binder(), name.as_str(), args.first())
                && setting.eq_ignore_ascii_case("timezone")
            {
                return Ok(Expr::Literal(ScalarValue::Utf8(binder.time_zone().into())));
            }
            if let Some(binder) = ctx.binder() {
                match (name.as_str(), args.as_slice()) {
                    ("pg_get_indexdef", [oid]) => {
                        return Ok(binder.index_definitions(oid.clone(), None));
                    }
                    ("pg_get_indexdef", [oid, column, _pretty]) => {
                        let column = Some(column.clone());
                        return Ok(binder.index_definitions(oid.clone(), column));
                    }
                    ("obj_description", [oid, ..]) => {
                        return Ok(binder.comments(oid.clone(), None));
                    }
                    ("col_description", [oid, column]) => {
                        return Ok(binder.comments(oid.clone(), Some(column.clone())));
                    }
                    ("pg_get_viewdef", [oid, ..]) => {
                        return Ok(binder.view_definitions(oid.clone()));
                    }
                    ("pg_get_constraintdef", [oid, ..]) => {
                        return Ok(binder.constraint_definitions(oid.clone()));
                    }
                    _ => {}
                }
            }
            return session_function(&name, &args)
                .ok_or_else(|| bind_err!("function {name} does not exist"));
        }
    };
    Ok(Expr::Function {
        func,
        args,
        data_type,
    })
}

/// An error unless `name` was called with `n` arguments.
/// `constant_or_null(c, x, ...)` (DuckDB): `c`, or NULL where any `x` is NULL.
fn constant_or_null(args: Vec<Expr>) -> Result<Expr> {
    let Some((constant, checked)) = args.split_first().filter(|(_, rest)| !rest.is_empty()) else {
        return Err(bind_err!(
            "constant_or_null takes a value and at least one argument"
        ));
    };
    let data_type = constant.data_type();
    let any_null = checked
        .iter()
        .map(|arg| Expr::IsNull(Box::new(arg.clone())))
        .reduce(|left, right| Expr::Binary {
            op: crate::expr::BinaryOp::Or,
            left: Box::new(left),
            right: Box::new(right),
        })
        .expect("at least one argument");
    Ok(Expr::Case {
        branches: vec![(any_null, Expr::Literal(ScalarValue::Null).cast(&data_type))],
        otherwise: Some(Box::new(constant.clone())),
        data_type,
    })
}

/// `assert_true(condition [, message])` (DuckDB, as Spark's): NULL where the condition holds,
/// an error naming the message (or "Assertion failed") where it is false or NULL.
fn assert_true(args: Vec<Expr>) -> Result<Expr> {
    use crate::expr::BinaryOp;
    let (condition, message) = match args.as_slice() {
        [condition] => (condition, None),
        [condition, message] => (condition, Some(message)),
        _ => {
            return Err(bind_err!(
                "assert_true takes a condition and an optional message"
            ));
        }
    };
    let condition = super::expr::boolean(condition.clone(), "assert_true")?;
    let text = |s: &str| Expr::Literal(ScalarValue::Utf8(s.to_string()));
    let failed = text("Assertion failed");
    let message = match message {
        None => failed,
        Some(m) if matches!(m.data_type(), DataType::Utf8 | DataType::Null) => Expr::Function {
            func: ScalarFunction::Coalesce,
            args: vec![
                Expr::Binary {
                    op: BinaryOp::Concat,
                    left: Box::new(text("Assertion: ")),
                    right: Box::new(m.clone().cast(&DataType::Utf8)),
                },
                failed,
            ],
            data_type: DataType::Utf8,
        },
        Some(m) => {
            return Err(bind_err!(
                "assert_true's message must be text, not {}",
                type_name(&m.data_type())
            ));
        }
    };
    let holds = Expr::Function {
        func: ScalarFunction::Coalesce,
        args: vec![condition, Expr::Literal(ScalarValue::Boolean(false))],
        data_type: DataType::Boolean,
    };
    Ok(Expr::Case {
        branches: vec![(holds, Expr::Literal(ScalarValue::Null))],
        otherwise: Some(Box::new(Expr::Function {
            func: ScalarFunction::RaiseError,
            args: vec![message],
            data_type: DataType::Null,
        })),
        data_type: DataType::Null,
    })
}

pub(super) fn expect_arity(name: &str, args: &[Expr], n: usize) -> Result<()> {
    if args.len() == n {
        Ok(())
    } else {
        Err(bind_err!(
            "{name} takes {n} argument(s), got {}",
            args.len()
        ))
    }
}

pub(super) fn strings(args: Vec<Expr>) -> Vec<Expr> {
    args.into_iter().map(|a| a.cast(&DataType::Utf8)).collect()
}

pub(super) fn numbers(name: &str, args: &[Expr]) -> Result<()> {
    for a in args {
        let t = a.data_type();
        if !is_numeric(&t) && t != DataType::Null {
            return Err(bind_err!("{name} needs numbers, not {}", type_name(&t)));
        }
    }
    Ok(())
}

/// A date part named in a string (`'month'`, `'year'`...).
pub(super) fn part_by_name(name: &str) -> Result<DatePart> {
    let lower = name.to_lowercase();
    // DuckDB's short names, some of which end in an `s` that is no plural.
    match lower.as_str() {
        "s" => return Ok(DatePart::Second),
        "m" => return Ok(DatePart::Minute),
        "ms" | "msecs" => return Ok(DatePart::Millisecond),
        "us" | "usecs" => return Ok(DatePart::Microsecond),
        _ => {}
    }
    Ok(match lower.trim_end_matches('s') {
        "year" => DatePart::Year,
        "quarter" => DatePart::Quarter,
        "month" => DatePart::Month,
        "week" => DatePart::Week,
        "day" => DatePart::Day,
        "dow" | "dayofweek" => DatePart::DayOfWeek,
        "doy" | "dayofyear" => DatePart::DayOfYear,
        "hour" => DatePart::Hour,
        "minute" => DatePart::Minute,
        "second" => DatePart::Second,
        "millisecond" | "msecond" => DatePart::Millisecond,
        "microsecond" | "usecond" => DatePart::Microsecond,
        "isodow" => DatePart::IsoDayOfWeek,
        "isoyear" => DatePart::IsoYear,
        "decade" => DatePart::Decade,
        "century" | "centurie" => DatePart::Century,
        "millennium" | "millennia" | "mil" => DatePart::Millennium,
        "yy" | "yyyy" | "yr" | "y" => DatePart::Year,
        "mon" | "mm" => DatePart::Month,
        "d" | "dd" | "dayofmonth" => DatePart::Day,
        "h" | "hr" => DatePart::Hour,
        "min" | "mi" => DatePart::Minute,
        "sec" => DatePart::Second,
        "msec" => DatePart::Millisecond,
        "usec" => DatePart::Microsecond,
        "w" | "weekofyear" => DatePart::Week,
        "weekday" => DatePart::DayOfWeek,
        other => return Err(bind_err!("unknown date part '{other}'")),
    })
}

/// `current_user`, `session_user`, `current_role`, `current_catalog`, `current_schema` and
/// `user` as SQL writes them, without parentheses; `database` is the lake's name.
pub(super) fn value_function(name: &str, database: &str) -> Option<Expr> {
    match name {
        "current_catalog" => Some(Expr::Literal(ScalarValue::Utf8(database.to_string()))),
        "current_user" | "session_user" | "current_role" | "current_schema" | "user" => {
            session_function(name, &[])
        }
        _ => None,
    }
}

/// The value of a setting clients read with `current_setting`, as Pondra has it.
fn setting(name: &str) -> Option<&'static str> {
    Some(match name.to_ascii_lowercase().as_str() {
        "search_path" => "public",
        "server_version" => crate::system_tables::SERVER_VERSION,
        "server_version_num" => "140000",
        "server_encoding" | "client_encoding" => "UTF8",
        "timezone" => "UTC",
        "datestyle" => "ISO, MDY",
        "standard_conforming_strings" => "on",
        "integer_datetimes" => "on",
        "transaction_isolation" | "default_transaction_isolation" => "repeatable read",
        "max_identifier_length" => "63",
        "is_superuser" => "on",
        _ => return None,
    })
}

/// What clients ask of the session and the catalog, answered as constants: Pondra has one
/// schema, one owner and no search path to speak of.
fn session_function(name: &str, args: &[Expr]) -> Option<Expr> {
    let text = |s: &str| Expr::Literal(ScalarValue::Utf8(s.to_string()));
    Some(match (name, args.len()) {
        ("version", 0) => text(&format!(
            "PostgreSQL {} (Pondra {})",
            crate::system_tables::SERVER_VERSION,
            env!("CARGO_PKG_VERSION")
        )),
        ("current_schema", 0) => text("public"),
        ("current_schemas", 1) => {
            text("{pg_catalog,public}").cast(&crate::types::list_of(DataType::Utf8))
        }
        ("current_user" | "session_user" | "current_role" | "user", 0) => {
            text(crate::system_tables::OWNER)
        }
        ("pg_get_userbyid", 1) => text(crate::system_tables::OWNER),
        ("pg_encoding_to_char", 1) => text("UTF8"),
        (
            "pg_table_is_visible"
            | "pg_function_is_visible"
            | "pg_type_is_visible"
            | "pg_collation_is_visible",
            1,
        ) => Expr::Literal(ScalarValue::Boolean(true)),
        ("current_setting", 1 | 2) => match &args[0] {
            Expr::Literal(ScalarValue::Utf8(name)) => match setting(name) {
                Some(value) => text(value),
                None if args.len() == 2 => Expr::Literal(ScalarValue::Null).cast(&DataType::Utf8),
                None => return None,
            },
            _ => return None,
        },
        // Settings are the session's; Pondra's have one value whatever is set.
        ("set_config", 3) => args[1].clone().cast(&DataType::Utf8),
        // A type by name (`to_regtype('hstore')`): its oid, NULL for a type Pondra has not.
        ("to_regtype", 1) => match &args[0] {
            Expr::Literal(ScalarValue::Utf8(name)) => {
                let bare = name.strip_prefix("pg_catalog.").unwrap_or(name);
                match crate::system_tables::type_names().find(|(_, n)| n == bare) {
                    Some((oid, _)) => Expr::Literal(ScalarValue::Int32(oid)),
                    None => Expr::Literal(ScalarValue::Null).cast(&DataType::Int32),
                }
            }
            _ => Expr::Literal(ScalarValue::Null).cast(&DataType::Int32),
        },
        // No column draws from a sequence.
        ("pg_get_serial_sequence", 2) => Expr::Literal(ScalarValue::Null).cast(&DataType::Utf8),
        ("pg_get_expr", _) => Expr::Literal(ScalarValue::Null).cast(&DataType::Utf8),
        ("format_type", 2) => {
            let oid = args[0].clone().cast(&DataType::Int32);
            let null = Expr::Literal(ScalarValue::Null).cast(&DataType::Utf8);
            // NULL for NULL, "???" for an oid that is no type, as in Postgres.
            Expr::Case {
                branches: std::iter::once((Expr::IsNull(Box::new(oid.clone())), null))
                    .chain(crate::system_tables::type_names().map(|(id, name)| {
                        let matches = Expr::Binary {
                            op: crate::expr::BinaryOp::Eq,
                            left: Box::new(oid.clone()),
                            right: Box::new(Expr::Literal(ScalarValue::Int32(id))),
                        };
                        (matches, text(&name))
                    }))
                    .collect(),
                otherwise: Some(Box::new(text("???"))),
                data_type: DataType::Utf8,
            }
        }
        // Definitions of objects Pondra has none of (statistics objects, triggers, rules,
        // stored functions): only reached for rows of empty catalog tables. Indexes' and
        // constraints' are NULL here only outside a query over the catalog.
        (
            "shobj_description"
            | "pg_get_statisticsobjdef_columns"
            | "pg_get_triggerdef"
            | "pg_get_ruledef"
            | "pg_get_indexdef"
            | "pg_get_constraintdef"
            | "pg_get_function_result"
            | "pg_get_function_arguments"
            | "pg_get_partkeydef",
            _,
        ) => Expr::Literal(ScalarValue::Null).cast(&DataType::Utf8),
        // Pondra keeps no index structures on disk, and counts no scans.
        ("pg_indexes_size", 1) => Expr::Literal(ScalarValue::Int64(0)),
        ("pg_stat_get_numscans", 1) => Expr::Literal(ScalarValue::Null).cast(&DataType::Int64),
        // Pondra has no publications (logical replication).
        ("pg_relation_is_publishable", 1) => Expr::Literal(ScalarValue::Boolean(false)),
        _ => return None,
    })
}
