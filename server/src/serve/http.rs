//! The HTTP door (axum): `POST /sql`, `POST /tables/{name}/append`, `GET /stats`, `GET /health`,
//! `GET /views/{name}/changes` (a live query as server-sent events, ADR 0054), `GET /cluster`,
//! and `POST /cluster/commit` for commits other processes prepared (ADR 0053); the Iceberg
//! REST catalog is nested under `/iceberg` (`iceberg_rest.rs`), the console at `/` and
//! `/console` (`console/`, ADR 0080), and MCP at `/mcp` (`mcp/`, ADR 0082).

use std::collections::HashMap;
use std::io::Cursor;
use std::sync::Arc;

use arrow::array::RecordBatch;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use pondra_cluster::{AppendOutcome, Node, StatementResult};

use super::Server;
use super::auth::{Role, authorize};
use super::client::{ClientSocket, watched};
use super::encode::{self, JsonRows, quote};
use super::producer_appends::{self, ProducerClaim};

const ARROW_STREAM: &str = "application/vnd.apache.arrow.stream";

pub fn router(server: Arc<Server>) -> Router {
    Router::new()
        .route("/sql", post(sql))
        .route("/tables/{name}/append", post(append))
        .route("/stats", get(stats))
        .route("/views/{name}/changes", get(view_changes))
        .route("/health", get(health))
        .route("/cluster", get(cluster))
        .route("/cluster/commit", post(forwarded_commit))
        .route("/cluster/commits", get(commit_stream))
        .with_state(server.clone())
        .nest("/iceberg", super::iceberg_rest::router(server.clone()))
        .merge(super::mcp::router(server.clone()))
        .merge(super::console::router(server))
}

/// A refusal or failure, sent as `{"error": "..."}` with its status.
pub(super) struct Failure(pub StatusCode, pub String);

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let message = pondra_cluster::bounded_message(self.1);
        let body = format!("{{\"error\":{}}}", quote(&message));
        (self.0, [(header::CONTENT_TYPE, "application/json")], body).into_response()
    }
}

pub(super) fn bad_request(message: impl ToString) -> Failure {
    Failure(StatusCode::BAD_REQUEST, message.to_string())
}

/// The role of the request's bearer token; refusals are logged.
pub(super) fn role(server: &Server, headers: &HeaderMap, what: &str) -> Result<Role, Failure> {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or(v.strip_prefix("bearer ")));
    role_of_token(server, token, what)
}

/// The role of `token` (none when absent); refusals are logged.
pub(super) fn role_of_token(
    server: &Server,
    token: Option<&str>,
    what: &str,
) -> Result<Role, Failure> {
    server.tokens.role_of(token).map_err(|reason| {
        eprintln!("refused: http {what}: {reason}");
        Failure(StatusCode::UNAUTHORIZED, reason)
    })
}

pub(super) fn needs(role: Role, needed: Role, what: &str) -> Result<(), Failure> {
    if role < needed {
        let reason = format!(
            "permission denied: a {} token cannot {what} (it needs {})",
            role.name(),
            needed.name()
        );
        eprintln!("refused: http {what}: {reason}");
        return Err(Failure(StatusCode::FORBIDDEN, reason));
    }
    Ok(())
}

async fn sql(
    State(server): State<Arc<Server>>,
    ConnectInfo(socket): ConnectInfo<ClientSocket>,
    headers: HeaderMap,
    Query(params): Query<HashMap<String, String>>,
    body: Bytes,
) -> Result<Response, Failure> {
    let role = role(&server, &headers, "sql")?;
    let sql = sql_of(&headers, &body)?;
    let sql = sql.as_str();
    authorize(role, sql).map_err(|reason| {
        if reason.starts_with("permission denied") {
            eprintln!("refused: http sql: {reason}");
            Failure(StatusCode::FORBIDDEN, reason)
        } else {
            bad_request(reason)
        }
    })?;
    let node = server
        .lakes
        .node(params.get("db").map(String::as_str))
        .await
        .map_err(bad_request)?;
    let results = run_statements(&server, &node, sql, Some(socket))
        .await
        .map_err(bad_request)?;
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let (schema, batches, tag) = match results.into_iter().last() {
        Some(StatementResult::Rows { schema, batches }) => (schema, batches, None),
        Some(StatementResult::Done { tag }) => (
            Arc::new(arrow::datatypes::Schema::empty()),
            Vec::new(),
            Some(tag),
        ),
        None => return Err(bad_request("no statement")),
    };
    if accept.contains(ARROW_STREAM) {
        let pieces = encode::arrow_stream_pieces(&schema, batches)
            .map(|piece| piece.map_err(std::io::Error::other));
        let body = axum::body::Body::from_stream(futures::stream::iter(pieces));
        let mut response = ([(header::CONTENT_TYPE, ARROW_STREAM)], body).into_response();
        // A statement that returns no rows says what it did (`INSERT 0 3`), as JSON does.
        if let Some(tag) = tag.and_then(|t| header::HeaderValue::from_str(&t).ok()) {
            response.headers_mut().insert("x-pondra-tag", tag);
        }
        return Ok(response);
    }
    if accept.contains("text/csv") {
        let bytes = encode::csv(&schema, &batches).map_err(bad_request)?;
        return Ok(([(header::CONTENT_TYPE, "text/csv")], bytes).into_response());
    }
    let layout = match params.get("rows").map(String::as_str) {
        Some("objects") => JsonRows::Objects,
        _ => JsonRows::Arrays,
    };
    let mut json = encode::json(&schema, &batches, layout).map_err(bad_request)?;
    if let Some(tag) = tag {
        json.truncate(json.len() - 1);
        json.push_str(&format!(",\"tag\":{}}}", quote(&tag)));
    }
    Ok(([(header::CONTENT_TYPE, "application/json")], json).into_response())
}

/// Runs the statements of `sql` in one session with the server's defaults, stopping them if
/// the client behind `socket` hangs up; answers each one's result. `/sql` and MCP's tools run
/// SQL this way.
pub(super) async fn run_statements(
    server: &Server,
    node: &Arc<Node>,
    sql: &str,
    socket: Option<ClientSocket>,
) -> Result<Vec<StatementResult>, String> {
    let statements = pondra_cluster::parse_sql(sql).map_err(|e| e.to_string())?;
    let session = server.session();
    let mut results = Vec::with_capacity(statements.len());
    for statement in statements {
        let run = node.execute_in(&session, statement);
        let result = watched(run, &session, socket).await;
        results.push(result.map_err(|e| e.to_string())?);
    }
    Ok(results)
}

/// The SQL a request runs: its body, or in a JSON body (`{"sql": "...", "params": [...]}`)
/// the statement with its `$n` or `?` parameters written in as literals.
fn sql_of(headers: &HeaderMap, body: &[u8]) -> Result<String, Failure> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !content_type.starts_with("application/json") {
        let sql = std::str::from_utf8(body).map_err(|_| bad_request("the SQL is not UTF-8"))?;
        return Ok(sql.to_string());
    }
    let request: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| bad_request(format!("the request is not JSON: {e}")))?;
    let Some(serde_json::Value::String(sql)) = request.get("sql") else {
        return Err(bad_request(
            "a JSON request is {\"sql\": \"...\", \"params\": [...]}",
        ));
    };
    let params = match request.get("params") {
        None | Some(serde_json::Value::Null) => return Ok(sql.clone()),
        Some(serde_json::Value::Array(params)) => params,
        Some(_) => return Err(bad_request("params is a list of values")),
    };
    let literals = params
        .iter()
        .map(super::literal::json_literal)
        .collect::<Result<Vec<_>, _>>()
        .map_err(bad_request)?;
    pondra_cluster::substitute_placeholders(sql, &literals).map_err(bad_request)
}

async fn append(
    State(server): State<Arc<Server>>,
    Path(table): Path<String>,
    headers: HeaderMap,
    Query(params): Query<HashMap<String, String>>,
    body: Bytes,
) -> Result<Response, Failure> {
    let role = role(&server, &headers, "append")?;
    needs(role, Role::Write, "append rows")?;
    let node = server
        .lakes
        .node(params.get("db").map(String::as_str))
        .await
        .map_err(bad_request)?;
    let claim = ProducerClaim::from_params(|name| params.get(name).map(String::as_str))
        .map_err(bad_request)?;
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let schema = node
        .snapshot()
        .table(&table)
        .map(|t| t.arrow_schema())
        .ok_or_else(|| bad_request(format!("table {table} does not exist")))?;
    let batches = decode_rows(content_type, &body, schema).map_err(bad_request)?;
    let outcome = match producer_appends::append(&node, &table, &batches, claim).await {
        Ok(outcome) => outcome,
        Err(e @ pondra_cluster::NodeError::OutOfOrder(_)) => {
            return Err(Failure(StatusCode::CONFLICT, e.to_string()));
        }
        Err(e) => return Err(bad_request(e)),
    };
    let body = match outcome {
        AppendOutcome::Appended(rows) => format!("{{\"rows\":{rows},\"duplicate\":false}}"),
        AppendOutcome::Duplicate => "{\"rows\":0,\"duplicate\":true}".to_string(),
    };
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

/// `POST /cluster/commit`: a commit another process prepared (ADR 0053), as JSON. Answers
/// `{"commit": N}` once it is durable; 409 when it conflicts with a commit made since the
/// snapshot it was prepared against, for the sender to prepare it again.
async fn forwarded_commit(
    State(server): State<Arc<Server>>,
    headers: HeaderMap,
    Query(params): Query<HashMap<String, String>>,
    body: Bytes,
) -> Result<Response, Failure> {
    let role = role(&server, &headers, "commit")?;
    needs(role, Role::Admin, "hand over a commit")?;
    let node = server
        .lakes
        .node(params.get("db").map(String::as_str))
        .await
        .map_err(bad_request)?;
    if !node.leads() {
        // A 503 the sender retries: by then it may know the new leader.
        return Err(Failure(
            StatusCode::SERVICE_UNAVAILABLE,
            "this node does not lead the lake".into(),
        ));
    }
    let forwarded: pondra_cluster::ForwardedCommit =
        serde_json::from_slice(&body).map_err(|e| bad_request(format!("not a commit: {e}")))?;
    match node.commit_forwarded(forwarded).await {
        Ok(commit) => {
            let body = format!("{{\"commit\":{commit}}}");
            Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
        }
        Err(e @ pondra_cluster::NodeError::SerializationFailure) => {
            Err(Failure(StatusCode::CONFLICT, e.to_string()))
        }
        Err(e) => Err(bad_request(e)),
    }
}

/// Rows from an Arrow IPC stream, JSON lines or CSV with a header.
fn decode_rows(
    content_type: &str,
    body: &[u8],
    schema: arrow::datatypes::SchemaRef,
) -> Result<Vec<RecordBatch>, String> {
    let failed = |e: arrow::error::ArrowError| format!("cannot read the rows: {e}");
    if content_type.starts_with(ARROW_STREAM) {
        check_ipc_framing(body)?;
        // Arrow's IPC reader can panic on a malformed stream (a buffer past its body's end):
        // a client's bad bytes are its error, never the server's.
        let decode = || {
            let reader = arrow::ipc::reader::StreamReader::try_new(Cursor::new(body), None)
                .map_err(failed)?;
            reader.collect::<Result<Vec<_>, _>>().map_err(failed)
        };
        return std::panic::catch_unwind(decode)
            .unwrap_or_else(|_| Err("cannot read the rows: a malformed Arrow IPC stream".into()));
    }
    if content_type.starts_with("text/csv") {
        // The header names the columns sent, in its order; each takes its column's type.
        let (header, _) = arrow::csv::reader::Format::default()
            .with_header(true)
            .infer_schema(Cursor::new(body), Some(0))
            .map_err(failed)?;
        let fields = header
            .fields()
            .iter()
            .map(|f| {
                schema
                    .field_with_name(f.name())
                    .cloned()
                    .map_err(|_| format!("the table has no column named {}", f.name()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let schema = Arc::new(arrow::datatypes::Schema::new(fields));
        let reader = arrow::csv::ReaderBuilder::new(schema)
            .with_header(true)
            .build(Cursor::new(body))
            .map_err(failed)?;
        return reader.collect::<Result<Vec<_>, _>>().map_err(failed);
    }
    if content_type.starts_with("application/x-ndjson")
        || content_type.starts_with("application/jsonl")
        || content_type.starts_with("application/json")
    {
        let reader = arrow::json::ReaderBuilder::new(schema)
            .with_strict_mode(true)
            .build(Cursor::new(body))
            .map_err(failed)?;
        return reader.collect::<Result<Vec<_>, _>>().map_err(failed);
    }
    Err(format!(
        "unsupported Content-Type {content_type:?}: send {ARROW_STREAM}, application/x-ndjson or text/csv"
    ))
}

/// Checks that each message of an Arrow IPC stream lies within `body`, before the reader,
/// which allocates whatever lengths the messages claim, sees it: a truncated or made-up
/// stream gets an error, not an allocation of the size it names.
fn check_ipc_framing(body: &[u8]) -> Result<(), String> {
    const CONTINUATION: [u8; 4] = [0xff; 4];
    let broken =
        |what: &str| format!("cannot read the rows: the Arrow IPC stream is broken: {what}");
    let mut at = 0;
    while at < body.len() {
        let word = |at: &mut usize| -> Result<[u8; 4], String> {
            let bytes = body
                .get(*at..*at + 4)
                .ok_or_else(|| broken("it ends inside a length"))?;
            *at += 4;
            Ok(bytes.try_into().expect("four bytes"))
        };
        let mut length = word(&mut at)?;
        if length == CONTINUATION {
            length = word(&mut at)?;
        }
        let length = i32::from_le_bytes(length);
        if length == 0 {
            return Ok(()); // the end-of-stream marker
        }
        let length = usize::try_from(length).map_err(|_| broken("a negative length"))?;
        let metadata = body
            .get(at..at + length)
            .ok_or_else(|| broken("a message is longer than the body"))?;
        let message = arrow::ipc::root_as_message(metadata)
            .map_err(|e| broken(&format!("a message's metadata is invalid ({e})")))?;
        at += length;
        let body_length =
            usize::try_from(message.bodyLength()).map_err(|_| broken("a negative body length"))?;
        if body.len() - at < body_length {
            return Err(broken("a message's body is longer than what was sent"));
        }
        // Arrow's reader slices each buffer out of the body unchecked.
        let batch = message.header_as_record_batch().or_else(|| {
            let dictionary = message.header_as_dictionary_batch()?;
            dictionary.data()
        });
        let buffers = batch.and_then(|b| b.buffers()).into_iter().flatten();
        for buffer in buffers {
            let end = buffer.offset().checked_add(buffer.length());
            let inside = buffer.offset() >= 0
                && buffer.length() >= 0
                && end.is_some_and(|end| end <= body_length as i64);
            if !inside {
                return Err(broken("a buffer lies outside its message's body"));
            }
        }
        at += body_length;
    }
    Ok(())
}

/// `GET /views/{name}/changes[?db=lake]`: the rows of a view (or table), then after each commit
/// that changes them what changed, as server-sent events named `change`, each carrying one
/// commit's rows as `/sql`'s JSON (`_commit_version`, `_diff`, then the columns). The stream
/// lasts until the client leaves.
async fn view_changes(
    State(server): State<Arc<Server>>,
    headers: HeaderMap,
    Path(name): Path<String>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, Failure> {
    use axum::response::sse::{Event, KeepAlive, Sse};
    let role = role(&server, &headers, "view changes")?;
    authorize(role, "SELECT 1").map_err(|reason| Failure(StatusCode::FORBIDDEN, reason))?;
    let node = server
        .lakes
        .node(params.get("db").map(String::as_str))
        .await
        .map_err(bad_request)?;
    let subscription = node.subscribe(&name).map_err(bad_request)?;
    let events = futures::stream::unfold(Some(subscription), |held| async move {
        let mut subscription = held?;
        let (event, next) = match subscription.next().await {
            Ok(change) => {
                let schema = change.schema();
                let body = encode::json(&schema, &[change], JsonRows::Objects)
                    .unwrap_or_else(|e| format!("{{\"error\":{}}}", quote(&e)));
                (
                    Event::default().event("change").data(body),
                    Some(subscription),
                )
            }
            Err(e) => {
                let body = format!("{{\"error\":{}}}", quote(&e.to_string()));
                (Event::default().event("error").data(body), None)
            }
        };
        Some((Ok::<Event, std::convert::Infallible>(event), next))
    });
    Ok(Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response())
}

async fn stats(State(server): State<Arc<Server>>, headers: HeaderMap) -> Result<Response, Failure> {
    role(&server, &headers, "stats")?;
    let mut untiered = 0;
    let mut commits = 0;
    let mut tables = Vec::new();
    for (lake, node) in server.lakes.all().await {
        let snapshot = node.snapshot();
        untiered += snapshot.untiered_rows();
        commits += snapshot.commit;
        for table in snapshot.visible_tables() {
            // A watermarked table's watermark (microseconds since the epoch) and how many of
            // its rows were late (ADR 0055).
            let event_time = match (&table.watermark, snapshot.event_times.get(&table.id)) {
                (None, _) => String::new(),
                (Some(_), seen) => format!(
                    ",\"watermark_micros\":{},\"late_rows\":{}",
                    snapshot
                        .watermark(table)
                        .map_or("null".to_string(), |w| w.to_string()),
                    seen.map_or(0, |s| s.late_rows)
                ),
            };
            tables.push(format!(
                "{{\"lake\":{},\"name\":{},\"rows\":{}{event_time}}}",
                quote(&lake),
                quote(&table.name),
                snapshot.row_count(table.id)
            ));
        }
    }
    // With --lakes a server leads every lake it holds; with --dir, the one lake's cluster
    // decides (ADR 0053).
    let (leads, term, spread) = match server.lakes.single_node() {
        Some(node) => (
            node.leads(),
            node.term().number.to_string(),
            serde_json::to_string(&node.spread_stats()).unwrap_or_else(|_| "null".into()),
        ),
        None => (true, "null".into(), "null".into()),
    };
    // Spread queries this node coordinated, their parts and the bytes gathered (ADR 0076).
    let body = format!(
        "{{\"untiered_rows\":{untiered},\"commits\":{commits},\"uptime_secs\":{:.3},\"statements_running\":{},\"leader\":{leads},\"term\":{term},\"spread\":{spread},\"tables\":[{}]}}",
        server.started.elapsed().as_secs_f64(),
        pondra_cluster::running_statements(),
        tables.join(",")
    );
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

/// `GET /cluster`: this server, the term, its leader and the nodes it knows (ADR 0053). A
/// server of several lakes (`--lakes`) leads each and has no cluster.
async fn cluster(
    State(server): State<Arc<Server>>,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    role(&server, &headers, "cluster")?;
    let me = quote(&server.advertise);
    let Some(membership) = &server.membership else {
        let body = format!(
            "{{\"self\":{me},\"term\":null,\"leader\":{me},\"nodes\":[{{\"addr\":{me},\"role\":\"leader\",\"last_seen_ms\":0,\"cores\":{}}}]}}",
            pondra_cluster::process_threads()
        );
        return Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response());
    };
    let body = serde_json::json!({
        "self": server.advertise,
        "term": membership.node.term().number,
        "leader": membership.leader_addr(),
        "nodes": membership.members(),
    });
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response())
}

/// `GET /cluster/commits?after=N&addr=A&role=R`: the leader's stream of commits (ADR 0053),
/// long-polled by followers. Answered at once with the commits after N, or when the next one
/// comes, or with none after a second; `behind` when N is older than the commits kept.
async fn commit_stream(
    State(server): State<Arc<Server>>,
    headers: HeaderMap,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, Failure> {
    let role = role(&server, &headers, "commit stream")?;
    needs(role, Role::Admin, "follow the commits")?;
    let Some(membership) = &server.membership else {
        return Err(bad_request("this server has no cluster (--lakes)"));
    };
    let after: u64 = params
        .get("after")
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| bad_request("after=N names the last commit the follower holds"))?;
    let node = &membership.node;
    if !node.leads() {
        // A node opening the catalog for the term it won answers, with no commits yet, so
        // that its followers know it lives even when its beats are slow to land.
        if let Some(term) = membership.opening() {
            tokio::time::sleep(super::membership::LONG_POLL / 4).await;
            let body = serde_json::json!({
                "term": term, "leader": server.advertise, "nodes": [], "commits": [],
            });
            return Ok((
                [(header::CONTENT_TYPE, "application/json")],
                body.to_string(),
            )
                .into_response());
        }
        return Err(Failure(
            StatusCode::SERVICE_UNAVAILABLE,
            "this node does not lead the lake".into(),
        ));
    }
    if let (Some(addr), Some(follower)) = (
        params.get("addr"),
        params
            .get("role")
            .and_then(|r| super::membership::NodeRole::parse(r)),
    ) {
        let doors = super::membership::Doors {
            flight: params.get("flight").cloned().unwrap_or_default(),
            kafka: params.get("kafka").cloned(),
        };
        let cores = params.get("cores").and_then(|c| c.parse().ok());
        membership.register(addr, follower, doors, cores);
    }
    if node.snapshot().commit <= after {
        node.wait_for_commit_after(after, super::membership::LONG_POLL)
            .await;
    }
    let (behind, commits) = match node.commits_after(after) {
        pondra_cluster::CommitsAfter::Commits(commits) => (false, commits),
        pondra_cluster::CommitsAfter::Behind => (true, Vec::new()),
    };
    let body = serde_json::json!({
        "term": node.term().number,
        "leader": server.advertise,
        "nodes": membership.members(),
        "behind": behind,
        "commits": commits.iter().map(|c| c.as_ref()).collect::<Vec<_>>(),
    });
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response())
}

async fn health() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        "{\"status\":\"ok\"}",
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::Int64Array;
    use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

    use super::*;

    /// An Arrow IPC stream of one batch of five INT64 values (a buffer of 40 bytes).
    fn stream() -> (SchemaRef, Vec<u8>) {
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, true)]));
        let values = Int64Array::from(vec![Some(1), None, Some(3), Some(4), Some(5)]);
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(values)]).unwrap();
        let mut bytes = Vec::new();
        let mut writer = arrow::ipc::writer::StreamWriter::try_new(&mut bytes, &schema).unwrap();
        writer.write(&batch).unwrap();
        writer.finish().unwrap();
        drop(writer);
        (schema, bytes)
    }

    #[test]
    fn a_buffer_outside_its_body_is_refused_not_read() {
        let (schema, mut bytes) = stream();
        assert_eq!(
            decode_rows(ARROW_STREAM, &bytes, schema.clone()).unwrap()[0].num_rows(),
            5
        );
        // The values buffer's entry in the batch's metadata: an aligned offset, then 40.
        let entry = |w: &[u8]| {
            let offset = i64::from_le_bytes(w[..8].try_into().unwrap());
            let length = i64::from_le_bytes(w[8..].try_into().unwrap());
            length == 40 && offset > 0 && offset % 8 == 0 && offset < 1024
        };
        let at = bytes
            .windows(16)
            .position(entry)
            .expect("the values buffer's entry");
        bytes[at + 8..at + 16].copy_from_slice(&4_000_000i64.to_le_bytes());
        let refused = decode_rows(ARROW_STREAM, &bytes, schema).unwrap_err();
        assert!(refused.contains("a buffer lies outside"), "{refused}");
    }
}
