//! MCP's resources: each table and view is `pondra://table/<name>` (the name percent-encoded),
//! and reading one gives its columns and first rows as JSON.

use pondra_cluster::{StatementResult, quoted_name};
use serde_json::{Value, json};

use super::rpc::{self, INTERNAL_ERROR, RESOURCE_NOT_FOUND, RpcError};
use super::tools::{columns, find_table, kind_name, rows_json};
use super::{Caller, Mcp};

const TABLE_URIS: &str = "pondra://table/";

/// Rows a resource shows: enough to see what the values look like.
const SAMPLE_ROWS: usize = 20;

/// `resources/list`: every table and view.
pub(super) async fn list(mcp: &Mcp, caller: &Caller) -> Result<Value, RpcError> {
    let node = mcp.node(caller).await.map_err(internal)?;
    let snapshot = node.snapshot();
    let resources: Vec<Value> = snapshot
        .visible_tables()
        .map(|table| {
            let kind = kind_name(&table.kind);
            json!({
                "uri": format!("{TABLE_URIS}{}", percent_encoded(&table.name)),
                "name": table.name,
                "description": format!("the {kind}'s columns and first {SAMPLE_ROWS} rows"),
                "mimeType": "application/json",
            })
        })
        .collect();
    Ok(json!({"resources": resources}))
}

/// `resources/templates/list`: the form of every table's URI.
pub(super) fn templates() -> Value {
    json!({"resourceTemplates": [{
        "uriTemplate": format!("{TABLE_URIS}{{name}}"),
        "name": "table",
        "description": format!("a table's or view's columns and first {SAMPLE_ROWS} rows"),
        "mimeType": "application/json",
    }]})
}

/// `resources/read`: a table's columns and first rows.
pub(super) async fn read(mcp: &Mcp, caller: &Caller, params: &Value) -> Result<Value, RpcError> {
    let uri = rpc::string_param(params, "uri")?;
    let not_found = |why: String| RpcError::new(RESOURCE_NOT_FOUND, why);
    let name = uri
        .strip_prefix(TABLE_URIS)
        .and_then(percent_decoded)
        .ok_or_else(|| not_found(format!("no resource {uri}: tables are {TABLE_URIS}<name>")))?;
    let table = find_table(mcp, caller, &name).await.map_err(not_found)?;
    let columns = columns(mcp, caller, &table).await.map_err(internal)?;
    let sample = format!(
        "SELECT * FROM {} LIMIT {SAMPLE_ROWS}",
        quoted_name(&table.name)
    );
    let rows = match mcp.run(caller, &sample).await.map_err(internal)? {
        StatementResult::Rows { schema, batches } => {
            rows_json(&schema, &batches).map_err(internal)?["rows"].take()
        }
        StatementResult::Done { .. } => json!([]),
    };
    let text = json!({
        "table": table.name,
        "kind": kind_name(&table.kind),
        "columns": columns,
        "rows": rows,
    });
    Ok(json!({"contents": [{
        "uri": uri,
        "mimeType": "application/json",
        "text": text.to_string(),
    }]}))
}

fn internal(message: String) -> RpcError {
    RpcError::new(INTERNAL_ERROR, message)
}

/// `name` with every byte but letters, digits, `-`, `.`, `_` and `~` written `%XX`, as a URI's
/// path segment holds it.
fn percent_encoded(name: &str) -> String {
    let mut encoded = String::with_capacity(name.len());
    for byte in name.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                encoded.push(byte as char)
            }
            _ => encoded.push_str(&format!("%{byte:02X}")),
        }
    }
    encoded
}

/// The name a percent-encoded path segment holds; none when it is not valid UTF-8 or a `%`
/// is not followed by two hex digits.
fn percent_decoded(segment: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(segment.len());
    let mut rest = segment.as_bytes();
    while let Some((&byte, after)) = rest.split_first() {
        if byte != b'%' {
            bytes.push(byte);
            rest = after;
            continue;
        }
        let hex = after
            .get(..2)
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit))?;
        bytes.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
        rest = &after[2..];
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_survive_their_uris() {
        for name in ["orders", "Line Items", "naïve/100%", ""] {
            assert_eq!(
                percent_decoded(&percent_encoded(name)).as_deref(),
                Some(name)
            );
        }
        assert_eq!(percent_encoded("a b/c"), "a%20b%2Fc");
        assert_eq!(percent_decoded("bad%2"), None);
        assert_eq!(percent_decoded("bad%zz"), None);
        assert_eq!(percent_decoded("bad%+1"), None);
        assert_eq!(percent_decoded("%FF"), None);
    }
}
