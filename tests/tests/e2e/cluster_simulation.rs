//! A deterministic simulation of the cluster's election, lease and commit protocol (ADR 0053),
//! in the manner of TigerBeetle's VOPR: seeded schedules of nodes that beat, follow, contend,
//! commit and retry, on a fake clock, against a model of the lake whose PUTs fail, are lost
//! (applied, but answered with an error) or land late, with nodes paused, killed and
//! restarted. The nodes decide with the product's own `Lease`; the model holds what the lake
//! does: terms created only if absent, beats, SlateDB's fencing of every writer but the last to
//! open, and a catalog that drops a (producer, seq) it has committed already.
//!
//! After every step: no two nodes lead one term, and a node leads only a term it created; no
//! acknowledged commit is missing from the durable history; no (producer, seq) is in it twice.
//! At the end, with faults stopped, a leader emerges and every writer's commit is acknowledged.
//!
//! CI runs `SEEDS_IN_CI` schedules; `cargo test --release -p pondra-tests --test
//! cluster_simulation -- --ignored` runs 10,000 (`PONDRA_SIM_SEEDS`, `PONDRA_SIM_FIRST_SEED`).
//! A failure names its seed; `PONDRA_SIM_FIRST_SEED=S PONDRA_SIM_SEEDS=1` replays it.

use std::collections::{BTreeMap, HashMap, HashSet};

use pondra_cluster::{BEAT_EVERY, Beat, LAPSE, Lease, Step};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const NODES: usize = 4;
const WRITERS: usize = 3;
/// Simulated milliseconds of faults, then of calm in which the cluster must recover.
const STORM_MS: u64 = 60_000;
const CALM_MS: u64 = 20_000;
const SEEDS_IN_CI: u64 = 1_000;

/// What the store does with one PUT.
#[derive(Clone, Copy, Debug)]
enum Fate {
    Done,
    /// Not applied; answered with an error.
    Failed,
    /// Applied; answered with an error.
    Lost,
    /// Applied this many milliseconds later, then answered.
    Late(u64),
}

/// A PUT the store applies later.
#[derive(Debug)]
enum Put {
    Beat(Beat),
    /// A term created only if absent, by a node contending for it.
    Term {
        term: u64,
        node: usize,
    },
}

/// The lake as the protocol sees it.
#[derive(Default)]
struct Lake {
    /// Each term and the node that created it.
    terms: BTreeMap<u64, usize>,
    beats: HashMap<u64, Beat>,
    /// SlateDB's fencing: each opening of the catalog's writer gets the next epoch, and only
    /// the writer of the latest epoch can commit.
    epoch: u64,
    /// The durable history of commits, each a (producer, seq).
    history: Vec<(usize, u64)>,
    last_seq: HashMap<usize, u64>,
    late: Vec<(u64, Put)>,
}

impl Lake {
    fn highest_term(&self) -> u64 {
        self.terms.keys().next_back().copied().unwrap_or(0)
    }

    fn apply(&mut self, put: Put) -> bool {
        match put {
            Put::Beat(beat) => {
                self.beats.insert(beat.term, beat);
                true
            }
            Put::Term { term, node } => match self.terms.contains_key(&term) {
                true => false,
                false => {
                    self.terms.insert(term, node);
                    true
                }
            },
        }
    }

    /// Commits (producer, seq) once; a retry of one committed is answered as committed.
    fn commit(&mut self, producer: usize, seq: u64) {
        let last = self.last_seq.entry(producer).or_default();
        if seq > *last {
            *last = seq;
            self.history.push((producer, seq));
        }
    }
}

struct Node {
    addr: String,
    alive: bool,
    paused_until: u64,
    /// This node's monotonic clock runs this far ahead of the simulation's.
    clock_offset: u64,
    lease: Lease,
    /// The epoch of the catalog writer this node opened, while it leads.
    writer: Option<u64>,
    beats: u64,
    next_beat: u64,
    /// The term this node will contend for, and when (after its jitter).
    contend: Option<(u64, u64)>,
}

impl Node {
    fn now(&self, time: u64) -> u64 {
        time + self.clock_offset
    }

    fn runs(&self, time: u64) -> bool {
        self.alive && self.paused_until <= time
    }
}

struct Writer {
    seq: u64,
    acknowledged: Vec<u64>,
}

struct Simulation {
    rng: StdRng,
    time: u64,
    lake: Lake,
    nodes: Vec<Node>,
    writers: Vec<Writer>,
    faults: bool,
    seed: u64,
    /// What `check` has checked: the history's entries, and each writer's acknowledgements.
    seen: std::cell::RefCell<HashSet<(usize, u64)>>,
    checked: std::cell::Cell<(usize, [usize; WRITERS])>,
}

impl Simulation {
    fn new(seed: u64) -> Simulation {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut lake = Lake::default();
        // The first node leads term 1, as the first server started on a lake does.
        lake.terms.insert(1, 0);
        lake.epoch = 1;
        let nodes = (0..NODES)
            .map(|i| {
                let offset = rng.random_range(0..1_000_000);
                let addr = format!("node-{i}");
                let lease = match i {
                    0 => Lease::leading(1, &addr, offset),
                    _ => Lease::following(1, Some("node-0"), i == NODES - 1, offset),
                };
                Node {
                    addr,
                    alive: true,
                    paused_until: 0,
                    clock_offset: offset,
                    lease,
                    writer: (i == 0).then_some(1),
                    beats: 0,
                    next_beat: 0,
                    contend: None,
                }
            })
            .collect();
        let writers = (0..WRITERS)
            .map(|_| Writer {
                seq: 1,
                acknowledged: Vec::new(),
            })
            .collect();
        Simulation {
            rng,
            time: 0,
            lake,
            nodes,
            writers,
            faults: true,
            seed,
            seen: Default::default(),
            checked: std::cell::Cell::new((0, [0; WRITERS])),
        }
    }

    fn fate(&mut self) -> Fate {
        if !self.faults {
            return Fate::Done;
        }
        match self.rng.random_range(0..100) {
            0..5 => Fate::Failed,
            5..9 => Fate::Lost,
            9..15 => Fate::Late(self.rng.random_range(50..3_000)),
            _ => Fate::Done,
        }
    }

    /// A PUT: whether the node learns it succeeded (and whether the store applied it is the
    /// store's business).
    fn put(&mut self, put: Put) -> bool {
        match self.fate() {
            Fate::Done => self.lake.apply(put),
            Fate::Failed => false,
            Fate::Lost => {
                self.lake.apply(put);
                false
            }
            Fate::Late(delay) => {
                // The node waits for the answer no longer than the step: it learns nothing.
                self.lake.late.push((self.time + delay, put));
                false
            }
        }
    }

    fn step(&mut self) {
        self.time += self.rng.random_range(1..40);
        let due: Vec<Put> = {
            let time = self.time;
            let (due, later) = std::mem::take(&mut self.lake.late)
                .into_iter()
                .partition(|(at, _)| *at <= time);
            self.lake.late = later;
            due.into_iter().map(|(_, put)| put).collect()
        };
        for put in due {
            self.lake.apply(put);
        }
        match self.rng.random_range(0..100) {
            0..55 => {
                let node = self.rng.random_range(0..NODES);
                if self.nodes[node].runs(self.time) {
                    self.act(node);
                }
            }
            55..90 => {
                let writer = self.rng.random_range(0..WRITERS);
                let node = self.rng.random_range(0..NODES);
                self.send(writer, node);
            }
            90..100 if self.faults => self.fault(),
            _ => {}
        }
        self.check();
    }

    fn fault(&mut self) {
        let node = self.rng.random_range(0..NODES);
        match self.rng.random_range(0..3) {
            0 if self.nodes.iter().filter(|n| n.alive).count() > 1 => {
                self.nodes[node].alive = false;
            }
            1 if !self.nodes[node].alive => self.restart(node),
            2 => {
                let pause = self.rng.random_range(100..6_000);
                self.nodes[node].paused_until = self.time + pause;
            }
            _ => {}
        }
    }

    /// A killed node starts again: it follows the highest term, whose leader its beat names.
    fn restart(&mut self, node: usize) {
        let term = self.lake.highest_term();
        let now = self.nodes[node].now(self.time);
        let n = &mut self.nodes[node];
        n.alive = true;
        n.paused_until = 0;
        n.lease = Lease::following(term, None, node == NODES - 1, now);
        n.writer = None;
        n.contend = None;
    }

    fn act(&mut self, node: usize) {
        let now = self.nodes[node].now(self.time);
        if self.nodes[node].lease.leads() {
            self.lead(node, now);
        } else {
            self.follow(node, now);
        }
    }

    fn lead(&mut self, node: usize, now: u64) {
        if now >= self.nodes[node].next_beat {
            let n = &mut self.nodes[node];
            n.beats += 1;
            n.next_beat = now + BEAT_EVERY.as_millis() as u64;
            let beat = Beat {
                term: n.lease.term(),
                addr: n.addr.clone(),
                count: n.beats,
                ended: false,
            };
            self.put(Put::Beat(beat));
        }
        let highest = self.lake.highest_term();
        let n = &mut self.nodes[node];
        if let Step::StepDown { .. } = n.lease.saw_highest_term(highest, now) {
            n.writer = None;
        }
    }

    fn follow(&mut self, node: usize, now: u64) {
        if let Some((term, at)) = self.nodes[node].contend {
            if now >= at {
                self.nodes[node].contend = None;
                self.contend(node, term, now);
            }
            return;
        }
        // The leader's stream: answered when the leader runs, leads a term not before this
        // node's, and the network carries it.
        let leader = self.nodes[node].lease.leader().map(String::from);
        let answered = leader.is_some_and(|addr| {
            let l = self.nodes.iter().find(|n| n.addr == addr).expect("a node");
            l.runs(self.time)
                && l.lease.leads()
                && l.lease.term() >= self.nodes[node].lease.term()
                && self.rng.random_range(0..100) >= 10
        });
        if answered {
            self.nodes[node].lease.heard(now);
            return;
        }
        let highest = self.lake.highest_term();
        let beat = self.lake.beats.get(&highest).cloned();
        match self.nodes[node].lease.saw_beat(highest, beat.as_ref(), now) {
            Step::Contend { term } => {
                let unit: f64 = self.rng.random();
                let jitter = Lease::jitter(unit).as_millis() as u64;
                self.nodes[node].contend = Some((term, now + jitter));
            }
            Step::Stay | Step::Follow { .. } => {}
            Step::StepDown { .. } => unreachable!("a follower does not step down"),
        }
    }

    fn contend(&mut self, node: usize, term: u64, now: u64) {
        let highest = self.lake.highest_term();
        if !self.nodes[node].lease.may_take(term, highest) {
            self.nodes[node].lease.lost(now);
            return;
        }
        let won = self.put(Put::Term { term, node });
        let n = &mut self.nodes[node];
        if !won {
            // Lost to another, or the answer was: either way another term comes.
            n.lease.lost(now);
            return;
        }
        // Opening the catalog's writer fences every earlier one.
        self.lake.epoch += 1;
        n.writer = Some(self.lake.epoch);
        let addr = n.addr.clone();
        n.lease.won(term, &addr, now);
        n.beats = 0;
        n.next_beat = now;
    }

    /// A writer sends its next commit to `node`, which commits it when it leads, or hands it
    /// to the leader it knows; any failure leaves the writer to retry, the same (producer,
    /// seq), on whichever node it picks next.
    fn send(&mut self, writer: usize, node: usize) {
        if !self.nodes[node].runs(self.time) {
            return;
        }
        let leader = match self.nodes[node].lease.leads() {
            true => node,
            false => {
                let Some(addr) = self.nodes[node].lease.leader() else {
                    return;
                };
                let addr = addr.to_string();
                self.nodes
                    .iter()
                    .position(|n| n.addr == addr)
                    .expect("a node")
            }
        };
        let l = &self.nodes[leader];
        // A fenced writer's commit fails: only the writer of the latest epoch commits.
        if !l.runs(self.time) || !l.lease.leads() || l.writer != Some(self.lake.epoch) {
            return;
        }
        if self.faults && self.rng.random_range(0..100) < 5 {
            // The catalog write fails.
            return;
        }
        let seq = self.writers[writer].seq;
        self.lake.commit(writer, seq);
        if self.faults && self.rng.random_range(0..100) < 10 {
            // Committed, but the answer is lost: the writer retries the same seq.
            return;
        }
        self.writers[writer].acknowledged.push(seq);
        self.writers[writer].seq += 1;
    }

    /// The state of every node and of the lake, for a failure's message.
    fn describe(&self) -> String {
        let mut lines: Vec<String> = self
            .nodes
            .iter()
            .map(|n| {
                format!(
                    "{}: alive {} paused until {} writer {:?} contend {:?} {:?}",
                    n.addr, n.alive, n.paused_until, n.writer, n.contend, n.lease
                )
            })
            .collect();
        lines.push(format!(
            "lake: terms {:?}, epoch {}, beat of the highest {:?}",
            self.lake.terms,
            self.lake.epoch,
            self.lake.beats.get(&self.lake.highest_term())
        ));
        lines.join("\n")
    }

    fn check(&self) {
        let seed = self.seed;
        let mut led = HashMap::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if !n.alive || !n.lease.leads() {
                continue;
            }
            let term = n.lease.term();
            if let Some(other) = led.insert(term, i) {
                panic!("seed {seed}: nodes {other} and {i} both lead term {term}");
            }
            assert_eq!(
                self.lake.terms.get(&term),
                Some(&i),
                "seed {seed}: node {i} leads term {term}, which it did not create"
            );
        }
        // The history only grows: each step checks what it added, and what writers were told.
        let mut seen = self.seen.borrow_mut();
        let mut checked = self.checked.get();
        for entry in &self.lake.history[checked.0..] {
            assert!(
                seen.insert(*entry),
                "seed {seed}: {entry:?} committed twice"
            );
        }
        checked.0 = self.lake.history.len();
        for (writer, w) in self.writers.iter().enumerate() {
            for seq in &w.acknowledged[checked.1[writer]..] {
                assert!(
                    seen.contains(&(writer, *seq)),
                    "seed {seed}: writer {writer}'s acknowledged commit {seq} is lost"
                );
            }
            checked.1[writer] = w.acknowledged.len();
        }
        self.checked.set(checked);
    }

    /// Faults stop and every node runs: within the calm, a leader that can commit emerges and
    /// every writer gets its pending commit acknowledged.
    fn calm(&mut self) {
        self.faults = false;
        for node in 0..NODES {
            if !self.nodes[node].alive {
                self.restart(node);
            }
            self.nodes[node].paused_until = 0;
        }
        let before: Vec<u64> = self.writers.iter().map(|w| w.seq).collect();
        let end = self.time + CALM_MS;
        while self.time < end {
            self.step();
        }
        let leaders: Vec<_> = (0..NODES)
            .filter(|&i| {
                self.nodes[i].lease.leads() && self.nodes[i].writer == Some(self.lake.epoch)
            })
            .collect();
        assert_eq!(
            leaders.len(),
            1,
            "seed {}: {} nodes lead with a writer that can commit after {CALM_MS} ms of calm\n{}",
            self.seed,
            leaders.len(),
            self.describe()
        );
        for (writer, w) in self.writers.iter().enumerate() {
            assert!(
                w.seq > before[writer],
                "seed {}: writer {writer} got nothing acknowledged in the calm",
                self.seed
            );
        }
    }
}

fn run(seed: u64) -> (usize, u64) {
    let mut simulation = Simulation::new(seed);
    while simulation.time < STORM_MS {
        simulation.step();
    }
    simulation.calm();
    (
        simulation.lake.history.len(),
        simulation.lake.highest_term(),
    )
}

fn run_seeds(default_seeds: u64) {
    let setting = |name: &str| std::env::var(name).ok().and_then(|s| s.parse::<u64>().ok());
    let first = setting("PONDRA_SIM_FIRST_SEED").unwrap_or(0);
    let seeds = setting("PONDRA_SIM_SEEDS").unwrap_or(default_seeds);
    let (mut commits, mut terms) = (0, 0);
    for seed in first..first + seeds {
        let (c, t) = run(seed);
        commits += c;
        terms += t;
    }
    eprintln!("{seeds} schedules: {commits} commits, {terms} terms in all");
    // The schedules must exercise the protocol: many commits, and many changes of leader.
    assert!(commits as u64 > seeds * 50, "{commits} commits");
    assert!(terms > seeds * 3, "{terms} terms");
}

#[test]
fn seeded_schedules_keep_every_invariant() {
    run_seeds(SEEDS_IN_CI);
}

#[test]
#[ignore]
fn ten_thousand_seeded_schedules_keep_every_invariant() {
    run_seeds(10_000);
}

#[test]
fn a_lapsed_lease_makes_a_follower_contend_and_a_later_term_a_leader_step_down() {
    let beat = |term, count, ended| Beat {
        term,
        addr: "a".into(),
        count,
        ended,
    };
    let mut follower = Lease::following(1, Some("a"), false, 0);
    assert_eq!(
        follower.saw_beat(1, Some(&beat(1, 1, false)), 100),
        Step::Stay
    );
    assert_eq!(
        follower.saw_beat(1, Some(&beat(1, 2, false)), 1_900),
        Step::Stay
    );
    // The beat moved at 1,900: the lease runs from then.
    assert_eq!(
        follower.saw_beat(1, Some(&beat(1, 2, false)), 3_800),
        Step::Stay
    );
    let lapse = LAPSE.as_millis() as u64;
    assert_eq!(
        follower.saw_beat(1, Some(&beat(1, 2, false)), 1_900 + lapse),
        Step::Contend { term: 2 }
    );
    // An ended term is contended at once; a read-only node never contends.
    let mut other = Lease::following(1, Some("a"), false, 0);
    assert_eq!(
        other.saw_beat(1, Some(&beat(1, 1, true)), 10),
        Step::Contend { term: 2 }
    );
    let mut reader = Lease::following(1, Some("a"), true, 0);
    assert_eq!(
        reader.saw_beat(1, Some(&beat(1, 1, true)), 99_999),
        Step::Stay
    );
    // A later term with no beat lapses like any other: its winner may never beat.
    let mut waiting = Lease::following(1, Some("a"), false, 0);
    assert_eq!(waiting.saw_beat(4, None, 500), Step::Stay);
    assert_eq!(waiting.saw_beat(4, None, 500 + lapse - 1), Step::Stay);
    assert_eq!(
        waiting.saw_beat(4, None, 500 + lapse),
        Step::Contend { term: 5 }
    );
    // A later term taken meanwhile is another's win.
    assert!(follower.may_take(2, 1));
    assert!(!follower.may_take(2, 2));
    let mut leader = Lease::leading(2, "b", 0);
    assert_eq!(leader.saw_highest_term(2, 10), Step::Stay);
    assert_eq!(leader.saw_highest_term(3, 20), Step::StepDown { term: 3 });
    assert!(!leader.leads());
    // A leader whose writer was fenced within its own term follows that term.
    let mut twin = Lease::leading(5, "d", 0);
    assert_eq!(twin.fenced(5, 40), Step::StepDown { term: 5 });
    assert_eq!(twin.leader(), None);
    let mut beat3 = beat(3, 1, false);
    beat3.addr = "c".into();
    assert_eq!(
        leader.saw_beat(3, Some(&beat3), 30),
        Step::Follow {
            term: 3,
            addr: "c".into()
        }
    );
}
