//! FROM items that read the items to their left (LATERAL, ADR 0070): a subquery marked
//! `LATERAL`, or one (or a set-returning function) that binds only by reading them, as
//! DuckDB allows. The binder joins such an item to everything before it with a `Subquery`
//! node of kind `Lateral`, which the optimizer decorrelates (`domain_join`).

use pondra_parser::ast;

use super::from::rename_columns;
use super::names::function_name;
use super::scope::Scope;
use super::{Binder, normalize};
use crate::Result;
use crate::logical::LogicalPlan;

impl Binder<'_> {
    /// A FROM item bound after the items of `left`: alone when it can be, else reading
    /// `left`'s columns. Returns whether it reads them (its plan then has outer columns, over
    /// `left`).
    pub(super) fn bind_factor_after(
        &self,
        factor: &ast::TableFactor,
        left: &Scope,
    ) -> Result<(LogicalPlan, Scope, bool)> {
        let converted;
        let (factor, marked) = match function_as_table(factor) {
            Some(table) => {
                converted = table;
                (&converted, true)
            }
            None => (
                factor,
                matches!(factor, ast::TableFactor::Derived { lateral: true, .. }),
            ),
        };
        let may_read_left = matches!(
            factor,
            ast::TableFactor::Derived { .. } | ast::TableFactor::Table { args: Some(_), .. }
        );
        if left.columns.is_empty() || !may_read_left {
            let (plan, scope) = self.bind_factor(factor)?;
            return Ok((plan, scope, false));
        }
        if !marked {
            let alone = match self.bind_factor(factor) {
                Ok((plan, scope)) => return Ok((plan, scope, false)),
                Err(alone) => alone,
            };
            return match self.bind_lateral(factor, left) {
                Ok(Some((plan, scope))) if plan.has_any_outer() => Ok((plan, scope, true)),
                _ => Err(alone),
            };
        }
        match self.bind_lateral(factor, left)? {
            Some((plan, scope)) if plan.has_any_outer() => Ok((plan, scope, true)),
            // Reading none of them, it is bound alone, where the queries around are nearer.
            _ => {
                let (plan, scope) = self.bind_factor(factor)?;
                Ok((plan, scope, false))
            }
        }
    }

    /// `factor` bound with `left` as the query around it; `None` for an item that cannot read
    /// other items (a table, or a function that is not set-returning).
    fn bind_lateral(
        &self,
        factor: &ast::TableFactor,
        left: &Scope,
    ) -> Result<Option<(LogicalPlan, Scope)>> {
        match factor {
            ast::TableFactor::Derived {
                subquery, alias, ..
            } => {
                let plan = self.bind_subquery(subquery, left)?;
                let plan = rename_columns(plan, alias.as_ref())?;
                let qualifier = alias.as_ref().map(|a| normalize(&a.name));
                let scope = Scope::from_schema(&plan.schema(), qualifier.as_deref());
                Ok(Some((plan, scope)))
            }
            ast::TableFactor::Table {
                name,
                alias,
                args: Some(args),
                with_ordinality,
                ..
            } => {
                let function = function_name(name)?;
                if !super::table_functions::is_set_function(&function) {
                    return Ok(None);
                }
                if let Some(query) = select_form(&function, &args.args, *with_ordinality)? {
                    let plan = self.bind_subquery(&query, left)?;
                    return named_function_rows(plan, &function, alias.as_ref()).map(Some);
                }
                self.outer.borrow_mut().push(left.clone());
                let plan = super::table_functions::set_function(
                    &function,
                    &args.args,
                    Some(self),
                    *with_ordinality,
                );
                self.outer.borrow_mut().pop();
                named_function_rows(plan?, &function, alias.as_ref()).map(Some)
            }
            _ => Ok(None),
        }
    }
}

/// `[LATERAL] f(args) [WITH ORDINALITY] [AS alias]`, which the parser gives apart, as the
/// table function item it is; `None` for other items.
pub(super) fn function_as_table(factor: &ast::TableFactor) -> Option<ast::TableFactor> {
    let ast::TableFactor::Function {
        name,
        args,
        with_ordinality,
        alias,
        ..
    } = factor
    else {
        return None;
    };
    Some(ast::TableFactor::Table {
        name: name.clone(),
        alias: alias.clone(),
        args: Some(ast::TableFunctionArgs {
            args: args.clone(),
            settings: None,
        }),
        with_hints: Vec::new(),
        version: None,
        with_ordinality: *with_ordinality,
        partitions: Vec::new(),
        json_path: None,
        sample: None,
        index_directives: Vec::new(),
        inheritance: None,
    })
}

/// A set-returning function whose arguments hold a subquery (`unnest((SELECT a))`), as the
/// query of its select-list form (`SELECT unnest((SELECT a)) AS unnest`), where subqueries
/// are bound; `None` for arguments without one, bound as they are.
pub(super) fn select_form(
    function: &str,
    args: &[ast::FunctionArg],
    ordinality: bool,
) -> Result<Option<ast::Query>> {
    let holds_subquery = args.iter().any(|a| match a {
        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => {
            super::expr::contains_subquery(e)
        }
        _ => false,
    });
    if !holds_subquery {
        return Ok(None);
    }
    if ordinality {
        return Err(crate::unsupported!(
            "WITH ORDINALITY on {function} over a subquery"
        ));
    }
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let args = args.join(", ");
    let call = match function {
        "range" => format!("unnest(range({args}))"),
        _ => format!("{function}({args})"),
    };
    super::changes::parse_query(&format!("SELECT {call} AS {function}")).map(Some)
}

/// The rows of a set-returning function in FROM, named by its alias: a function of one
/// column named alone, `generate_series(1, 3) AS n`, names its column too, as in PostgreSQL.
pub(super) fn named_function_rows(
    plan: LogicalPlan,
    function: &str,
    alias: Option<&ast::TableAlias>,
) -> Result<(LogicalPlan, Scope)> {
    let plan = match alias {
        Some(alias) if alias.columns.is_empty() && plan.schema().fields().len() == 1 => {
            let column = alias.name.clone();
            let named = ast::TableAlias {
                columns: vec![ast::TableAliasColumnDef::from_name(column.value)],
                ..alias.clone()
            };
            rename_columns(plan, Some(&named))?
        }
        _ => rename_columns(plan, alias)?,
    };
    let qualifier = alias
        .map(|a| normalize(&a.name))
        .unwrap_or_else(|| function.to_string());
    let scope = Scope::from_schema(&plan.schema(), Some(&qualifier));
    Ok((plan, scope))
}
