//! What the binder keeps while it binds a query: the scopes and CTEs around it, and per SELECT
//! its window functions, named windows, set-returning functions and the subqueries that become
//! joins.

use pondra_parser::ast;

use super::Binder;
use super::scope::Scope;
use crate::expr::{Expr, WindowExpr};
use crate::logical::{LogicalPlan, SubqueryKind};
use crate::{Result, bind_err, unsupported};

impl<'a> Binder<'a> {
    /// The definition of the window `name` in the innermost SELECT's WINDOW clause.
    pub(crate) fn named_window(&self, name: &ast::Ident) -> Option<ast::NamedWindowExpr> {
        let named = self.named_windows.borrow();
        let definitions = named.last()?;
        definitions
            .iter()
            .find(|definition| definition.0.value.eq_ignore_ascii_case(&name.value))
            .map(|definition| definition.1.clone())
    }

    /// Records a window function of the SELECT being bound; returns its number.
    pub(crate) fn add_window(&self, window: WindowExpr) -> Result<usize> {
        let mut windows = self.windows.borrow_mut();
        let current = windows
            .last_mut()
            .ok_or_else(|| unsupported!("window functions here"))?;
        if let Some(i) = current.iter().position(|w| *w == window) {
            return Ok(i);
        }
        current.push(window);
        Ok(current.len() - 1)
    }

    /// How many set-returning functions the select list being bound has so far.
    pub(super) fn set_function_count(&self) -> usize {
        self.set_functions.borrow().last().map_or(0, Vec::len)
    }

    /// Renumbers the columns the select list's set-returning functions read, as the select
    /// list's own are once the columns before theirs are known.
    pub(super) fn remap_set_functions(&self, remap: impl Fn(&Expr) -> Expr) {
        if let Some(arrays) = self.set_functions.borrow_mut().last_mut() {
            for array in arrays {
                *array = remap(array);
            }
        }
    }

    /// Records the array a set-returning function in the select list being bound unnests;
    /// returns its number.
    pub(crate) fn add_set_function(&self, array: Expr) -> Result<usize> {
        let mut frames = self.set_functions.borrow_mut();
        let current = frames
            .last_mut()
            .ok_or_else(|| bind_err!("set-returning functions are not allowed here"))?;
        if let Some(i) = current.iter().position(|a| *a == array) {
            return Ok(i);
        }
        current.push(array);
        Ok(current.len() - 1)
    }

    /// The scope of the query directly around the subquery being bound.
    pub(crate) fn outer_scope(&self) -> Option<Scope> {
        self.outer.borrow().last().cloned()
    }

    /// The scopes of the queries around the one directly around the subquery being bound,
    /// nearest first: depth 2, 3, ...
    pub(crate) fn farther_scopes(&self) -> Vec<Scope> {
        let outer = self.outer.borrow();
        outer.iter().rev().skip(1).cloned().collect()
    }

    /// Binds a subquery whose outer columns come from `scope`.
    pub(crate) fn bind_subquery(&self, query: &ast::Query, scope: &Scope) -> Result<LogicalPlan> {
        self.outer.borrow_mut().push(scope.clone());
        let plan = self.bind_query(query);
        self.outer.borrow_mut().pop();
        plan
    }

    /// Records a subquery of the SELECT being bound that becomes a join; returns its number.
    pub(crate) fn add_pending(&self, subquery: LogicalPlan, kind: SubqueryKind) -> Result<usize> {
        let mut correlated = self.correlated.borrow_mut();
        let current = correlated
            .last_mut()
            .ok_or_else(|| unsupported!("a correlated subquery here"))?;
        current.push((subquery, kind));
        Ok(current.len() - 1)
    }

    /// The plan of the innermost common table expression named `name`.
    pub(super) fn cte(&self, name: &str) -> Option<LogicalPlan> {
        let ctes = self.ctes.borrow();
        ctes.iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, p)| p.clone())
    }
}
