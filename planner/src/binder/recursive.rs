//! `WITH RECURSIVE`: a CTE whose query is `anchor UNION [ALL] step`, where `step` reads the CTE
//! (the last iteration's rows by its name, the result so far as `recurring.name`), maybe keyed
//! by DuckDB's `USING KEY` (ADR 0071).

use std::sync::atomic::{AtomicUsize, Ordering};

use pondra_parser::ast;

use super::Binder;
use super::from::rename_columns;
use super::scope::normalize;
use crate::expr::Expr;
use crate::logical::LogicalPlan;
use crate::tree::TreeNode;
use crate::{Result, bind_err};

/// Numbers recursive CTEs, so that each step reads its own working table.
static NEXT_ID: AtomicUsize = AtomicUsize::new(0);

impl Binder<'_> {
    /// The plan of a CTE of a `WITH RECURSIVE`, or `None` when it does not read itself (it is
    /// then an ordinary CTE).
    pub(super) fn bind_recursive_cte(&self, cte: &ast::Cte) -> Result<Option<LogicalPlan>> {
        let ast::SetExpr::SetOperation {
            op: ast::SetOperator::Union,
            set_quantifier,
            left,
            right,
        } = cte.query.body.as_ref()
        else {
            return Ok(None);
        };
        let query = cte.query.as_ref();
        if query.order_by.is_some() || query.limit_clause.is_some() {
            return Ok(None);
        }
        let name = normalize(&cte.alias.name);
        let part = |body: &ast::SetExpr| ast::Query {
            with: None,
            body: Box::new(body.clone()),
            ..query.clone()
        };
        let anchor = rename_columns(self.bind_query(&part(left))?, Some(&cte.alias))?;
        let schema = anchor.schema();
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let table = |recurring| LogicalPlan::WorkingTable {
            id,
            schema: schema.clone(),
            recurring,
        };
        // The step reads the last iteration's rows by the CTE's name and the result so far as
        // `recurring.name` (ADR 0071); nothing outside the step reads either.
        let recurring_name = format!("{RECURRING}.{name}");
        self.ctes.borrow_mut().push((name.clone(), table(false)));
        self.ctes.borrow_mut().push((recurring_name, table(true)));
        let step = self.bind_query(&part(right));
        let depth = self.ctes.borrow().len() - 2;
        self.ctes.borrow_mut().truncate(depth);
        let step = step?;
        if !step.exists(&mut |n| matches!(n, LogicalPlan::WorkingTable { id: i, .. } if *i == id)) {
            return Ok(None);
        }
        let step_schema = step.schema();
        if step_schema.fields().len() != schema.fields().len() {
            return Err(bind_err!(
                "the recursive part of {name} has {} columns but its first part has {}",
                step_schema.fields().len(),
                schema.fields().len()
            ));
        }
        let (exprs, names) = schema
            .fields()
            .iter()
            .zip(step_schema.fields())
            .enumerate()
            .map(|(i, (want, have))| {
                let column = Expr::column(i, have.name(), have.data_type().clone());
                (column.cast(want.data_type()), want.name().clone())
            })
            .unzip();
        let distinct = !matches!(set_quantifier, ast::SetQuantifier::All);
        Ok(Some(LogicalPlan::RecursiveCte {
            anchor: Box::new(anchor),
            step: Box::new(step.project(exprs, names)),
            id,
            distinct,
            key: key_columns(&cte.alias),
        }))
    }
}

/// The schema name through which a recursive CTE's step reads the CTE's result so far.
pub(super) const RECURRING: &str = "recurring";

/// The positions of the columns the parser marked as the CTE's `USING KEY`, if any.
fn key_columns(alias: &ast::TableAlias) -> Option<Vec<usize>> {
    let key: Vec<usize> = alias
        .columns
        .iter()
        .enumerate()
        .filter(|(_, column)| {
            matches!(&column.data_type, Some(ast::DataType::Custom(name, _))
                if name.to_string().eq_ignore_ascii_case(pondra_parser::USING_KEY))
        })
        .map(|(i, _)| i)
        .collect();
    (!key.is_empty()).then_some(key)
}
