//! The MCP door (ADR 0082) on the HTTP port: `POST /mcp` speaks MCP's Streamable HTTP
//! transport, each JSON-RPC request answered with one JSON response. The server sends no
//! requests or notifications of its own, so it offers no stream: `GET /mcp` answers 405.
//! `initialize` opens a session (`sessions.rs`), `DELETE /mcp` ends it. Tools run SQL, list and
//! describe tables and explain plans (`tools.rs`); each table is a resource (`resources.rs`).
//! Tokens are checked as on `/sql`; `?db=` names the lake, as there.

mod resources;
mod rpc;
mod sessions;
mod tools;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use pondra_cluster::{Node, StatementResult};
use serde_json::{Value, json};

use super::Server;
use super::auth::Role;
use super::client::ClientSocket;
use super::http::{Failure, bad_request, role, run_statements};
use rpc::{INVALID_REQUEST, METHOD_NOT_FOUND, Message, RpcError};
use sessions::Sessions;

/// The protocol versions served. A client asking for another is answered with
/// [`PROTOCOL_VERSION`], the one this door follows, and decides whether to go on.
const PROTOCOL_VERSIONS: [&str; 3] = ["2025-03-26", "2025-06-18", "2025-11-25"];
const PROTOCOL_VERSION: &str = "2025-06-18";

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";

/// What `initialize` tells the agent about the server.
const INSTRUCTIONS: &str = "Pondra holds a lake of tables queried with SQL. list_tables and \
describe_table show what is there, query runs SQL (its answer capped at 1,000 rows) and explain \
shows how a query runs. Each table is also a resource, pondra://table/<name>.";

struct Mcp {
    server: Arc<Server>,
    sessions: Sessions,
}

/// Who asks, and of which lake: what a method needs besides its parameters.
struct Caller {
    role: Role,
    /// The lake a server of several (`--lakes`) runs the request on.
    database: Option<String>,
    /// The client's connection, watched while its statements run.
    socket: Option<ClientSocket>,
}

pub(super) fn router(server: Arc<Server>) -> Router {
    let mcp = Arc::new(Mcp {
        server,
        sessions: Sessions::default(),
    });
    let door = post(receive).delete(end_session).get(no_stream);
    Router::new().route("/mcp", door).with_state(mcp)
}

/// What a POST is answered with.
#[derive(Debug)]
enum Reply {
    /// Notifications and answers only: 202 and no body.
    Accepted,
    /// A response, or a batch's responses; `session` is the one `initialize` opened.
    Json {
        status: StatusCode,
        body: Value,
        session: Option<String>,
    },
}

impl Reply {
    /// A body refused whole, with the error's response under no id.
    fn refused(error: RpcError) -> Reply {
        Reply::Json {
            status: StatusCode::BAD_REQUEST,
            body: error.response(Value::Null),
            session: None,
        }
    }
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        let Reply::Json {
            status,
            body,
            session,
        } = self
        else {
            return StatusCode::ACCEPTED.into_response();
        };
        let content_type = [(header::CONTENT_TYPE, "application/json")];
        let mut response = (status, content_type, body.to_string()).into_response();
        if let Some(session) = session.and_then(|s| HeaderValue::from_str(&s).ok()) {
            response.headers_mut().insert(SESSION_HEADER, session);
        }
        response
    }
}

async fn receive(
    State(mcp): State<Arc<Mcp>>,
    ConnectInfo(socket): ConnectInfo<ClientSocket>,
    headers: HeaderMap,
    Query(params): Query<HashMap<String, String>>,
    body: Bytes,
) -> Result<Reply, Failure> {
    check_origin(&mcp.server, &headers)?;
    let role = role(&mcp.server, &headers, "mcp")?;
    if let Some(session) = header_text(&headers, SESSION_HEADER)
        && !mcp.sessions.touch(session)
    {
        return Err(unknown_session(session));
    }
    if let Some(version) = header_text(&headers, VERSION_HEADER)
        && !PROTOCOL_VERSIONS.contains(&version)
    {
        let served = PROTOCOL_VERSIONS.join(", ");
        let why = format!("MCP-Protocol-Version {version} is not served (only {served})");
        return Ok(Reply::refused(RpcError::new(INVALID_REQUEST, why)));
    }
    let caller = Caller {
        role,
        database: params.get("db").cloned(),
        socket: Some(socket),
    };
    Ok(mcp.answer(&caller, &body).await)
}

async fn end_session(
    State(mcp): State<Arc<Mcp>>,
    headers: HeaderMap,
) -> Result<StatusCode, Failure> {
    check_origin(&mcp.server, &headers)?;
    role(&mcp.server, &headers, "mcp")?;
    let Some(session) = header_text(&headers, SESSION_HEADER) else {
        return Err(bad_request("name the session to end in Mcp-Session-Id"));
    };
    match mcp.sessions.end(session) {
        true => Ok(StatusCode::NO_CONTENT),
        false => Err(unknown_session(session)),
    }
}

async fn no_stream() -> Failure {
    let why = "this server sends no messages of its own: POST requests to /mcp";
    Failure(StatusCode::METHOD_NOT_ALLOWED, why.into())
}

fn unknown_session(session: &str) -> Failure {
    let why =
        format!("no MCP session {session}: it ended, or this server restarted; initialize again");
    Failure(StatusCode::NOT_FOUND, why)
}

fn header_text<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Refuses a browser's request from another site's page. A page can reach a server on loopback
/// under its own site's name by rebinding that name in DNS, so the Origin a browser sends must
/// be loopback or this server's own host; clients other than browsers send none.
fn check_origin(server: &Server, headers: &HeaderMap) -> Result<(), Failure> {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let host = origin.to_str().map(origin_host).unwrap_or_default();
    let own = server.advertise.rsplit_once(':').map(|(host, _)| host);
    let own = own.unwrap_or(&server.advertise).trim_matches(['[', ']']);
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if loopback || host.eq_ignore_ascii_case(own) {
        return Ok(());
    }
    let why = format!("requests from pages of {host:?} are refused");
    eprintln!("refused: http mcp: {why}");
    Err(Failure(StatusCode::FORBIDDEN, why))
}

/// The host of an Origin (`scheme://host[:port]`), without brackets around an IPv6 address.
fn origin_host(origin: &str) -> &str {
    let authority = origin.split_once("://").map_or(origin, |(_, rest)| rest);
    let authority = authority.split('/').next().unwrap_or_default();
    if let Some(bracketed) = authority.strip_prefix('[') {
        return bracketed.split(']').next().unwrap_or_default();
    }
    authority
        .rsplit_once(':')
        .map_or(authority, |(host, _)| host)
}

impl Mcp {
    /// Answers a POST body: one message or a batch of them.
    async fn answer(&self, caller: &Caller, body: &[u8]) -> Reply {
        let (messages, batch) = match rpc::parse_body(body) {
            Ok(parsed) => parsed,
            Err(error) => return Reply::refused(error),
        };
        let mut responses = Vec::new();
        let mut session = None;
        for message in messages {
            let (id, method, params) = match rpc::message(message) {
                Ok(Message::Request { id, method, params }) => (id, method, params),
                Ok(Message::NoAnswer) => continue,
                Err((_, error)) if !batch => return Reply::refused(error),
                Err((id, error)) => {
                    responses.push(error.response(id));
                    continue;
                }
            };
            let result = match method.as_str() {
                "initialize" => {
                    initialize(&params).inspect(|_| session = Some(self.sessions.open()))
                }
                _ => self.call(caller, &method, &params).await,
            };
            responses.push(match result {
                Ok(result) => rpc::success(id, result),
                Err(error) => error.response(id),
            });
        }
        if responses.is_empty() {
            return Reply::Accepted;
        }
        let body = match batch {
            true => Value::Array(responses),
            false => responses.swap_remove(0),
        };
        Reply::Json {
            status: StatusCode::OK,
            body,
            session,
        }
    }

    /// Carries out the request `method`, but for `initialize`.
    async fn call(&self, caller: &Caller, method: &str, params: &Value) -> Result<Value, RpcError> {
        match method {
            "ping" => Ok(json!({})),
            "tools/list" => Ok(tools::list()),
            "tools/call" => tools::call(self, caller, params).await,
            "resources/list" => resources::list(self, caller).await,
            "resources/templates/list" => Ok(resources::templates()),
            "resources/read" => resources::read(self, caller, params).await,
            _ => Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("this server has no method {method}"),
            )),
        }
    }

    async fn node(&self, caller: &Caller) -> Result<Arc<Node>, String> {
        self.server.lakes.node(caller.database.as_deref()).await
    }

    /// Runs `sql` as `POST /sql` does; answers its last statement's result.
    async fn run(&self, caller: &Caller, sql: &str) -> Result<StatementResult, String> {
        let node = self.node(caller).await?;
        let results = run_statements(&self.server, &node, sql, caller.socket).await?;
        results
            .into_iter()
            .last()
            .ok_or_else(|| "there is no statement to run".to_string())
    }
}

/// `initialize`: the version the client asked for when it is served, else ours, and what this
/// server offers.
fn initialize(params: &Value) -> Result<Value, RpcError> {
    let asked = rpc::string_param(params, "protocolVersion")?;
    let version = PROTOCOL_VERSIONS.iter().find(|v| **v == asked);
    Ok(json!({
        "protocolVersion": version.unwrap_or(&PROTOCOL_VERSION),
        "capabilities": {"tools": {}, "resources": {}},
        "serverInfo": {"name": "pondra", "version": env!("CARGO_PKG_VERSION")},
        "instructions": INSTRUCTIONS,
    }))
}

#[cfg(test)]
mod tests;
