//! `MERGE INTO target USING source ON condition WHEN ...`: the rows it changes; and
//! `INSERT ... ON CONFLICT`, which is a MERGE.
//!
//! As for UPDATE, the binder writes the query that computes them (so that conditions and
//! values may use anything a SELECT may): the source right-joined to the target, each target
//! row named by its address, under the condition. A target row no source row met is left as
//! it is, so it need not be read (a join on the key reads only what may match). Each joined
//! row takes the first clause whose kind (MATCHED for a target row that met a source row, NOT
//! MATCHED for a source row that met none) and condition hold; its number picks the row's new
//! values, and whether the row stays. A target row that met several source rows, one of which
//! takes an action, is an error, as in Postgres.

use std::sync::Arc;

use arrow::datatypes::DataType;

use pondra_catalog::{COMMIT_TIMESTAMP, COMMIT_VERSION, ROW_ADDRESS, TableDef};
use pondra_parser::ast;

use super::Binder;
use super::assign::check_assignable;
use super::scope::normalize;
use crate::expr::{BinaryOp, Expr};
use crate::logical::LogicalPlan;
use crate::plan::{Plan, RewriteKind};
use crate::scalar::ScalarValue;
use crate::{Result, bind_err, unsupported};

/// The address of the target row each joined row carries; NULL for a source row that met none.
const TARGET_ROW: &str = "__merge_target_row";
/// The commit version and time of the target row each joined row carries.
const TARGET_VERSION: &str = "__merge_target_version";
const TARGET_TIME: &str = "__merge_target_time";
/// How many columns the target brings after its own: its address, commit version and time.
const TARGET_EXTRA: usize = 3;
/// TRUE in each joined row that carries a source row.
const SOURCE_ROW: &str = "__merge_source_row";

/// What a clause does to the rows that take it.
enum Action {
    /// New values for some of the target's columns (by position), as SQL text.
    Update(Vec<(usize, String)>),
    Delete,
    /// Values for some of the target's columns (by position), as SQL text; the others NULL.
    Insert(Vec<(usize, String)>),
    Nothing,
}

/// The clauses of a MERGE: the SQL of the number of the clause each joined row takes (0 for
/// none), and what each clause (numbered from 1) does.
struct Clauses {
    chosen: String,
    actions: Vec<Action>,
}

/// Where the values of the clauses are among the MERGE query's columns: for each, the clause's
/// number and the target column it sets.
type ValueColumns = Vec<(usize, usize)>;

impl Binder<'_> {
    pub(super) fn bind_merge(&self, merge: &ast::Merge) -> Result<Plan> {
        if merge.output.is_some() {
            return Err(unsupported!("MERGE ... OUTPUT"));
        }
        let (table, qualifier) = self.changed_table(&merge.table, "MERGE")?;
        let clauses = clauses(merge, &table)?;
        let (sql, value_columns) = merge_query(merge, &table, &qualifier, &clauses)?;
        let query = super::changes::parse_query(&sql)?;
        let input = self.addressing(&table).bind_query(&query)?;
        let input = rows_as_they_will_be(&table, input, &clauses.actions, &value_columns)?;
        Ok(Plan::Rewrite {
            table,
            input,
            kind: RewriteKind::Merge,
        })
    }

    /// `INSERT ... ON CONFLICT [(key)] DO NOTHING | DO UPDATE SET ... [WHERE ...]` as the MERGE
    /// it is: the inserted rows, named `excluded`, matched to the target's rows on the conflict
    /// key; a matched row is updated (or left), the others inserted. Reported as an INSERT.
    pub(super) fn bind_on_conflict(
        &self,
        insert: &ast::Insert,
        table: Arc<TableDef>,
        on_conflict: &ast::OnConflict,
    ) -> Result<Plan> {
        let key = conflict_key(&table, on_conflict)?;
        let source = insert
            .source
            .as_ref()
            .ok_or_else(|| unsupported!("INSERT without VALUES or SELECT"))?;
        if key.is_empty() {
            // DO NOTHING on a table without constraints: nothing can conflict.
            let input = self.bind_query(source)?;
            return self.insert_plan(table, input, &insert.columns);
        }
        let columns: Vec<String> = match insert.columns.is_empty() {
            true => table.columns.iter().map(|c| c.name.clone()).collect(),
            false => insert
                .columns
                .iter()
                .map(super::object_name)
                .collect::<Result<_>>()?,
        };
        for column in &key {
            if !columns.contains(column) {
                return Err(bind_err!(
                    "INSERT ... ON CONFLICT must give the conflict key's column {column}"
                ));
            }
        }
        let qualifier = match &insert.table_alias {
            Some(alias) => normalize(&alias.alias),
            None => table.name.clone(),
        };
        let target = quoted(&qualifier);
        let on: Vec<String> = key
            .iter()
            .map(|k| format!("{target}.{k} = excluded.{k}", k = quoted(k)))
            .collect();
        let matched = match &on_conflict.action {
            ast::OnConflictAction::DoNothing => String::new(),
            ast::OnConflictAction::DoUpdate(update) => {
                let condition = match &update.selection {
                    Some(selection) => format!(" AND ({selection})"),
                    None => String::new(),
                };
                let assignments: Vec<String> =
                    update.assignments.iter().map(|a| a.to_string()).collect();
                format!(
                    "WHEN MATCHED{condition} THEN UPDATE SET {}",
                    assignments.join(", ")
                )
            }
        };
        let columns: Vec<String> = columns.iter().map(|c| quoted(c)).collect();
        let values: Vec<String> = columns.iter().map(|c| format!("excluded.{c}")).collect();
        let sql = format!(
            "MERGE INTO {name} AS {target} USING ({source}) AS excluded({columns}) ON {on} \
             {matched} WHEN NOT MATCHED THEN INSERT ({columns}) VALUES ({values})",
            name = quoted(&table.name),
            columns = columns.join(", "),
            on = on.join(" AND "),
            values = values.join(", "),
        );
        let mut statements = pondra_parser::parse_sql(&sql).map_err(|e| bind_err!("{e}"))?;
        let merge = match statements.pop().map(|s| s.statement) {
            Some(pondra_parser::Statement::Sql(statement)) if statements.is_empty() => {
                match *statement {
                    ast::Statement::Merge(merge) => merge,
                    _ => return Err(bind_err!("INSERT ... ON CONFLICT is not one MERGE")),
                }
            }
            _ => return Err(bind_err!("INSERT ... ON CONFLICT is not one MERGE")),
        };
        let Plan::Rewrite { table, input, .. } = self.bind_merge(&merge)? else {
            return Err(bind_err!("INSERT ... ON CONFLICT is not one MERGE"));
        };
        Ok(Plan::Rewrite {
            table,
            input,
            kind: RewriteKind::Upsert,
        })
    }
}

/// The columns of `on_conflict`'s target: the table's PRIMARY KEY or one of its UNIQUE
/// constraints, as Postgres requires; with no target, the primary key (none for DO NOTHING on
/// a table without one).
fn conflict_key(table: &TableDef, on_conflict: &ast::OnConflict) -> Result<Vec<String>> {
    let named: Vec<String> = match &on_conflict.conflict_target {
        None => {
            if matches!(on_conflict.action, ast::OnConflictAction::DoUpdate(_))
                && table.key.is_empty()
            {
                return Err(bind_err!(
                    "ON CONFLICT DO UPDATE requires inference specification or constraint name"
                ));
            }
            return Ok(table.key.clone());
        }
        Some(ast::ConflictTarget::Columns {
            columns,
            predicate: None,
        }) => columns.iter().map(normalize).collect(),
        Some(ast::ConflictTarget::Columns { .. }) => {
            return Err(unsupported!("ON CONFLICT on a partial index (... WHERE)"));
        }
        Some(ast::ConflictTarget::OnConstraint(_)) => {
            return Err(unsupported!("ON CONFLICT ON CONSTRAINT"));
        }
    };
    let same = |columns: &[String]| {
        columns.len() == named.len() && columns.iter().all(|c| named.contains(c))
    };
    if same(&table.key) || table.unique.iter().any(|u| same(u)) {
        return Ok(named);
    }
    Err(bind_err!(
        "there is no unique or exclusion constraint matching the ON CONFLICT specification"
    ))
}

/// Each clause's action, and the SQL that picks the first clause whose kind and condition
/// hold for a joined row.
fn clauses(merge: &ast::Merge, table: &TableDef) -> Result<Clauses> {
    let column = |name: &str| -> Result<usize> {
        let name = name.to_ascii_lowercase();
        table
            .columns
            .iter()
            .position(|c| c.name == name)
            .ok_or_else(|| bind_err!("table {} has no column named {name}", table.name))
    };
    let matched = format!("({TARGET_ROW} IS NOT NULL AND {SOURCE_ROW} IS NOT NULL)");
    let mut arms = Vec::new();
    let mut actions = Vec::new();
    for (n, clause) in merge.clauses.iter().enumerate() {
        let is_matched =
            |c: &ast::MergeClause| matches!(c.clause_kind, ast::MergeClauseKind::Matched);
        let unreachable = merge.clauses[..n].iter().any(|earlier| {
            earlier.predicate.is_none() && is_matched(earlier) == is_matched(clause)
        });
        if unreachable {
            return Err(bind_err!(
                "unreachable WHEN clause specified after unconditional WHEN clause"
            ));
        }
        let applies = match clause.clause_kind {
            ast::MergeClauseKind::Matched => matched.clone(),
            ast::MergeClauseKind::NotMatched | ast::MergeClauseKind::NotMatchedByTarget => {
                format!("{TARGET_ROW} IS NULL")
            }
            ast::MergeClauseKind::NotMatchedBySource => {
                return Err(unsupported!("MERGE ... WHEN NOT MATCHED BY SOURCE"));
            }
        };
        let condition = match &clause.predicate {
            Some(predicate) => format!("{applies} AND coalesce(({predicate}), false)"),
            None => applies,
        };
        arms.push(format!("WHEN {condition} THEN {}", actions.len() + 1));
        actions.push(action(&clause.clause_kind, &clause.action, &column)?);
    }
    Ok(Clauses {
        chosen: format!("(CASE {} ELSE 0 END)", arms.join(" ")),
        actions,
    })
}

/// The query a MERGE reads: the target's columns, its row number, the clause each joined row
/// takes, each clause's values (where it is taken), whether the row is a conflict, and whether
/// it is its target row's first; and where the values are.
fn merge_query(
    merge: &ast::Merge,
    table: &TableDef,
    qualifier: &str,
    clauses: &Clauses,
) -> Result<(String, ValueColumns)> {
    // The target's qualifier is SQL text already, as the statement wrote it.
    let (target, source_name) = (qualifier, quoted(&source_qualifier(&merge.source)?));
    let chosen = &clauses.chosen;
    let mut select = format!("SELECT {target}.*, {chosen}");
    let mut value_columns = Vec::new();
    for (number, action) in (1..).zip(&clauses.actions) {
        if let Action::Update(values) | Action::Insert(values) = action {
            for (position, value) in values {
                select.push_str(&format!(
                    ", CASE WHEN {chosen} = {number} THEN ({value}) END"
                ));
                value_columns.push((number, *position));
            }
        }
    }
    // A target row that met several source rows may take no action, and is then kept once;
    // if it takes one, the statement fails.
    select.push_str(&format!(
        ", {TARGET_ROW} IS NOT NULL AND count(*) OVER (PARTITION BY {TARGET_ROW}) > 1 \
           AND max({chosen}) OVER (PARTITION BY {TARGET_ROW}) > 0, \
         {TARGET_ROW} IS NULL OR row_number() OVER (PARTITION BY {TARGET_ROW}) = 1 \
         FROM (SELECT *, {ROW_ADDRESS} AS {TARGET_ROW}, {COMMIT_VERSION} AS {TARGET_VERSION}, \
               {COMMIT_TIMESTAMP} AS {TARGET_TIME} FROM {name}) AS {target} \
         RIGHT JOIN (SELECT *, true AS {SOURCE_ROW} FROM {source}) AS {source_name} \
         ON {on}",
        name = quoted(&table.name),
        source = merge.source,
        on = merge.on,
    ));
    Ok((select, value_columns))
}

/// Over the MERGE query `input`: each target column as the clause the row took sets it, then
/// whether the row was touched, whether it stays, and whether it is a conflict.
fn rows_as_they_will_be(
    table: &TableDef,
    input: LogicalPlan,
    actions: &[Action],
    value_columns: &ValueColumns,
) -> Result<LogicalPlan> {
    let schema = input.schema();
    let (width, values) = (table.columns.len(), value_columns.len());
    let field = |i: usize| {
        let f = schema.field(i);
        Expr::column(i, f.name(), f.data_type().clone())
    };
    let chosen = field(width + TARGET_EXTRA);
    let is_clause = |number: usize| Expr::Binary {
        op: BinaryOp::Eq,
        left: Box::new(chosen.clone().cast(&DataType::Int64)),
        right: Box::new(Expr::Literal(ScalarValue::Int64(number as i64))),
    };
    let mut exprs = Vec::with_capacity(width + 3);
    for (index, column) in table.columns.iter().enumerate() {
        let target = column.sql_type.to_arrow();
        let mut branches = Vec::new();
        for (k, (number, position)) in value_columns.iter().enumerate() {
            if *position == index {
                let value = field(width + TARGET_EXTRA + 1 + k);
                check_assignable(&value.data_type(), &target, &column.name)?;
                branches.push((is_clause(*number), value.cast(&target)));
            }
        }
        for (number, action) in (1..).zip(actions) {
            if matches!(action, Action::Insert(set) if !set.iter().any(|(p, _)| *p == index)) {
                let null = Expr::Literal(ScalarValue::Null).cast(&target);
                branches.push((is_clause(number), null));
            }
        }
        let old = field(index);
        exprs.push(match branches.is_empty() {
            true => old,
            false => Expr::Case {
                branches,
                otherwise: Some(Box::new(old.cast(&target))),
                data_type: target,
            },
        });
    }
    let any_of = |pred: fn(&Action) -> bool| {
        (1..)
            .zip(actions)
            .filter(|(_, action)| pred(action))
            .map(|(number, _)| is_clause(number))
            .reduce(|l, r| Expr::Binary {
                op: BinaryOp::Or,
                left: Box::new(l),
                right: Box::new(r),
            })
            .unwrap_or(Expr::Literal(ScalarValue::Boolean(false)))
    };
    let removed = any_of(|a| matches!(a, Action::Delete));
    // Target rows stay unless deleted (once each); source rows only when inserted.
    let kept = Expr::Case {
        branches: vec![(
            Expr::IsNotNull(Box::new(field(width))),
            Expr::and_all(vec![
                Expr::Not(Box::new(removed)),
                field(width + TARGET_EXTRA + 2 + values),
            ])
            .expect("two conditions"),
        )],
        otherwise: Some(Box::new(any_of(|a| matches!(a, Action::Insert(_))))),
        data_type: DataType::Boolean,
    };
    let touched = any_of(|a| !matches!(a, Action::Nothing));
    let conflict = field(width + TARGET_EXTRA + 1 + values);
    exprs.extend([touched, kept, conflict, field(width)]);
    let mut names: Vec<String> = table.columns.iter().map(|c| c.name.clone()).collect();
    let flags = ["touched", "kept", "conflict", ROW_ADDRESS];
    names.extend(flags.map(String::from));
    // The target row as it was, with its commit, for the change record.
    for index in (0..width).chain([width + 1, width + 2]) {
        exprs.push(field(index));
        names.push(format!("old_{index}"));
    }
    Ok(input.project(exprs, names))
}

/// `name` as a quoted identifier, so that the SQL a statement is rewritten into names exactly
/// the table or alias the statement did.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The name the source's columns are qualified by: its alias, or its table's name.
fn source_qualifier(source: &ast::TableFactor) -> Result<String> {
    match source {
        ast::TableFactor::Table {
            alias: Some(alias), ..
        }
        | ast::TableFactor::Derived {
            alias: Some(alias), ..
        } => Ok(normalize(&alias.name)),
        ast::TableFactor::Table {
            name, alias: None, ..
        } => Ok(super::object_name(name)?),
        _ => Err(unsupported!(
            "this MERGE source (a table or an aliased subquery)"
        )),
    }
}

/// What one WHEN clause does, with its values as SQL text over the joined row.
fn action(
    kind: &ast::MergeClauseKind,
    action: &ast::MergeAction,
    column: &dyn Fn(&str) -> Result<usize>,
) -> Result<Action> {
    let matched = matches!(kind, ast::MergeClauseKind::Matched);
    match action {
        ast::MergeAction::Update(update) if matched => {
            let ast::MergeUpdateKind::Set(assignments) = &update.kind else {
                return Err(unsupported!("MERGE ... UPDATE SET *"));
            };
            if update.update_predicate.is_some() || update.delete_predicate.is_some() {
                return Err(unsupported!("MERGE ... UPDATE ... WHERE"));
            }
            let mut values = Vec::new();
            for assignment in assignments {
                let ast::AssignmentTarget::ColumnName(name) = &assignment.target else {
                    return Err(unsupported!("assigning a tuple of columns"));
                };
                let Some(last) = name.0.last().and_then(|part| part.as_ident()) else {
                    return Err(bind_err!("invalid column name {name}"));
                };
                let position = column(&normalize(last))?;
                if values.iter().any(|(p, _)| *p == position) {
                    return Err(bind_err!("multiple assignments to the same column {last}"));
                }
                values.push((position, assignment.value.to_string()));
            }
            Ok(Action::Update(values))
        }
        ast::MergeAction::Delete { .. } if matched => Ok(Action::Delete),
        ast::MergeAction::Insert(insert) if !matched => {
            if insert.insert_predicate.is_some() {
                return Err(unsupported!("MERGE ... INSERT ... WHERE"));
            }
            let ast::MergeInsertKind::Values(values) = &insert.kind else {
                return Err(unsupported!("MERGE ... INSERT ROW or INSERT *"));
            };
            let [row] = values.rows.as_slice() else {
                return Err(bind_err!("MERGE ... INSERT takes one row of VALUES"));
            };
            let positions: Vec<usize> = match insert.columns.is_empty() {
                true => (0..row.len()).collect(),
                false => insert
                    .columns
                    .iter()
                    .map(|name| column(&super::object_name(name)?))
                    .collect::<Result<_>>()?,
            };
            if positions.len() != row.len() {
                return Err(bind_err!(
                    "MERGE ... INSERT names {} columns but gives {} values",
                    positions.len(),
                    row.len()
                ));
            }
            let values = positions
                .into_iter()
                .zip(row.iter().map(|v| v.to_string()))
                .collect();
            Ok(Action::Insert(values))
        }
        ast::MergeAction::DoNothing { .. } => Ok(Action::Nothing),
        _ if matched => Err(bind_err!("WHEN MATCHED takes UPDATE, DELETE or DO NOTHING")),
        _ => Err(bind_err!("WHEN NOT MATCHED takes INSERT or DO NOTHING")),
    }
}
