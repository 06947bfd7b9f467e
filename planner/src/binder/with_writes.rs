//! INSERT, UPDATE and DELETE inside a statement's top-level WITH (ADR 0074): each write is
//! bound as a statement of its own, its CTE name standing for the rows its RETURNING gives.

use std::sync::atomic::{AtomicUsize, Ordering};

use pondra_parser::ast;

use super::Binder;
use super::scope::normalize;
use crate::logical::{LogicalPlan, WorkingRows};
use crate::plan::Plan;
use crate::{Result, bind_err, unsupported};

/// Numbers the writes of WITHs, so that each CTE name reads its own write's rows.
static NEXT_WRITE: AtomicUsize = AtomicUsize::new(1 << 40);

pub(super) use pondra_parser::is_write;

impl Binder<'_> {
    /// A query whose WITH holds writes, or a write under a WITH.
    pub(super) fn bind_with_writes(&self, query: &ast::Query) -> Result<Plan> {
        let depth = self.ctes.borrow().len();
        let result = self.bind_writes_and_body(query);
        self.ctes.borrow_mut().truncate(depth);
        let (writes, body) = result?;
        let mut tables: Vec<u64> = Vec::new();
        for plan in writes.iter().map(|(_, p)| p).chain(std::iter::once(&body)) {
            let Some(table) = written_table(plan) else {
                continue;
            };
            if tables.contains(&table) {
                return Err(unsupported!(
                    "two writes to one table in a statement (each would miss the other's changes)"
                ));
            }
            tables.push(table);
        }
        Ok(Plan::WithWrites {
            writes,
            query: Box::new(body),
        })
    }

    fn bind_writes_and_body(&self, query: &ast::Query) -> Result<(Vec<(usize, Plan)>, Plan)> {
        let mut writes = Vec::new();
        if let Some(with) = &query.with {
            for cte in &with.cte_tables {
                let name = normalize(&cte.alias.name);
                let plan = match cte.query.body.as_ref() {
                    body if is_write(body) => {
                        if with.recursive {
                            return Err(unsupported!(
                                "recursive CTEs with DML statements ({name})"
                            ));
                        }
                        if !cte.alias.columns.is_empty() {
                            return Err(unsupported!("a column list on a WITH's {name} write"));
                        }
                        let write = self.bind_write(body)?;
                        let id = NEXT_WRITE.fetch_add(1, Ordering::Relaxed);
                        // Without RETURNING the write has no rows to read: its name stays
                        // unbound, as in PostgreSQL.
                        let schema = match &write {
                            Plan::Returning { returning, .. } => Some(returning.schema()),
                            _ => None,
                        };
                        writes.push((id, write));
                        schema.map(|schema| LogicalPlan::WorkingTable {
                            id,
                            schema,
                            rows: WorkingRows::Returned,
                        })
                    }
                    _ => Some(self.bind_cte(cte, with.recursive)?),
                };
                if let Some(plan) = plan {
                    self.ctes.borrow_mut().push((name, plan));
                }
            }
        }
        let body = match query.body.as_ref() {
            body if is_write(body) => self.bind_write(body)?,
            _ => {
                let without_with = ast::Query {
                    with: None,
                    ..query.clone()
                };
                Plan::Query(self.bind_query(&without_with)?)
            }
        };
        Ok((writes, body))
    }

    /// The plan of an INSERT, UPDATE or DELETE written as a query's body.
    fn bind_write(&self, body: &ast::SetExpr) -> Result<Plan> {
        match body {
            ast::SetExpr::Insert(ast::Statement::Insert(insert)) => self.bind_insert(insert),
            ast::SetExpr::Update(ast::Statement::Update(update)) => self.bind_update(update),
            ast::SetExpr::Delete(ast::Statement::Delete(delete)) => self.bind_delete(delete),
            ast::SetExpr::Merge(_) => Err(unsupported!("MERGE inside a WITH")),
            other => Err(bind_err!("not a write: {other}")),
        }
    }
}

/// The table a write plan changes, if it is one.
fn written_table(plan: &Plan) -> Option<u64> {
    match plan {
        Plan::Insert { table, .. } | Plan::Rewrite { table, .. } => Some(table.id),
        Plan::Returning { write, .. } => written_table(write),
        _ => None,
    }
}
