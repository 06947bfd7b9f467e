//! Column references: a name resolved in the query's scope, then in the queries around it;
//! positional references (`#2`); and the fields of a struct column (`s.a.b`).

use sqlparser::ast;

use super::Context;
use crate::binder::Binder;
use crate::binder::scope::{Scope, normalize};
use crate::expr::Expr;
use crate::{Result, bind_err};

pub(crate) fn resolve_column(
    ctx: &mut Context<'_>,
    qualifier: Option<String>,
    ident: &ast::Ident,
) -> Result<Expr> {
    let Context::Plain { scope, binder, .. } = ctx else {
        unreachable!("aggregated contexts resolve names through their input scope");
    };
    let name = normalize(ident);
    let index = match scope.resolve(qualifier.as_deref(), &name) {
        Ok(index) => index,
        Err(e) => {
            // A name the subquery does not have may be a column of the query around it.
            let outer = binder.and_then(|b| b.outer_scope());
            match outer.and_then(|o| o.resolve(qualifier.as_deref(), &name).ok().map(|i| (o, i))) {
                Some((outer, index)) => {
                    let column = &outer.columns[index];
                    return Ok(Expr::OuterColumn {
                        index,
                        name: column.name.clone(),
                        data_type: column.data_type.clone(),
                    });
                }
                None => {
                    if let Some(deep) = binder.and_then(|b| deep_column(b, &qualifier, &name)) {
                        return Ok(deep);
                    }
                    let ungrouped = binder.and_then(|b| b.outer_scope()).is_some_and(|o| {
                        let scope = Scope {
                            columns: o.ungrouped,
                            ungrouped: Vec::new(),
                        };
                        scope.resolve(qualifier.as_deref(), &name).is_ok()
                    });
                    if ungrouped {
                        let display = match &qualifier {
                            Some(q) => format!("{q}.{name}"),
                            None => name,
                        };
                        return Err(bind_err!(
                            "subquery uses ungrouped column \"{display}\" from outer query"
                        ));
                    }
                    if qualifier.is_none()
                        && let Some(position) = positional(ident)
                    {
                        return by_position(scope, position);
                    }
                    // SQL's value functions written without parentheses, where no column
                    // has the name.
                    let database = binder.map_or(crate::system_tables::CATALOG, |b| b.database());
                    if qualifier.is_none()
                        && let Some(value) =
                            crate::binder::functions::value_function(&name, database)
                    {
                        return Ok(value);
                    }
                    return Err(e);
                }
            }
        }
    };
    let column = &scope.columns[index];
    Ok(Expr::column(
        index,
        column.name.clone(),
        column.data_type.clone(),
    ))
}

/// A column of a query beyond the one directly around (nested correlated subqueries).
fn deep_column(binder: &Binder<'_>, qualifier: &Option<String>, name: &str) -> Option<Expr> {
    let scopes = binder.farther_scopes();
    scopes.iter().enumerate().find_map(|(i, scope)| {
        let index = scope.resolve(qualifier.as_deref(), name).ok()?;
        let column = &scope.columns[index];
        Some(Expr::DeepOuterColumn(Box::new(crate::expr::DeepColumn {
            depth: i + 2,
            index,
            name: column.name.clone(),
            data_type: column.data_type.clone(),
        })))
    })
}

/// `s.a.b` or `t.s.a`: a column then fields of its structs, the column named through its
/// table when the first name is one.
pub(super) fn struct_path(parts: &[ast::Ident], ctx: &mut Context<'_>) -> Result<Expr> {
    let through_table = match parts {
        [table, column, fields @ ..] if !fields.is_empty() => {
            resolve_column(ctx, Some(normalize(table)), column)
                .ok()
                .map(|c| (c, fields))
        }
        _ => None,
    };
    let (mut value, fields) = match through_table {
        Some(found) => found,
        None => (resolve_column(ctx, None, &parts[0])?, &parts[1..]),
    };
    for field in fields {
        value = crate::binder::structs::field_by_name(value, &normalize(field))?;
    }
    Ok(value)
}

/// The position a positional reference (`#2`, read as the identifier `"#2"`) names.
pub(super) fn positional(ident: &ast::Ident) -> Option<usize> {
    let digits = ident.value.strip_prefix('#')?;
    let position_name = pondra_parser::positional_name(digits);
    (ident.quote_style == Some('"') && position_name == ident.value)
        .then(|| digits.parse().ok())
        .flatten()
}

/// The column at `position` (from 1) among those the FROM clause shows.
fn by_position(scope: &Scope, position: usize) -> Result<Expr> {
    let shown: Vec<usize> = (0..scope.columns.len())
        .filter(|&i| !scope.columns[i].hidden)
        .collect();
    if position == 0 {
        return Err(bind_err!("a positional reference counts from #1"));
    }
    let Some(&index) = shown.get(position - 1) else {
        return Err(bind_err!(
            "positional reference #{position} out of range: the FROM clause has {} columns",
            shown.len()
        ));
    };
    let column = &scope.columns[index];
    Ok(Expr::column(
        index,
        column.name.clone(),
        column.data_type.clone(),
    ))
}
