//! The MCP door's answers to bad input, and its tools on a lake, without HTTP around them.

use std::sync::Arc;
use std::time::Instant;

use pondra_cluster::NodeOptions;
use serde_json::{Value, json};

use super::rpc::{INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR};
use super::*;
use crate::serve::auth::Tokens;
use crate::serve::lakes::Lakes;

/// A door on a folder of lakes, none opened until a request names one (`lake`, here).
fn door(root: &std::path::Path) -> Mcp {
    let lakes = Lakes::under(root.display().to_string(), NodeOptions::default()).unwrap();
    let server = Server {
        lakes,
        tokens: Tokens::default(),
        started: Instant::now(),
        statement_timeout: None,
        advertise: "127.0.0.1:7070".into(),
        membership: None,
    };
    Mcp {
        server: Arc::new(server),
        sessions: Sessions::default(),
    }
}

fn caller(role: Role) -> Caller {
    let database = Some("lake".to_string());
    Caller {
        role,
        database,
        socket: None,
    }
}

/// The status and body of the answer to `body`.
async fn answer(mcp: &Mcp, role: Role, body: &str) -> (StatusCode, Value) {
    match mcp.answer(&caller(role), body.as_bytes()).await {
        Reply::Json { status, body, .. } => (status, body),
        Reply::Accepted => (StatusCode::ACCEPTED, Value::Null),
    }
}

fn error_code(response: &Value) -> i64 {
    response["error"]["code"]
        .as_i64()
        .expect("an error response")
}

fn request(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

#[tokio::test]
async fn malformed_messages_get_json_rpc_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = door(dir.path());
    let (status, body) = answer(&mcp, Role::Read, "{\"jsonrpc\": \"2.0\", \"id\": 1,").await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::BAD_REQUEST, PARSE_ERROR)
    );
    assert_eq!(body["id"], Value::Null);
    for bad in [
        "[]",
        "42",
        "{\"id\": 1, \"method\": \"ping\"}",
        "{\"jsonrpc\": \"2.0\", \"id\": 1}",
    ] {
        let (status, body) = answer(&mcp, Role::Read, bad).await;
        assert_eq!(
            (status, error_code(&body)),
            (StatusCode::BAD_REQUEST, INVALID_REQUEST),
            "{bad}"
        );
    }
    let (status, body) = answer(&mcp, Role::Read, &request(7, "tools/destroy", json!({}))).await;
    assert_eq!(
        (status, error_code(&body), &body["id"]),
        (StatusCode::OK, METHOD_NOT_FOUND, &json!(7))
    );
}

#[tokio::test]
async fn missing_or_wrong_params_are_invalid_params() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = door(dir.path());
    let calls = [
        ("initialize", json!({})),
        ("tools/call", json!({})),
        ("tools/call", json!({"name": "query"})),
        (
            "tools/call",
            json!({"name": "query", "arguments": {"sql": 1}}),
        ),
        (
            "tools/call",
            json!({"name": "query", "arguments": "SELECT 1"}),
        ),
        (
            "tools/call",
            json!({"name": "drop_everything", "arguments": {}}),
        ),
        (
            "tools/call",
            json!({"name": "describe_table", "arguments": {}}),
        ),
        ("resources/read", json!({})),
    ];
    for (method, params) in calls {
        let (status, body) = answer(&mcp, Role::Admin, &request(1, method, params.clone())).await;
        assert_eq!(
            (status, error_code(&body)),
            (StatusCode::OK, INVALID_PARAMS),
            "{method} {params}"
        );
    }
    let positional = r#"{"jsonrpc": "2.0", "id": 2, "method": "ping", "params": [1]}"#;
    let (_, body) = answer(&mcp, Role::Read, positional).await;
    assert_eq!(error_code(&body), INVALID_PARAMS);
}

#[tokio::test]
async fn notifications_are_accepted_and_batches_answered_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = door(dir.path());
    let initialized = r#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#;
    assert_eq!(
        answer(&mcp, Role::Read, initialized).await.0,
        StatusCode::ACCEPTED
    );
    let batch = format!(
        "[{}, {initialized}, {}, 5]",
        request(1, "ping", json!({})),
        request(2, "nothing", json!({}))
    );
    let (status, body) = answer(&mcp, Role::Read, &batch).await;
    assert_eq!(status, StatusCode::OK);
    let responses = body.as_array().unwrap();
    assert_eq!(responses.len(), 3);
    assert_eq!(
        responses[0],
        json!({"jsonrpc": "2.0", "id": 1, "result": {}})
    );
    assert_eq!(error_code(&responses[1]), METHOD_NOT_FOUND);
    assert_eq!(error_code(&responses[2]), INVALID_REQUEST);
}

#[tokio::test]
async fn initialize_opens_a_session_at_a_version_served() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = door(dir.path());
    for (asked, answered) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-03-26", "2025-03-26"),
        ("1999-01-01", PROTOCOL_VERSION),
    ] {
        let params = json!({"protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
        let reply = mcp
            .answer(
                &caller(Role::Read),
                request(1, "initialize", params).as_bytes(),
            )
            .await;
        let Reply::Json {
            body,
            session: Some(session),
            ..
        } = reply
        else {
            panic!("initialize opens a session: {reply:?}");
        };
        assert_eq!(body["result"]["protocolVersion"], answered);
        assert_eq!(body["result"]["serverInfo"]["name"], "pondra");
        assert!(mcp.sessions.touch(&session));
    }
}

#[test]
fn origins_of_other_sites_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = door(dir.path());
    let allowed = |origin: &str| {
        let mut headers = HeaderMap::new();
        headers.insert(header::ORIGIN, HeaderValue::from_str(origin).unwrap());
        check_origin(&mcp.server, &headers).is_ok()
    };
    assert!(check_origin(&mcp.server, &HeaderMap::new()).is_ok());
    assert!(allowed("http://localhost:6274"));
    assert!(allowed("http://127.0.0.1"));
    assert!(allowed("http://[::1]:8080"));
    assert!(allowed("https://127.0.0.1:7070"));
    assert!(!allowed("http://attacker.example:7070"));
    assert!(!allowed("null"));
}

/// The text and structured content of a tool's answer, and whether it is an error.
async fn tool(mcp: &Mcp, role: Role, name: &str, arguments: Value) -> (String, Value, bool) {
    let params = json!({"name": name, "arguments": arguments});
    let (_, body) = answer(mcp, role, &request(1, "tools/call", params)).await;
    let result = &body["result"];
    let text = result["content"][0]["text"].as_str().expect("text content");
    let failed = result["isError"].as_bool().expect("isError");
    (
        text.to_string(),
        result["structuredContent"].clone(),
        failed,
    )
}

/// Runs `test` as the server runs requests: on a worker thread with a statement's stack.
fn on_server_runtime(test: impl Future<Output = ()> + Send + 'static) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(pondra_cluster::STATEMENT_STACK_BYTES)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async { tokio::spawn(test).await.unwrap() });
}

#[test]
fn tools_answer_within_the_callers_role_and_cap_rows() {
    on_server_runtime(tools_on_a_lake());
}

async fn tools_on_a_lake() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = door(dir.path());
    let create = json!({"sql": "CREATE TABLE t (id INT NOT NULL, name VARCHAR)"});
    let (text, _, failed) = tool(&mcp, Role::Write, "query", create.clone()).await;
    assert!(
        failed && text.contains("a write token cannot create"),
        "{text}"
    );
    assert!(!tool(&mcp, Role::Admin, "query", create).await.2);
    let insert = json!({"sql": "INSERT INTO t SELECT range::INT, 'n' || range FROM range(1500)"});
    let (text, _, failed) = tool(&mcp, Role::Read, "query", insert.clone()).await;
    assert!(
        failed && text.contains("a read token cannot write"),
        "{text}"
    );
    let (_, done, failed) = tool(&mcp, Role::Write, "query", insert).await;
    assert!(!failed && done["done"] == "INSERT 0 1500", "{done}");

    let (_, rows, _) = tool(&mcp, Role::Read, "query", json!({"sql": "SELECT * FROM t"})).await;
    assert_eq!(
        (rows["rows"].as_array().unwrap().len(), &rows["row_count"]),
        (1000, &json!(1500))
    );
    assert!(
        rows["note"].as_str().unwrap().contains("500 were left out"),
        "{rows}"
    );
    let (text, _, failed) = tool(
        &mcp,
        Role::Read,
        "query",
        json!({"sql": "SELECT nope FROM t"}),
    )
    .await;
    assert!(failed && text.contains("nope"), "{text}");

    let (_, described, _) = tool(&mcp, Role::Read, "describe_table", json!({"table": "T"})).await;
    let columns = json!([
        {"name": "id", "type": "INTEGER", "nullable": false},
        {"name": "name", "type": "VARCHAR", "nullable": true},
    ]);
    assert_eq!(described["columns"], columns);
    let (_, listed, _) = tool(&mcp, Role::Read, "list_tables", json!({})).await;
    assert_eq!(listed["tables"], json!([{"name": "t", "kind": "table"}]));
    let (plan, _, failed) = tool(
        &mcp,
        Role::Read,
        "explain",
        json!({"sql": "SELECT count(*) FROM t"}),
    )
    .await;
    assert!(!failed && plan.contains("t"), "{plan}");
    let (text, _, failed) = tool(
        &mcp,
        Role::Read,
        "explain",
        json!({"sql": "SELECT 1; SELECT 2"}),
    )
    .await;
    assert!(failed && text.contains("one query"), "{text}");
}
