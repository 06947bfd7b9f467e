//! Secrets (ADR 0082): `CREATE [OR REPLACE] [PERSISTENT] SECRET name (TYPE openai, BASE_URL
//! '...', API_KEY '...')` and `DROP SECRET [IF EXISTS] name`, in DuckDB's syntax, and the
//! listings that name them without their options: DuckDB's `duckdb_secrets()` and the system
//! table `pondra_secrets`. The options are sealed where the statement runs (the cluster holds
//! the sealing key); the binder checks them.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema};
use pondra_catalog::{SecretOptions, Snapshot};
use pondra_parser::ast;

use super::Binder;
use super::scope::normalize;
use crate::expr::Expr;
use crate::logical::LogicalPlan;
use crate::models::OPENAI_SECRET_TYPE;
use crate::plan::Plan;
use crate::scalar::ScalarValue;
use crate::{Result, bind_err, unsupported};

/// DuckDB's table function listing secrets.
pub(super) const DUCKDB_SECRETS: &str = "duckdb_secrets";

/// The system table listing secrets.
pub(super) const PONDRA_SECRETS: &str = "pondra_secrets";

/// The options a secret of type `openai` takes.
const OPENAI_OPTIONS: &[&str] = &["base_url", "api_key"];

impl Binder<'_> {
    /// `CREATE SECRET` or `DROP SECRET`.
    pub(super) fn bind_secret_statement(&self, statement: &ast::Statement) -> Result<Plan> {
        match statement {
            ast::Statement::CreateSecret {
                or_replace,
                temporary,
                if_not_exists,
                name,
                storage_specifier,
                secret_type,
                options,
            } => {
                refuse_temporary_or_stored(*temporary, storage_specifier.as_ref())?;
                let options = secret_options(secret_type, options)?;
                // DuckDB names an unnamed secret after its type.
                let name = name
                    .as_ref()
                    .map_or_else(|| format!("__default_{}", options.secret_type), normalize);
                Ok(Plan::CreateSecret {
                    name,
                    options,
                    or_replace: *or_replace,
                    if_not_exists: *if_not_exists,
                })
            }
            ast::Statement::DropSecret {
                if_exists,
                temporary,
                name,
                storage_specifier,
            } => {
                refuse_temporary_or_stored(*temporary, storage_specifier.as_ref())?;
                Ok(Plan::DropSecret {
                    name: normalize(name),
                    if_exists: *if_exists,
                })
            }
            other => unreachable!("not a secret statement: {other}"),
        }
    }
}

/// Refuses what DuckDB's secrets have and Pondra's do not: secrets kept in memory only, and
/// other places to keep them.
fn refuse_temporary_or_stored(temporary: Option<bool>, storage: Option<&ast::Ident>) -> Result<()> {
    if temporary == Some(true) {
        return Err(unsupported!(
            "temporary secrets: a secret is kept sealed in the lake (CREATE [PERSISTENT] SECRET)"
        ));
    }
    if let Some(storage) = storage {
        return Err(unsupported!(
            "secret storage {storage}: a secret is kept sealed in the lake's catalog"
        ));
    }
    Ok(())
}

/// The type and the options of a secret, checked: a type Pondra uses, and its options once
/// each.
fn secret_options(
    secret_type: &ast::Ident,
    options: &[ast::SecretOption],
) -> Result<SecretOptions> {
    let secret_type = secret_type.value.to_lowercase();
    if secret_type != OPENAI_SECRET_TYPE {
        return Err(unsupported!(
            "secrets of type {secret_type}: the type Pondra uses is {OPENAI_SECRET_TYPE}, for \
             ai_embed and ai_complete"
        ));
    }
    let mut named = BTreeMap::new();
    for option in options {
        let key = option.key.value.to_lowercase();
        if !OPENAI_OPTIONS.contains(&key.as_str()) {
            let taken: Vec<String> = OPENAI_OPTIONS.iter().map(|o| o.to_uppercase()).collect();
            return Err(bind_err!(
                "a secret of type {secret_type} takes {}, not {key}",
                taken.join(" and ")
            ));
        }
        if named
            .insert(key.clone(), option.value.value.clone())
            .is_some()
        {
            return Err(bind_err!("the secret's option {key} is given twice"));
        }
    }
    Ok(SecretOptions {
        secret_type,
        options: named,
    })
}

/// `duckdb_secrets()`: DuckDB's columns for each secret, never its options.
pub(super) fn duckdb_secrets(
    snapshot: &Snapshot,
    args: &[ast::FunctionArg],
) -> Result<LogicalPlan> {
    if !args.is_empty() {
        return Err(bind_err!(
            "{DUCKDB_SECRETS} takes no arguments here: no secret's options are ever shown"
        ));
    }
    let columns = [
        ("name", DataType::Utf8),
        ("type", DataType::Utf8),
        ("provider", DataType::Utf8),
        ("persistent", DataType::Boolean),
        ("storage", DataType::Utf8),
    ];
    let row = |name: &str, secret_type: &str| {
        vec![
            text(name),
            text(secret_type),
            text("config"),
            Expr::Literal(ScalarValue::Boolean(true)),
            text("lake"),
        ]
    };
    Ok(listing(snapshot, &columns, row))
}

/// The system table `pondra_secrets`: each secret's name and type.
pub(super) fn pondra_secrets(snapshot: &Snapshot) -> LogicalPlan {
    let columns = [("name", DataType::Utf8), ("type", DataType::Utf8)];
    listing(snapshot, &columns, |name, secret_type| {
        vec![text(name), text(secret_type)]
    })
}

/// One row per secret, by name, of `columns`, each made by `row` from its name and type.
fn listing(
    snapshot: &Snapshot,
    columns: &[(&str, DataType)],
    row: impl Fn(&str, &str) -> Vec<Expr>,
) -> LogicalPlan {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, data_type)| Field::new(*name, data_type.clone(), false))
        .collect();
    let rows = snapshot
        .secrets
        .values()
        .map(|secret| row(&secret.name, &secret.secret_type))
        .collect();
    LogicalPlan::Values {
        schema: Arc::new(Schema::new(fields)),
        rows,
    }
}

fn text(value: &str) -> Expr {
    Expr::Literal(ScalarValue::Utf8(value.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bind(sql: &str) -> Result<Plan> {
        let snapshot = Snapshot::default();
        let parsed = pondra_parser::parse_sql(sql).unwrap().remove(0);
        Binder::new(&snapshot).bind_statement(&parsed)
    }

    #[test]
    fn create_secret_keeps_its_checked_options() {
        let plan = bind(
            "CREATE OR REPLACE PERSISTENT SECRET Mine (TYPE OpenAI, BASE_URL 'http://h/v1', \
             API_KEY 'sk-1')",
        )
        .unwrap();
        let Plan::CreateSecret {
            name,
            options,
            or_replace,
            if_not_exists,
        } = plan
        else {
            panic!("not a CREATE SECRET: {plan:?}");
        };
        assert_eq!(name, "mine");
        assert!(or_replace && !if_not_exists);
        assert_eq!(options.secret_type, "openai");
        assert_eq!(options.options["api_key"], "sk-1");
        assert_eq!(options.options["base_url"], "http://h/v1");
    }

    #[test]
    fn other_types_options_and_temporary_secrets_are_refused() {
        let refused = |sql: &str| bind(sql).unwrap_err().to_string();
        assert!(refused("CREATE SECRET s (TYPE s3, KEY_ID 'k')").contains("type s3"));
        assert!(refused("CREATE SECRET s (TYPE openai, REGION 'x')").contains("not region"));
        assert!(
            refused("CREATE SECRET s (TYPE openai, API_KEY 'a', API_KEY 'b')").contains("twice")
        );
        assert!(refused("CREATE TEMPORARY SECRET s (TYPE openai)").contains("temporary"));
        let dropped = bind("DROP PERSISTENT SECRET IF EXISTS s").unwrap();
        assert!(matches!(
            dropped,
            Plan::DropSecret {
                if_exists: true,
                ..
            }
        ));
    }
}
