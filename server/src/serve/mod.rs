//! `pondra serve`: one process holding one or more lakes, open to clients over HTTP, the
//! Postgres wire protocol and Arrow Flight SQL, with tokens on every door.

pub mod auth;
mod client;
mod console;
mod encode;
mod flight;
mod http;
mod iceberg_rest;
mod kafka;
mod lakes;
mod literal;
mod mcp;
mod membership;
mod peers;
mod pg;
mod producer_appends;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pondra_cluster::{NodeOptions, Session};
use tokio::net::TcpListener;
use tokio::sync::watch;

use auth::Tokens;
use lakes::Lakes;

/// What every door shares.
pub struct Server {
    pub lakes: Lakes,
    pub tokens: Tokens,
    pub started: Instant,
    /// The `statement_timeout` sessions start with (`--statement-timeout`).
    pub statement_timeout: Option<Duration>,
    /// The HOST:PORT other processes reach the HTTP door by (`--advertise`).
    pub advertise: String,
    /// This server's place in its lake's cluster, with `--dir` (ADR 0053).
    pub membership: Option<Arc<membership::Membership>>,
}

impl Server {
    /// A session with the server's defaults.
    pub fn session(&self) -> Arc<Session> {
        Session::new(self.statement_timeout)
    }
}

/// Where `pondra serve` listens and what it holds.
pub struct ServeOptions {
    /// The lake's folder or URL.
    pub dir: String,
    /// A folder or URL under which each database name is a lake.
    pub lakes: Option<String>,
    pub host: String,
    pub http_port: u16,
    /// The HOST:PORT other processes reach the HTTP door by; none for the default.
    pub advertise: Option<String>,
    /// The HOST:PORT other nodes reach the Flight door by; none for the default.
    pub advertise_flight: Option<String>,
    /// Answer queries and refuse writes (`--read-only`).
    pub read_only: bool,
    /// Whether sessions spread their queries over the cluster unless they say (`--spread`).
    pub spread: pondra_cluster::SpreadMode,
    pub pg_port: u16,
    pub flight_port: u16,
    /// The Kafka door, if asked for (`--kafka-port`).
    pub kafka: Option<KafkaOptions>,
    pub tokens: Tokens,
    pub node: NodeOptions,
    /// Statements running longer than this are stopped, unless a session sets its own.
    pub statement_timeout: Option<Duration>,
}

/// The Kafka door's options (ADR 0077).
#[derive(Clone, Copy, Debug)]
pub struct KafkaOptions {
    pub port: u16,
    /// Whether producing to a topic with no table creates a raw table for it.
    pub auto_create: bool,
}

/// Runs the server until SIGINT or SIGTERM, then stops taking requests and closes the lakes.
pub async fn serve(options: ServeOptions) -> Result<(), String> {
    let http = bind(&options.host, options.http_port, "http").await?;
    let http_port = http.local_addr().map_err(|e| e.to_string())?.port();
    let advertise = options
        .advertise
        .clone()
        .unwrap_or_else(|| default_advertise(&options.host, http_port));
    // Other nodes reach the Flight door for the parts of spread queries (ADR 0076).
    let flight = bind(&options.host, options.flight_port, "flight").await?;
    let flight_port = flight.local_addr().map_err(|e| e.to_string())?.port();
    let flight_advertise = match (&options.advertise_flight, advertise.rsplit_once(':')) {
        (Some(flight), _) => flight.clone(),
        (None, Some((host, _))) => format!("{host}:{flight_port}"),
        (None, None) => format!("{advertise}:{flight_port}"),
    };
    let kafka = match options.kafka {
        None => None,
        Some(_) if options.lakes.is_some() => {
            return Err("the Kafka door serves one lake: use --dir, not --lakes".into());
        }
        Some(_) if options.tokens.enabled() => {
            return Err("the Kafka door has no SASL yet: it cannot be opened with tokens".into());
        }
        Some(kafka) => {
            let listener = bind(&options.host, kafka.port, "kafka").await?;
            let port = listener.local_addr().map_err(|e| e.to_string())?.port();
            let host = advertise
                .rsplit_once(':')
                .map_or(advertise.as_str(), |(h, _)| h);
            Some((listener, format!("{host}:{port}"), kafka))
        }
    };
    // With --dir the server is a node of its lake's cluster (ADR 0053); with --lakes it leads
    // every lake it opens.
    let (lakes, membership) = match &options.lakes {
        Some(root) => (Lakes::under(root.clone(), options.node.clone())?, None),
        None => {
            let membership = membership::Membership::join(
                &options.dir,
                options.node.clone(),
                advertise.clone(),
                membership::Doors {
                    flight: flight_advertise,
                    kafka: kafka.as_ref().map(|(_, address, _)| address.clone()),
                },
                options.read_only,
                options.tokens.admin_token(),
            )
            .await?;
            membership.node.set_default_spread(options.spread);
            membership.node.set_peers(Arc::new(peers::FlightPeers {
                membership: membership.clone(),
                token: options.tokens.admin_token(),
            }));
            membership
                .node
                .set_python_runner(Arc::new(console::CellRunner {
                    url: format!("http://{advertise}"),
                    token: options.tokens.admin_token(),
                }));
            let lakes = Lakes::single(membership.node.clone(), options.node.clone());
            (lakes, Some(membership))
        }
    };
    let server = Arc::new(Server {
        lakes,
        tokens: options.tokens.clone(),
        started: Instant::now(),
        statement_timeout: options.statement_timeout,
        advertise: advertise.clone(),
        membership: membership.clone(),
    });
    let (stop, stopped) = watch::channel(false);
    let keeping_role = membership.as_ref().map(|m| m.start());
    let app =
        http::router(server.clone()).into_make_service_with_connect_info::<client::ClientSocket>();
    let mut http_stop = stopped.clone();
    let http_task = tokio::spawn(async move {
        axum::serve(http, app)
            .with_graceful_shutdown(async move {
                let _ = http_stop.wait_for(|s| *s).await;
            })
            .await
    });

    let pg = bind(&options.host, options.pg_port, "pg").await?;
    let pg_task = tokio::spawn(pg::run(pg, server.clone(), stopped.clone()));

    let flight_task = tokio::spawn(flight::run(flight, server.clone(), stopped.clone()));
    let kafka_task = kafka.map(|(listener, _, kafka)| {
        tokio::spawn(kafka::run(listener, server.clone(), kafka, stopped.clone()))
    });

    println!("ready");
    wait_for_signal().await;
    // Running statements end at their next check, so the doors can close within a second.
    let running = stop_running_statements();
    eprintln!("shutting down ({running} running statements stopped)");
    let _ = stop.send(true);
    if let Ok(Err(e)) = http_task.await {
        eprintln!("http: {e}");
    }
    let _ = pg_task.await;
    if let Some(task) = kafka_task {
        let _ = task.await;
    }
    if let Ok(Err(e)) = flight_task.await {
        eprintln!("flight: {e}");
    }
    if let Some(task) = keeping_role {
        task.abort();
    }
    if let Some(membership) = &membership {
        membership.leave().await;
    }
    server.lakes.close().await;
    Ok(())
}

/// The address other processes reach the HTTP door by: the one listened on, or this host's
/// name when that is every address.
fn default_advertise(host: &str, port: u16) -> String {
    if host != "0.0.0.0" && host != "::" {
        return format!("{host}:{port}");
    }
    let mut name = [0u8; 256];
    // SAFETY: the buffer is writable for its whole length, which is passed.
    let named = unsafe { libc::gethostname(name.as_mut_ptr().cast(), name.len()) } == 0;
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    match named {
        true => format!("{}:{port}", String::from_utf8_lossy(&name[..end])),
        false => format!("localhost:{port}"),
    }
}

/// Stops every running statement of the process; returns how many there were.
fn stop_running_statements() -> usize {
    pondra_cluster::stop_all_statements()
}

/// Binds a door's port (0 picks a free one) and says where it listens on stdout.
async fn bind(host: &str, port: u16, door: &str) -> Result<TcpListener, String> {
    let listener = TcpListener::bind((host, port))
        .await
        .map_err(|e| format!("cannot listen for {door} on {host}:{port}: {e}"))?;
    let address: SocketAddr = listener.local_addr().map_err(|e| e.to_string())?;
    println!("{door} listening on {address}");
    Ok(listener)
}

async fn wait_for_signal() {
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = async {
            match terminate.as_mut() {
                Some(t) => { t.recv().await; }
                None => std::future::pending::<()>().await,
            }
        } => {}
    }
}
