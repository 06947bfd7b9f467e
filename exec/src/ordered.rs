//! Morsels' rows on their way, in morsel order, to a sink that takes rows one batch at a time
//! (collected rows, a sort, a join's build side) from workers running a pipeline in parallel.
//!
//! The worker whose morsel is next hands its rows to the sink as it makes them. The others
//! hold theirs, within the memory limit; a worker the pool refuses waits for its morsel's
//! turn instead of holding more, so one morsel that makes many rows (a cross join's) streams
//! through instead of piling up.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use arrow::array::RecordBatch;

use crate::memory::{MemoryPool, Reservation};
use crate::sink::{BatchSink, Sink};
use crate::{ExecError, Result};

/// How often a waiting worker looks whether the statement was stopped or another worker
/// failed.
const WAIT_CHECK: Duration = Duration::from_millis(20);

/// The sink and the morsels' turns, shared by the workers.
pub struct OrderedDelivery<'s, 'p> {
    state: Mutex<State<'s, 'p>>,
    turn: Condvar,
    memory: Arc<MemoryPool>,
    /// Set when a worker failed: the morsel whose turn it is may never finish.
    failed: &'s AtomicBool,
}

struct State<'s, 'p> {
    /// The first morsel whose rows the sink has not all had.
    next: usize,
    /// Rows of finished later morsels, with what they hold, waiting for their turn.
    ready: Vec<Option<(Vec<RecordBatch>, Reservation)>>,
    sink: &'s mut Sink<'p>,
}

impl<'s, 'p> OrderedDelivery<'s, 'p> {
    pub fn new(
        sink: &'s mut Sink<'p>,
        morsels: usize,
        memory: Arc<MemoryPool>,
        failed: &'s AtomicBool,
    ) -> OrderedDelivery<'s, 'p> {
        OrderedDelivery {
            state: Mutex::new(State {
                next: 0,
                ready: (0..morsels).map(|_| None).collect(),
                sink,
            }),
            turn: Condvar::new(),
            memory,
            failed,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<'s, 'p>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The output of one worker for `morsel`.
    pub fn output(&self, morsel: usize) -> OrderedOutput<'_, 's, 'p> {
        OrderedOutput {
            delivery: self,
            morsel,
            held: Vec::new(),
            reservation: self.memory.reservation(),
        }
    }
}

/// One worker's rows of one morsel.
pub struct OrderedOutput<'d, 's, 'p> {
    delivery: &'d OrderedDelivery<'s, 'p>,
    morsel: usize,
    /// Rows made before the morsel's turn.
    held: Vec<RecordBatch>,
    reservation: Reservation,
}

impl OrderedOutput<'_, '_, '_> {
    /// The morsel's rows are all made: delivered now if it is its turn (with those of the
    /// finished morsels after it), or left for their turn.
    pub fn finish(mut self) -> Result<()> {
        let delivery = self.delivery;
        let mut state = delivery.lock();
        if state.next != self.morsel {
            let held = std::mem::take(&mut self.held);
            let reservation =
                std::mem::replace(&mut self.reservation, delivery.memory.reservation());
            state.ready[self.morsel] = Some((held, reservation));
            return Ok(());
        }
        for batch in self.held.drain(..) {
            state.sink.sink(batch)?;
        }
        state.next += 1;
        loop {
            let next = state.next;
            let Some(Some((rows, _reservation))) = state.ready.get_mut(next).map(Option::take)
            else {
                break;
            };
            for batch in rows {
                state.sink.sink(batch)?;
            }
            state.next += 1;
        }
        delivery.turn.notify_all();
        Ok(())
    }
}

/// Waits until it is `morsel`'s turn; an error if the statement stops or another worker fails
/// meanwhile.
fn wait_for_turn<'g, 's, 'p>(
    delivery: &'g OrderedDelivery<'s, 'p>,
    morsel: usize,
    mut state: MutexGuard<'g, State<'s, 'p>>,
) -> Result<MutexGuard<'g, State<'s, 'p>>> {
    while state.next != morsel {
        if delivery.failed.load(Ordering::Relaxed) {
            return Err(ExecError::Execution(ANOTHER_WORKER_FAILED.into()));
        }
        crate::control::check_current()?;
        state = delivery
            .turn
            .wait_timeout(state, WAIT_CHECK)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    Ok(state)
}

/// The error a waiting worker stops with when another failed; the other's error is the one
/// reported.
pub const ANOTHER_WORKER_FAILED: &str = "another worker of the pipeline failed";

impl BatchSink for OrderedOutput<'_, '_, '_> {
    fn sink(&mut self, batch: RecordBatch) -> Result<()> {
        let delivery = self.delivery;
        let state = delivery.lock();
        if state.next != self.morsel
            && self
                .reservation
                .try_grow(crate::memory::batch_bytes(&batch))
        {
            self.held.push(batch);
            return Ok(());
        }
        let mut state = wait_for_turn(delivery, self.morsel, state)?;
        for held in self.held.drain(..) {
            state.sink.sink(held)?;
        }
        self.reservation.free();
        state.sink.sink(batch)
    }
}
