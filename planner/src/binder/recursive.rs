//! `WITH RECURSIVE`: a CTE whose query is `anchor UNION [ALL] step`, where `step` reads the CTE
//! (the last iteration's rows by its name, the result so far as `recurring.name`), maybe keyed
//! by DuckDB's `USING KEY` (ADR 0071).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use pondra_parser::ast;

use super::Binder;
use super::from::rename_columns;
use super::scope::normalize;
use crate::expr::Expr;
use crate::logical::{LogicalPlan, WorkingRows};
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
        let key = key_columns(&cte.alias);
        let finalize = self.finalize_plan(&cte.alias, key.as_deref(), &schema, id)?;
        // With payload aggregates, the CTE's rows are the aggregates' (their types too).
        let visible = finalize.as_ref().map_or(schema.clone(), |f| f.schema());
        let table = |rows| LogicalPlan::WorkingTable {
            id,
            schema: visible.clone(),
            rows,
        };
        // The step reads the last iteration's rows by the CTE's name and the result so far as
        // `recurring.name` (ADR 0071); nothing outside the step reads either.
        let recurring_name = format!("{RECURRING}.{name}");
        self.ctes
            .borrow_mut()
            .push((name.clone(), table(WorkingRows::Last)));
        self.ctes
            .borrow_mut()
            .push((recurring_name, table(WorkingRows::SoFar)));
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
            key,
            finalize: finalize.map(Box::new),
        }))
    }

    /// For a key with payload aggregates (`USING KEY (k, min(v))`), the plan of the result
    /// from every row made so far (`Candidates`): grouped by the key, each aggregated column
    /// its aggregate, each other column its latest value, in the keys' order of arrival.
    fn finalize_plan(
        &self,
        alias: &ast::TableAlias,
        key: Option<&[usize]>,
        schema: &SchemaRef,
        id: usize,
    ) -> Result<Option<LogicalPlan>> {
        let aggregates: Vec<Option<String>> = alias
            .columns
            .iter()
            .map(|column| match &column.data_type {
                Some(ast::DataType::Custom(name, modifiers))
                    if name
                        .to_string()
                        .eq_ignore_ascii_case(pondra_parser::KEY_AGGREGATE) =>
                {
                    match modifiers.as_slice() {
                        [ast::TypeModifier::String(text)] => Some(text.clone()),
                        _ => None,
                    }
                }
                _ => None,
            })
            .collect();
        if aggregates.iter().all(Option::is_none) {
            return Ok(None);
        }
        let Some(key) = key else {
            return Err(bind_err!("USING KEY with aggregates needs key columns too"));
        };
        let quoted = |name: &str| format!("\"{}\"", name.replace('"', "\"\""));
        let mut items = Vec::new();
        for (i, field) in schema.fields().iter().enumerate() {
            let name = quoted(field.name());
            let item = match aggregates.get(i).cloned().flatten() {
                _ if key.contains(&i) => name,
                Some(aggregate) => format!("{aggregate} AS {name}"),
                None => format!("arg_max({name}, {ARRIVAL}) AS {name}"),
            };
            items.push(item);
        }
        let group: Vec<String> = key
            .iter()
            .map(|&k| quoted(schema.field(k).name()))
            .collect();
        let sql = format!(
            "SELECT {} FROM {CANDIDATES} GROUP BY {} ORDER BY min({ARRIVAL})",
            items.join(", "),
            group.join(", ")
        );
        let parsed = pondra_parser::parse_sql(&sql).map_err(|e| bind_err!("USING KEY: {e}"))?;
        let Some(pondra_parser::Statement::Sql(statement)) = parsed.first().map(|p| &p.statement)
        else {
            return Err(bind_err!("USING KEY: {sql} is not a query"));
        };
        let ast::Statement::Query(query) = statement.as_ref() else {
            return Err(bind_err!("USING KEY: {sql} is not a query"));
        };
        let mut fields: Vec<_> = schema.fields().iter().cloned().collect();
        fields.push(Arc::new(Field::new(ARRIVAL, DataType::Int64, false)));
        let candidates = LogicalPlan::WorkingTable {
            id,
            schema: Arc::new(Schema::new(fields)),
            rows: WorkingRows::Candidates,
        };
        let depth = self.ctes.borrow().len();
        self.ctes
            .borrow_mut()
            .push((CANDIDATES.to_string(), candidates));
        let plan = self.bind_query(query);
        self.ctes.borrow_mut().truncate(depth);
        Ok(Some(plan.map_err(|e| bind_err!("USING KEY: {e}"))?))
    }
}

/// The name the finalize query reads a keyed CTE's rows by, and their arrival column's.
const CANDIDATES: &str = "pondra_key_candidates";
const ARRIVAL: &str = "pondra_arrival";

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
