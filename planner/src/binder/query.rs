//! Queries: WITH and its CTEs, the query body (a SELECT, VALUES, `TABLE name` or a set
//! operation), then ORDER BY, LIMIT / OFFSET and FETCH.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema};
use pondra_parser::ast;

use super::expr::{Context, bind_expr, type_name};
use super::from::rename_columns;
use super::order_by::{order_output, positional};
use super::scope::{Scope, normalize};
use super::set_ops::set_operation;
use super::{Binder, expr, ties, with_writes};
use crate::expr::Expr;
use crate::logical::LogicalPlan;
use crate::{Result, bind_err, unsupported};

impl<'a> Binder<'a> {
    /// Binds a query: its body, then ORDER BY, then LIMIT / OFFSET.
    pub fn bind_query(&self, query: &ast::Query) -> Result<LogicalPlan> {
        // Rows are not locked: a query that asks for locks is refused rather than run without.
        if let Some(lock) = query.locks.first() {
            return Err(unsupported!(
                "the locking clause {lock}: rows are not locked; the statement runs on its snapshot"
            ));
        }
        let Some(with) = &query.with else {
            return self.bind_query_body(query);
        };
        let depth = self.ctes.borrow().len();
        let result = (|| {
            for cte in &with.cte_tables {
                if with_writes::is_write(&cte.query.body) {
                    return Err(unsupported!(
                        "INSERT, UPDATE and DELETE in a WITH below a statement's top level"
                    ));
                }
                let plan = self.bind_cte(cte, with.recursive)?;
                self.ctes
                    .borrow_mut()
                    .push((normalize(&cte.alias.name), plan));
            }
            self.bind_query_body(query)
        })();
        self.ctes.borrow_mut().truncate(depth);
        result
    }

    /// The plan of one CTE of a WITH (`recursive` when it says WITH RECURSIVE).
    pub(super) fn bind_cte(&self, cte: &ast::Cte, recursive: bool) -> Result<LogicalPlan> {
        let recursive = match recursive {
            true => self.bind_recursive_cte(cte)?,
            false => None,
        };
        match recursive {
            Some(plan) => Ok(plan),
            None => rename_columns(self.bind_query(&cte.query)?, Some(&cte.alias)),
        }
    }

    fn bind_query_body(&self, query: &ast::Query) -> Result<LogicalPlan> {
        let fetched;
        let mut ties = None;
        let limit_clause = match &query.fetch {
            None => query.limit_clause.as_ref(),
            Some(fetch) if fetch.with_ties && !fetch.percent => {
                let limit = fetch_as_limit(&without_ties(fetch), query.limit_clause.as_ref())?;
                ties = Some(limit);
                None
            }
            Some(fetch) => {
                fetched = fetch_as_limit(fetch, query.limit_clause.as_ref())?;
                Some(&fetched)
            }
        };
        let every_column;
        let order_by = match &query.order_by {
            None => &[][..],
            Some(ast::OrderBy {
                kind: ast::OrderByKind::Expressions(items),
                ..
            }) => items.as_slice(),
            Some(ast::OrderBy {
                kind: ast::OrderByKind::All(options),
                ..
            }) => {
                every_column = self.order_by_all(query.body.as_ref(), options)?;
                every_column.as_slice()
            }
        };
        let plan = match query.body.as_ref() {
            ast::SetExpr::Select(select) => self.bind_select(select, order_by)?,
            other => {
                let plan = self.bind_set_expr(other)?;
                let scope = Scope::from_schema(&plan.schema(), None);
                order_output(plan, &scope, order_by)?
            }
        };
        match ties {
            Some(ast::LimitClause::LimitOffset { limit, offset, .. }) => {
                let count = limit.map_or(Ok(1), |l| constant_count(&l, "FETCH"))?;
                let skip = offset.map_or(Ok(0), |o| constant_count(&o.value, "OFFSET"))?;
                ties::with_ties(plan, skip, count)
            }
            _ => self.bind_limit(plan, limit_clause),
        }
    }

    /// A query body other than a lone SELECT with ORDER BY: VALUES, a nested query, or a set
    /// operation (whose operands may be SELECTs).
    pub(super) fn bind_set_expr(&self, body: &ast::SetExpr) -> Result<LogicalPlan> {
        match body {
            ast::SetExpr::Select(select) => self.bind_select(select, &[]),
            ast::SetExpr::Values(values) => self.bind_values(values),
            ast::SetExpr::Query(inner) => self.bind_query(inner),
            ast::SetExpr::SetOperation {
                left,
                op,
                set_quantifier,
                right,
            } => {
                let left = self.bind_set_expr(left)?;
                let right = self.bind_set_expr(right)?;
                set_operation(left, *op, *set_quantifier, right)
            }
            // `TABLE name`: every row of the relation, as `SELECT * FROM name`.
            ast::SetExpr::Table(table) if table.table_name.is_some() => {
                let parts = [&table.schema_name, &table.table_name];
                let name =
                    ast::ObjectName::from(parts.into_iter().flatten().cloned().collect::<Vec<_>>());
                Ok(self.named_relation(&name)?.0)
            }
            other => Err(unsupported!("the query form {other}")),
        }
    }

    fn bind_limit(
        &self,
        plan: LogicalPlan,
        clause: Option<&ast::LimitClause>,
    ) -> Result<LogicalPlan> {
        let (limit, offset) = match clause {
            None => return Ok(plan),
            Some(ast::LimitClause::LimitOffset {
                limit,
                offset,
                limit_by,
            }) => {
                if !limit_by.is_empty() {
                    return Err(unsupported!("LIMIT BY"));
                }
                (limit.as_ref(), offset.as_ref().map(|o| &o.value))
            }
            Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => {
                (Some(limit), Some(offset))
            }
        };
        let fetch = match limit {
            Some(ast::Expr::Value(v)) if v.value == ast::Value::Null => None,
            Some(e) => Some(constant_count(e, "LIMIT")?),
            None => None,
        };
        let skip = offset
            .map(|e| constant_count(e, "OFFSET"))
            .transpose()?
            .unwrap_or(0);
        Ok(LogicalPlan::Limit {
            input: Box::new(plan),
            skip,
            fetch,
        })
    }

    fn bind_values(&self, values: &ast::Values) -> Result<LogicalPlan> {
        let empty = Scope::default();
        let mut rows = Vec::new();
        for row in &values.rows {
            // A value may read an enclosing query's row (a LATERAL or correlated subquery),
            // though not hold a subquery of its own.
            let binder = (!row.iter().any(expr::contains_subquery)).then_some(self);
            let mut ctx = Context::Plain {
                scope: &empty,
                clause: "VALUES",
                binder,
            };
            let bound = row
                .iter()
                .map(|e| bind_expr(e, &mut ctx))
                .collect::<Result<Vec<_>>>()?;
            if let Some(first) = rows.first().map(|r: &Vec<Expr>| r.len())
                && first != bound.len()
            {
                return Err(bind_err!("VALUES lists must all be the same length"));
            }
            rows.push(bound);
        }
        let width = rows.first().map_or(0, Vec::len);
        let mut fields = Vec::new();
        for column in 0..width {
            // A quoted literal takes the type the column's other values have, as in both
            // anchors: `VALUES ('10:00'), (TIME '11:00')` is a column of TIME.
            let typed = rows.iter().any(|row| {
                !expr::is_string_literal(&row[column]) && row[column].data_type() != DataType::Null
            });
            let mut data_type = DataType::Null;
            for row in rows
                .iter()
                .filter(|row| !typed || !expr::is_string_literal(&row[column]))
            {
                let t = row[column].data_type();
                data_type = expr::common_type(&[data_type.clone(), t.clone()]).map_err(|_| {
                    bind_err!(
                        "VALUES column {} mixes types {} and {}",
                        column + 1,
                        type_name(&data_type),
                        type_name(&t)
                    )
                })?;
            }
            fields.push(Field::new(format!("column{}", column + 1), data_type, true));
        }
        for row in &mut rows {
            for (expr, field) in row.iter_mut().zip(&fields) {
                *expr = expr.clone().cast(field.data_type());
            }
        }
        Ok(LogicalPlan::Values {
            schema: Arc::new(Schema::new(fields)),
            rows,
        })
    }
}

fn constant_count(expr: &ast::Expr, clause: &str) -> Result<usize> {
    match positional(expr) {
        Ok(Some(n)) => Ok(n),
        _ => Err(bind_err!(
            "{clause} must be a non-negative integer, not {expr}"
        )),
    }
}

/// `fetch` with its WITH TIES taken off, to read its count and offset as a LIMIT's.
fn without_ties(fetch: &ast::Fetch) -> ast::Fetch {
    ast::Fetch {
        with_ties: false,
        ..fetch.clone()
    }
}

/// `[OFFSET n ROWS] FETCH FIRST | NEXT [n] ROWS ONLY` (SQL:2008) as the LIMIT it is: one row
/// when no count is given. `PERCENT` is refused by name (`WITH TIES` is `ties.rs`).
fn fetch_as_limit(
    fetch: &ast::Fetch,
    limit: Option<&ast::LimitClause>,
) -> Result<ast::LimitClause> {
    if fetch.percent {
        return Err(unsupported!("FETCH ... PERCENT"));
    }
    assert!(!fetch.with_ties, "WITH TIES is bound by ties.rs");
    let offset = match limit {
        None => None,
        Some(ast::LimitClause::LimitOffset {
            limit: None,
            offset,
            limit_by,
        }) if limit_by.is_empty() => offset.clone(),
        Some(_) => return Err(bind_err!("a query takes LIMIT or FETCH, not both")),
    };
    let count = fetch
        .quantity
        .clone()
        .unwrap_or_else(|| ast::Expr::value(ast::Value::Number("1".into(), false)));
    Ok(ast::LimitClause::LimitOffset {
        limit: Some(count),
        offset,
        limit_by: Vec::new(),
    })
}
