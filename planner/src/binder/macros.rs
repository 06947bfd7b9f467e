//! Scalar macros (ADR 0068): `CREATE MACRO name(a, b := 1) AS expression`, `DROP MACRO`,
//! and the expansion of their calls in a statement's tree before it is bound.

use std::ops::ControlFlow;

use pondra_catalog::{Snapshot, TableDef, TableKind, macro_name};
use sqlparser::ast;

use super::{Binder, normalize, object_name};
use crate::plan::Plan;
use crate::{Result, bind_err, unsupported};

/// How deep macros may call macros before the expansion stops with an error.
const MAX_MACRO_DEPTH: usize = 32;

impl Binder<'_> {
    /// `CREATE [OR REPLACE] MACRO name(parameters) AS expression`.
    pub(super) fn bind_create_macro(
        &self,
        or_replace: bool,
        temporary: bool,
        name: &ast::ObjectName,
        args: Option<&[ast::MacroArg]>,
        definition: &ast::MacroDefinition,
    ) -> Result<Plan> {
        let body = match definition {
            ast::MacroDefinition::Expr(body) => body,
            ast::MacroDefinition::Table(_) => {
                return Err(unsupported!("table macros (CREATE MACRO ... AS TABLE)"));
            }
        };
        if temporary {
            return Err(unsupported!(
                "TEMP macros: a macro is kept in the lake (ADR 0068)"
            ));
        }
        let name = object_name(name)?;
        if name.contains('.') {
            return Err(unsupported!("a macro in a schema ({name})"));
        }
        let args = args.unwrap_or_default();
        let parameters: Vec<String> = args.iter().map(|a| normalize(&a.name)).collect();
        for (i, parameter) in parameters.iter().enumerate() {
            if parameters[..i].contains(parameter) {
                return Err(bind_err!(
                    "macro {name} has two parameters named {parameter}"
                ));
            }
        }
        let defaults = args
            .iter()
            .map(|a| a.default_expr.as_ref().map(ToString::to_string))
            .collect();
        let kind = TableKind::Macro {
            parameters,
            defaults,
            body: body.to_string(),
            signature: None,
        };
        Ok(Plan::CreateView {
            view: TableDef::new(macro_name(&name), Vec::new(), kind),
            if_not_exists: false,
            or_replace,
        })
    }

    /// `DROP MACRO [IF EXISTS] name` (read as `DROP FUNCTION`).
    pub(super) fn bind_drop_macro(&self, drop: &ast::DropFunction) -> Result<Plan> {
        let [function] = drop.func_desc.as_slice() else {
            return Err(unsupported!("dropping more than one macro at once"));
        };
        if let Some(plan) = self.bind_drop_function(function, drop.if_exists)? {
            return Ok(plan);
        }
        let name = object_name(&function.name)?;
        let key = macro_name(&name);
        if self.snapshot.macro_def(&name).is_none() && !drop.if_exists {
            return Err(bind_err!("macro {name} does not exist"));
        }
        Ok(Plan::DropTable {
            name: key,
            if_exists: drop.if_exists,
            dependents: Vec::new(),
        })
    }
}

/// `statement` with every call of a macro of `snapshot` replaced by the macro's body, its
/// parameters by the call's arguments; `None` when it calls none.
pub(super) fn expand_macros(
    snapshot: &Snapshot,
    statement: &ast::Statement,
) -> Result<Option<ast::Statement>> {
    if !snapshot
        .tables
        .values()
        .any(|t| matches!(t.kind, TableKind::Macro { .. }))
    {
        return Ok(None);
    }
    let mut expanded = statement.clone();
    let holds = |e: &ast::Expr| calls_macro(snapshot, e);
    let _ = ast::VisitMut::visit(&mut expanded, &mut NameItems { holds: &holds });
    for _ in 0..MAX_MACRO_DEPTH {
        let mut failure = None;
        let mut changed = false;
        let _ = ast::visit_expressions_mut(&mut expanded, |expr| {
            let ast::Expr::Function(call) = expr else {
                return ControlFlow::Continue(());
            };
            match expansion(snapshot, call) {
                Ok(Some(body)) => {
                    *expr = body;
                    changed = true;
                    ControlFlow::Continue(())
                }
                Ok(None) => ControlFlow::Continue(()),
                Err(e) => {
                    failure = Some(e);
                    ControlFlow::Break(())
                }
            }
        });
        if let Some(e) = failure {
            return Err(e);
        }
        if !changed {
            return Ok(Some(expanded));
        }
    }
    Err(bind_err!(
        "macros call macros more than {MAX_MACRO_DEPTH} deep (does a macro call itself?)"
    ))
}

/// Names each select-list item that `holds` something to be rewritten by the item as
/// written, as DuckDB names it, before the rewrite (a macro's call expanded, say).
pub(super) struct NameItems<'h> {
    pub holds: &'h dyn Fn(&ast::Expr) -> bool,
}

impl ast::VisitorMut for NameItems<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut ast::Query) -> ControlFlow<()> {
        let ast::SetExpr::Select(select) = query.body.as_mut() else {
            return ControlFlow::Continue(());
        };
        for item in &mut select.projection {
            if let ast::SelectItem::UnnamedExpr(expr) = item
                && (self.holds)(expr)
            {
                let alias = ast::Ident::with_quote('"', expr.to_string());
                *item = ast::SelectItem::ExprWithAlias {
                    expr: expr.clone(),
                    alias,
                };
            }
        }
        ControlFlow::Continue(())
    }
}

fn calls_macro(snapshot: &Snapshot, expr: &ast::Expr) -> bool {
    ast::visit_expressions(expr, |e| match e {
        ast::Expr::Function(call) if macro_of(snapshot, call).is_some() => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// The macro a call names, if it names one.
fn macro_of<'s>(snapshot: &'s Snapshot, call: &ast::Function) -> Option<&'s TableDef> {
    let [ast::ObjectNamePart::Identifier(ident)] = call.name.0.as_slice() else {
        return None;
    };
    snapshot.macro_def(&normalize(ident)).map(|t| t.as_ref())
}

/// The body of the macro `call` names, with its arguments in place; `None` when it names
/// no macro.
fn expansion(snapshot: &Snapshot, call: &ast::Function) -> Result<Option<ast::Expr>> {
    let Some(def) = macro_of(snapshot, call) else {
        return Ok(None);
    };
    let name = def.name.trim_end_matches("$macro");
    let TableKind::Macro {
        parameters,
        defaults,
        body,
        ..
    } = &def.kind
    else {
        return Ok(None);
    };
    if call.over.is_some() || call.filter.is_some() || !call.within_group.is_empty() {
        return Err(unsupported!("OVER, FILTER or WITHIN GROUP on macro {name}"));
    }
    let args = arguments(name, call, parameters, defaults)?;
    let mut body = parse_expression(body)?;
    let _ = ast::visit_expressions_mut(&mut body, |expr| {
        if let ast::Expr::Identifier(ident) = expr
            && let Some(at) = parameters.iter().position(|p| *p == normalize(ident))
        {
            *expr = ast::Expr::Nested(Box::new(args[at].clone()));
        }
        ControlFlow::<()>::Continue(())
    });
    Ok(Some(ast::Expr::Nested(Box::new(body))))
}

/// The call's argument for each parameter: positional first, then by name (`p := v`), then
/// the parameter's default.
fn arguments(
    name: &str,
    call: &ast::Function,
    parameters: &[String],
    defaults: &[Option<String>],
) -> Result<Vec<ast::Expr>> {
    let list = match &call.args {
        ast::FunctionArguments::None => &[][..],
        ast::FunctionArguments::List(list) => list.args.as_slice(),
        ast::FunctionArguments::Subquery(_) => {
            return Err(bind_err!("macro {name} takes expressions, not a subquery"));
        }
    };
    let mut given: Vec<Option<ast::Expr>> = vec![None; parameters.len()];
    let mut position = 0;
    for arg in list {
        match arg {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => {
                let slot = given.get_mut(position).ok_or_else(|| {
                    bind_err!("macro {name} takes {} argument(s)", parameters.len())
                })?;
                *slot = Some(e.clone());
                position += 1;
            }
            ast::FunctionArg::Named {
                name: arg_name,
                arg: ast::FunctionArgExpr::Expr(e),
                ..
            } => {
                let wanted = normalize(arg_name);
                let at = parameters
                    .iter()
                    .position(|p| *p == wanted)
                    .ok_or_else(|| bind_err!("macro {name} has no parameter {wanted}"))?;
                given[at] = Some(e.clone());
            }
            other => return Err(bind_err!("macro {name} cannot take the argument {other}")),
        }
    }
    given
        .into_iter()
        .zip(parameters.iter().zip(defaults))
        .map(|(arg, (parameter, default))| match (arg, default) {
            (Some(arg), _) => Ok(arg),
            (None, Some(default)) => parse_expression(default),
            (None, None) => Err(bind_err!(
                "macro {name} needs an argument for its parameter {parameter}"
            )),
        })
        .collect()
}

/// An expression kept as SQL text.
pub(super) fn parse_expression(sql: &str) -> Result<ast::Expr> {
    let query = super::changes::parse_query(&format!("SELECT {sql}"))?;
    if let ast::SetExpr::Select(select) = *query.body
        && let [ast::SelectItem::UnnamedExpr(expr)] = select.projection.as_slice()
    {
        return Ok(expr.clone());
    }
    Err(bind_err!("a macro's body is not one expression: {sql}"))
}
