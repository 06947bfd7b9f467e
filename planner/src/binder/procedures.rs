//! Stored procedures (ADR 0081): `CREATE [OR REPLACE] PROCEDURE name(a type, ...) [LANGUAGE sql
//! | python] AS $$ ... $$`, one catalog entry per overload as for functions, and `DROP
//! PROCEDURE`. `CALL` runs in the caller's session, where the body's statements run; the
//! binder only finds the procedure a call names ([`procedure_for_call`]).

use std::sync::Arc;

use arrow::datatypes::DataType;
use pondra_catalog::{FunctionLanguage, Snapshot, SqlType, TableDef, TableKind, procedure_name};
use sqlparser::ast;

use super::sql_functions::{chosen_overload, quoted_body, routine_language, routine_parameters};
use super::{Binder, object_name};
use crate::plan::Plan;
use crate::types::sql_type_from_ast;
use crate::{Result, bind_err, unsupported};

impl Binder<'_> {
    /// `CREATE [OR REPLACE] PROCEDURE name(a type, ...) [LANGUAGE sql | python] AS $$ ... $$`.
    pub(super) fn bind_create_procedure(&self, create: &ast::CreateFunction) -> Result<Plan> {
        let name = object_name(&create.name)?;
        if name.contains('.') {
            return Err(unsupported!("a procedure in a schema ({name})"));
        }
        let language = routine_language("procedures", create)?;
        let (parameters, parameter_types) = routine_parameters("procedure", &name, create)?;
        let body = quoted_body(&name, &parameters, create, language)?;
        if language == FunctionLanguage::Sql {
            // Each statement must parse now; it is bound when called, once the tables it names
            // (maybe made by the body's earlier statements) exist.
            pondra_parser::parse_sql(&body)
                .map_err(|e| bind_err!("procedure {name}'s body: {e}"))?;
        }
        let kind = TableKind::Procedure {
            parameters,
            parameter_types: parameter_types.clone(),
            language,
            body,
        };
        Ok(Plan::CreateView {
            view: TableDef::new(procedure_name(&name, &parameter_types), Vec::new(), kind),
            if_not_exists: create.if_not_exists,
            or_replace: create.or_replace,
        })
    }

    /// `DROP PROCEDURE [IF EXISTS] name[(types)]`: one procedure. Without types, the one
    /// procedure of the name, when it has one overload.
    pub(super) fn bind_drop_procedure(
        &self,
        descriptions: &[ast::FunctionDesc],
        if_exists: bool,
    ) -> Result<Plan> {
        let [desc] = descriptions else {
            return Err(unsupported!("dropping several procedures in one statement"));
        };
        let name = object_name(&desc.name)?;
        let overloads = self.snapshot.procedures_named(&name);
        let key = match &desc.args {
            None => match overloads.as_slice() {
                [only] => only.name.clone(),
                [] => procedure_name(&name, &[]),
                _ => {
                    return Err(bind_err!(
                        "procedure {name} is overloaded: name the argument types of the one to drop"
                    ));
                }
            },
            Some(args) => {
                let types = args
                    .iter()
                    .map(|a| sql_type_from_ast(&a.data_type))
                    .collect::<Result<Vec<SqlType>>>()?;
                procedure_name(&name, &types)
            }
        };
        if !if_exists && !overloads.iter().any(|p| p.name == key) {
            return Err(bind_err!("procedure {name} does not exist"));
        }
        Ok(Plan::DropTable {
            name: key,
            if_exists,
            dependents: Vec::new(),
        })
    }
}

/// The procedure `CALL name(...)` runs, for arguments of `types`: the overload they fit best.
pub fn procedure_for_call(
    snapshot: &Snapshot,
    name: &str,
    types: &[DataType],
) -> Result<Arc<TableDef>> {
    let overloads = snapshot.procedures_named(name);
    if overloads.is_empty() {
        return Err(bind_err!("procedure {name} does not exist"));
    }
    let parameter_types = |def: &TableDef| match &def.kind {
        TableKind::Procedure {
            parameter_types, ..
        } => Some(parameter_types.clone()),
        _ => None,
    };
    chosen_overload("procedure", name, &overloads, types, parameter_types).cloned()
}
