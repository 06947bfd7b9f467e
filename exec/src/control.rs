//! What can stop a running statement, and what it may allocate.
//!
//! Every statement runs under a [`StatementControl`]: a flag that a cancel request, a timeout,
//! a client that went away or the server's shutdown sets, and the memory pool its large
//! allocations are checked against. Operators call [`StatementControl::check`] at least once
//! per batch or morsel, so a stopped statement ends within one batch's work. The thread doing a
//! statement's work [`enter`](StatementControl::enter)s its control, so that code far from the
//! pipeline (a string function about to allocate gigabytes) can reach it through
//! [`check_allocation`].

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use crate::memory::MemoryPool;
use crate::{ExecError, Result};

/// Why a statement was stopped before it finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The client asked (a Postgres cancel request, a Flight cancel).
    Cancelled,
    /// The statement ran past its `statement_timeout`.
    Timeout,
    /// The client that sent the statement disconnected.
    ClientGone,
    /// The server is shutting down.
    Shutdown,
}

impl StopReason {
    /// The message a client sees, in Postgres's words where it has them.
    pub fn message(self) -> &'static str {
        match self {
            StopReason::Cancelled => "canceling statement due to user request",
            StopReason::Timeout => "canceling statement due to statement timeout",
            StopReason::ClientGone => "canceling statement: the client disconnected",
            StopReason::Shutdown => "canceling statement: the server is shutting down",
        }
    }

    fn code(self) -> u8 {
        match self {
            StopReason::Cancelled => 1,
            StopReason::Timeout => 2,
            StopReason::ClientGone => 3,
            StopReason::Shutdown => 4,
        }
    }

    fn from_code(code: u8) -> Option<StopReason> {
        Some(match code {
            1 => StopReason::Cancelled,
            2 => StopReason::Timeout,
            3 => StopReason::ClientGone,
            4 => StopReason::Shutdown,
            _ => return None,
        })
    }
}

/// The stack of every thread that plans or runs statements: the deepest plan the parser lets
/// through (`pondra_parser::MAX_DEPTH`) must fit, with room to spare, in the debug builds too.
pub const STATEMENT_STACK_BYTES: usize = 64 << 20;

/// Gives rayon's global pool, on which pipelines run, stacks of `STATEMENT_STACK_BYTES`. Only
/// the first call before the pool's first use has effect.
pub fn size_thread_pool() {
    static SIZED: std::sync::Once = std::sync::Once::new();
    SIZED.call_once(|| {
        let _ = rayon::ThreadPoolBuilder::new()
            .stack_size(STATEMENT_STACK_BYTES)
            .build_global();
    });
}

/// How many threads the process's statements run on.
pub fn process_threads() -> usize {
    size_thread_pool();
    rayon::current_num_threads()
}

/// A pool of `threads` threads, made once per size: sizes are below the global pool's, so
/// there are few.
fn pool_of(threads: usize) -> Arc<rayon::ThreadPool> {
    static POOLS: Mutex<Vec<Option<Arc<rayon::ThreadPool>>>> = Mutex::new(Vec::new());
    let mut pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    if pools.len() <= threads {
        pools.resize(threads + 1, None);
    }
    pools[threads]
        .get_or_insert_with(|| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .stack_size(STATEMENT_STACK_BYTES)
                .thread_name(move |i| format!("pondra-{threads}-{i}"))
                .build()
                .expect("a thread pool of a size below the global pool's");
            Arc::new(pool)
        })
        .clone()
}

/// Allocations below this size are not checked against the pool: checking costs more than
/// they can hurt.
const CHECKED_ALLOCATION: usize = 1 << 20;

/// The stop flag, deadline and memory pool of one running statement.
#[derive(Debug)]
pub struct StatementControl {
    /// 0 while running, else the [`StopReason`]'s code. The first reason set stays.
    stopped: AtomicU8,
    deadline: Option<Instant>,
    memory: Arc<MemoryPool>,
    /// The most threads its pipelines run on (`SET threads`); `None` for the whole pool.
    threads: Option<usize>,
    /// The morsels its scans have to read and have read so far: its progress, as a shell
    /// shows it (later pipelines add theirs as they start).
    morsels_total: AtomicU64,
    morsels_read: AtomicU64,
    /// How its `ai_embed` and `ai_complete` calls reach a model (ADR 0082); given by the node
    /// that runs it, once.
    models: std::sync::OnceLock<Arc<crate::models::StatementModels>>,
    /// How many candidates a vector index search weighs (`SET hnsw.ef_search`, ADR 0082);
    /// unset for the default.
    ef_search: std::sync::OnceLock<usize>,
}

/// Every statement running in the process, for stopping them all at shutdown.
static RUNNING: Mutex<Vec<Weak<StatementControl>>> = Mutex::new(Vec::new());

/// Set once the process is shutting down: statements that start after it start stopped.
static SHUTTING_DOWN: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// The statement the current thread works for, if any.
    static CURRENT: RefCell<Option<Arc<StatementControl>>> = const { RefCell::new(None) };
}

impl StatementControl {
    /// The control of a statement starting now, stopped after `timeout` if one is given.
    pub fn start(memory: Arc<MemoryPool>, timeout: Option<Duration>) -> Arc<StatementControl> {
        StatementControl::start_on(memory, timeout, None)
    }

    /// As [`start`](Self::start), for a statement whose pipelines run on at most `threads`
    /// threads.
    pub fn start_on(
        memory: Arc<MemoryPool>,
        timeout: Option<Duration>,
        threads: Option<usize>,
    ) -> Arc<StatementControl> {
        assert!(
            threads != Some(0),
            "a statement runs on at least one thread"
        );
        let stopped = match SHUTTING_DOWN.load(Ordering::Relaxed) {
            true => StopReason::Shutdown.code(),
            false => 0,
        };
        let control = Arc::new(StatementControl {
            stopped: AtomicU8::new(stopped),
            deadline: timeout.map(|t| Instant::now() + t),
            memory,
            threads,
            morsels_total: AtomicU64::new(0),
            morsels_read: AtomicU64::new(0),
            models: std::sync::OnceLock::new(),
            ef_search: std::sync::OnceLock::new(),
        });
        let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        running.retain(|c| c.strong_count() > 0);
        running.push(Arc::downgrade(&control));
        control
    }

    /// A control that nothing stops, over `memory`: for work that is not a client's statement.
    pub fn unbounded(memory: Arc<MemoryPool>) -> Arc<StatementControl> {
        StatementControl::start(memory, None)
    }

    pub fn memory(&self) -> &Arc<MemoryPool> {
        &self.memory
    }

    /// Gives the statement its way to the models (ADR 0082); a second one is ignored.
    pub fn give_models(&self, models: Arc<crate::models::StatementModels>) {
        let _ = self.models.set(models);
    }

    /// The statement's way to the models, if its node gave one.
    pub fn models(&self) -> Option<&Arc<crate::models::StatementModels>> {
        self.models.get()
    }

    /// Sets how many candidates the statement's vector index searches weigh; a second
    /// setting is ignored.
    pub fn set_ef_search(&self, ef_search: usize) {
        assert!(ef_search > 0, "a search weighs at least one candidate");
        let _ = self.ef_search.set(ef_search);
    }

    /// How many candidates the statement's vector index searches weigh, if its session set it.
    pub fn ef_search(&self) -> Option<usize> {
        self.ef_search.get().copied()
    }

    /// A scan starts: `morsels` more to read.
    pub fn add_morsels(&self, morsels: usize) {
        self.morsels_total
            .fetch_add(morsels as u64, Ordering::Relaxed);
    }

    /// A scan read one of its morsels.
    pub fn morsel_read(&self) {
        self.morsels_read.fetch_add(1, Ordering::Relaxed);
    }

    /// The morsels read and to read so far; `None` before any scan starts.
    pub fn progress(&self) -> Option<(u64, u64)> {
        let total = self.morsels_total.load(Ordering::Relaxed);
        let read = self.morsels_read.load(Ordering::Relaxed).min(total);
        (total > 0).then_some((read, total))
    }

    /// Runs `work` for this statement on a pool of its `threads` when it asked for fewer than
    /// the process's pool has, so that every parallel part of it (pipelines, sorts, window
    /// partitions) uses at most that many.
    pub fn within_threads<T: Send>(self: &Arc<Self>, work: impl FnOnce() -> T + Send) -> T {
        size_thread_pool();
        match self.threads.filter(|&n| n < rayon::current_num_threads()) {
            Some(threads) => pool_of(threads).install(|| {
                let _entered = self.enter();
                work()
            }),
            None => work(),
        }
    }

    /// Stops the statement at its next check. The first reason given is the one reported.
    pub fn stop(&self, reason: StopReason) {
        let _ =
            self.stopped
                .compare_exchange(0, reason.code(), Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Why the statement was stopped, if it was (a passed deadline counts).
    pub fn stopped(&self) -> Option<StopReason> {
        if let Some(reason) = StopReason::from_code(self.stopped.load(Ordering::Relaxed)) {
            return Some(reason);
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            self.stop(StopReason::Timeout);
            return self.stopped();
        }
        None
    }

    /// An error if the statement must stop: operators call this once per batch or morsel.
    pub fn check(&self) -> Result<()> {
        match self.stopped() {
            Some(reason) => Err(ExecError::Stopped(reason)),
            None => Ok(()),
        }
    }

    /// An error unless `bytes` more fit within the memory limit now.
    pub fn check_allocation(&self, bytes: usize) -> Result<()> {
        if bytes < CHECKED_ALLOCATION {
            return Ok(());
        }
        let mut reservation = self.memory.reservation();
        if reservation.try_grow_unspillable(bytes) {
            return Ok(());
        }
        Err(ExecError::OutOfMemory {
            limit: self.memory.limit(),
        })
    }

    /// Makes this the statement the current thread works for, until the guard is dropped.
    pub fn enter(self: &Arc<Self>) -> Entered {
        let previous = CURRENT.with(|current| current.replace(Some(self.clone())));
        Entered { previous }
    }
}

/// While alive, the current thread works for a statement (`StatementControl::enter`).
pub struct Entered {
    previous: Option<Arc<StatementControl>>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT.with(|current| *current.borrow_mut() = previous);
    }
}

/// The statement the current thread works for.
pub fn current() -> Option<Arc<StatementControl>> {
    CURRENT.with(|current| current.borrow().clone())
}

/// An error if the statement the current thread works for must stop.
pub fn check_current() -> Result<()> {
    CURRENT.with(|current| match current.borrow().as_ref() {
        Some(control) => control.check(),
        None => Ok(()),
    })
}

/// An error unless an allocation of `bytes` fits within the memory limit of the statement the
/// current thread works for. Call it before allocating what grows with a value the user chose
/// (`repeat('x', n)`, `generate_series(1, n)`) rather than with the input's size.
pub fn check_allocation(bytes: usize) -> Result<()> {
    CURRENT.with(|current| match current.borrow().as_ref() {
        Some(control) => control.check_allocation(bytes),
        None => Ok(()),
    })
}

/// How many statements are running in the process now.
pub fn running() -> usize {
    let running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    running.iter().filter(|c| c.strong_count() > 0).count()
}

/// Stops every running statement of the process, and every one that starts from now on: for
/// shutting down. Returns how many were running.
pub fn shut_down() -> usize {
    SHUTTING_DOWN.store(true, Ordering::Relaxed);
    let running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    let mut stopped = 0;
    for control in running.iter().filter_map(Weak::upgrade) {
        control.stop(StopReason::Shutdown);
        stopped += 1;
    }
    stopped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_runs_on_the_threads_it_asked_for() {
        let all = process_threads();
        let pool = MemoryPool::new(1 << 30);
        let one = StatementControl::start_on(pool.clone(), None, Some(1));
        let inside = one.within_threads(|| {
            // The work is the statement's on the pool's thread too.
            let current = CURRENT.with(|c| c.borrow().clone());
            (rayon::current_num_threads(), current.is_some())
        });
        assert_eq!(inside.0, 1);
        assert!(
            inside.1 || all == 1,
            "a pool's thread works for the statement"
        );
        let many = StatementControl::start_on(pool, None, Some(all + 8));
        assert_eq!(many.within_threads(rayon::current_num_threads), all);
    }

    #[test]
    fn the_first_reason_stays_and_a_deadline_stops() {
        let pool = MemoryPool::new(1 << 30);
        let control = StatementControl::start(pool.clone(), None);
        assert!(control.check().is_ok());
        control.stop(StopReason::Cancelled);
        control.stop(StopReason::Shutdown);
        assert_eq!(control.stopped(), Some(StopReason::Cancelled));
        let timed = StatementControl::start(pool, Some(Duration::ZERO));
        assert_eq!(timed.stopped(), Some(StopReason::Timeout));
        assert!(matches!(
            timed.check(),
            Err(ExecError::Stopped(StopReason::Timeout))
        ));
    }

    #[test]
    fn allocations_past_the_hard_limit_are_refused_and_nothing_stays_reserved() {
        let pool = MemoryPool::new(1 << 30);
        let control = StatementControl::start(pool.clone(), None);
        let _entered = control.enter();
        assert!(check_allocation(1 << 30).is_ok());
        assert!(check_allocation((1 << 30) + (200 << 20)).is_ok());
        assert!(matches!(
            check_allocation(2_000_000_000),
            Err(ExecError::OutOfMemory { .. })
        ));
        assert_eq!(pool.used(), 0);
    }
}
