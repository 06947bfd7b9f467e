//! The `pondra` command line: the SQL shell, `pondra sql`, `pondra serve` and `pondra tpch`.

mod follow;
mod output;
pub mod serve;
mod shell;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use pondra_cluster::{Node, NodeOptions};

use output::Format;

/// Pondra: streams of rows in, tables in a folder or a bucket, SQL out.
#[derive(Parser)]
#[command(name = "pondra", version, about)]
struct Cli {
    /// The lake: a folder, or a bucket's URL (s3://bucket/prefix, gs://..., az://...,
    /// abfss://..., file://...). Buckets take credentials and endpoints from the variables
    /// their cloud's own tools read (AWS_ACCESS_KEY_ID, AWS_ENDPOINT_URL, GOOGLE_*, AZURE_*).
    #[arg(long, global = true, default_value = "lake", alias = "lake")]
    dir: String,
    /// Where local copies of a bucket's immutable objects are kept (a folder of the
    /// process's own is made under it and removed at exit).
    #[arg(long, global = true)]
    cache_dir: Option<PathBuf>,
    /// The most the cache may hold, such as 20GB; by default a tenth of the free space of
    /// its disk, at least 1GB.
    #[arg(long, global = true, value_parser = parse_cache_size)]
    cache_size: Option<u64>,
    /// Seconds rows wait in the log tail before they move into Parquet.
    #[arg(long, global = true, default_value_t = 10)]
    tier_secs: u64,
    /// Seconds replaced objects are kept before they are deleted.
    #[arg(long, global = true, default_value_t = 60)]
    retain_secs: u64,
    /// The memory queries may hold before sorts, joins and aggregations spill to disk (in
    /// the system's temporary folder): a size such as 4GB or 512MB, or a share of the
    /// machine's memory such as 50%. The default is 80% of the machine's memory.
    #[arg(long, global = true, value_parser = parse_memory_limit)]
    memory_limit: Option<usize>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Runs SQL statements against the lake without any running node, then exits.
    Sql {
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// One or more `;`-separated statements.
        sql: String,
    },
    /// Serves the lake to clients over HTTP, the Postgres wire protocol and Arrow Flight SQL
    /// until SIGINT or SIGTERM.
    Serve {
        /// A folder or bucket URL of lakes: each database name a client connects to is a
        /// lake under it (instead of the one lake of --dir).
        #[arg(long)]
        lakes: Option<String>,
        /// The address to listen on.
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        /// HTTP port (0 picks a free one).
        #[arg(long, default_value_t = 8080)]
        http_port: u16,
        /// Postgres wire protocol port.
        #[arg(long, default_value_t = 5432)]
        pg_port: u16,
        /// Arrow Flight SQL port.
        #[arg(long, default_value_t = 50051)]
        flight_port: u16,
        /// Kafka protocol port (ADR 0077); no Kafka door unless given (0 picks a free one).
        #[arg(long)]
        kafka_port: Option<u16>,
        /// Whether producing to a topic with no table creates a raw table for it.
        #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
        kafka_auto_create: bool,
        /// The HOST:PORT other processes reach this server's HTTP door by (ADR 0053). By
        /// default the address listened on, or this host's name when that is every address.
        #[arg(long)]
        advertise: Option<String>,
        /// The HOST:PORT other nodes reach this server's Flight door by, for the parts of
        /// spread queries (ADR 0076). By default the --advertise host with the Flight port.
        #[arg(long)]
        advertise_flight: Option<String>,
        /// Answer queries and refuse writes: a node of the lake's cluster that never leads.
        #[arg(long)]
        read_only: bool,
        /// Whether queries run on several nodes of the cluster (ADR 0076): auto (when the
        /// time the other nodes save outweighs moving the rows), always or never. Sessions
        /// may `SET spread`.
        #[arg(long, default_value = "auto", value_parser = parse_spread)]
        spread: pondra_cluster::SpreadMode,
        /// A token that may read.
        #[arg(long)]
        token_read: Option<String>,
        /// A token that may read and write rows.
        #[arg(long)]
        token_write: Option<String>,
        /// A token that may also create and drop.
        #[arg(long)]
        token_admin: Option<String>,
        /// A file of `<role> <token>` lines (roles: read, write, admin).
        #[arg(long)]
        tokens_file: Option<PathBuf>,
        /// Stop statements that run longer than this (such as 30s, 500ms or 5min), unless a
        /// session sets its own `statement_timeout`. No limit by default.
        #[arg(long, value_parser = parse_statement_timeout)]
        statement_timeout: Option<Duration>,
    },
    /// TPC-H: generate the tables, or run the 22 queries.
    Tpch {
        #[command(subcommand)]
        command: TpchCommand,
    },
    /// Nexmark: append the Person, Auction and Bid streams to the lake.
    Nexmark {
        #[command(subcommand)]
        command: NexmarkCommand,
    },
}

#[derive(Subcommand)]
enum NexmarkCommand {
    /// Appends Nexmark events to the lake's `person`, `auction` and `bid` tables (created with
    /// a watermark when missing), a commit per batch, keeping the views over them current.
    Gen {
        /// How many events (of the three streams together).
        #[arg(long, default_value_t = 1_000_000)]
        events: u64,
        /// Events per commit.
        #[arg(long, default_value_t = 100_000)]
        batch: usize,
        /// Write the events to `person.parquet`, `auction.parquet` and `bid.parquet` in this
        /// folder (with their commits' sizes), for `nexmark replay` and other engines, instead
        /// of appending them to the lake.
        #[arg(long)]
        parquet: Option<PathBuf>,
    },
    /// Appends the events of `nexmark gen --parquet` from memory, commit by commit, and prints
    /// how many events per second the lake took, with its views kept current.
    Replay {
        /// The folder `nexmark gen --parquet` wrote.
        #[arg(long)]
        from: PathBuf,
        /// SQL run once the tables exist and before the events, such as the views to keep.
        #[arg(long)]
        sql: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum TpchCommand {
    /// Generates the TPC-H tables into the lake at a scale factor.
    Gen {
        /// Scale factor (1 is about 1 GB of raw data).
        #[arg(long, default_value_t = 1.0)]
        sf: f64,
    },
    /// Runs the queries: a warm-up pass, then the best of N timed passes per query.
    Run {
        /// Query numbers, comma-separated (default: all 22).
        #[arg(long, value_delimiter = ',')]
        queries: Vec<usize>,
        /// Timed passes per query.
        #[arg(long, default_value_t = 1)]
        runs: usize,
        /// Read `<table>.parquet` files in this folder in place instead of the lake.
        #[arg(long)]
        parquet: Option<PathBuf>,
        /// Print each query's EXPLAIN ANALYZE (the plan with rows and time per operator)
        /// instead of timing it; with `--runs N` above 1, after N - 1 warm passes.
        #[arg(long)]
        explain: bool,
    },
}

fn parse_statement_timeout(text: &str) -> Result<Duration, String> {
    match pondra_cluster::parse_timeout(text) {
        Ok(Some(timeout)) => Ok(timeout),
        Ok(None) => Err("a statement timeout must be more than 0".into()),
        Err(e) => Err(e.to_string()),
    }
}

fn parse_cache_size(text: &str) -> Result<u64, String> {
    match pondra_cluster::parse_memory_size(text) {
        Ok(size) if size > 0 => Ok(size as u64),
        Ok(_) => Err("a cache size must be more than 0".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// The cache of a process whose lake (or folder of lakes) is in a bucket; none for a folder.
fn object_cache(
    lake: &str,
    folder: Option<PathBuf>,
    size: Option<u64>,
) -> Result<Option<Arc<pondra_cluster::ObjectCache>>, String> {
    if !pondra_cluster::Location::is_remote(lake) {
        return Ok(None);
    }
    let folder = folder.unwrap_or_else(|| match std::env::var_os("XDG_CACHE_HOME") {
        Some(cache) => PathBuf::from(cache).join("pondra"),
        None => match std::env::var_os("HOME") {
            Some(home) => PathBuf::from(home).join(".cache").join("pondra"),
            None => std::env::temp_dir().join("pondra-cache"),
        },
    });
    let size = size.unwrap_or_else(|| pondra_cluster::default_cache_capacity(&folder));
    pondra_cluster::ObjectCache::new(folder, size)
        .map(|cache| Some(Arc::new(cache)))
        .map_err(|e| format!("cannot make the object cache: {e}"))
}

fn parse_memory_limit(text: &str) -> Result<usize, String> {
    pondra_cluster::parse_memory_size(text).map_err(|e| e.to_string())
}

/// Parses the command line and runs what it asks; the `pondra` binary is this function.
pub fn run_cli() -> ExitCode {
    let cli = Cli::parse();
    // Statements are planned on the runtime's threads and run on its blocking threads: their
    // stacks must hold the deepest statement the parser lets through.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(pondra_cluster::STATEMENT_STACK_BYTES)
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("Error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let memory_limit = cli
        .memory_limit
        .unwrap_or_else(pondra_cluster::default_memory_limit);
    let serving = match &cli.command {
        Some(Command::Serve {
            lakes: Some(root), ..
        }) => root.as_str(),
        _ => cli.dir.as_str(),
    };
    let cache = match object_cache(serving, cli.cache_dir.clone(), cli.cache_size) {
        Ok(cache) => cache,
        Err(e) => {
            eprintln!("Error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let options = NodeOptions {
        tier_after: Duration::from_secs(cli.tier_secs),
        retain: Duration::from_secs(cli.retain_secs),
        database: None,
        memory: pondra_cluster::MemoryPool::new(memory_limit),
        cache,
    };
    if let Some(Command::Serve {
        lakes,
        host,
        http_port,
        pg_port,
        flight_port,
        kafka_port,
        kafka_auto_create,
        advertise,
        advertise_flight,
        read_only,
        spread,
        token_read,
        token_write,
        token_admin,
        tokens_file,
        statement_timeout,
    }) = cli.command
    {
        let mut tokens = serve::auth::Tokens::new(token_read, token_write, token_admin);
        if let Some(file) = tokens_file
            && let Err(e) = tokens.add_file(&file)
        {
            eprintln!("Error: {e}");
            return ExitCode::FAILURE;
        }
        let options = serve::ServeOptions {
            dir: cli.dir,
            lakes,
            host,
            http_port,
            pg_port,
            flight_port,
            kafka: kafka_port.map(|port| serve::KafkaOptions {
                port,
                auto_create: kafka_auto_create,
            }),
            advertise,
            advertise_flight,
            read_only,
            spread,
            tokens,
            node: options,
            statement_timeout,
        };
        let served = runtime.block_on(serve::serve(options));
        // Every statement was stopped at the signal; whatever still holds a thread after this
        // is not waited for.
        runtime.shutdown_timeout(Duration::from_secs(5));
        return match served {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("Error: {e}");
                ExitCode::FAILURE
            }
        };
    }
    runtime.block_on(async move {
        let started = std::time::Instant::now();
        let trace = std::env::var_os("PONDRA_TRACE").is_some();
        let in_memory = matches!(
            &cli.command,
            Some(Command::Tpch {
                command: TpchCommand::Run {
                    parquet: Some(_),
                    ..
                }
            })
        );
        let opened = if in_memory {
            Node::open_in_memory(options)
                .await
                .map_err(|e| e.to_string())
        } else if matches!(cli.command, Some(Command::Sql { .. })) {
            open_for_statements(&cli.dir, options).await
        } else {
            Node::open_at(&cli.dir, options)
                .await
                .map_err(|e| e.to_string())
        };
        let node = match opened {
            Ok(node) => node,
            Err(e) => {
                eprintln!("Error: cannot open the lake at {}: {e}", cli.dir);
                return ExitCode::FAILURE;
            }
        };
        if trace {
            eprintln!("trace: opened in {:?}", started.elapsed());
        }
        let code = match cli.command {
            None => {
                let period = Duration::from_secs(cli.tier_secs.clamp(1, 10));
                let background = node.spawn_background(period);
                let code = shell::run(&node).await;
                background.abort();
                code
            }
            Some(Command::Sql { format, sql }) => run_sql(&node, &sql, format).await,
            Some(Command::Serve { .. }) => unreachable!("served above"),
            Some(Command::Tpch { command }) => run_tpch(&node, command).await,
            Some(Command::Nexmark { command }) => run_nexmark(&node, command).await,
        };
        if trace {
            eprintln!("trace: ran in {:?}", started.elapsed());
        }
        let closed = node.close().await;
        if trace {
            eprintln!("trace: closed in {:?}", started.elapsed());
        }
        if let Err(e) = closed {
            eprintln!("Error: closing the lake: {e}");
            return ExitCode::FAILURE;
        }
        code
    })
}

/// The node of a `pondra sql` process: it follows the lake's leader when one lives, preparing
/// its writes and handing their commits to it; else it leads for its own commits (ADR 0053).
async fn open_for_statements(dir: &str, options: NodeOptions) -> Result<Arc<Node>, String> {
    let lake = pondra_cluster::Lake::open(dir, options.cache.clone())
        .await
        .map_err(|e| e.to_string())?;
    let opened = match follow::live_leader(&lake).await? {
        Some((term, addr)) => {
            let leader = follow::HttpLeader::new(&addr, std::env::var("PONDRA_TOKEN").ok())?;
            Node::open_following(lake, options, Some(leader), term).await
        }
        None => Node::open(lake, options).await,
    };
    opened.map_err(|e| e.to_string())
}

async fn run_nexmark(node: &Arc<Node>, command: NexmarkCommand) -> ExitCode {
    let started = std::time::Instant::now();
    let terminal = std::io::stderr().is_terminal();
    let show = |counts: pondra_nexmark::Counts| {
        if terminal {
            let elapsed = started.elapsed().as_secs_f64();
            eprint!("\r{} events ({elapsed:.1} s)", counts.total());
        }
    };
    let result = match command {
        NexmarkCommand::Gen {
            events,
            batch,
            parquet: Some(dir),
        } => pondra_nexmark::write_parquet(&dir, events, batch).map(|c| (c, started)),
        NexmarkCommand::Gen { events, batch, .. } => {
            let generated = pondra_nexmark::generate(node, events, batch, show).await;
            generated.map(|c| (c, started))
        }
        NexmarkCommand::Replay { from, sql } => replay_nexmark(node, &from, sql, show).await,
    };
    if terminal {
        eprintln!();
    }
    match result {
        Ok((counts, since)) => {
            let elapsed = since.elapsed().as_secs_f64();
            println!(
                "{} persons, {} auctions, {} bids in {elapsed:.2} s: {:.0} events/s",
                counts.persons,
                counts.auctions,
                counts.bids,
                counts.total() as f64 / elapsed.max(1e-9)
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("Error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Makes the tables, runs `sql`, loads the events, then appends them: the time counts from
/// the first append.
async fn replay_nexmark(
    node: &Arc<Node>,
    from: &std::path::Path,
    sql: Option<PathBuf>,
    progress: impl FnMut(pondra_nexmark::Counts),
) -> Result<(pondra_nexmark::Counts, std::time::Instant), pondra_cluster::NodeError> {
    pondra_nexmark::generate(node, 0, 1, |_| {}).await?;
    if let Some(path) = sql {
        let text = std::fs::read_to_string(&path).map_err(|e| {
            pondra_cluster::NodeError::Other(format!("cannot read {}: {e}", path.display()))
        })?;
        node.execute(&text).await?;
    }
    let commits = pondra_nexmark::read_parquet(from)?;
    let started = std::time::Instant::now();
    let counts = pondra_nexmark::replay(node, &commits, progress).await?;
    Ok((counts, started))
}

async fn run_tpch(node: &Arc<Node>, command: TpchCommand) -> ExitCode {
    match command {
        TpchCommand::Gen { sf } => {
            let started = std::time::Instant::now();
            let terminal = std::io::stderr().is_terminal();
            let result = pondra_tpch::generate(node, sf, |progress| {
                let elapsed = started.elapsed().as_secs_f64();
                let table = progress.table;
                if progress.done {
                    // The bar's line ends with the table's final count.
                    let end = if terminal { "\r\x1b[2K" } else { "" };
                    eprintln!("{end}{table:>10}: {} rows ({elapsed:.1} s)", progress.rows);
                } else if terminal {
                    let expected = pondra_tpch::expected_rows(table, sf);
                    let done = (progress.rows as f64 / expected as f64).min(1.0);
                    let filled = (done * 30.0) as usize;
                    eprint!(
                        "\r{table:>10}: [{}{}] {:>3.0}% {} rows ({elapsed:.1} s)",
                        "#".repeat(filled),
                        " ".repeat(30 - filled),
                        done * 100.0,
                        progress.rows
                    );
                }
            })
            .await;
            match result {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("Error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        TpchCommand::Run {
            queries,
            runs,
            parquet,
            explain,
        } => {
            if let Some(dir) = parquet {
                for table in pondra_tpch::TABLES {
                    let path = dir.join(format!("{table}.parquet"));
                    if let Err(e) = node.register_parquet(table, &path.to_string_lossy()) {
                        eprintln!("Error: {e}");
                        return ExitCode::FAILURE;
                    }
                }
            }
            let queries = if queries.is_empty() {
                (1..=22).collect()
            } else {
                queries
            };
            if explain {
                for n in queries {
                    if runs > 1
                        && let Err(e) = pondra_tpch::run_queries(node, &[n], runs - 1).await
                    {
                        eprintln!("Error: q{n}: {e}");
                        return ExitCode::FAILURE;
                    }
                    match pondra_tpch::explain_query(node, n).await {
                        Ok(plan) if !print_line(format_args!("q{n}\n{plan}")) => {
                            return ExitCode::FAILURE;
                        }
                        Ok(_) => {}
                        Err(e) => {
                            eprintln!("Error: q{n}: {e}");
                            return ExitCode::FAILURE;
                        }
                    }
                }
                return ExitCode::SUCCESS;
            }
            let mut total = 0.0;
            for n in queries {
                match pondra_tpch::run_queries(node, &[n], runs.max(1)).await {
                    Ok(timings) => {
                        let seconds = timings[0].best.as_secs_f64();
                        total += seconds;
                        if !print_line(format_args!("q{n}\t{seconds:.3}")) {
                            return ExitCode::FAILURE;
                        }
                    }
                    Err(e) => {
                        eprintln!("Error: q{n}: {e}");
                        return ExitCode::FAILURE;
                    }
                }
            }
            match print_line(format_args!("total\t{total:.3}")) {
                true => ExitCode::SUCCESS,
                false => ExitCode::FAILURE,
            }
        }
    }
}

/// `pondra sql`: every statement in turn; the first error ends the run with a failure.
async fn run_sql(node: &Arc<Node>, sql: &str, format: Format) -> ExitCode {
    let statements = match pondra_cluster::parse_sql(sql) {
        Ok(statements) => statements,
        Err(e) => {
            eprintln!("Error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let session = pondra_cluster::Session::new(None);
    for statement in statements {
        match node.execute_in(&session, statement).await {
            Ok(result) => {
                if let Err(e) = output::print_result(&result, format) {
                    eprintln!("Error: {e}");
                    return ExitCode::FAILURE;
                }
            }
            Err(e) => {
                eprintln!("Error: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

/// Writes one line to stdout. False when it cannot, as when the reader of a pipe has gone
/// (`pondra tpch run | head -1`): the command then stops without a panic.
fn print_line(line: std::fmt::Arguments<'_>) -> bool {
    use std::io::Write;
    writeln!(std::io::stdout(), "{line}").is_ok()
}

fn parse_spread(text: &str) -> Result<pondra_cluster::SpreadMode, String> {
    pondra_cluster::SpreadMode::parse(text)
        .ok_or_else(|| format!("'{text}' is not auto, always or never"))
}
