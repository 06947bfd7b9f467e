//! A seeded simulation of the task clock (ADR 0081) through failovers: leaders that die, some
//! between running a tick and committing it, some that come back and commit late; nodes whose
//! view of the task lags the catalog. Each leader follows the clock's own rules (`due` on its
//! view, then a commit that claims the tick); the catalog applies the claim check. Every run
//! must end with each committed tick on the schedule, claimed once, its effect there once,
//! and no more than one tick for a span no leader ran.

use super::schedule::Schedule;
use crate::test_support::Random;

const SECOND: i64 = 1_000_000;

/// The catalog's side: the last tick claimed, and every tick committed with its effect.
#[derive(Default)]
struct Catalog {
    last_tick: i64,
    /// Each committed tick's scheduled time, in commit order.
    committed: Vec<i64>,
    /// The effects the committed ticks' statements left: one row each.
    rows: usize,
}

impl Catalog {
    /// A tick's statement and claim, in one commit: refused when the tick is not after the
    /// last one claimed.
    fn commit(&mut self, scheduled: i64) -> bool {
        if self.last_tick >= scheduled {
            return false;
        }
        self.last_tick = scheduled;
        self.committed.push(scheduled);
        self.rows += 1;
        true
    }
}

/// A tick run but not committed yet, by a leader that may have lost the lead since.
struct Pending {
    scheduled: i64,
}

fn simulate(seed: u64, steps: usize) {
    let mut random = Random(seed);
    let period = (1 + random.below(5) as i64) * SECOND;
    let schedule = Schedule::Every { period };
    let created = 0;
    let mut catalog = Catalog {
        last_tick: created,
        ..Catalog::default()
    };
    let mut now = created;
    // What the leader's snapshot says the last tick was; it may lag the catalog.
    let mut seen = created;
    let mut late: Vec<Pending> = Vec::new();
    let mut led_spans: Vec<(i64, i64)> = Vec::new();
    let mut span_start = now;
    for _ in 0..steps {
        now += random.below(600) as i64 * 1000;
        if random.chance(3) {
            // The leader dies; the next one leads after a while, its snapshot maybe behind.
            led_spans.push((span_start, now));
            now += random.below(5 * period as u64) as i64;
            span_start = now;
            seen = match random.chance(50) {
                true => catalog.last_tick,
                false => catalog.last_tick - random.below(3) as i64 * period,
            };
        }
        // A dead leader's tick, run before it died, commits late (a forwarded commit).
        if !late.is_empty() && random.chance(20) {
            let pending = late.remove(0);
            catalog.commit(pending.scheduled);
        }
        let Some(scheduled) = schedule.due(seen, now) else {
            continue;
        };
        assert_eq!(
            scheduled % period,
            0,
            "seed {seed}: a tick off the schedule"
        );
        assert!(scheduled <= now, "seed {seed}: a tick from the future");
        match random.below(10) {
            // Killed between running the tick and committing it: nothing committed.
            0 => {}
            // Committed much later by a leader that lost the lead meanwhile.
            1 => late.push(Pending { scheduled }),
            _ => {
                catalog.commit(scheduled);
            }
        }
        // The leader's snapshot follows its commit, or the catalog, as the stream catches up.
        seen = catalog.last_tick;
    }
    check(seed, &catalog, &led_spans, period);
}

fn check(seed: u64, catalog: &Catalog, led_spans: &[(i64, i64)], period: i64) {
    // Claimed once: the committed ticks only ever move forward, so none is there twice.
    for pair in catalog.committed.windows(2) {
        assert!(
            pair[0] < pair[1],
            "seed {seed}: tick {} committed after {}",
            pair[1],
            pair[0]
        );
    }
    assert_eq!(
        catalog.rows,
        catalog.committed.len(),
        "seed {seed}: effects and ticks differ"
    );
    // A span without a leader costs one tick at most: no two committed ticks fall in a gap
    // between two spans of leadership, since the next leader runs only the latest due.
    for window in led_spans.windows(2) {
        let (gap_from, gap_to) = (window[0].1, window[1].0);
        let inside = catalog
            .committed
            .iter()
            .filter(|&&t| t > gap_from + period && t < gap_to - period)
            .count();
        assert_eq!(inside, 0, "seed {seed}: ticks ran for a span no leader ran");
    }
}

#[test]
fn every_tick_commits_once_through_failovers() {
    for seed in [1, 7, 20261206] {
        simulate(seed, 20_000);
    }
}

/// The long run, with a seed of its own: `cargo test -p pondra-cluster --release
/// tasks::simulation::long -- --ignored --nocapture`.
#[test]
#[ignore]
fn long() {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    println!("task clock simulation, seed {seed}");
    for offset in 0..200 {
        simulate(seed.wrapping_add(offset), 100_000);
    }
}
