//! The Arrow Flight SQL door (arrow-flight): statements, prepared statements with parameters,
//! catalog metadata and bulk ingest, with the bearer token of every call checked.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};

use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, Schema, SchemaRef};
use arrow_flight::decode::FlightRecordBatchStream;
use arrow_flight::encode::FlightDataEncoderBuilder;
use arrow_flight::flight_service_server::{FlightService, FlightServiceServer};
use arrow_flight::sql::metadata::{SqlInfoData, SqlInfoDataBuilder};
use arrow_flight::sql::server::{FlightSqlService, PeekableFlightDataStream};
use arrow_flight::sql::{
    ActionCancelQueryRequest, ActionCancelQueryResult, ActionClosePreparedStatementRequest,
    ActionCreatePreparedStatementRequest, ActionCreatePreparedStatementResult, Any,
    CommandGetCatalogs, CommandGetDbSchemas, CommandGetSqlInfo, CommandGetTableTypes,
    CommandGetTables, CommandPreparedStatementQuery, CommandPreparedStatementUpdate,
    CommandStatementIngest, CommandStatementQuery, CommandStatementUpdate,
    DoPutPreparedStatementResult, ProstMessageExt, SqlInfo, TicketStatementQuery,
};
use arrow_flight::{
    Action, CancelFlightInfoRequest, CancelFlightInfoResult, CancelStatus, FlightDescriptor,
    FlightEndpoint, FlightInfo, IpcMessage, SchemaAsIpc, Ticket,
};
use futures::{Stream, TryStreamExt};
use pondra_cluster::{Node, Session, StatementResult, StopReason};
use prost::Message;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tonic::{Request, Response, Status};

use super::Server;
use super::auth::{Role, authorize};
use super::encode::{arrow_client_batch, arrow_client_schema};
use super::literal::arrow_literal;
use super::producer_appends::{self, ProducerClaim};

/// The catalog and schema every table is listed under.
const CATALOG: &str = "pondra";
const SCHEMA: &str = "main";

pub async fn run(
    listener: TcpListener,
    server: Arc<Server>,
    mut stop: watch::Receiver<bool>,
) -> Result<(), String> {
    let door = FlightDoor {
        server,
        prepared: Default::default(),
        next_handle: Default::default(),
        running: Default::default(),
    };
    // Without TCP_NODELAY a small answer waits for the client's delayed ACK, 40 ms.
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    tonic::transport::Server::builder()
        .add_service(FlightServiceServer::new(door))
        .serve_with_incoming_shutdown(incoming, async move {
            let _ = stop.wait_for(|s| *s).await;
        })
        .await
        .map_err(|e| e.to_string())
}

/// A prepared statement: its SQL, and its parameters' values once bound.
#[derive(Clone)]
struct Prepared {
    sql: String,
    parameters: Vec<String>,
}

pub struct FlightDoor {
    server: Arc<Server>,
    prepared: Mutex<HashMap<String, Prepared>>,
    next_handle: std::sync::atomic::AtomicU64,
    /// The session of each statement running for a ticket, by the ticket's handle, for a
    /// CancelFlightInfo to reach.
    running: Mutex<HashMap<String, Weak<Session>>>,
}

impl FlightDoor {
    /// Stops the statements running for the tickets of `info`; false when none was running.
    fn cancel(&self, info: &FlightInfo) -> bool {
        let mut cancelled = false;
        for endpoint in &info.endpoint {
            let Some(ticket) = &endpoint.ticket else {
                continue;
            };
            let Ok(any) = Any::decode(ticket.ticket.as_ref()) else {
                continue;
            };
            let name = if let Ok(Some(query)) = any.unpack::<TicketStatementQuery>() {
                split_statement_handle(&query.statement_handle)
                    .ok()
                    .map(|(name, _)| name)
            } else if let Ok(Some(query)) = any.unpack::<CommandPreparedStatementQuery>() {
                Some(String::from_utf8_lossy(&query.prepared_statement_handle).into_owned())
            } else {
                None
            };
            let session = name.and_then(|name| lock(&self.running).get(&name).cloned());
            if let Some(session) = session.and_then(|s| s.upgrade()) {
                cancelled |= session.stop_running(StopReason::Cancelled);
            }
        }
        cancelled
    }
}

/// A lock of the door's maps, whose holders cannot leave them half changed.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// A statement ticket's handle: a number naming this FlightInfo's run, and the SQL.
fn statement_handle(id: u64, sql: &str) -> String {
    format!("s{id}:{sql}")
}

/// The name and SQL of a statement ticket's handle.
fn split_statement_handle(handle: &[u8]) -> Result<(String, String), Status> {
    let text = std::str::from_utf8(handle).map_err(failed)?;
    let (name, sql) = text
        .split_once(':')
        .filter(|(name, _)| name.starts_with('s'))
        .ok_or_else(|| Status::invalid_argument("not a statement ticket of this server"))?;
    Ok((name.to_string(), sql.to_string()))
}

type DoGetStream = Pin<Box<dyn Stream<Item = Result<arrow_flight::FlightData, Status>> + Send>>;

fn failed(e: impl ToString) -> Status {
    Status::invalid_argument(pondra_cluster::bounded_message(e.to_string()))
}

impl FlightDoor {
    /// The role the request's bearer token grants; refusals are logged.
    fn role<T>(&self, request: &Request<T>) -> Result<Role, Status> {
        let token = request
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer ").or(v.strip_prefix("bearer ")));
        self.server.tokens.role_of(token).map_err(|reason| {
            eprintln!("refused: flight: {reason}");
            Status::unauthenticated(reason)
        })
    }

    /// Checks that the request's token may run `sql`.
    fn authorize<T>(&self, request: &Request<T>, sql: &str) -> Result<(), Status> {
        let role = self.role(request)?;
        authorize(role, sql).map_err(|reason| {
            eprintln!("refused: flight: {reason}");
            if reason.starts_with("permission denied") {
                Status::permission_denied(reason)
            } else {
                failed(reason)
            }
        })
    }

    async fn node<T>(&self, request: &Request<T>) -> Result<Arc<Node>, Status> {
        let database = request
            .metadata()
            .get("database")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        self.server
            .lakes
            .node(database.as_deref())
            .await
            .map_err(failed)
    }

    fn prepared(&self, handle: &[u8]) -> Result<Prepared, Status> {
        let handle = String::from_utf8_lossy(handle).into_owned();
        self.prepared
            .lock()
            .expect("prepared lock")
            .get(&handle)
            .cloned()
            .ok_or_else(|| Status::not_found(format!("no prepared statement {handle}")))
    }

    /// The statement with its parameters (NULL where none are bound yet).
    fn bound(prepared: &Prepared) -> Result<String, Status> {
        let count = pondra_cluster::placeholder_count(&prepared.sql);
        let mut values = prepared.parameters.clone();
        values.resize(count.max(values.len()), "NULL".into());
        pondra_cluster::substitute_placeholders(&prepared.sql, &values).map_err(failed)
    }

    /// The columns of `sql`'s rows, planned without running it (none for other statements).
    fn schema_of(node: &Node, sql: &str) -> Result<Schema, Status> {
        match node.result_schema(sql) {
            Ok(Some(schema)) => Ok(arrow_client_schema(&schema)),
            Ok(None) => Ok(Schema::empty()),
            Err(e) => Err(failed(e)),
        }
    }

    /// The FlightInfo of a metadata command, for any holder of a valid token.
    fn metadata_info(
        &self,
        request: Request<FlightDescriptor>,
        schema: &Schema,
        ticket: Any,
    ) -> Result<Response<FlightInfo>, Status> {
        self.role(&request)?;
        Ok(Response::new(Self::info(
            schema,
            ticket,
            request.into_inner(),
        )?))
    }

    /// A FlightInfo whose one endpoint's ticket is `ticket`.
    fn info(
        schema: &Schema,
        ticket: Any,
        descriptor: FlightDescriptor,
    ) -> Result<FlightInfo, Status> {
        let endpoint = FlightEndpoint::new().with_ticket(Ticket {
            ticket: ticket.encode_to_vec().into(),
        });
        Ok(FlightInfo::new()
            .try_with_schema(&arrow_client_schema(schema))
            .map_err(failed)?
            .with_endpoint(endpoint)
            .with_descriptor(descriptor))
    }

    /// A query's FlightInfo, whose ticket runs it; any other statement runs now (clients may
    /// never fetch a result they expect to be empty) and its FlightInfo has no endpoint.
    async fn plan_or_run(
        &self,
        node: &Arc<Node>,
        sql: &str,
        ticket: Any,
        request: Request<FlightDescriptor>,
    ) -> Result<FlightInfo, Status> {
        match node.result_schema(sql).map_err(failed)? {
            Some(schema) => Self::info(&schema, ticket, request.into_inner()),
            None => {
                let changed = self.run_update(node, sql).await?;
                Ok(FlightInfo::new()
                    .try_with_schema(&Schema::empty())
                    .map_err(failed)?
                    .with_descriptor(request.into_inner())
                    .with_total_records(changed))
            }
        }
    }

    /// Runs the statements of `sql` in a session of their own, registered under `ticket` (when
    /// one names them) for a cancel to reach.
    async fn run(
        &self,
        node: &Arc<Node>,
        sql: &str,
        ticket: Option<&str>,
    ) -> Result<Vec<StatementResult>, Status> {
        let statements = pondra_cluster::parse_sql(sql).map_err(failed)?;
        let session = self.server.session();
        if let Some(ticket) = ticket {
            lock(&self.running).insert(ticket.to_string(), Arc::downgrade(&session));
        }
        let mut results = Vec::with_capacity(statements.len());
        let mut outcome = Ok(());
        for statement in statements {
            match node.execute_in(&session, statement).await {
                Ok(result) => results.push(result),
                Err(e) => {
                    outcome = Err(failed(e));
                    break;
                }
            }
        }
        if let Some(ticket) = ticket {
            lock(&self.running).remove(ticket);
        }
        outcome.map(|()| results)
    }

    /// Runs `sql` and streams its last statement's rows.
    async fn run_to_stream(
        &self,
        node: &Arc<Node>,
        sql: &str,
        ticket: Option<&str>,
    ) -> Result<DoGetStream, Status> {
        let results = self.run(node, sql, ticket).await?;
        let (schema, batches) = match results.into_iter().last() {
            Some(StatementResult::Rows { schema, batches }) => (schema, batches),
            _ => (Arc::new(Schema::empty()), Vec::new()),
        };
        Ok(batches_stream(schema, batches))
    }

    /// Runs a statement that returns no rows; returns the rows it changed.
    async fn run_update(&self, node: &Arc<Node>, sql: &str) -> Result<i64, Status> {
        let results = self.run(node, sql, None).await?;
        Ok(match results.into_iter().last() {
            Some(StatementResult::Done { tag }) => tag
                .rsplit(' ')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0),
            _ => 0,
        })
    }
}

fn batches_stream(schema: SchemaRef, batches: Vec<RecordBatch>) -> DoGetStream {
    let batches = batches
        .into_iter()
        .map(|b| arrow_client_batch(&b).map_err(Into::into));
    let stream = FlightDataEncoderBuilder::new()
        .with_schema(Arc::new(arrow_client_schema(&schema)))
        .build(futures::stream::iter(batches))
        .map_err(Status::from);
    Box::pin(stream)
}

/// A DoGet answer of one batch a metadata builder made.
fn one_batch<E: ToString>(
    schema: SchemaRef,
    batch: Result<RecordBatch, E>,
) -> Result<Response<DoGetStream>, Status> {
    Ok(Response::new(batches_stream(
        schema,
        vec![batch.map_err(failed)?],
    )))
}

fn table_types_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![arrow::datatypes::Field::new(
        "table_type",
        DataType::Utf8,
        false,
    )]))
}

/// The record batches a client put.
async fn put_batches(stream: PeekableFlightDataStream) -> Result<Vec<RecordBatch>, Status> {
    // The peeked first message (descriptor and schema) must stay in the stream.
    let flight_data = stream
        .into_peekable()
        .map_err(|e| arrow_flight::error::FlightError::Tonic(Box::new(e)));
    let collect = FlightRecordBatchStream::new_from_flight_data(flight_data).try_collect();
    // Arrow's IPC decoder can panic on malformed data: the client's error, not the server's.
    let collected: Result<Vec<RecordBatch>, _> =
        futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(collect))
            .await
            .map_err(|_| Status::invalid_argument("a malformed Arrow IPC stream"))?;
    collected.map_err(failed)
}

/// Each row of `batches` as SQL literals, one per column.
fn parameter_rows(batches: &[RecordBatch]) -> Result<Vec<Vec<String>>, Status> {
    let mut rows = Vec::new();
    for batch in batches {
        for row in 0..batch.num_rows() {
            rows.push(
                batch
                    .columns()
                    .iter()
                    .map(|c| arrow_literal(c, row))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(failed)?,
            );
        }
    }
    Ok(rows)
}

fn sql_info() -> SqlInfoData {
    let mut builder = SqlInfoDataBuilder::new();
    builder.append(SqlInfo::FlightSqlServerName, "Pondra");
    builder.append(SqlInfo::FlightSqlServerVersion, env!("CARGO_PKG_VERSION"));
    builder.append(SqlInfo::FlightSqlServerArrowVersion, "1.3");
    builder.append(SqlInfo::FlightSqlServerReadOnly, false);
    builder.append(SqlInfo::FlightSqlServerSql, true);
    builder.append(SqlInfo::FlightSqlServerSubstrait, false);
    builder.append(SqlInfo::FlightSqlServerTransaction, 0i32);
    builder.append(SqlInfo::FlightSqlServerCancel, true);
    builder.append(SqlInfo::FlightSqlServerStatementTimeout, 0i32);
    builder.append(SqlInfo::FlightSqlServerTransactionTimeout, 0i32);
    builder.build().expect("SQL info")
}

#[tonic::async_trait]
impl FlightSqlService for FlightDoor {
    type FlightService = FlightDoor;

    /// A part of another node's spread query (ADR 0076): the request in the first message's
    /// app metadata, the part's rows streamed back.
    async fn do_exchange_fallback(
        &self,
        request: Request<tonic::Streaming<arrow_flight::FlightData>>,
    ) -> Result<Response<<Self as FlightService>::DoExchangeStream>, Status> {
        let role = self.role(&request)?;
        let node = self.node(&request).await?;
        let mut messages = request.into_inner();
        let first = messages
            .message()
            .await?
            .ok_or_else(|| Status::invalid_argument("an exchange without a message"))?;
        let command = first.flight_descriptor.as_ref().map(|d| d.cmd.as_ref());
        if command == Some(super::peers::DELIVERY_COMMAND.as_bytes()) {
            return take_delivery(role, &node, &first, messages).await;
        }
        if command != Some(super::peers::PART_COMMAND.as_bytes()) {
            return Err(Status::unimplemented(
                "do_exchange runs the parts of spread queries only",
            ));
        }
        let part: pondra_cluster::PartRequest = serde_json::from_slice(&first.app_metadata)
            .map_err(|e| Status::invalid_argument(format!("not a part request: {e}")))?;
        authorize(role, &part.statement).map_err(|reason| {
            eprintln!("refused: flight: {reason}");
            Status::permission_denied(reason)
        })?;
        let batches = node.run_part(part).await.map_err(failed)?;
        let schema = match batches.first() {
            Some(batch) => batch.schema(),
            None => Arc::new(Schema::empty()),
        };
        let stream = FlightDataEncoderBuilder::new()
            .with_schema(schema)
            .with_dictionary_handling(arrow_flight::encode::DictionaryHandling::Resend)
            .build(futures::stream::iter(batches.into_iter().map(Ok)))
            .map_err(Status::from);
        Ok(Response::new(Box::pin(stream)))
    }

    async fn get_flight_info_statement(
        &self,
        query: CommandStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.authorize(&request, &query.query)?;
        let node = self.node(&request).await?;
        let id = self
            .next_handle
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let ticket = TicketStatementQuery {
            statement_handle: statement_handle(id, &query.query).into_bytes().into(),
        };
        let info = self
            .plan_or_run(&node, &query.query, ticket.as_any(), request)
            .await?;
        Ok(Response::new(info))
    }

    async fn do_get_statement(
        &self,
        ticket: TicketStatementQuery,
        request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        let (name, sql) = split_statement_handle(&ticket.statement_handle)?;
        self.authorize(&request, &sql)?;
        let node = self.node(&request).await?;
        Ok(Response::new(
            self.run_to_stream(&node, &sql, Some(&name)).await?,
        ))
    }

    async fn do_put_statement_update(
        &self,
        command: CommandStatementUpdate,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<i64, Status> {
        self.authorize(&request, &command.query)?;
        let node = self.node(&request).await?;
        self.run_update(&node, &command.query).await
    }

    async fn do_action_create_prepared_statement(
        &self,
        query: ActionCreatePreparedStatementRequest,
        request: Request<Action>,
    ) -> Result<ActionCreatePreparedStatementResult, Status> {
        self.role(&request)?;
        let node = self.node(&request).await?;
        let prepared = Prepared {
            sql: query.query,
            parameters: Vec::new(),
        };
        let schema = Self::schema_of(&node, &Self::bound(&prepared)?)?;
        let IpcMessage(dataset_schema) = SchemaAsIpc::new(&schema, &Default::default())
            .try_into()
            .map_err(failed)?;
        let handle = format!(
            "p{}",
            self.next_handle
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        self.prepared
            .lock()
            .expect("prepared lock")
            .insert(handle.clone(), prepared);
        Ok(ActionCreatePreparedStatementResult {
            prepared_statement_handle: handle.into_bytes().into(),
            dataset_schema,
            parameter_schema: Default::default(),
        })
    }

    async fn do_put_prepared_statement_query(
        &self,
        query: CommandPreparedStatementQuery,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<DoPutPreparedStatementResult, Status> {
        self.role(&request)?;
        let batches = put_batches(request.into_inner()).await?;
        let rows = parameter_rows(&batches)?;
        let handle = String::from_utf8_lossy(&query.prepared_statement_handle).into_owned();
        let mut prepared = self.prepared.lock().expect("prepared lock");
        let statement = prepared
            .get_mut(&handle)
            .ok_or_else(|| Status::not_found(format!("no prepared statement {handle}")))?;
        statement.parameters = match rows.as_slice() {
            [] => Vec::new(),
            [row] => row.clone(),
            _ => {
                return Err(Status::invalid_argument(
                    "a query takes one row of parameters",
                ));
            }
        };
        Ok(DoPutPreparedStatementResult {
            prepared_statement_handle: Some(query.prepared_statement_handle),
        })
    }

    async fn get_flight_info_prepared_statement(
        &self,
        command: CommandPreparedStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let prepared = self.prepared(&command.prepared_statement_handle)?;
        let sql = Self::bound(&prepared)?;
        self.authorize(&request, &sql)?;
        let node = self.node(&request).await?;
        let info = self
            .plan_or_run(&node, &sql, command.as_any(), request)
            .await?;
        Ok(Response::new(info))
    }

    async fn do_get_prepared_statement(
        &self,
        command: CommandPreparedStatementQuery,
        request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        let prepared = self.prepared(&command.prepared_statement_handle)?;
        let sql = Self::bound(&prepared)?;
        self.authorize(&request, &sql)?;
        let node = self.node(&request).await?;
        let handle = String::from_utf8_lossy(&command.prepared_statement_handle).into_owned();
        Ok(Response::new(
            self.run_to_stream(&node, &sql, Some(&handle)).await?,
        ))
    }

    async fn do_put_prepared_statement_update(
        &self,
        command: CommandPreparedStatementUpdate,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<i64, Status> {
        let prepared = self.prepared(&command.prepared_statement_handle)?;
        let node = self.node(&request).await?;
        let role = self.role(&request)?;
        let batches = put_batches(request.into_inner()).await?;
        let rows = parameter_rows(&batches)?;
        // With no parameters the statement runs once; with rows of them, once per row.
        let runs: Vec<Vec<String>> = if rows.is_empty() {
            vec![Vec::new()]
        } else {
            rows
        };
        let mut changed = 0;
        for parameters in runs {
            let sql = Self::bound(&Prepared {
                sql: prepared.sql.clone(),
                parameters,
            })?;
            authorize(role, &sql).map_err(|reason| {
                eprintln!("refused: flight: {reason}");
                Status::permission_denied(reason)
            })?;
            changed += self.run_update(&node, &sql).await?;
        }
        Ok(changed)
    }

    async fn do_action_cancel_query(
        &self,
        query: ActionCancelQueryRequest,
        request: Request<Action>,
    ) -> Result<ActionCancelQueryResult, Status> {
        self.role(&request)?;
        let info = FlightInfo::decode(query.info.as_ref()).map_err(failed)?;
        // CancelQuery's results share CancelFlightInfo's numbers.
        let status = match self.cancel(&info) {
            true => CancelStatus::Cancelled,
            false => CancelStatus::NotCancellable,
        };
        Ok(ActionCancelQueryResult {
            result: status as i32,
        })
    }

    /// `CancelFlightInfo`, the action that took the place of `CancelQuery`.
    async fn do_action_fallback(
        &self,
        request: Request<Action>,
    ) -> Result<Response<<Self as FlightService>::DoActionStream>, Status> {
        if request.get_ref().r#type != "CancelFlightInfo" {
            return Err(Status::unimplemented(format!(
                "the action {} is not supported",
                request.get_ref().r#type
            )));
        }
        self.role(&request)?;
        let cancel =
            CancelFlightInfoRequest::decode(request.get_ref().body.as_ref()).map_err(failed)?;
        let info = cancel
            .info
            .ok_or_else(|| Status::invalid_argument("CancelFlightInfo names no FlightInfo"))?;
        let status = match self.cancel(&info) {
            true => CancelStatus::Cancelled,
            false => CancelStatus::NotCancellable,
        };
        let result = CancelFlightInfoResult::new(status);
        let body = arrow_flight::Result {
            body: result.encode_to_vec().into(),
        };
        Ok(Response::new(Box::pin(futures::stream::iter([Ok(body)]))))
    }

    async fn do_action_close_prepared_statement(
        &self,
        query: ActionClosePreparedStatementRequest,
        _request: Request<Action>,
    ) -> Result<(), Status> {
        let handle = String::from_utf8_lossy(&query.prepared_statement_handle).into_owned();
        self.prepared.lock().expect("prepared lock").remove(&handle);
        Ok(())
    }

    async fn do_put_statement_ingest(
        &self,
        command: CommandStatementIngest,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<i64, Status> {
        use arrow_flight::sql::{TableExistsOption, TableNotExistOption};
        let role = self.role(&request)?;
        if role < Role::Write {
            eprintln!(
                "refused: flight ingest: a {} token cannot write",
                role.name()
            );
            return Err(Status::permission_denied(format!(
                "permission denied: a {} token cannot ingest rows (it needs write)",
                role.name()
            )));
        }
        let node = self.node(&request).await?;
        // Exactly once, as over HTTP: the ingest's options `producer`, `seq` and `follows`.
        let options = &command.options;
        let claim = ProducerClaim::from_params(|name| options.get(name).map(String::as_str))
            .map_err(Status::invalid_argument)?;
        let batches = put_batches(request.into_inner()).await?;
        let table = command.table.clone();
        let options = command.table_definition_options.unwrap_or_default();
        let exists = node.snapshot().table(&table).is_some();
        if exists && options.if_exists == TableExistsOption::Fail as i32 {
            return Err(Status::already_exists(format!(
                "table {table} already exists"
            )));
        }
        if exists && options.if_exists == TableExistsOption::Replace as i32 {
            return Err(Status::unimplemented("ingest that replaces a table"));
        }
        if !exists {
            if options.if_not_exist == TableNotExistOption::Fail as i32 {
                return Err(Status::not_found(format!("table {table} does not exist")));
            }
            if role < Role::Admin {
                eprintln!(
                    "refused: flight ingest: a {} token cannot create",
                    role.name()
                );
                return Err(Status::permission_denied(format!(
                    "permission denied: a {} token cannot create table {table} (it needs admin)",
                    role.name()
                )));
            }
            let schema = batches
                .first()
                .map(|b| b.schema())
                .ok_or_else(|| failed("an ingest that creates a table needs rows"))?;
            node.execute(&create_table_sql(&table, &schema)?)
                .await
                .map_err(failed)?;
        }
        let appended = producer_appends::append(&node, &table, &batches, claim).await;
        match appended {
            Ok(pondra_cluster::AppendOutcome::Appended(rows)) => Ok(rows as i64),
            Ok(pondra_cluster::AppendOutcome::Duplicate) => Ok(0),
            Err(e @ pondra_cluster::NodeError::OutOfOrder(_)) => {
                Err(Status::failed_precondition(e.to_string()))
            }
            Err(e) => Err(failed(e)),
        }
    }

    async fn get_flight_info_sql_info(
        &self,
        query: CommandGetSqlInfo,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = query.clone().into_builder(&sql_info()).schema();
        self.metadata_info(request, &schema, query.as_any())
    }

    async fn do_get_sql_info(
        &self,
        query: CommandGetSqlInfo,
        request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        self.role(&request)?;
        let info = sql_info();
        let builder = query.into_builder(&info);
        one_batch(builder.schema(), builder.build())
    }

    async fn get_flight_info_catalogs(
        &self,
        query: CommandGetCatalogs,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = query.into_builder().schema();
        self.metadata_info(request, &schema, query.as_any())
    }

    async fn do_get_catalogs(
        &self,
        query: CommandGetCatalogs,
        request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        self.role(&request)?;
        let mut builder = query.into_builder();
        builder.append(CATALOG);
        one_batch(builder.schema(), builder.build())
    }

    async fn get_flight_info_schemas(
        &self,
        query: CommandGetDbSchemas,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = query.clone().into_builder().schema();
        self.metadata_info(request, &schema, query.as_any())
    }

    async fn do_get_schemas(
        &self,
        query: CommandGetDbSchemas,
        request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        self.role(&request)?;
        let node = self.node(&request).await?;
        let mut builder = query.into_builder();
        builder.append(CATALOG, SCHEMA);
        for schema in node.snapshot().schemas.keys() {
            builder.append(CATALOG, schema);
        }
        one_batch(builder.schema(), builder.build())
    }

    async fn get_flight_info_tables(
        &self,
        query: CommandGetTables,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = query.clone().into_builder().schema();
        self.metadata_info(request, &schema, query.as_any())
    }

    async fn do_get_tables(
        &self,
        query: CommandGetTables,
        request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        self.role(&request)?;
        let node = self.node(&request).await?;
        let snapshot = node.snapshot();
        let mut builder = query.into_builder();
        for table in snapshot.visible_tables() {
            let (kind, schema) = match (table.is_view(), table.is_materialized_view()) {
                (false, false) => ("TABLE", table.arrow_schema()),
                _ => {
                    let kind = if table.is_view() {
                        "VIEW"
                    } else {
                        "MATERIALIZED VIEW"
                    };
                    let schema = node
                        .result_schema(&format!("SELECT * FROM \"{}\"", table.name))
                        .ok()
                        .flatten()
                        .unwrap_or_else(|| Arc::new(Schema::empty()));
                    (kind, schema)
                }
            };
            // A table of another schema is stored as `schema.table` (ADR 0051); one of
            // `public` is under the schema this door calls `main`.
            let (table_schema, name) = table
                .name
                .split_once('.')
                .unwrap_or((SCHEMA, table.name.as_str()));
            builder
                .append(CATALOG, table_schema, name, kind, &schema)
                .map_err(failed)?;
        }
        one_batch(builder.schema(), builder.build())
    }

    async fn get_flight_info_table_types(
        &self,
        query: CommandGetTableTypes,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.metadata_info(request, &table_types_schema(), query.as_any())
    }

    async fn do_get_table_types(
        &self,
        _query: CommandGetTableTypes,
        request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        self.role(&request)?;
        let schema = table_types_schema();
        let types = arrow::array::StringArray::from(vec!["MATERIALIZED VIEW", "TABLE", "VIEW"]);
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(types)]);
        one_batch(schema, batch)
    }

    async fn register_sql_info(&self, _id: i32, _result: &SqlInfo) {}
}

/// `CREATE TABLE` for rows of `schema`, in the nearest types Pondra stores.
fn create_table_sql(table: &str, schema: &Schema) -> Result<String, Status> {
    let columns = schema
        .fields()
        .iter()
        .map(|f| {
            let sql_type = match f.data_type() {
                DataType::Boolean => "BOOLEAN".to_string(),
                DataType::Int8 | DataType::Int16 | DataType::Int32 => "INTEGER".into(),
                DataType::Int64 | DataType::UInt8 | DataType::UInt16 | DataType::UInt32 => {
                    "BIGINT".into()
                }
                DataType::Float16 | DataType::Float32 | DataType::Float64 => "DOUBLE".into(),
                DataType::Decimal64(p, s) | DataType::Decimal128(p, s) => {
                    format!("DECIMAL({p},{s})")
                }
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "VARCHAR".into(),
                DataType::Date32 | DataType::Date64 => "DATE".into(),
                DataType::Timestamp(..) => "TIMESTAMP".into(),
                other => {
                    return Err(failed(format!(
                        "column {} of type {other} cannot be stored",
                        f.name()
                    )));
                }
            };
            Ok(format!("\"{}\" {sql_type}", f.name().replace('"', "\"\"")))
        })
        .collect::<Result<Vec<_>, Status>>()?;
    Ok(format!(
        "CREATE TABLE \"{}\" ({})",
        table.replace('"', "\"\""),
        columns.join(", ")
    ))
}

/// Keeps the rows another node's part delivered for a part this node runs (ADR 0076), and
/// answers with no rows once it holds them all: a stream cut short delivers nothing.
async fn take_delivery(
    role: Role,
    node: &Arc<Node>,
    first: &arrow_flight::FlightData,
    messages: tonic::Streaming<arrow_flight::FlightData>,
) -> Result<Response<<FlightDoor as FlightService>::DoExchangeStream>, Status> {
    authorize(role, "SELECT 1").map_err(Status::permission_denied)?;
    let delivery: pondra_cluster::Delivery = serde_json::from_slice(&first.app_metadata)
        .map_err(|e| Status::invalid_argument(format!("not a delivery: {e}")))?;
    let data = messages.map_err(|status| arrow_flight::error::FlightError::Tonic(Box::new(status)));
    let rows: Vec<RecordBatch> = FlightRecordBatchStream::new_from_flight_data(data)
        .try_collect()
        .await
        .map_err(|e| Status::invalid_argument(format!("a delivery's rows: {e}")))?;
    node.take_delivery(delivery, rows).map_err(failed)?;
    let stream = FlightDataEncoderBuilder::new()
        .with_schema(Arc::new(Schema::empty()))
        .build(futures::stream::empty())
        .map_err(Status::from);
    Ok(Response::new(Box::pin(stream)))
}
