//! MCP's tools: `query` runs SQL, `list_tables` and `describe_table` show what the lake holds,
//! `explain` gives a query's plan. A tool that fails answers `isError` with the engine's
//! message, for the agent to read and try again; a call that names no tool or lacks its
//! arguments is a JSON-RPC error.

use std::sync::Arc;

use arrow::array::cast::AsArray;
use arrow::array::{Array, RecordBatch};
use arrow::datatypes::SchemaRef;
use pondra_cluster::{StatementResult, TableDef, TableKind, quoted_name};
use serde_json::{Value, json};

use super::rpc::{self, RpcError};
use super::{Caller, Mcp};
use crate::serve::auth::{Role, authorize, required_role};
use crate::serve::encode::{self, JsonRows};
use crate::serve::http::{Failure, needs};

/// Rows a query's answer carries at most: an agent reads every row it is given, into a
/// context of limited size.
const MAX_ROWS: usize = 1_000;

/// `tools/list`: each tool with the JSON Schema of its arguments.
pub(super) fn list() -> Value {
    let read_only = json!({"readOnlyHint": true, "openWorldHint": false});
    let one_string = |name: &str, about: &str| {
        json!({
            "type": "object",
            "properties": {name: {"type": "string", "description": about}},
            "required": [name],
        })
    };
    json!({"tools": [
        {
            "name": "query",
            "title": "Run SQL",
            "description": format!("Runs SQL statements and returns the last one's rows (at most \
                {MAX_ROWS}, with a note saying how many were left out) or what it did. Writes \
                need a token that may write."),
            "inputSchema": one_string("sql", "the SQL to run"),
            "annotations": {"readOnlyHint": false, "destructiveHint": true, "openWorldHint": false},
        },
        {
            "name": "list_tables",
            "title": "List tables",
            "description": "Lists the tables and views of the lake, each with its kind.",
            "inputSchema": {"type": "object", "properties": {}},
            "annotations": read_only,
        },
        {
            "name": "describe_table",
            "title": "Describe a table",
            "description": "Gives a table's or view's columns: names, types and whether each \
                may be NULL.",
            "inputSchema": one_string("table", "the table's or view's name"),
            "annotations": read_only,
        },
        {
            "name": "explain",
            "title": "Explain a query",
            "description": "Gives the plan a query would run with (EXPLAIN), without running it.",
            "inputSchema": one_string("sql", "one query"),
            "annotations": read_only,
        },
    ]})
}

/// What a tool gives back: text for the model, and the same as JSON for programs.
struct Output {
    text: String,
    structured: Value,
}

impl Output {
    fn json(structured: Value) -> Output {
        let text = structured.to_string();
        Output { text, structured }
    }
}

/// `tools/call`: runs the named tool on its arguments.
pub(super) async fn call(mcp: &Mcp, caller: &Caller, params: &Value) -> Result<Value, RpcError> {
    let name = rpc::string_param(params, "name")?;
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => &Value::Null,
        Some(arguments @ Value::Object(_)) => arguments,
        Some(_) => return Err(RpcError::invalid_params("arguments are an object")),
    };
    let outcome = match name {
        "query" => query(mcp, caller, rpc::string_param(arguments, "sql")?).await,
        "list_tables" => list_tables(mcp, caller).await,
        "describe_table" => {
            describe_table(mcp, caller, rpc::string_param(arguments, "table")?).await
        }
        "explain" => explain(mcp, caller, rpc::string_param(arguments, "sql")?).await,
        other => {
            let why =
                format!("there is no tool {other}: query, list_tables, describe_table or explain");
            return Err(RpcError::invalid_params(why));
        }
    };
    Ok(match outcome {
        Ok(output) => json!({
            "content": [{"type": "text", "text": output.text}],
            "structuredContent": output.structured,
            "isError": false,
        }),
        Err(message) => json!({
            "content": [{"type": "text", "text": pondra_cluster::bounded_message(message)}],
            "isError": true,
        }),
    })
}

/// `query`: the statements run as `/sql` runs them, if the caller's token allows them.
async fn query(mcp: &Mcp, caller: &Caller, sql: &str) -> Result<Output, String> {
    let needed = required_role(sql)?;
    let what = match needed {
        Role::Admin => "create, drop or alter",
        _ => "write",
    };
    needs(caller.role, needed, what).map_err(|Failure(_, reason)| reason)?;
    match mcp.run(caller, sql).await? {
        StatementResult::Done { tag } => Ok(Output::json(json!({"done": tag}))),
        StatementResult::Rows { schema, batches } => {
            capped_rows(&schema, &batches).map(Output::json)
        }
    }
}

/// An answer's columns and first [`MAX_ROWS`] rows, with how many rows it has and, when some
/// were left out, a note saying so.
fn capped_rows(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<Value, String> {
    let total: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let mut answer = rows_json(schema, &first_rows(batches, MAX_ROWS))?;
    answer["row_count"] = json!(total);
    if total > MAX_ROWS {
        let left_out = total - MAX_ROWS;
        answer["note"] = json!(format!(
            "only the first {MAX_ROWS} of {total} rows are here: {left_out} were left out. \
             Add a LIMIT, a filter or an aggregate to see the rest."
        ));
    }
    Ok(answer)
}

/// Rows as `/sql` sends them: `{"columns": [{"name", "type"}...], "rows": [[v, ...], ...]}`.
pub(super) fn rows_json(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<Value, String> {
    let text = encode::json(schema, batches, JsonRows::Arrays)?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

/// The first `limit` rows of `batches`, as slices of them.
fn first_rows(batches: &[RecordBatch], limit: usize) -> Vec<RecordBatch> {
    let mut left = limit;
    let mut first = Vec::new();
    for batch in batches {
        if left == 0 {
            break;
        }
        let taken = batch.num_rows().min(left);
        first.push(batch.slice(0, taken));
        left -= taken;
    }
    first
}

async fn list_tables(mcp: &Mcp, caller: &Caller) -> Result<Output, String> {
    let snapshot = mcp.node(caller).await?.snapshot();
    let tables: Vec<Value> = snapshot
        .visible_tables()
        .map(|table| {
            let mut entry = json!({"name": table.name, "kind": kind_name(&table.kind)});
            if let Some(comment) = table.comments.get("") {
                entry["comment"] = json!(comment);
            }
            entry
        })
        .collect();
    Ok(Output::json(json!({"tables": tables})))
}

pub(super) fn kind_name(kind: &TableKind) -> &'static str {
    match kind {
        TableKind::View { .. } => "view",
        TableKind::MaterializedView { .. } => "materialized view",
        _ => "table",
    }
}

async fn describe_table(mcp: &Mcp, caller: &Caller, name: &str) -> Result<Output, String> {
    let table = find_table(mcp, caller, name).await?;
    let columns = columns(mcp, caller, &table).await?;
    let mut described = json!({
        "table": table.name,
        "kind": kind_name(&table.kind),
        "columns": columns,
    });
    if let Some(comment) = table.comments.get("") {
        described["comment"] = json!(comment);
    }
    Ok(Output::json(described))
}

/// The table or view `name`, as written or in lower case, as an unquoted name is read.
pub(super) async fn find_table(
    mcp: &Mcp,
    caller: &Caller,
    name: &str,
) -> Result<Arc<TableDef>, String> {
    let snapshot = mcp.node(caller).await?.snapshot();
    let found = snapshot
        .table(name)
        .or_else(|| snapshot.table(&name.to_lowercase()));
    found
        .cloned()
        .ok_or_else(|| format!("there is no table or view named {name}"))
}

/// A table's columns as DESCRIBE gives them (a view's too, bound without being run), with a
/// stored table's declared NOT NULL and comments.
pub(super) async fn columns(
    mcp: &Mcp,
    caller: &Caller,
    table: &TableDef,
) -> Result<Vec<Value>, String> {
    let describe = format!("DESCRIBE {}", quoted_name(&table.name));
    let StatementResult::Rows { batches, .. } = mcp.run(caller, &describe).await? else {
        return Err(format!("DESCRIBE {} gave no columns", table.name));
    };
    let names = strings(&batches, 0);
    let types = strings(&batches, 1);
    let stored = matches!(table.kind, TableKind::Table);
    let columns = names.into_iter().zip(types).map(|(name, sql_type)| {
        let declared = table.columns.iter().find(|c| c.name == name);
        let nullable = !(stored && declared.is_some_and(|c| c.not_null));
        let mut column = json!({"name": name, "type": sql_type, "nullable": nullable});
        if let Some(comment) = table.comments.get(&name) {
            column["comment"] = json!(comment);
        }
        column
    });
    Ok(columns.collect())
}

/// The text values of column `index` of `batches`, in order (NULL as empty text).
fn strings(batches: &[RecordBatch], index: usize) -> Vec<String> {
    let mut values = Vec::new();
    for batch in batches {
        let Some(column) = batch.columns().get(index) else {
            continue;
        };
        let Some(text) = column.as_string_opt::<i32>() else {
            continue;
        };
        values.extend((0..text.len()).map(|i| match text.is_null(i) {
            true => String::new(),
            false => text.value(i).to_string(),
        }));
    }
    values
}

/// `explain`: the plan of one query, which is not run.
async fn explain(mcp: &Mcp, caller: &Caller, sql: &str) -> Result<Output, String> {
    let statements = pondra_cluster::parse_sql(sql).map_err(|e| e.to_string())?;
    let [statement] = statements.as_slice() else {
        return Err(format!(
            "explain takes one query, not {} statements",
            statements.len()
        ));
    };
    let explained = format!("EXPLAIN {}", statement.text);
    // Checked as `/sql` checks what it runs, whatever the text explained turns out to be.
    authorize(caller.role, &explained)?;
    let StatementResult::Rows { batches, .. } = mcp.run(caller, &explained).await? else {
        return Err("EXPLAIN gave no plan".into());
    };
    let plan = strings(&batches, 0).join("\n");
    Ok(Output {
        structured: json!({"plan": plan}),
        text: plan,
    })
}
