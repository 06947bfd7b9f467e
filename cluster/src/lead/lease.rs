//! The election and the lease as decisions apart from their IO (ADR 0053): what a node does
//! given what it has seen of the lake's terms and beats and of its leader's answers, by its own
//! monotonic clock. `pondra serve` acts on these decisions; the cluster simulation runs the same
//! decisions against a store with injected faults.

use std::time::Duration;

use crate::lead::leader::{Beat, LAPSE};

/// A node's view of who leads its lake.
#[derive(Clone, Debug)]
pub struct Lease {
    read_only: bool,
    /// The term this node leads, or whose leader it follows.
    term: u64,
    leading: bool,
    /// The leader's address; none while this node does not know it.
    leader: Option<String>,
    /// When the leader last showed it lives (an answer, or a beat that moved), in milliseconds
    /// of this node's monotonic clock.
    heard_ms: u64,
    /// The (term, count) of the beat last read, to tell a beat that moves from one that stands
    /// still.
    beat: Option<(u64, u64)>,
}

/// What a node does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Nothing changes.
    Stay,
    /// Follow the leader of `term` at `addr`.
    Follow { term: u64, addr: String },
    /// The lease lapsed, or its leader ended: contend for term `term`.
    Contend { term: u64 },
    /// A later term replaced the one this node leads: follow it.
    StepDown { term: u64 },
}

impl Lease {
    /// A node that leads `term` (it won it) at `addr`.
    pub fn leading(term: u64, addr: &str, now_ms: u64) -> Lease {
        Lease {
            read_only: false,
            term,
            leading: true,
            leader: Some(addr.to_string()),
            heard_ms: now_ms,
            beat: None,
        }
    }

    /// A node that follows the leader of `term` (at `leader`, when known); a read-only one never
    /// contends.
    pub fn following(term: u64, leader: Option<&str>, read_only: bool, now_ms: u64) -> Lease {
        Lease {
            read_only,
            term,
            leading: false,
            leader: leader.map(String::from),
            heard_ms: now_ms,
            beat: None,
        }
    }

    pub fn term(&self) -> u64 {
        self.term
    }

    pub fn leads(&self) -> bool {
        self.leading
    }

    pub fn leader(&self) -> Option<&str> {
        self.leader.as_deref()
    }

    /// The leader answered (its stream, or its word that it is opening the catalog).
    pub fn heard(&mut self, now_ms: u64) {
        self.heard_ms = self.heard_ms.max(now_ms);
    }

    /// A leader read the highest term taken: a later one replaces it.
    pub fn saw_highest_term(&mut self, highest: u64, now_ms: u64) -> Step {
        if !self.leading || highest <= self.term {
            return Step::Stay;
        }
        *self = Lease::following(highest, None, self.read_only, now_ms);
        Step::StepDown { term: highest }
    }

    /// A leader found its catalog writer fenced: another process opened the catalog (a store
    /// whose create-if-absent does not lock per key can let two processes win one term). It
    /// follows the highest term.
    pub fn fenced(&mut self, highest: u64, now_ms: u64) -> Step {
        assert!(self.leading, "only a leader is fenced");
        let term = highest.max(self.term);
        *self = Lease::following(term, None, self.read_only, now_ms);
        Step::StepDown { term }
    }

    /// A follower read the highest term taken and its beat (none before its leader's first):
    /// a later term's leader is followed; a beat that moved counts as the leader heard; a
    /// lapsed lease or an ended term makes a node that may lead contend for the next term. A
    /// later term without a beat is followed with its leader unknown, so that a term whose
    /// winner never beats (it died, or never learned it won) lapses like any other.
    pub fn saw_beat(&mut self, highest: u64, beat: Option<&Beat>, now_ms: u64) -> Step {
        assert!(!self.leading, "a leader reads the terms, not the beats");
        assert!(
            beat.is_none_or(|b| b.term == highest),
            "the beat read is the highest term's"
        );
        if beat.is_none() && highest > self.term {
            self.term = highest;
            self.leader = None;
            self.heard_ms = now_ms;
            self.beat = None;
            return Step::Stay;
        }
        let mut ended = false;
        if let Some(beat) = beat {
            let unknown = self.leader.is_none();
            if !beat.ended && (beat.term > self.term || (beat.term == self.term && unknown)) {
                self.term = beat.term;
                self.leader = Some(beat.addr.clone());
                self.heard_ms = now_ms;
                self.beat = Some((beat.term, beat.count));
                return Step::Follow {
                    term: beat.term,
                    addr: beat.addr.clone(),
                };
            }
            if beat.term == self.term && self.beat != Some((beat.term, beat.count)) {
                if self.beat.is_some() {
                    self.heard(now_ms);
                }
                self.beat = Some((beat.term, beat.count));
            }
            ended = beat.term >= self.term && beat.ended;
        }
        let lapsed = now_ms.saturating_sub(self.heard_ms) >= LAPSE.as_millis() as u64;
        match !self.read_only && (ended || lapsed) {
            true => Step::Contend {
                term: self.term + 1,
            },
            false => Step::Stay,
        }
    }

    /// Whether term `term`, which this node meant to contend for, is still free given the
    /// highest term taken: a later term taken meanwhile is another node's win.
    pub fn may_take(&self, term: u64, highest: u64) -> bool {
        term == self.term + 1 && highest < term
    }

    /// This node took term `term` and opened the catalog's writer: it leads.
    pub fn won(&mut self, term: u64, addr: &str, now_ms: u64) {
        assert!(term > self.term, "a node wins only a later term");
        *self = Lease::leading(term, addr, now_ms);
    }

    /// Another node took the term this one contended for: its beat will name it.
    pub fn lost(&mut self, now_ms: u64) {
        self.heard(now_ms);
    }

    /// How long after a lapse a node waits before contending, for a random `unit` in [0, 1):
    /// so that followers do not all contend at once.
    pub fn jitter(unit: f64) -> Duration {
        Duration::from_millis((unit.clamp(0.0, 1.0) * JITTER_MS as f64) as u64)
    }
}

/// The most a follower waits after a lapse before contending.
pub const JITTER_MS: u64 = 300;
