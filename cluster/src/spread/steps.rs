//! Who runs each part of a spread plan, and what a failed part does next (ADR 0076), apart
//! from the IO: part 0 runs on the coordinator, part `i` on the `i`-th other node; a part that
//! fails is asked of the same node once more, then run on the coordinator. The coordinator's
//! own runs fail only with the statement's own error, which ends the query.

/// Where a part runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Runner {
    /// On the coordinator.
    Here,
    /// On another node, by its index among the nodes taking part (the coordinator not counted).
    Peer(usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Running { runner: Runner, attempt: u8 },
    Done,
}

/// The parts of one Gather and where each stands.
#[derive(Debug)]
pub(crate) struct PartSteps {
    parts: Vec<State>,
}

/// How many times a part is asked of another node before the coordinator runs it.
const ASKS_PER_PART: u8 = 2;

impl PartSteps {
    /// `parts` parts over the coordinator and `parts - 1` other nodes.
    pub(crate) fn new(parts: usize) -> PartSteps {
        assert!(parts >= 1, "a Gather has parts");
        let parts = (0..parts)
            .map(|part| State::Running {
                runner: match part {
                    0 => Runner::Here,
                    _ => Runner::Peer(part - 1),
                },
                attempt: 1,
            })
            .collect();
        PartSteps { parts }
    }

    /// Every part with where it runs first.
    pub(crate) fn first_runs(&self) -> Vec<(usize, Runner)> {
        (0..self.parts.len())
            .map(|part| (part, self.runner(part).expect("a new part is running")))
            .collect()
    }

    fn runner(&self, part: usize) -> Option<Runner> {
        match self.parts[part] {
            State::Running { runner, .. } => Some(runner),
            State::Done => None,
        }
    }

    /// Part `part` gave its rows.
    pub(crate) fn succeeded(&mut self, part: usize) {
        assert!(self.runner(part).is_some(), "part {part} finished twice");
        self.parts[part] = State::Done;
    }

    /// Part `part` failed on another node: where it runs next.
    pub(crate) fn failed(&mut self, part: usize) -> Runner {
        let State::Running { runner, attempt } = self.parts[part] else {
            panic!("part {part} failed after it finished");
        };
        let Runner::Peer(peer) = runner else {
            panic!("the coordinator's own run of part {part} does not fail over");
        };
        let next = match attempt < ASKS_PER_PART {
            true => State::Running {
                runner: Runner::Peer(peer),
                attempt: attempt + 1,
            },
            false => State::Running {
                runner: Runner::Here,
                attempt: attempt + 1,
            },
        };
        self.parts[part] = next;
        self.runner(part).expect("running")
    }

    /// Whether every part gave its rows.
    pub(crate) fn finished(&self) -> bool {
        self.parts.iter().all(|state| *state == State::Done)
    }
}

/// Where the parts of a spread plan that exchanges rows run, round after round (ADR 0076):
/// its parts wait for each other, so a failed part fails its round and every part runs again.
/// The second round asks the same nodes; the third runs here the parts that did not give
/// their rows in the second; the fourth runs every part here. A round of parts all run here
/// fails only with the statement's own error.
#[derive(Debug)]
pub(crate) struct RoundSteps {
    runners: Vec<Runner>,
    rounds: u32,
}

impl RoundSteps {
    /// Part 0 on the coordinator, part `i` on the `i`-th other node.
    pub(crate) fn new(parts: usize) -> RoundSteps {
        assert!(parts >= 1, "a Gather has parts");
        RoundSteps {
            runners: PartSteps::new(parts)
                .first_runs()
                .into_iter()
                .map(|(_, r)| r)
                .collect(),
            rounds: 1,
        }
    }

    /// Every part on the coordinator.
    pub(crate) fn all_here(parts: usize) -> RoundSteps {
        RoundSteps {
            runners: vec![Runner::Here; parts],
            rounds: 1,
        }
    }

    pub(crate) fn runners(&self) -> &[Runner] {
        &self.runners
    }

    /// The round failed; `gave_rows[p]` says whether part `p` gave its rows in it. False when
    /// no round is left: the round's error is the statement's.
    pub(crate) fn failed(&mut self, gave_rows: &[bool]) -> bool {
        assert_eq!(gave_rows.len(), self.runners.len(), "a flag per part");
        if self.runners.iter().all(|r| *r == Runner::Here) {
            return false;
        }
        self.rounds += 1;
        match self.rounds {
            2 => {}
            3 => {
                for (runner, gave) in self.runners.iter_mut().zip(gave_rows) {
                    if !gave {
                        *runner = Runner::Here;
                    }
                }
            }
            _ => self.runners.fill(Runner::Here),
        }
        true
    }
}
