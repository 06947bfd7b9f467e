//! The console (ADR 0080): `GET /` serves a page of notebooks of SQL, Markdown and Python
//! cells, with its script and style compiled in (`assets/`); `/console/api/...` runs cells,
//! pages through answers (`results.rs`), streams a live cell's answer as server-sent events,
//! runs Python cells in worker processes (`python.rs`), and keeps notebooks in the catalog.

mod python;

pub(crate) use python::CellRunner;
mod results;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use pondra_cluster::{Node, Statement, StatementResult, TableKind};

use super::Server;
use super::auth::{Role, authorize};
use super::encode::{self, JsonRows, quote};
use super::http::{Failure, bad_request, needs, role, role_of_token};
use results::{Answer, Answers};

const INDEX: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/app.css");

/// Rows of an answer's first page, and of a page asked for at most.
const FIRST_PAGE: usize = 200;
const MAX_PAGE: usize = 5_000;

/// Rows a live cell's answer sends at most.
const LIVE_ROWS: usize = 1_000;

/// How long a live cell waits for a commit before it looks again.
const LIVE_PATIENCE: Duration = Duration::from_secs(15);

/// The least time between a live cell's runs: under a stream of commits it runs ten times a
/// second at most, well within the half second its answer may lag a commit by.
const LIVE_SPACING: Duration = Duration::from_millis(100);

struct Console {
    server: Arc<Server>,
    answers: Answers,
}

pub(super) fn router(server: Arc<Server>) -> Router {
    let console = Arc::new(Console {
        server,
        answers: Answers::default(),
    });
    Router::new()
        .route(
            "/",
            get(|| async { page("text/html; charset=utf-8", INDEX) }),
        )
        .route(
            "/console/app.js",
            get(|| async { page("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/console/app.css",
            get(|| async { page("text/css; charset=utf-8", STYLE) }),
        )
        .route("/console/api/query", post(query))
        .route("/console/api/result/{id}", get(result_page))
        .route("/console/api/live", get(live))
        .route("/console/api/python", post(run_python))
        .route("/console/api/notebooks", get(notebook_names))
        .route(
            "/console/api/notebooks/{name}",
            get(notebook).put(save_notebook).delete(drop_notebook),
        )
        .with_state(console)
}

fn page(content_type: &'static str, body: &'static str) -> Response {
    let headers = [
        (header::CONTENT_TYPE, content_type),
        (header::CACHE_CONTROL, "no-cache"),
    ];
    (headers, body).into_response()
}

fn json(body: String) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// The JSON body's string field `name`.
fn field(body: &[u8], name: &str) -> Result<String, Failure> {
    let request: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| bad_request(format!("the request is not JSON: {e}")))?;
    match request.get(name) {
        Some(serde_json::Value::String(text)) => Ok(text.clone()),
        _ => Err(bad_request(format!(
            "the request needs a string \"{name}\""
        ))),
    }
}

impl Console {
    async fn node(&self) -> Result<Arc<Node>, Failure> {
        self.server.lakes.node(None).await.map_err(bad_request)
    }

    /// Checks that `role` may run `sql`.
    fn authorized(role: Role, sql: &str) -> Result<(), Failure> {
        authorize(role, sql).map_err(|reason| match reason.starts_with("permission denied") {
            true => Failure(StatusCode::FORBIDDEN, reason),
            false => bad_request(reason),
        })
    }
}

/// A cell's SQL as the console runs it: `SUBSCRIBE [TO] name` reads the relation, live; a query
/// that reads a materialized view is live too.
fn as_run(node: &Node, sql: &str) -> Result<(String, bool), Failure> {
    let statements = pondra_cluster::parse_sql(sql).map_err(bad_request)?;
    if let [only] = statements.as_slice()
        && let Statement::Subscribe { relation, .. } = &only.statement
    {
        let select = format!("SELECT * FROM {}", pondra_cluster::quoted_name(relation));
        return Ok((select, true));
    }
    let lowered = sql.to_lowercase();
    let snapshot = node.snapshot();
    let reads_view = snapshot.tables.values().any(|table| {
        matches!(table.kind, TableKind::MaterializedView { .. })
            && mentions(&lowered, &table.name.to_lowercase())
    });
    let query = match statements.last().map(|s| &s.statement) {
        Some(Statement::Sql(statement)) => {
            matches!(**statement, pondra_parser::ast::Statement::Query(_))
        }
        _ => false,
    };
    Ok((
        sql.to_string(),
        reads_view && query && statements.len() == 1,
    ))
}

/// Whether `text` holds `word` with no identifier character on either side.
fn mentions(text: &str, word: &str) -> bool {
    let is_part = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(is_part) && !after.is_some_and(is_part)
    })
}

/// Runs `sql`'s statements in one session; answers the last one's result.
async fn run(node: &Arc<Node>, server: &Server, sql: &str) -> Result<StatementResult, Failure> {
    let statements = pondra_cluster::parse_sql(sql).map_err(bad_request)?;
    let session = server.session();
    let mut last = None;
    for statement in statements {
        last = Some(
            node.execute_in(&session, statement)
                .await
                .map_err(bad_request)?,
        );
    }
    last.ok_or_else(|| bad_request("the cell holds no statement"))
}

async fn query(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Failure> {
    let role = role(&console.server, &headers, "console query")?;
    let sql = field(&body, "sql")?;
    Console::authorized(role, &sql)?;
    let node = console.node().await?;
    let (sql, live) = as_run(&node, &sql)?;
    let started = Instant::now();
    let result = run(&node, &console.server, &sql).await?;
    let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
    let (schema, batches) = match result {
        StatementResult::Done { tag } => {
            let body = format!("{{\"tag\":{},\"elapsed_ms\":{elapsed_ms:.1}}}", quote(&tag));
            return Ok(json(body));
        }
        StatementResult::Rows { schema, batches } => (schema, batches),
    };
    let answer = Arc::new(Answer::new(schema, batches));
    let first = encode::json(
        &answer.schema,
        &answer.page(0, FIRST_PAGE),
        JsonRows::Arrays,
    )
    .map_err(bad_request)?;
    let id = console.answers.keep(answer.clone());
    let body = format!(
        "{{\"id\":{id},\"total\":{},\"elapsed_ms\":{elapsed_ms:.1},\"live\":{live},\"sql\":{},\"page\":{first}}}",
        answer.rows,
        quote(&sql)
    );
    Ok(json(body))
}

async fn result_page(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    Path(id): Path<u64>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, Failure> {
    role(&console.server, &headers, "console result")?;
    let number = |name: &str, default: usize| {
        params
            .get(name)
            .map_or(Ok(default), |v| v.parse::<usize>())
            .map_err(|_| bad_request(format!("{name} is a whole number")))
    };
    let offset = number("offset", 0)?;
    let limit = number("limit", FIRST_PAGE)?.min(MAX_PAGE);
    let Some(answer) = console.answers.get(id) else {
        return Err(Failure(
            StatusCode::NOT_FOUND,
            format!("answer {id} is no longer kept: run the cell again"),
        ));
    };
    let page = encode::json(
        &answer.schema,
        &answer.page(offset, limit),
        JsonRows::Arrays,
    )
    .map_err(bad_request)?;
    Ok(json(page))
}

/// A live cell: the answer's first rows now, and again after each commit that changes them.
async fn live(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, Failure> {
    use axum::response::sse::{Event, KeepAlive, Sse};
    // An EventSource cannot send headers: its token comes in the query.
    let role = match params.get("token") {
        Some(token) => role_of_token(&console.server, Some(token), "console live")?,
        None => role(&console.server, &headers, "console live")?,
    };
    let sql = params
        .get("sql")
        .ok_or_else(|| bad_request("a live cell needs ?sql="))?;
    Console::authorized(role, sql)?;
    needs(role, Role::Read, "follow a live cell")?;
    let node = console.node().await?;
    let (sql, _) = as_run(&node, sql)?;
    let server = console.server.clone();
    let state = (node, server, sql, None::<String>, None::<u64>);
    let events = futures::stream::unfold(Some(state), |held| async move {
        let (node, server, sql, sent, seen) = held?;
        let mut seen = seen;
        loop {
            if let Some(commit) = seen {
                if !node.wait_for_commit_after(commit, LIVE_PATIENCE).await {
                    continue;
                }
                tokio::time::sleep(LIVE_SPACING).await;
            }
            let commit = node.snapshot().commit;
            seen = Some(commit);
            let body = match run(&node, &server, &sql).await {
                Ok(StatementResult::Rows { schema, batches }) => {
                    let answer = Answer::new(schema, batches);
                    encode::json(&answer.schema, &answer.page(0, LIVE_ROWS), JsonRows::Arrays)
                        .map(|page| format!("{{\"total\":{},\"page\":{page}}}", answer.rows))
                }
                Ok(StatementResult::Done { .. }) => Err("a live cell is a query".to_string()),
                Err(Failure(_, message)) => Err(message),
            };
            let body = match body {
                Ok(body) => body,
                Err(message) => {
                    let event = Event::default()
                        .event("error")
                        .data(format!("{{\"error\":{}}}", quote(&message)));
                    return Some((Ok::<Event, std::convert::Infallible>(event), None));
                }
            };
            if sent.as_deref() == Some(body.as_str()) {
                continue;
            }
            let event = Event::default().event("result").data(body.clone());
            return Some((Ok(event), Some((node, server, sql, Some(body), seen))));
        }
    });
    Ok(Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response())
}

async fn run_python(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Failure> {
    let role = role(&console.server, &headers, "console python")?;
    // Code run on the node's host is more than a write of rows: it takes an admin token.
    needs(role, Role::Admin, "run a Python cell")?;
    let code = field(&body, "code")?;
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let url = format!("http://{}", console.server.advertise);
    let patience = console
        .server
        .statement_timeout
        .unwrap_or(python::DEFAULT_PATIENCE);
    let started = Instant::now();
    match python::run_cell(&code, &url, token, patience).await {
        Ok(outcome) => {
            let elapsed = started.elapsed().as_secs_f64() * 1000.0;
            let outcome = outcome.trim_end();
            let body = match outcome.strip_suffix('}') {
                Some(open) => format!("{open},\"elapsed_ms\":{elapsed:.1}}}"),
                None => outcome.to_string(),
            };
            Ok(json(body))
        }
        Err(message) => Err(bad_request(message)),
    }
}

async fn notebook_names(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    role(&console.server, &headers, "console notebooks")?;
    let node = console.node().await?;
    let names: Vec<String> = node.notebook_names().iter().map(|n| quote(n)).collect();
    Ok(json(format!("{{\"notebooks\":[{}]}}", names.join(","))))
}

async fn notebook(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Result<Response, Failure> {
    role(&console.server, &headers, "console notebook")?;
    let node = console.node().await?;
    match node.notebook(&name) {
        Some(body) => Ok(json(body.to_string())),
        None => Err(Failure(
            StatusCode::NOT_FOUND,
            format!("notebook {name} does not exist"),
        )),
    }
}

async fn save_notebook(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Response, Failure> {
    let role = role(&console.server, &headers, "console save")?;
    needs(role, Role::Write, "save a notebook")?;
    let body = String::from_utf8(body.to_vec()).map_err(|_| bad_request("not UTF-8"))?;
    let node = console.node().await?;
    node.save_notebook(&name, body).await.map_err(bad_request)?;
    Ok(json(format!("{{\"saved\":{}}}", quote(&name))))
}

async fn drop_notebook(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Result<Response, Failure> {
    let role = role(&console.server, &headers, "console drop")?;
    needs(role, Role::Write, "drop a notebook")?;
    let node = console.node().await?;
    node.drop_notebook(&name).await.map_err(bad_request)?;
    Ok(json(format!("{{\"dropped\":{}}}", quote(&name))))
}

#[cfg(test)]
mod tests {
    use super::mentions;

    #[test]
    fn a_name_is_mentioned_as_a_whole_word() {
        assert!(mentions("select * from per_kind", "per_kind"));
        assert!(mentions("select n from per_kind, x", "per_kind"));
        assert!(!mentions("select * from per_kinds", "per_kind"));
        assert!(!mentions("select * from my_per_kind", "per_kind"));
    }
}
