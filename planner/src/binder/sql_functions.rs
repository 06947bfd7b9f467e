//! Typed SQL functions (ADR 0081): `CREATE [OR REPLACE] FUNCTION name(a INT, ...) RETURNS type
//! [LANGUAGE sql] AS $$ SELECT ... $$ | RETURN expr`, one catalog entry per overload, and each
//! call bound inline: the overload its arguments fit, its body with each parameter the
//! argument cast to the parameter's type, the result cast to the return type.

use std::cell::Cell;
use std::ops::ControlFlow;

use arrow::datatypes::DataType;
use pondra_catalog::{
    FunctionLanguage, Signature, SqlType, StructField, TableDef, TableKind, function_name,
};
use sqlparser::ast;

use super::expr::{Context, bind_expr, type_name};
use super::macros::parse_expression;
use super::{Binder, normalize, object_name};
use crate::expr::{Expr, PythonCall, PythonFunction};
use crate::logical::LogicalPlan;
use crate::plan::Plan;
use crate::types::{is_numeric, sql_type_from_ast};
use crate::{Result, bind_err, unsupported};

/// The names `LANGUAGE` takes for Python: its own, and PostgreSQL's PL/Python's.
const PYTHON_NAMES: [&str; 4] = ["python", "python3", "plpython3u", "plpythonu"];

/// How deep functions may call functions while a call is bound.
const MAX_FUNCTION_DEPTH: usize = 32;

thread_local! {
    /// Calls of SQL functions being bound on this thread, one inside another.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

impl Binder<'_> {
    /// `CREATE [OR REPLACE] FUNCTION name(a type, ...) RETURNS type [LANGUAGE sql] AS ...`.
    pub(super) fn bind_create_function(&self, create: &ast::CreateFunction) -> Result<Plan> {
        let name = object_name(&create.name)?;
        if name.contains('.') {
            return Err(unsupported!("a function in a schema ({name})"));
        }
        if create.temporary {
            return Err(unsupported!(
                "TEMP functions: a function is kept in the lake"
            ));
        }
        let language = routine_language("functions", create)?;
        let vectorized = vectorized_option(&name, language, create.options.as_deref())?;
        let mut table = false;
        let returns = match &create.return_type {
            Some(ast::FunctionReturnType::DataType(ast::DataType::Table(columns))) => {
                if language != FunctionLanguage::Sql {
                    return Err(unsupported!("Python table functions (RETURNS TABLE)"));
                }
                table = true;
                table_columns(&name, columns.as_deref())?
            }
            Some(ast::FunctionReturnType::DataType(data_type)) => sql_type_from_ast(data_type)?,
            Some(ast::FunctionReturnType::SetOf(_)) => {
                return Err(unsupported!(
                    "set-returning functions (RETURNS SETOF; ADR 0081)"
                ));
            }
            None => return Err(bind_err!("function {name} needs RETURNS and a type")),
        };
        let (parameters, parameter_types) = routine_parameters("function", &name, create)?;
        let body = match language {
            FunctionLanguage::Sql if table => table_body(&name, &parameters, create)?,
            FunctionLanguage::Sql => function_body(&name, create.function_body.as_ref())?,
            FunctionLanguage::Python => quoted_body(&name, &parameters, create, language)?,
        };
        if create.or_replace
            && self
                .snapshot
                .tables
                .contains_key(&function_name(&name, &parameter_types))
        {
            self.check_no_view_calls(&name, "replace")?;
        }
        let kind = TableKind::Macro {
            defaults: vec![None; parameters.len()],
            parameters,
            body,
            signature: Some(Signature {
                parameter_types: parameter_types.clone(),
                returns,
                language,
                vectorized,
                table,
            }),
        };
        Ok(Plan::CreateView {
            view: TableDef::new(function_name(&name, &parameter_types), Vec::new(), kind),
            if_not_exists: create.if_not_exists,
            or_replace: create.or_replace,
        })
    }

    /// `DROP FUNCTION name(types)`: the typed function of those types. Without types, the one
    /// function of the name, when there is one; `None` when the name has no typed function
    /// (a macro's `DROP FUNCTION`).
    pub(super) fn bind_drop_function(
        &self,
        desc: &ast::FunctionDesc,
        if_exists: bool,
    ) -> Result<Option<Plan>> {
        let name = object_name(&desc.name)?;
        let overloads = self.snapshot.functions_named(&name);
        let drop = |key: String| Plan::DropTable {
            name: key,
            if_exists,
            dependents: Vec::new(),
        };
        if !overloads.is_empty() {
            self.check_no_view_calls(&name, "drop")?;
        }
        let Some(args) = &desc.args else {
            return match overloads.as_slice() {
                [] => Ok(None),
                [only] => Ok(Some(drop(only.name.clone()))),
                _ => Err(bind_err!(
                    "function {name} is overloaded: name the argument types of the one to drop"
                )),
            };
        };
        let types = args
            .iter()
            .map(|a| sql_type_from_ast(&a.data_type))
            .collect::<Result<Vec<_>>>()?;
        let key = function_name(&name, &types);
        if overloads.iter().any(|f| f.name == key) || if_exists {
            return Ok(Some(drop(key)));
        }
        let types: Vec<String> = types.iter().map(ToString::to_string).collect();
        Err(bind_err!(
            "function {name}({}) does not exist",
            types.join(", ")
        ))
    }
}

impl Binder<'_> {
    /// Refuses to change function `name` while a materialized view calls it, directly or
    /// through other functions: the view's rows were computed with it as it is.
    fn check_no_view_calls(&self, name: &str, what: &str) -> Result<()> {
        let tables = &self.snapshot.tables;
        let mut callers = vec![name.to_string()];
        let mut at = 0;
        while at < callers.len() {
            for def in tables.values() {
                if let TableKind::Macro { body, .. } = &def.kind {
                    let caller = def.name.split('(').next().unwrap_or_default();
                    let caller = caller.trim_end_matches("$macro");
                    if calls(body, &callers[at]) && !callers.iter().any(|c| c == caller) {
                        callers.push(caller.to_string());
                    }
                }
            }
            at += 1;
        }
        let views: Vec<&str> = tables
            .values()
            .filter(|t| match &t.kind {
                TableKind::MaterializedView { sql, .. } => callers.iter().any(|c| calls(sql, c)),
                _ => false,
            })
            .map(|t| t.name.as_str())
            .collect();
        if views.is_empty() {
            return Ok(());
        }
        Err(bind_err!(
            "cannot {what} function {name}: the materialized view(s) {} call it; drop them first",
            views.join(", ")
        ))
    }
}

/// Whether SQL `text` calls a function named `name`: the name, as a whole word, before `(`.
fn calls(text: &str, name: &str) -> bool {
    let text = text.to_lowercase();
    let name = name.to_lowercase();
    let is_part = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(&name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].trim_start();
        !before.is_some_and(is_part) && after.starts_with('(')
    })
}

/// The body of a SQL function as one expression's text: `RETURN expr`'s expression; for `AS
/// '...'`, a `SELECT expr` without FROM is its expression, any other query a scalar subquery.
fn function_body(name: &str, body: Option<&ast::CreateFunctionBody>) -> Result<String> {
    let text = match body {
        Some(ast::CreateFunctionBody::Return(expr)) => return Ok(expr.to_string()),
        Some(
            ast::CreateFunctionBody::AsBeforeOptions { body, .. }
            | ast::CreateFunctionBody::AsAfterOptions(body),
        ) => match body {
            ast::Expr::Value(value) => match &value.value {
                ast::Value::SingleQuotedString(text) => text.clone(),
                ast::Value::DollarQuotedString(quoted) => quoted.value.clone(),
                _ => return Err(bind_err!("function {name}'s body is a string of SQL")),
            },
            _ => return Err(bind_err!("function {name}'s body is a string of SQL")),
        },
        Some(_) => return Err(unsupported!("BEGIN ... END bodies of SQL functions")),
        None => return Err(bind_err!("function {name} has no body")),
    };
    let text = text.trim().trim_end_matches(';').trim();
    let query = super::changes::parse_query(text)?;
    if let ast::SetExpr::Select(select) = query.body.as_ref()
        && select.from.is_empty()
        && select.selection.is_none()
        && query.order_by.is_none()
        && let [item] = select.projection.as_slice()
    {
        match item {
            ast::SelectItem::UnnamedExpr(expr) | ast::SelectItem::ExprWithAlias { expr, .. } => {
                return Ok(expr.to_string());
            }
            _ => {}
        }
    }
    Ok(format!("({text})"))
}

/// The language of a function or procedure being created: SQL unless it says Python.
pub(super) fn routine_language(
    what: &str,
    create: &ast::CreateFunction,
) -> Result<FunctionLanguage> {
    match create.language.as_ref().map(|l| l.value.to_lowercase()) {
        None => Ok(FunctionLanguage::Sql),
        Some(language) if language == "sql" => Ok(FunctionLanguage::Sql),
        Some(language) if PYTHON_NAMES.contains(&language.as_str()) => Ok(FunctionLanguage::Python),
        Some(language) => Err(unsupported!("{what} in LANGUAGE {language}")),
    }
}

/// The parameters of a function or procedure being created: their names (`$n` for one without)
/// and types. Only IN parameters without defaults are taken.
pub(super) fn routine_parameters(
    what: &str,
    name: &str,
    create: &ast::CreateFunction,
) -> Result<(Vec<String>, Vec<SqlType>)> {
    let mut parameters = Vec::new();
    let mut parameter_types = Vec::new();
    for (at, arg) in create.args.iter().flatten().enumerate() {
        if !matches!(arg.mode, None | Some(ast::ArgMode::In)) {
            return Err(unsupported!("OUT and INOUT parameters of a {what}"));
        }
        if arg.default_expr.is_some() {
            return Err(unsupported!("defaults of a {what}'s parameters"));
        }
        let parameter = arg.name.as_ref().map_or(format!("${}", at + 1), normalize);
        if parameters.contains(&parameter) {
            return Err(bind_err!(
                "{what} {name} has two parameters named {parameter}"
            ));
        }
        parameters.push(parameter);
        parameter_types.push(sql_type_from_ast(&arg.data_type)?);
    }
    Ok((parameters, parameter_types))
}

/// The columns of `RETURNS TABLE (name type, ...)`, as a struct type.
fn table_columns(name: &str, columns: Option<&[ast::ColumnDef]>) -> Result<SqlType> {
    let columns = columns.unwrap_or_default();
    if columns.is_empty() {
        return Err(bind_err!("function {name} returns a table of no columns"));
    }
    let mut fields: Vec<StructField> = Vec::new();
    for column in columns {
        let field = normalize(&column.name);
        if fields.iter().any(|f| f.name == field) {
            return Err(bind_err!(
                "function {name} returns two columns named {field}"
            ));
        }
        fields.push(StructField {
            name: field,
            sql_type: sql_type_from_ast(&column.data_type)?,
        });
    }
    Ok(SqlType::Struct(fields))
}

/// A table function's body: one query, kept as written; it must parse now.
fn table_body(name: &str, parameters: &[String], create: &ast::CreateFunction) -> Result<String> {
    let text = quoted_body(name, parameters, create, FunctionLanguage::Sql)?;
    let text = text.trim().trim_end_matches(';').trim().to_string();
    super::changes::parse_query(&text)
        .map_err(|e| bind_err!("function {name}'s body is one query: {e}"))?;
    Ok(text)
}

/// `OPTIONS (vectorized = true | false)`: whether a Python function is called once per batch
/// of rows, on arrays. Any other option, or an option on a SQL function, is refused.
fn vectorized_option(
    name: &str,
    language: FunctionLanguage,
    options: Option<&[ast::SqlOption]>,
) -> Result<bool> {
    let mut vectorized = false;
    for option in options.into_iter().flatten() {
        let ast::SqlOption::KeyValue { key, value } = option else {
            return Err(bind_err!(
                "function {name}: options are written key = value"
            ));
        };
        if !key.to_string().eq_ignore_ascii_case("vectorized") {
            return Err(bind_err!(
                "function {name}: unknown option {key} (functions take vectorized)"
            ));
        }
        if language != FunctionLanguage::Python {
            return Err(bind_err!(
                "function {name}: only a Python function can be vectorized"
            ));
        }
        vectorized = match value.to_string().to_lowercase().trim_matches('\'') {
            "true" | "on" | "1" => true,
            "false" | "off" | "0" => false,
            other => {
                return Err(bind_err!(
                    "function {name}: vectorized is true or false, not {other}"
                ));
            }
        };
    }
    Ok(vectorized)
}

/// The body of a routine written in quotes after AS (a Python function's, a procedure's), as
/// written. A Python body is statements ending in `return`, as PL/Python takes it, so its
/// parameters must have names Python can use.
pub(super) fn quoted_body(
    name: &str,
    parameters: &[String],
    create: &ast::CreateFunction,
    language: FunctionLanguage,
) -> Result<String> {
    if language == FunctionLanguage::Python {
        for parameter in parameters {
            let valid = parameter
                .chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
                && parameter.chars().all(|c| c.is_alphanumeric() || c == '_');
            if !valid {
                return Err(bind_err!(
                    "{name}: parameter {parameter} needs a name Python can use"
                ));
            }
        }
    }
    let body = match create.function_body.as_ref() {
        Some(
            ast::CreateFunctionBody::AsBeforeOptions { body, .. }
            | ast::CreateFunctionBody::AsAfterOptions(body),
        ) => match body {
            ast::Expr::Value(value) => match &value.value {
                ast::Value::SingleQuotedString(text) => Some(text.clone()),
                ast::Value::DollarQuotedString(quoted) => Some(quoted.value.clone()),
                _ => None,
            },
            _ => None,
        },
        Some(_) => None,
        None => return Err(bind_err!("{name} has no body")),
    };
    let Some(body) = body.filter(|b| !b.trim().is_empty()) else {
        return Err(bind_err!(
            "{name}'s body is text in quotes after AS: AS $$ ... $$"
        ));
    };
    Ok(body)
}

/// A call of the typed SQL function `name`, bound; `None` when no typed function has the name.
/// `ast_args` are the call's arguments as written, `args` the same bound (for their types).
pub(super) fn bind_typed_call(
    name: &str,
    ast_args: &[&ast::Expr],
    args: &[Expr],
    ctx: &mut Context<'_>,
) -> Result<Option<Expr>> {
    let Some(binder) = ctx.binder() else {
        return Ok(None);
    };
    let overloads = binder.snapshot.functions_named(name);
    if overloads.is_empty() {
        return Ok(None);
    }
    let types: Vec<DataType> = args.iter().map(Expr::data_type).collect();
    let signature_types = |def: &TableDef| match &def.kind {
        TableKind::Macro {
            signature: Some(signature),
            ..
        } => Some(signature.parameter_types.clone()),
        _ => None,
    };
    let def = chosen_overload("function", name, &overloads, &types, signature_types)?;
    let TableKind::Macro {
        parameters,
        body,
        signature: Some(signature),
        ..
    } = &def.kind
    else {
        unreachable!("a typed function's entry has a signature");
    };
    if signature.table {
        return Err(bind_err!(
            "function {name} returns a table: call it in FROM, as SELECT * FROM {name}(...)"
        ));
    }
    if signature.language == FunctionLanguage::Python {
        return python_call(name, parameters, body, signature, args).map(Some);
    }
    let mut body = parse_expression(body)?;
    let cast = |at: usize| -> Result<ast::Expr> {
        let argument = ast_args[at].to_string();
        let parameter_type = &signature.parameter_types[at];
        parse_expression(&format!("CAST(({argument}) AS {parameter_type})"))
    };
    let casts = (0..parameters.len())
        .map(cast)
        .collect::<Result<Vec<_>>>()?;
    substitute_parameters(&mut body, parameters, &casts);
    let returns = &signature.returns;
    let call = parse_expression(&format!("CAST(({body}) AS {returns})"))?;
    let depth = DEPTH.with(|d| d.get());
    if depth >= MAX_FUNCTION_DEPTH {
        return Err(bind_err!(
            "functions call functions more than {MAX_FUNCTION_DEPTH} deep (does {name} call itself?)"
        ));
    }
    DEPTH.with(|d| d.set(depth + 1));
    let bound = bind_expr(&call, ctx);
    DEPTH.with(|d| d.set(depth));
    bound.map(Some)
}

/// Puts `arguments[i]` in place of each use of parameter i in `body`: by name, or as `$n`.
fn substitute_parameters<V: ast::VisitMut>(
    body: &mut V,
    parameters: &[String],
    arguments: &[ast::Expr],
) {
    let _ = ast::visit_expressions_mut(body, |expr| {
        let position = match expr {
            ast::Expr::Identifier(ident) => parameters.iter().position(|p| *p == normalize(ident)),
            ast::Expr::Value(value) => match &value.value {
                ast::Value::Placeholder(placeholder) => parameters
                    .iter()
                    .position(|p| p == placeholder)
                    .or_else(|| {
                        let number: usize = placeholder.strip_prefix('$')?.parse().ok()?;
                        (1..=arguments.len()).contains(&number).then(|| number - 1)
                    }),
                _ => None,
            },
            _ => None,
        };
        if let Some(at) = position {
            *expr = ast::Expr::Nested(Box::new(arguments[at].clone()));
        }
        ControlFlow::<()>::Continue(())
    });
}

impl Binder<'_> {
    /// `FROM name(args)` of a table function (`RETURNS TABLE`): its body's query over the
    /// arguments, its columns cast to the declared types and named as declared. `None` when
    /// `name` has no table function.
    pub(super) fn bind_table_function_call(
        &self,
        name: &str,
        args: &[ast::FunctionArg],
    ) -> Result<Option<LogicalPlan>> {
        let overloads: Vec<_> = self
            .snapshot
            .functions_named(name)
            .into_iter()
            .filter(|def| signature_of(def).is_some_and(|s| s.table))
            .collect();
        if overloads.is_empty() {
            return Ok(None);
        }
        let ast_args = args
            .iter()
            .map(|arg| match arg {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(expr)) => Ok(expr),
                _ => Err(unsupported!("named arguments of table function {name}")),
            })
            .collect::<Result<Vec<_>>>()?;
        let empty = super::scope::Scope::default();
        let types = ast_args
            .iter()
            .map(|arg| {
                let mut ctx = Context::plain_for(arg, &empty, "FROM", Some(self));
                Ok(bind_expr(arg, &mut ctx)?.data_type())
            })
            .collect::<Result<Vec<_>>>()?;
        let parameter_types = |def: &TableDef| signature_of(def).map(|s| s.parameter_types.clone());
        let def = chosen_overload("function", name, &overloads, &types, parameter_types)?;
        let (
            TableKind::Macro {
                parameters, body, ..
            },
            Some(signature),
        ) = (&def.kind, signature_of(def))
        else {
            unreachable!("a table function is a macro's kind with a signature");
        };
        let SqlType::Struct(columns) = &signature.returns else {
            return Err(bind_err!("table function {name} has no columns"));
        };
        let casts = ast_args
            .iter()
            .zip(&signature.parameter_types)
            .map(|(arg, to)| parse_expression(&format!("CAST(({arg}) AS {to})")))
            .collect::<Result<Vec<_>>>()?;
        let mut query = super::changes::parse_query(body)?;
        substitute_parameters(&mut query, parameters, &casts);
        let depth = DEPTH.with(|d| d.get());
        if depth >= MAX_FUNCTION_DEPTH {
            return Err(bind_err!(
                "functions call functions more than {MAX_FUNCTION_DEPTH} deep (does {name} call itself?)"
            ));
        }
        DEPTH.with(|d| d.set(depth + 1));
        let plan = self.bind_query(&query);
        DEPTH.with(|d| d.set(depth));
        let plan = plan?;
        let schema = plan.schema();
        if schema.fields().len() != columns.len() {
            return Err(bind_err!(
                "table function {name} declares {} columns but its query returns {}",
                columns.len(),
                schema.fields().len()
            ));
        }
        let exprs = columns
            .iter()
            .enumerate()
            .map(|(i, column)| Expr::column_of(&schema, i).cast(&column.sql_type.to_arrow()))
            .collect();
        let names = columns.iter().map(|c| c.name.clone()).collect();
        Ok(Some(plan.project(exprs, names)))
    }
}

/// A typed function's signature; none for a macro.
fn signature_of(def: &TableDef) -> Option<&Signature> {
    match &def.kind {
        TableKind::Macro {
            signature: Some(signature),
            ..
        } => Some(signature),
        _ => None,
    }
}

/// A call of Python function `name`: its arguments cast to the parameters' types, evaluated in
/// a worker process.
fn python_call(
    name: &str,
    parameters: &[String],
    body: &str,
    signature: &Signature,
    args: &[Expr],
) -> Result<Expr> {
    let args = args
        .iter()
        .zip(&signature.parameter_types)
        .map(|(arg, parameter)| arg.clone().cast(&parameter.to_arrow()))
        .collect();
    let function = PythonFunction {
        name: name.to_string(),
        parameters: parameters.to_vec(),
        source: body.to_string(),
        vectorized: signature.vectorized,
        returns: signature.returns.to_arrow(),
    };
    Ok(Expr::Python(Box::new(PythonCall {
        function: std::sync::Arc::new(function),
        args,
    })))
}

/// The overload of `name` that arguments of `types` fit best: every argument its parameter's
/// type, else the most such with the rest convertible (numbers to numbers, text to text,
/// NULL to anything). Two that fit equally well are an error naming them. `what` says what
/// the overloads are (function, procedure), `parameter_types` reads an overload's types.
pub(super) fn chosen_overload<'d>(
    what: &str,
    name: &str,
    overloads: &[&'d std::sync::Arc<TableDef>],
    types: &[DataType],
    parameter_types: impl Fn(&TableDef) -> Option<Vec<SqlType>>,
) -> Result<&'d std::sync::Arc<TableDef>> {
    let mut best: Vec<(&std::sync::Arc<TableDef>, usize)> = Vec::new();
    for &def in overloads {
        let Some(parameters) = parameter_types(def) else {
            continue;
        };
        let Some(score) = fit(&parameters, types) else {
            continue;
        };
        match best.first().map(|(_, s)| *s) {
            Some(top) if top > score => {}
            Some(top) if top == score => best.push((def, score)),
            _ => best = vec![(def, score)],
        }
    }
    let shown: Vec<String> = types.iter().map(type_name).collect();
    match best.as_slice() {
        [(def, _)] => Ok(def),
        [] => Err(bind_err!(
            "{what} {name}({}) does not exist: no overload of {name} takes these arguments",
            shown.join(", ")
        )),
        many => {
            let names: Vec<&str> = many
                .iter()
                .map(|(d, _)| d.name.split('$').next().unwrap_or_default())
                .collect();
            Err(bind_err!(
                "{what} {name}({}) is ambiguous: {} fit equally well",
                shown.join(", "),
                names.join(" and ")
            ))
        }
    }
}

/// How well arguments of `types` fit `parameters`: the count of exact types, or none when one
/// cannot be converted.
fn fit(parameters: &[SqlType], types: &[DataType]) -> Option<usize> {
    if parameters.len() != types.len() {
        return None;
    }
    let mut exact = 0;
    for (parameter, given) in parameters.iter().zip(types) {
        let wanted = parameter.to_arrow();
        let text =
            |t: &DataType| matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View);
        if *given == wanted {
            exact += 1;
        } else if !(*given == DataType::Null
            || (is_numeric(given) && is_numeric(&wanted))
            || (text(given) && text(&wanted)))
        {
            return None;
        }
    }
    Some(exact)
}
