//! The Postgres wire door (pgwire): simple and extended queries with parameters, text and
//! binary results, COPY FROM STDIN and TO STDOUT, live queries as a never-ending COPY
//! (`subscribe.rs`), and token checks at login (the password is the token).

mod copy_out;
mod session;
mod subscribe;
mod values;

use std::collections::HashMap;
use std::fmt::Debug;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, Weak};

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use futures::{Sink, SinkExt, stream};
use pgwire::api::auth::{
    DefaultServerParameterProvider, StartupHandler, finish_authentication, protocol_negotiation,
    save_startup_parameters_to_metadata,
};
use pgwire::api::cancel::CancelHandler;
use pgwire::api::copy::CopyHandler;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{
    DataRowEncoder, DescribePortalResponse, DescribeStatementResponse, FieldInfo, QueryResponse,
    Response, Tag,
};
use pgwire::api::stmt::{QueryParser, StoredStatement};
use pgwire::api::store::PortalStore;
use pgwire::api::{
    ClientInfo, ClientPortalStore, PgWireConnectionState, PgWireServerHandlers,
    PidSecretKeyGenerator, RandomPidSecretKeyGenerator, Type,
};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::cancel::CancelRequest;
use pgwire::messages::copy::{CopyData, CopyDone};
use pgwire::messages::extendedquery::Sync as PgSync;
use pgwire::messages::response::{
    EmptyQueryResponse, ReadyForQuery, TransactionStatus as PgTransactionStatus,
};
use pgwire::messages::simplequery::Query;
use pgwire::messages::startup::Authentication;
use pgwire::messages::startup::SecretKey;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pondra_cluster::{
    Node, ParsedStatement, Session, Statement, StatementResult, StopReason, TransactionStatus,
};
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::Server;
use super::auth::{Role, authorize};
use super::client::{ClientSocket, watched};
use session::{CopyIn, SessionAnswer, session_answer};
use values::{PgValue, parameter_literal, pg_type};

const ROLE_KEY: &str = "pondra.role";

/// Accepts connections until `stop` turns true.
pub async fn run(listener: TcpListener, server: Arc<Server>, mut stop: watch::Receiver<bool>) {
    let door = Arc::new(PgDoor {
        server,
        sessions: Default::default(),
        sockets: Default::default(),
    });
    let handlers = Arc::new(Handlers { door: door.clone() });
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((socket, peer)) => {
                    let handlers = handlers.clone();
                    let door = door.clone();
                    lock(&door.sockets).insert(peer, ClientSocket::of(&socket));
                    tokio::spawn(async move {
                        if let Err(e) = pgwire::tokio::process_socket(socket, None, handlers).await {
                            eprintln!("pg connection: {e}");
                        }
                        lock(&door.sockets).remove(&peer);
                    });
                }
                Err(e) => eprintln!("pg accept: {e}"),
            },
            _ = stop.wait_for(|s| *s) => break,
        }
    }
}

/// A lock of the door's maps, whose holders cannot leave them half changed.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

struct Handlers {
    door: Arc<PgDoor>,
}

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        self.door.clone()
    }

    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        self.door.clone()
    }

    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        self.door.clone()
    }

    fn copy_handler(&self) -> Arc<impl CopyHandler> {
        self.door.clone()
    }

    fn cancel_handler(&self) -> Arc<impl CancelHandler> {
        self.door.clone()
    }
}

pub struct PgDoor {
    server: Arc<Server>,
    /// Each connection's session by the process id its client was given, with the secret key
    /// a cancel request must bring.
    sessions: Arc<Mutex<Sessions>>,
    /// Each connection's socket by its client's address, to see a client hang up.
    sockets: Mutex<HashMap<SocketAddr, ClientSocket>>,
}

/// Each connection's session by the process id its client was given, with its secret key.
type Sessions = HashMap<i32, (SecretKey, Weak<Session>)>;

/// A connection's session, in its client's extensions; leaves the door's map with the
/// connection.
struct PgSession {
    session: Arc<Session>,
    pid: i32,
    sessions: Arc<Mutex<Sessions>>,
}

impl Drop for PgSession {
    fn drop(&mut self) {
        lock(&self.sessions).remove(&self.pid);
    }
}

fn user_error(code: &str, message: impl Into<String>) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "ERROR".into(),
        code.into(),
        pondra_cluster::bounded_message(message.into()),
    )))
}

/// The SQLSTATE of one of Pondra's errors, from its text.
fn sqlstate(message: &str) -> &'static str {
    if message.starts_with("canceling statement") {
        "57014"
    } else if message.starts_with("could not serialize access") {
        "40001"
    } else if message.starts_with("this node is read-only") {
        "25006"
    } else if message.starts_with("current transaction is aborted") {
        "25P02"
    } else if message.ends_with("can only be used in transaction blocks") {
        "25P01"
    } else if message.starts_with("savepoint") && message.ends_with("does not exist") {
        "3B001"
    } else if message.starts_with("out of memory") {
        "53200"
    } else if message.starts_with("statement too deeply nested") {
        "54001"
    } else if message.starts_with("internal error") {
        "XX000"
    } else if message.starts_with("unrecognized configuration parameter") {
        "42704"
    } else if message.starts_with("parameter") && message.ends_with("cannot be changed") {
        "55P02"
    } else if message.starts_with("syntax error") {
        "42601"
    } else if message.contains("does not exist") {
        if message.contains("column") {
            "42703"
        } else {
            "42P01"
        }
    } else if message.starts_with("not supported yet") {
        "0A000"
    } else if message.starts_with("permission denied") {
        "42501"
    } else if message.contains("division by zero") {
        "22012"
    } else if message.contains("already exists") {
        "42P07"
    } else {
        "XX000"
    }
}

fn error_info(message: String) -> ErrorInfo {
    let message = pondra_cluster::bounded_message(message);
    ErrorInfo::new("ERROR".into(), sqlstate(&message).into(), message)
}

impl PgDoor {
    fn role<C: ClientInfo>(&self, client: &C) -> Role {
        match client.metadata().get(ROLE_KEY).map(String::as_str) {
            Some("admin") => Role::Admin,
            Some("write") => Role::Write,
            _ => Role::Read,
        }
    }

    /// The connection's session (one is made for a client that skipped the startup).
    fn session<C: ClientInfo>(&self, client: &C) -> Arc<Session> {
        match client.session_extensions().get::<PgSession>() {
            Some(pg) => pg.session.clone(),
            None => {
                let session = self.server.session();
                client.session_extensions().insert(PgSession {
                    session: session.clone(),
                    pid: 0,
                    sessions: Default::default(),
                });
                session
            }
        }
    }

    /// Gives the client the process id and secret key that its cancel requests will bring,
    /// and registers its session under them.
    fn register_session<C: ClientInfo>(&self, client: &mut C) {
        static NEXT_PID: AtomicI32 = AtomicI32::new(1000);
        let pid = NEXT_PID.fetch_add(1, Ordering::Relaxed);
        let (_, secret) = RandomPidSecretKeyGenerator::default().generate(&*client);
        client.set_pid_and_secret_key(pid, secret.clone());
        let session = self.server.session();
        lock(&self.sessions).insert(pid, (secret, Arc::downgrade(&session)));
        client.session_extensions().insert(PgSession {
            session,
            pid,
            sessions: self.sessions.clone(),
        });
    }

    async fn node<C: ClientInfo>(&self, client: &C) -> PgWireResult<Arc<Node>> {
        let database = client.metadata().get("database").map(String::as_str);
        self.server
            .lakes
            .node(database)
            .await
            .map_err(|e| user_error("3D000", e))
    }

    /// Runs one statement for a client, as the response the protocol sends.
    async fn run<C: ClientInfo>(
        &self,
        client: &C,
        statement: &ParsedStatement,
        formats: &Format,
    ) -> PgWireResult<Response> {
        if let Some(answer) = session_answer(statement) {
            return Ok(match answer {
                SessionAnswer::Tag(tag) => Response::Execution(Tag::new(tag)),
                SessionAnswer::Rows(schema, batches) => rows_response(&schema, batches, formats),
            });
        }
        let role = self.role(client);
        authorize(role, &statement.text).map_err(|reason| {
            eprintln!("refused: pg: {reason}");
            user_error(sqlstate(&reason), reason)
        })?;
        let node = self.node(client).await?;
        let session = self.session(client);
        let socket = lock(&self.sockets).get(&client.socket_addr()).copied();
        if let Statement::Subscribe { relation, copy } = &statement.statement {
            return match copy {
                true => subscribe::subscription(&node, relation),
                false => Err(user_error(
                    "0A000",
                    format!(
                        "SUBSCRIBE streams its rows as a COPY on this door: run COPY (SUBSCRIBE TO \
                         {relation}) TO STDOUT"
                    ),
                )),
            };
        }
        if let Statement::Sql(sql) = &statement.statement
            && let Some(copy) = copy_out::CopyOut::from_statement(sql)
        {
            return self.copy_out(&node, &session, socket, copy).await;
        }
        let run = node.execute_in(&session, statement.clone());
        match watched(run, &session, socket).await {
            Ok(StatementResult::Rows { schema, batches }) => {
                Ok(rows_response(&schema, batches, formats))
            }
            Ok(StatementResult::Done { tag }) => Ok(match tag.as_str() {
                "BEGIN" => Response::TransactionStart(Tag::new("BEGIN")),
                "COMMIT" | "ROLLBACK"
                    if session.transaction_status() == TransactionStatus::Idle =>
                {
                    Response::TransactionEnd(Tag::new(&tag))
                }
                _ => Response::Execution(completion_tag(&tag)),
            }),
            Err(e) => Ok(Response::Error(Box::new(error_info(e.to_string())))),
        }
    }
}

impl PgDoor {
    /// Answers `COPY ... TO STDOUT`: the query's rows as CopyData messages.
    async fn copy_out(
        &self,
        node: &Arc<Node>,
        session: &Arc<Session>,
        socket: Option<ClientSocket>,
        copy: copy_out::CopyOut,
    ) -> PgWireResult<Response> {
        let statement = match pondra_cluster::parse_sql(&copy.query) {
            Ok(mut statements) if statements.len() == 1 => statements.remove(0),
            Ok(_) => return Err(user_error("42601", "COPY TO STDOUT copies one query")),
            Err(e) => return Ok(Response::Error(Box::new(error_info(e.to_string())))),
        };
        let run = node.execute_in(session, statement);
        let (schema, batches) = match watched(run, session, socket).await {
            Ok(StatementResult::Rows { schema, batches }) => (schema, batches),
            Ok(StatementResult::Done { .. }) => {
                return Err(user_error("42601", "COPY TO STDOUT copies a query's rows"));
            }
            Err(e) => return Ok(Response::Error(Box::new(error_info(e.to_string())))),
        };
        let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
        let lines = copy.lines(&names, batches);
        let data = lines.into_iter().map(|line| Ok(CopyData::new(line.into())));
        Ok(Response::CopyOut(pgwire::api::results::CopyResponse::new(
            0,
            names.len(),
            stream::iter(data),
        )))
    }
}

/// `INSERT 0 3` and the like, as pgwire builds them.
fn completion_tag(tag: &str) -> Tag {
    let words: Vec<&str> = tag.split(' ').collect();
    match words.as_slice() {
        ["INSERT", oid, rows] => match (oid.parse(), rows.parse()) {
            (Ok(oid), Ok(rows)) => Tag::new("INSERT").with_oid(oid).with_rows(rows),
            _ => Tag::new(tag),
        },
        [command @ .., rows] if rows.parse::<usize>().is_ok() && !command.is_empty() => {
            Tag::new(&command.join(" ")).with_rows(rows.parse().unwrap_or(0))
        }
        _ => Tag::new(tag),
    }
}

fn fields(schema: &SchemaRef, formats: &Format) -> Vec<FieldInfo> {
    schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            FieldInfo::new(
                f.name().clone(),
                None,
                None,
                pg_type(f.data_type()),
                formats.format_for(i),
            )
        })
        .collect()
}

/// The rows of `batches` as the protocol sends them, each encoded as it is sent, so that a
/// large result is not held twice.
fn rows_response(
    schema: &SchemaRef,
    batches: Vec<arrow::array::RecordBatch>,
    formats: &Format,
) -> Response {
    let fields = Arc::new(fields(schema, formats));
    let row_fields = fields.clone();
    let rows = batches.into_iter().flat_map(move |batch| {
        let mut encoder = DataRowEncoder::new(row_fields.clone());
        (0..batch.num_rows()).map(move |row| {
            let encoded = batch
                .columns()
                .iter()
                .try_for_each(|column| encoder.encode_field(&PgValue::at(column, row)));
            encoded.map(|()| encoder.take_row())
        })
    });
    Response::Query(QueryResponse::new(fields, stream::iter(rows)))
}

#[async_trait]
impl CancelHandler for PgDoor {
    /// Stops the statement running in the session the request names, if its key matches.
    async fn on_cancel_request(&self, request: CancelRequest) {
        let session = match lock(&self.sessions).get(&request.pid) {
            Some((secret, session)) if secret.eq_value(&request.secret_key) => session.upgrade(),
            _ => None,
        };
        match session {
            Some(session) => {
                session.stop_running(StopReason::Cancelled);
            }
            None => eprintln!("refused: pg cancel request for an unknown session"),
        }
    }
}

#[async_trait]
impl StartupHandler for PgDoor {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let mut parameters = DefaultServerParameterProvider::default();
        parameters.server_version = pondra_cluster::SERVER_VERSION.to_string();
        match message {
            PgWireFrontendMessage::Startup(ref startup) => {
                protocol_negotiation(client, startup).await?;
                save_startup_parameters_to_metadata(client, startup);
                self.register_session(client);
                // A client's zone (JDBC sends its JVM's) is the session's, as in Postgres.
                let session = self.session(client);
                if let Some(zone) = client
                    .metadata()
                    .get("TimeZone")
                    .and_then(|zone| pondra_cluster::zone_name(zone))
                {
                    session.set_time_zone(zone);
                }
                parameters.time_zone = session.time_zone();
                client.set_state(PgWireConnectionState::AuthenticationInProgress);
                if self.server.tokens.enabled() {
                    client
                        .send(PgWireBackendMessage::Authentication(
                            Authentication::CleartextPassword,
                        ))
                        .await?;
                } else {
                    client
                        .metadata_mut()
                        .insert(ROLE_KEY.into(), "admin".into());
                    finish_authentication(client, &parameters).await?;
                }
            }
            PgWireFrontendMessage::PasswordMessageFamily(password) => {
                let password = password.into_password()?;
                match self.server.tokens.role_of(Some(&password.password)) {
                    Ok(role) => {
                        parameters.time_zone = self.session(client).time_zone();
                        client
                            .metadata_mut()
                            .insert(ROLE_KEY.into(), role.name().into());
                        finish_authentication(client, &parameters).await?;
                    }
                    Err(reason) => {
                        let user = client.metadata().get("user").cloned().unwrap_or_default();
                        eprintln!("refused: pg login of {user:?}: {reason}");
                        return Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                            "FATAL".into(),
                            "28P01".into(),
                            format!("password authentication failed: {reason}"),
                        ))));
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// The status a ReadyForQuery carries for a session.
fn ready_status(session: &Session) -> PgTransactionStatus {
    match session.transaction_status() {
        TransactionStatus::Idle => PgTransactionStatus::Idle,
        TransactionStatus::InTransaction => PgTransactionStatus::Transaction,
        TransactionStatus::Failed => PgTransactionStatus::Error,
    }
}

#[async_trait]
impl SimpleQueryHandler for PgDoor {
    /// A simple query as pgwire runs it, but for the transaction status its ReadyForQuery
    /// carries, which is the session's (pgwire infers it from the responses, which cannot say
    /// that a ROLLBACK TO leaves the aborted state).
    async fn on_query<C>(&self, client: &mut C, query: Query) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        use pgwire::api::copy::send_copy_in_response;
        use pgwire::api::query::{
            send_execution_response, send_query_response, send_ready_for_query,
        };
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        client.set_state(PgWireConnectionState::QueryInProgress);
        if query.query.chars().all(|c| c == ';' || c.is_whitespace()) {
            client
                .feed(PgWireBackendMessage::EmptyQueryResponse(
                    EmptyQueryResponse::new(),
                ))
                .await?;
        } else {
            for response in SimpleQueryHandler::do_query(self, client, &query.query).await? {
                match response {
                    Response::EmptyQuery => {
                        client
                            .feed(PgWireBackendMessage::EmptyQueryResponse(
                                EmptyQueryResponse::new(),
                            ))
                            .await?;
                    }
                    Response::Query(results) => send_query_response(client, results, true).await?,
                    Response::Execution(tag)
                    | Response::TransactionStart(tag)
                    | Response::TransactionEnd(tag) => send_execution_response(client, tag).await?,
                    Response::Error(e) => {
                        client
                            .feed(PgWireBackendMessage::ErrorResponse((*e).into()))
                            .await?;
                    }
                    Response::CopyIn(result) => {
                        send_copy_in_response(client, result).await?;
                        client.set_state(PgWireConnectionState::CopyInProgress(false));
                    }
                    Response::CopyOut(result) => subscribe::send_copy_out(client, result).await?,
                    Response::CopyBoth(_) => {
                        return Err(user_error("0A000", "COPY BOTH is not supported"));
                    }
                }
            }
        }
        if !matches!(client.state(), PgWireConnectionState::CopyInProgress(_)) {
            let status = ready_status(&self.session(client));
            client.set_state(PgWireConnectionState::ReadyForQuery);
            client.set_transaction_status(status);
            send_ready_for_query(client, status).await?;
        }
        Ok(())
    }

    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let statements = match pondra_cluster::parse_sql(query) {
            Ok(statements) => statements,
            Err(e) => return Ok(vec![Response::Error(Box::new(error_info(e.to_string())))]),
        };
        let mut responses = Vec::new();
        for statement in &statements {
            if let Some(copy) = CopyIn::from_statement(statement) {
                responses.push(self.start_copy(client, copy).await?);
                break;
            }
            let response = match self.run(client, statement, &Format::UnifiedText).await {
                Ok(response) => response,
                Err(PgWireError::UserError(info)) => Response::Error(info),
                Err(e) => return Err(e),
            };
            let failed = matches!(response, Response::Error(_));
            responses.push(response);
            if failed {
                break;
            }
        }
        Ok(responses)
    }
}

/// A statement of the extended protocol: its text, with `$n` placeholders.
#[derive(Clone, Debug)]
pub struct PgStatement {
    sql: String,
    parameters: usize,
}

pub struct NoTypes;

#[async_trait]
impl QueryParser for NoTypes {
    type Statement = PgStatement;

    async fn parse_sql<C>(
        &self,
        _client: &C,
        sql: &str,
        _types: &[Option<Type>],
    ) -> PgWireResult<Option<PgStatement>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        Ok(Some(PgStatement {
            sql: sql.to_string(),
            parameters: pondra_cluster::placeholder_count(sql),
        }))
    }

    fn get_parameter_types(&self, stmt: &PgStatement) -> PgWireResult<Vec<Type>> {
        Ok(vec![Type::UNKNOWN; stmt.parameters])
    }

    fn get_result_schema(
        &self,
        _stmt: &PgStatement,
        _column_format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        Ok(Vec::new())
    }
}

impl PgDoor {
    /// The statement of a portal with its parameters in place.
    fn bound_sql(portal: &Portal<PgStatement>) -> PgWireResult<String> {
        let literals = (0..portal.parameter_len())
            .map(|i| parameter_literal(portal, i))
            .collect::<PgWireResult<Vec<_>>>()?;
        pondra_cluster::substitute_placeholders(&portal.statement.statement.sql, &literals)
            .map_err(|e| user_error("42601", e.to_string()))
    }

    /// The columns a statement returns, planned without running it.
    async fn describe<C: ClientInfo>(
        &self,
        client: &C,
        sql: &str,
        formats: &Format,
    ) -> PgWireResult<Vec<FieldInfo>> {
        let statements =
            pondra_cluster::parse_sql(sql).map_err(|e| user_error("42601", e.to_string()))?;
        if let Some(statement) = statements.last()
            && let Some(SessionAnswer::Rows(schema, _)) = session_answer(statement)
        {
            return Ok(fields(&schema, formats));
        }
        let node = self.node(client).await?;
        let session = self.session(client);
        match node.result_schema_in(Some(&session), sql) {
            Ok(Some(schema)) => Ok(fields(&schema, formats)),
            Ok(None) => Ok(Vec::new()),
            Err(e) => Err(PgWireError::UserError(Box::new(error_info(e.to_string())))),
        }
    }
}

#[async_trait]
impl ExtendedQueryHandler for PgDoor {
    type Statement = PgStatement;
    type QueryParser = NoTypes;

    fn query_parser(&self) -> Arc<NoTypes> {
        Arc::new(NoTypes)
    }

    /// A Sync's ReadyForQuery carries the session's transaction status.
    async fn on_sync<C>(&self, client: &mut C, _message: PgSync) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        client.portal_store().rm_portal("");
        let status = ready_status(&self.session(client));
        client.set_transaction_status(status);
        client
            .send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(
                status,
            )))
            .await?;
        client.flush().await?;
        Ok(())
    }

    async fn do_describe_statement<C>(
        &self,
        client: &mut C,
        target: &StoredStatement<PgStatement>,
    ) -> PgWireResult<DescribeStatementResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = PgStatement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let count = target
            .statement
            .parameters
            .max(target.parameter_types.len());
        let types: Vec<Type> = (0..count)
            .map(|i| {
                target
                    .parameter_types
                    .get(i)
                    .cloned()
                    .flatten()
                    .unwrap_or(Type::UNKNOWN)
            })
            .collect();
        // Without values, parameters plan as NULLs.
        let nulls = vec!["NULL".to_string(); count];
        let sql = pondra_cluster::substitute_placeholders(&target.statement.sql, &nulls)
            .map_err(|e| user_error("42601", e.to_string()))?;
        let fields = self.describe(client, &sql, &Format::UnifiedBinary).await?;
        Ok(DescribeStatementResponse::new(types, fields))
    }

    async fn do_describe_portal<C>(
        &self,
        client: &mut C,
        portal: &Portal<PgStatement>,
    ) -> PgWireResult<DescribePortalResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = PgStatement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let sql = Self::bound_sql(portal)?;
        let fields = self
            .describe(client, &sql, &portal.result_column_format)
            .await?;
        Ok(DescribePortalResponse::new(fields))
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<PgStatement>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = PgStatement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let sql = Self::bound_sql(portal)?;
        let statements =
            pondra_cluster::parse_sql(&sql).map_err(|e| user_error("42601", e.to_string()))?;
        let [statement] = statements.as_slice() else {
            if statements.is_empty() {
                return Ok(Response::EmptyQuery);
            }
            return Err(user_error(
                "42601",
                "a prepared statement holds one statement",
            ));
        };
        if let Some(copy) = CopyIn::from_statement(statement) {
            return self.start_copy(client, copy).await;
        }
        match self
            .run(client, statement, &portal.result_column_format)
            .await?
        {
            Response::Error(info) => Err(PgWireError::UserError(info)),
            response => Ok(response),
        }
    }
}

#[async_trait]
impl CopyHandler for PgDoor {
    async fn on_copy_data<C>(&self, client: &mut C, copy_data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        session::copy_state(client).push(&copy_data.data);
        Ok(())
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let copy = session::copy_state(client).take().ok_or_else(|| {
            user_error("08P01", "COPY data arrived with no COPY FROM STDIN running")
        })?;
        let node = self.node(client).await?;
        let session = self.session(client);
        let rows = copy
            .finish(&node, &session)
            .await
            .map_err(|e| PgWireError::UserError(Box::new(error_info(e))))?;
        client
            .send(PgWireBackendMessage::CommandComplete(
                Tag::new("COPY").with_rows(rows).into(),
            ))
            .await?;
        Ok(())
    }
}

impl PgDoor {
    /// Answers `COPY t FROM STDIN`: the client then streams the rows.
    async fn start_copy<C: ClientInfo>(&self, client: &C, copy: CopyIn) -> PgWireResult<Response> {
        let role = self.role(client);
        if role < Role::Write {
            let reason = format!(
                "permission denied: a {} token cannot COPY rows in (it needs write)",
                role.name()
            );
            eprintln!("refused: pg: {reason}");
            return Err(user_error("42501", reason));
        }
        let node = self.node(client).await?;
        let columns = copy
            .column_count(&node)
            .map_err(|e| user_error(sqlstate(&e), e))?;
        session::copy_state(client).start(copy);
        Ok(Response::CopyIn(pgwire::api::results::CopyResponse::new(
            0,
            columns,
            stream::empty(),
        )))
    }
}
