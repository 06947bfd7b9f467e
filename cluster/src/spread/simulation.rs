//! A seeded simulation of a Gather's parts (ADR 0076), as the cluster simulation drives the
//! lease: nodes that die mid-step, connections that drop, asks that time out, each decided by
//! the seed; the coordinator follows `PartSteps`. Every run must end with every part's rows,
//! gathered in part order, or with the statement's own error; never with some parts missing.

use std::collections::BTreeMap;

use super::steps::{PartSteps, RoundSteps, Runner};
use crate::test_support::Random;

/// What one run of the simulated query gave.
#[derive(Debug, PartialEq)]
enum Outcome {
    Rows(Vec<u64>),
    Error,
}

/// The rows part `part` gives, wherever it runs.
fn rows_of(part: usize) -> Vec<u64> {
    (0..3).map(|i| part as u64 * 100 + i).collect()
}

/// One simulated query over `parts` parts, with faults drawn from `random`; `poisoned` makes
/// one part raise the statement's own error wherever it runs.
fn run(
    random: &mut Random,
    parts: usize,
    poisoned: Option<usize>,
) -> (Outcome, BTreeMap<usize, u32>) {
    let mut steps = PartSteps::new(parts);
    // When each other node dies, in ticks from the start; some never do.
    let deaths: Vec<Option<u64>> = (1..parts)
        .map(|_| random.chance(30).then(|| random.below(20)))
        .collect();
    // The asks in flight: (the tick it answers, part, peer).
    let mut in_flight: Vec<(u64, usize, usize)> = Vec::new();
    let mut asks: BTreeMap<usize, u32> = BTreeMap::new();
    let mut gathered: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
    let mut now = 0;
    let mut ask = |part: usize, peer: usize, now: u64, random: &mut Random, flight: &mut Vec<_>| {
        *asks.entry(part).or_default() += 1;
        flight.push((now + 1 + random.below(10), part, peer));
    };
    for (part, runner) in steps.first_runs() {
        if let Runner::Peer(peer) = runner {
            ask(part, peer, now, random, &mut in_flight);
        }
    }
    // The coordinator's own part first, as the real Gather runs it.
    if poisoned == Some(0) {
        return (Outcome::Error, asks);
    }
    gathered.insert(0, rows_of(0));
    steps.succeeded(0);
    while !steps.finished() {
        now += 1;
        assert!(now < 1_000, "the gather ends");
        let (due, waiting): (Vec<_>, Vec<_>) = in_flight.into_iter().partition(|a| a.0 <= now);
        in_flight = waiting;
        for (_, part, peer) in due {
            let dead = deaths[peer].is_some_and(|death| death <= now);
            let dropped = random.chance(10);
            let failed = dead || dropped || poisoned == Some(part);
            if !failed {
                gathered.insert(part, rows_of(part));
                steps.succeeded(part);
                continue;
            }
            match steps.failed(part) {
                Runner::Peer(peer) => ask(part, peer, now, random, &mut in_flight),
                Runner::Here => {
                    if poisoned == Some(part) {
                        return (Outcome::Error, asks);
                    }
                    gathered.insert(part, rows_of(part));
                    steps.succeeded(part);
                }
            }
        }
    }
    assert_eq!(gathered.len(), parts, "every part gathered once");
    let rows = gathered.into_values().flatten().collect();
    (Outcome::Rows(rows), asks)
}

/// A query's parts, 2 to 8, and the part that raises the statement's own error, if one does.
fn draw_query(random: &mut Random) -> (usize, Option<usize>) {
    let parts = 2 + random.below(7) as usize;
    let poisoned = random
        .chance(10)
        .then(|| random.below(parts as u64) as usize);
    (parts, poisoned)
}

/// A query ends with every part's rows in part order, or with the statement's own error.
fn check_outcome(seed: u64, outcome: Outcome, parts: usize, poisoned: Option<usize>) {
    match poisoned {
        Some(_) => assert_eq!(outcome, Outcome::Error, "seed {seed}"),
        None => {
            let expected: Vec<u64> = (0..parts).flat_map(rows_of).collect();
            assert_eq!(outcome, Outcome::Rows(expected), "seed {seed}");
        }
    }
}

fn simulate(seed: u64, runs: usize) {
    let mut random = Random(seed);
    for _ in 0..runs {
        let (parts, poisoned) = draw_query(&mut random);
        let (outcome, asks) = run(&mut random, parts, poisoned);
        check_outcome(seed, outcome, parts, poisoned);
        // A part is asked of another node at most twice before the coordinator runs it.
        assert!(asks.values().all(|&n| n <= 2), "seed {seed}: {asks:?}");
    }
}

#[test]
fn gathers_every_part_in_order_through_deaths_and_drops() {
    for seed in [1, 7, 20261206] {
        simulate(seed, 2_000);
    }
}

/// One simulated query whose parts exchange rows, round after round as `RoundSteps` says:
/// every part of a round runs at once and sends to every other, so a node that dies during
/// the round, a dropped delivery or a part that fails stops the whole round. A round's rows
/// count only when every part gave them. The rounds it took, and its outcome.
fn run_rounds(random: &mut Random, parts: usize, poisoned: Option<usize>) -> (Outcome, u32) {
    let mut steps = RoundSteps::new(parts);
    // The tick each other node dies at, counted in rounds; some never do.
    let deaths: Vec<Option<u64>> = (1..parts)
        .map(|_| random.chance(30).then(|| random.below(4)))
        .collect();
    let mut round = 0;
    loop {
        round += 1;
        assert!(round <= 4, "a query takes at most four rounds");
        let mut gave_rows = vec![false; parts];
        // The parts answer in an order of the seed's; the first failure stops the round.
        let mut order: Vec<usize> = (0..parts).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, random.below(i as u64 + 1) as usize);
        }
        let mut failed = false;
        for part in order {
            let fails = match steps.runners()[part] {
                Runner::Here => poisoned == Some(part),
                Runner::Peer(peer) => {
                    let dead = deaths[peer].is_some_and(|death| death < round as u64);
                    dead || random.chance(10) || poisoned == Some(part)
                }
            };
            if fails {
                failed = true;
                break;
            }
            gave_rows[part] = true;
        }
        if !failed {
            let rows = (0..parts).flat_map(rows_of).collect();
            return (Outcome::Rows(rows), round);
        }
        // A part here that fails raises the statement's own error; a failure on another node
        // (the node's, or the statement's there) runs the round again.
        let here_poisoned = poisoned.is_some_and(|p| steps.runners()[p] == Runner::Here);
        if here_poisoned || !steps.failed(&gave_rows) {
            return (Outcome::Error, round);
        }
    }
}

fn simulate_rounds(seed: u64, runs: usize) {
    let mut random = Random(seed);
    for _ in 0..runs {
        let (parts, poisoned) = draw_query(&mut random);
        let (outcome, rounds) = run_rounds(&mut random, parts, poisoned);
        check_outcome(seed, outcome, parts, poisoned);
        assert!(rounds <= 4, "seed {seed}: {rounds} rounds");
    }
}

#[test]
fn exchanging_parts_give_every_part_in_order_or_the_statements_error() {
    for seed in [1, 7, 20261206] {
        simulate_rounds(seed, 2_000);
    }
}

/// The long run: `cargo test -p pondra-cluster spread_simulation_long -- --ignored --nocapture`.
#[test]
#[ignore]
fn spread_simulation_long() {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1);
    println!("seed {seed}");
    simulate(seed, 1_000_000);
    simulate_rounds(seed, 1_000_000);
}
