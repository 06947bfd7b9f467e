//! DuckDB's aggregates of the first `n` values: `min(x, n)` and `max(x, n)` (the `n` smallest
//! or largest values, in that order), `arg_min(a, v, n)` / `arg_max(a, v, n)` (and their
//! names `min_by` / `max_by`: the `a` of the rows with the `n` smallest or largest `v`), and
//! `arg_min_nulls_last` / `arg_max_nulls_last` (with or without `n`), which order a NULL `v`
//! after every other instead of skipping the row. Each is written, before binding, as the
//! ordered list aggregate it is, cut to its first `n`:
//! `list_slice(array_agg(a ORDER BY v) FILTER (WHERE v IS NOT NULL), 1, n)`. NULL values are
//! skipped (rows with a NULL `a` or `v`, for arg_min and arg_max), and no value at all gives
//! NULL, as in DuckDB.

use std::ops::ControlFlow;

use sqlparser::ast;

use crate::{Result, bind_err};

/// What one of these calls asks for.
struct TopN {
    arg: ast::Expr,
    by: ast::Expr,
    n: Option<ast::Expr>,
    descending: bool,
    /// NULL `by` values are ordered last, not skipped.
    nulls_last: bool,
}

fn function_args(call: &ast::Function) -> Option<Vec<ast::Expr>> {
    let ast::FunctionArguments::List(list) = &call.args else {
        return None;
    };
    let only_order = list
        .clauses
        .iter()
        .all(|c| matches!(c, ast::FunctionArgumentClause::OrderBy(_)));
    if list.duplicate_treatment.is_some() || !only_order {
        return None;
    }
    list.args
        .iter()
        .map(|arg| match arg {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e.clone()),
            _ => None,
        })
        .collect()
}

/// The top-N aggregate `call` is; `None` for any other call.
fn top_n(call: &ast::Function) -> Option<TopN> {
    if call.over.is_some() || !call.within_group.is_empty() {
        return None;
    }
    let [ast::ObjectNamePart::Identifier(name)] = call.name.0.as_slice() else {
        return None;
    };
    let name = name.value.to_lowercase();
    let (descending, nulls_last) = match name.as_str() {
        "min" | "arg_min" | "min_by" | "argmin" => (false, false),
        "max" | "arg_max" | "max_by" | "argmax" => (true, false),
        "arg_min_nulls_last" => (false, true),
        "arg_max_nulls_last" => (true, true),
        _ => return None,
    };
    // Only calls of these names have their arguments copied.
    let args = function_args(call)?;
    let of_values = matches!(name.as_str(), "min" | "max");
    match (of_values, args.as_slice()) {
        (true, [value, n]) => Some(TopN {
            arg: value.clone(),
            by: value.clone(),
            n: Some(n.clone()),
            descending,
            nulls_last,
        }),
        (false, [arg, by, n]) => Some(TopN {
            arg: arg.clone(),
            by: by.clone(),
            n: Some(n.clone()),
            descending,
            nulls_last,
        }),
        (false, [arg, by]) if nulls_last => Some(TopN {
            arg: arg.clone(),
            by: by.clone(),
            n: None,
            descending,
            nulls_last,
        }),
        _ => None,
    }
}

/// The ORDER BY keys written inside the call's parentheses.
fn written_order(call: &ast::Function) -> Vec<ast::OrderByExpr> {
    let ast::FunctionArguments::List(list) = &call.args else {
        return Vec::new();
    };
    list.clauses
        .iter()
        .flat_map(|clause| match clause {
            ast::FunctionArgumentClause::OrderBy(keys) => keys.clone(),
            _ => Vec::new(),
        })
        .collect()
}

/// The SQL of the ordered list aggregate a top-N call is.
fn rewritten(call: &ast::Function, top: &TopN) -> String {
    let direction = match top.descending {
        true => "DESC",
        false => "ASC",
    };
    let (arg, by) = (&top.arg, &top.by);
    let skipped = match (top.nulls_last, top.arg == top.by) {
        (true, _) => None,
        (false, true) => Some(format!("({by}) IS NOT NULL")),
        (false, false) => Some(format!("({arg}) IS NOT NULL AND ({by}) IS NOT NULL")),
    };
    let condition = match (skipped, &call.filter) {
        (Some(skipped), Some(filter)) => Some(format!("({filter}) AND {skipped}")),
        (Some(skipped), None) => Some(skipped),
        (None, Some(filter)) => Some(filter.to_string()),
        (None, None) => None,
    };
    let filter = condition
        .map(|c| format!(" FILTER (WHERE {c})"))
        .unwrap_or_default();
    // An ORDER BY written in the call orders the input: it breaks ties of `by`.
    let ties: String = written_order(call)
        .iter()
        .map(|key| format!(", {key}"))
        .collect();
    let list = format!("array_agg({arg} ORDER BY {by} {direction} NULLS LAST{ties}){filter}");
    match &top.n {
        Some(n) => format!("list_slice({list}, 1, {n})"),
        // Without n, the first value itself (NULL for no rows).
        None => format!("({list})[1]"),
    }
}

/// A constant `n` is checked as DuckDB checks it: not NULL, from 1 to 999,999.
fn check_count(call: &ast::Function, top: &TopN) -> Result<()> {
    let Some(n) = &top.n else {
        return Ok(());
    };
    let of = match call.name.to_string().to_lowercase().as_str() {
        "min" | "max" => "MIN/MAX",
        _ => "arg_min/arg_max",
    };
    let text = n.to_string();
    if text.eq_ignore_ascii_case("NULL") {
        return Err(bind_err!("invalid input for {of}: n value cannot be NULL"));
    }
    match text.parse::<i64>() {
        Ok(n) if n <= 0 => Err(bind_err!("invalid input for {of}: n value must be > 0")),
        Ok(n) if n >= 1_000_000 => Err(bind_err!(
            "invalid input for {of}: n value must be < 1000000"
        )),
        _ => Ok(()),
    }
}

/// `statement` with each top-N aggregate rewritten (see the module's comment), and each select
/// item holding one named by the item as written; `None` when it holds none.
pub(super) fn rewrite_top_n(statement: &ast::Statement) -> Result<Option<ast::Statement>> {
    let holds = |expr: &ast::Expr| {
        ast::visit_expressions(expr, |e| match e {
            ast::Expr::Function(call) if top_n(call).is_some() => ControlFlow::Break(()),
            _ => ControlFlow::Continue(()),
        })
        .is_break()
    };
    // One walk over the statement: most hold no such call and are left untouched.
    let found = ast::visit_expressions(statement, |e| match e {
        ast::Expr::Function(call) if top_n(call).is_some() => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    });
    if found.is_continue() {
        return Ok(None);
    }
    let mut rewritten_statement = statement.clone();
    let _ = ast::VisitMut::visit(
        &mut rewritten_statement,
        &mut super::macros::NameItems { holds: &holds },
    );
    let mut failure = None;
    let _ = ast::visit_expressions_mut(&mut rewritten_statement, |expr| {
        let ast::Expr::Function(call) = expr else {
            return ControlFlow::Continue(());
        };
        let Some(top) = top_n(call) else {
            return ControlFlow::Continue(());
        };
        if let Err(e) = check_count(call, &top) {
            failure = Some(e);
            return ControlFlow::Break(());
        }
        match pondra_parser::parse_expression(&rewritten(call, &top)) {
            Ok(list) => {
                *expr = list;
                ControlFlow::Continue(())
            }
            Err(e) => {
                failure = Some(bind_err!("{e}"));
                ControlFlow::Break(())
            }
        }
    });
    match failure {
        Some(e) => Err(e),
        None => Ok(Some(rewritten_statement)),
    }
}

#[cfg(test)]
mod tests {
    fn rewritten(sql: &str) -> String {
        let statement = pondra_parser::parse_sql(sql).unwrap().remove(0).statement;
        let pondra_parser::Statement::Sql(statement) = statement else {
            panic!("a statement")
        };
        let out = super::rewrite_top_n(&statement).unwrap().unwrap();
        out.to_string()
    }

    #[test]
    fn top_n_calls_become_sliced_list_aggregates() {
        assert_eq!(
            rewritten("SELECT max(x, 2) FROM t"),
            "SELECT list_slice(array_agg(x ORDER BY x DESC NULLS LAST) FILTER (WHERE (x) IS NOT \
             NULL), 1, 2) AS \"max(x, 2)\" FROM t"
        );
        assert_eq!(
            rewritten("SELECT g, arg_min_nulls_last(a, b) FROM t GROUP BY g"),
            "SELECT g, (array_agg(a ORDER BY b ASC NULLS LAST))[1] AS \
             \"arg_min_nulls_last(a, b)\" FROM t GROUP BY g"
        );
    }
}
