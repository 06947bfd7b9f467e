//! The Exchange operator (ADR 0076): inside a spread plan's fragment, its input's rows go to
//! the part their keys hash to, and each part reads the rows every part sent it, in sending
//! part order. The executor partitions the rows and keeps the mailboxes parts deliver to; an
//! `Exchanger` (the cluster's) carries a part's rows to the others.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch, UInt32Array};
use arrow::compute::{cast, take_record_batch};
use arrow::datatypes::{DataType, Int64Type};
use pondra_planner::{Expr, PhysicalPlan};

use crate::gather::GatheredParts;
use crate::memory::MemoryPool;
use crate::pipeline::{ExecContext, collect, run_pipeline};
use crate::{ExecError, Result};

/// Carries a part's rows to the other parts of its round and brings back theirs.
pub trait Exchanger: Send + Sync {
    /// Sends `partitions[p]` to part `p` (this part's own share included) for exchange `id`,
    /// then waits for the rows every part sent this one: them, in sending part order.
    fn exchange(
        &self,
        id: usize,
        partitions: Vec<Vec<RecordBatch>>,
        ctx: &ExecContext,
    ) -> Result<GatheredParts>;

    /// This part failed: the parts waiting for its rows stop waiting.
    fn abandon(&self);
}

/// A part whose rows have not come after this long stops its exchange: a node that sends
/// nothing for so long is gone or cut off, and its coordinator runs the round again.
pub const EXCHANGE_STALL: Duration = Duration::from_secs(60);

/// How often a waiting part looks at its statement's stop and at the round's.
const WAIT_TICK: Duration = Duration::from_millis(20);

/// What every error of an exchange itself (not of the statement) starts with.
const EXCHANGE_FAILED: &str = "exchange failed: ";

/// An error of an exchange itself: a delivery that failed, a round stopped or stalled.
pub fn exchange_failure(message: String) -> ExecError {
    ExecError::Execution(format!("{EXCHANGE_FAILED}{message}"))
}

/// Whether `error` is an exchange's own (`exchange_failure`) rather than the statement's.
pub fn is_exchange_failure(error: &ExecError) -> bool {
    matches!(error, ExecError::Execution(message) if message.starts_with(EXCHANGE_FAILED))
}

/// The rows of an Exchange node: its input partitioned by the keys and exchanged.
pub(crate) fn exchanged(
    input: &PhysicalPlan,
    keys: &[Expr],
    parts: usize,
    id: usize,
    ctx: &ExecContext,
) -> Result<GatheredParts> {
    let Some(exchanger) = &ctx.exchanger else {
        return Err(ExecError::Execution(
            "an exchange ran outside a spread plan's part".into(),
        ));
    };
    let rows = run_pipeline(input, collect(ctx), None, ctx)?;
    let partitions = partition(&rows, keys, parts)?;
    exchanger.exchange(id, partitions, ctx)
}

/// `rows` split into `parts` by the hash of `keys`, each part's batches in the order of the
/// rows they came from.
pub fn partition(
    rows: &[RecordBatch],
    keys: &[Expr],
    parts: usize,
) -> Result<Vec<Vec<RecordBatch>>> {
    assert!(parts >= 1, "an exchange has parts");
    let mut partitions: Vec<Vec<RecordBatch>> = (0..parts).map(|_| Vec::new()).collect();
    for batch in rows.iter().filter(|b| b.num_rows() > 0) {
        let columns = keys
            .iter()
            .map(|key| crate::expr::evaluate(key, batch).and_then(plain))
            .collect::<Result<Vec<ArrayRef>>>()?;
        let mut rows_of: Vec<Vec<u32>> = vec![Vec::new(); parts];
        for (row, part) in destinations(&columns, parts)?.into_iter().enumerate() {
            rows_of[part].push(row as u32);
        }
        for (part, rows) in rows_of.into_iter().enumerate() {
            if rows.is_empty() {
                continue;
            }
            let taken = match rows.len() == batch.num_rows() {
                true => batch.clone(),
                false => take_record_batch(batch, &UInt32Array::from(rows))?,
            };
            partitions[part].push(taken);
        }
    }
    Ok(partitions)
}

/// The part each row of `columns` goes to: its keys' hash modulo `parts`. Integer keys (of
/// any width) hash by multiplying, as every node does; other keys by their stable hash.
fn destinations(columns: &[ArrayRef], parts: usize) -> Result<Vec<usize>> {
    let rows = columns.first().map_or(0, |c| c.len());
    let integers = columns.iter().all(|c| c.data_type().is_integer());
    let hashes: Vec<u64> = match integers {
        true => {
            let mut hashes = vec![0x243F_6A88_85A3_08D3u64; rows];
            for column in columns {
                let values = cast(column, &DataType::Int64)?;
                let values = values.as_primitive::<Int64Type>();
                for (row, hash) in hashes.iter_mut().enumerate() {
                    // NULL keys match nothing: any part does, the same on every node.
                    let value = match values.is_null(row) {
                        true => 0x5851_F42D_4C95_7F2D,
                        false => values.value(row) as u64,
                    };
                    *hash = (*hash ^ value).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                    *hash ^= *hash >> 29;
                }
            }
            hashes
        }
        false => crate::key_hash::key_hashes(columns)?
            .values()
            .iter()
            .map(|h| *h as u64)
            .collect(),
    };
    Ok(hashes
        .into_iter()
        .map(|h| (h % parts as u64) as usize)
        .collect())
}

/// A key column with its values unpacked from a dictionary: equal keys hash alike whichever
/// way a scan handed them on.
fn plain(column: ArrayRef) -> Result<ArrayRef> {
    match column.data_type() {
        DataType::Dictionary(_, values) => Ok(cast(&column, values)?),
        _ => Ok(column),
    }
}

/// Which part of which exchange of which round a mailbox is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MailboxKey {
    pub round: u64,
    pub exchange: usize,
    pub to: usize,
}

/// The rows parts delivered to this node's parts, until each reads them: kept in memory
/// while the node's pool grants them, else spilled (`GatheredParts`).
pub struct Mailboxes {
    state: Mutex<MailboxState>,
    arrived: Condvar,
    memory: Arc<MemoryPool>,
}

#[derive(Default)]
struct MailboxState {
    boxes: HashMap<MailboxKey, Mailbox>,
    /// Rounds stopped (a part failed, the query ended): when, to forget them after a while.
    stopped: HashMap<u64, Instant>,
}

struct Mailbox {
    rows: GatheredParts,
    from: HashSet<usize>,
    created: Instant,
}

/// A stopped round is remembered this long, so that late deliveries to it are dropped; a
/// mailbox nobody read is dropped after it too.
const FORGET_AFTER: Duration = Duration::from_secs(600);

impl Mailboxes {
    pub fn new(memory: Arc<MemoryPool>) -> Mailboxes {
        Mailboxes {
            state: Mutex::default(),
            arrived: Condvar::new(),
            memory,
        }
    }

    fn lock(&self) -> MutexGuard<'_, MailboxState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps the rows part `from` sent to `key`'s part, of `parts`. A second delivery from
    /// the same part is dropped; so are deliveries to a stopped round.
    pub fn deliver(
        &self,
        key: MailboxKey,
        from: usize,
        parts: usize,
        rows: Vec<RecordBatch>,
    ) -> Result<()> {
        if from >= parts || key.to >= parts {
            return Err(ExecError::Execution(format!(
                "a delivery from part {from} to part {} of {parts} parts",
                key.to
            )));
        }
        let mut state = self.lock();
        forget_old(&mut state);
        if state.stopped.contains_key(&key.round) {
            return Ok(());
        }
        let memory = &self.memory;
        let mailbox = state.boxes.entry(key).or_insert_with(|| Mailbox {
            rows: GatheredParts::new(parts, memory),
            from: HashSet::new(),
            created: Instant::now(),
        });
        if mailbox.from.insert(from) {
            mailbox.rows.put(from, rows)?;
        }
        self.arrived.notify_all();
        Ok(())
    }

    /// The rows every one of `parts` parts delivered to `key`, once all have. Fails when the
    /// round is stopped, the statement is, or no part delivered for `stall`.
    pub fn wait_all(
        &self,
        key: MailboxKey,
        parts: usize,
        ctx: &ExecContext,
        stall: Duration,
    ) -> Result<GatheredParts> {
        let mut state = self.lock();
        let mut delivered = 0;
        let mut last_progress = Instant::now();
        loop {
            if state.stopped.contains_key(&key.round) {
                return Err(exchange_failure("another part of the query failed".into()));
            }
            let have = state.boxes.get(&key).map_or(0, |m| m.from.len());
            if have == parts {
                let mailbox = state.boxes.remove(&key).expect("a full mailbox");
                return Ok(mailbox.rows);
            }
            if have > delivered {
                delivered = have;
                last_progress = Instant::now();
            }
            if last_progress.elapsed() > stall {
                return Err(exchange_failure(format!(
                    "{have} of {parts} parts delivered in {} s",
                    stall.as_secs()
                )));
            }
            drop(state);
            ctx.control.check()?;
            state = self.lock();
            state = self
                .arrived
                .wait_timeout(state, WAIT_TICK)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Stops `round`: its parts waiting fail, its rows are dropped, later deliveries too.
    pub fn stop_round(&self, round: u64) {
        let mut state = self.lock();
        state.boxes.retain(|key, _| key.round != round);
        state.stopped.insert(round, Instant::now());
        self.arrived.notify_all();
    }
}

fn forget_old(state: &mut MailboxState) {
    state
        .stopped
        .retain(|_, when| when.elapsed() < FORGET_AFTER);
    state
        .boxes
        .retain(|_, mailbox| mailbox.created.elapsed() < FORGET_AFTER);
}

/// Runs `parts` of `fragment` here at once, each on a thread of its own with the exchanger
/// `exchanger_of` gives it (parts that exchange wait for each other, so they cannot run in
/// turn): each part's rows or its error. A part that fails abandons its exchanges.
pub fn run_parts_at_once(
    fragment: &PhysicalPlan,
    parts: &[usize],
    ctx: &ExecContext,
    exchanger_of: &(dyn Fn(usize) -> Arc<dyn Exchanger> + Sync),
) -> Vec<(usize, Result<Vec<RecordBatch>>)> {
    std::thread::scope(|scope| {
        let running: Vec<_> = parts
            .iter()
            .map(|&part| {
                let exchanger = exchanger_of(part);
                let abandon = exchanger.clone();
                let thread = std::thread::Builder::new()
                    .name(format!("part {part}"))
                    .stack_size(crate::control::STATEMENT_STACK_BYTES)
                    .spawn_scoped(scope, move || {
                        let mut part_ctx = ctx.for_part();
                        part_ctx.exchanger = Some(exchanger.clone());
                        let _entered = ctx.control.enter();
                        let rows = crate::gather::run_part(fragment, part, &part_ctx);
                        if rows.is_err() {
                            exchanger.abandon();
                        }
                        rows
                    });
                if thread.is_err() {
                    abandon.abandon();
                }
                (part, thread)
            })
            .collect();
        running
            .into_iter()
            .map(|(part, thread)| {
                let rows = match thread {
                    Ok(thread) => thread.join().unwrap_or_else(|_| {
                        Err(ExecError::Execution(format!("part {part} panicked")))
                    }),
                    Err(e) => Err(ExecError::Execution(format!(
                        "cannot start a thread for part {part}: {e}"
                    ))),
                };
                (part, rows)
            })
            .collect()
    })
}
