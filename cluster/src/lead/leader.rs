//! Leadership through the lake: a process leads by creating `cluster/term/N`, for the next N,
//! with create-if-absent. Two processes can never both create the same term; the catalog then
//! fences every writer of an earlier term. The leader of term N beats: it rewrites
//! `cluster/alive/N` with its address and a growing count, and marks it ended when it stops
//! cleanly, so that another process can tell a live leader from a dead one (ADR 0053).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use object_store::UpdateVersion;
use pondra_storage::{Lake, StorageError};

use crate::Result;

const TERM_PREFIX: &str = "cluster/term/";
const ALIVE_PREFIX: &str = "cluster/alive/";
/// `cluster/ended/N` exists once the leader of term N stopped cleanly: an object of its own,
/// which a beat still in flight when the leader stopped cannot overwrite.
const ENDED_PREFIX: &str = "cluster/ended/";

/// How often a leader beats.
pub const BEAT_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// How long a beat may stand still before its leader is taken for dead (ADR 0053's lapse).
pub const LAPSE: std::time::Duration = std::time::Duration::from_secs(2);

/// One beat of a leader: what `cluster/alive/N` holds.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Beat {
    pub term: u64,
    /// The address other processes reach the leader's HTTP door by.
    pub addr: String,
    /// Grows with every beat: a count that stands still for a lapse is a dead leader's.
    pub count: u64,
    /// Whether the leader stopped cleanly (`cluster/ended/N` exists); not part of the beat.
    #[serde(skip)]
    pub ended: bool,
}

/// Writes a beat of its term: how the next is written, or, as the error, how the next is
/// written and what failed (none: another process's beat is there).
async fn beat_over(
    lake: &Lake,
    beat: &Beat,
    writes: BeatWrites,
) -> std::result::Result<BeatWrites, (BeatWrites, Option<StorageError>)> {
    let path = format!("{ALIVE_PREFIX}{}", beat.term);
    let body = Bytes::from(serde_json::to_vec(beat).expect("a beat is JSON"));
    let expected = match &writes {
        BeatWrites::Unconditional => {
            return match lake.put(&path, body).await {
                Ok(()) => Ok(BeatWrites::Unconditional),
                Err(e) => Err((BeatWrites::Unconditional, Some(e))),
            };
        }
        BeatWrites::First => None,
        BeatWrites::Over(version) => Some(version),
    };
    match lake.put_over(&path, body, expected).await {
        Ok(Some(version)) => Ok(BeatWrites::Over(version)),
        Ok(None) => Ok(BeatWrites::Unconditional),
        // A beat of ours whose answer was lost changed the version: read it again, and go on
        // if it is ours.
        Err(StorageError::Changed(_) | StorageError::AlreadyExists(_)) => {
            match lake.get_versioned(&path).await {
                Ok((bytes, version)) => match serde_json::from_slice::<Beat>(&bytes) {
                    Ok(found) if found.addr == beat.addr && found.count < beat.count => {
                        Err((BeatWrites::Over(version), Some(StorageError::Changed(path))))
                    }
                    _ => Err((writes, None)),
                },
                Err(e) => Err((writes, Some(e))),
            }
        }
        Err(e) => Err((writes, Some(e))),
    }
}

/// The last beat of the highest term; none when that term's leader has not beaten yet or
/// the lake has no term.
pub async fn latest_beat(lake: &Lake) -> Result<Option<Beat>> {
    let term = highest_term(lake).await?;
    if term == 0 {
        return Ok(None);
    }
    beat_of(lake, term).await
}

/// The last beat of term `term`; none before its leader's first.
pub async fn beat_of(lake: &Lake, term: u64) -> Result<Option<Beat>> {
    let ended = lake.exists(&format!("{ENDED_PREFIX}{term}")).await?;
    let bytes = match lake.get(&format!("{ALIVE_PREFIX}{term}")).await {
        Ok(bytes) => bytes,
        // A process that led for its own commits (`pondra sql`) ends its term unbeaten.
        Err(StorageError::ObjectStore(object_store::Error::NotFound { .. })) if ended => {
            return Ok(Some(Beat {
                term,
                addr: String::new(),
                count: 0,
                ended,
            }));
        }
        Err(StorageError::ObjectStore(object_store::Error::NotFound { .. })) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let mut beat: Beat = serde_json::from_slice(&bytes)
        .map_err(|e| crate::NodeError::Other(format!("{ALIVE_PREFIX}{term} is not a beat: {e}")))?;
    beat.ended = ended;
    Ok(Some(beat))
}

/// Marks term `term` ended: its leader stopped cleanly, and the next process leads at once.
pub async fn end_term(lake: &Lake, term: u64) -> Result<()> {
    let path = format!("{ENDED_PREFIX}{term}");
    match lake.put_if_absent(&path, Bytes::from_static(b"{}\n")).await {
        Ok(()) | Err(StorageError::AlreadyExists(_)) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// How many terms a contender skips past before giving up (another process keeps winning).
const MAX_ATTEMPTS: usize = 64;

/// A term this process won.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Term {
    pub number: u64,
}

/// What `cluster/term/N` holds.
#[derive(serde::Serialize, serde::Deserialize)]
struct TermRecord {
    node: String,
    term: u64,
    /// Whether the process that took the term beats (a server); one that does not (`pondra
    /// sql`) is not waited for when its term has no beat.
    #[serde(default = "beats_by_default")]
    beats: bool,
}

fn beats_by_default() -> bool {
    true
}

fn term_record(node: &str, term: u64, beats: bool) -> Bytes {
    let record = TermRecord {
        node: node.to_string(),
        term,
        beats,
    };
    let mut body = serde_json::to_vec(&record).expect("a term is JSON");
    body.push(b'\n');
    Bytes::from(body)
}

/// Whether the process that took term `term` beats; a term that cannot be read is taken to.
pub async fn term_beats(lake: &Lake, term: u64) -> Result<bool> {
    match lake.get(&format!("{TERM_PREFIX}{term}")).await {
        Ok(bytes) => Ok(serde_json::from_slice::<TermRecord>(&bytes).map_or(true, |r| r.beats)),
        Err(StorageError::ObjectStore(object_store::Error::NotFound { .. })) => Ok(true),
        Err(e) => Err(e.into()),
    }
}

/// Takes the lead of the lake: creates the term object after the highest one present. `beats`
/// says whether this process will beat for it (a server) or not (`pondra sql`).
pub async fn take_lead(lake: &Lake, node: &str, beats: bool) -> Result<Term> {
    let mut number = highest_term(lake).await? + 1;
    for _ in 0..MAX_ATTEMPTS {
        let path = format!("{TERM_PREFIX}{number}");
        let body = term_record(node, number, beats);
        match lake.put_if_absent(&path, body).await {
            Ok(()) => return Ok(Term { number }),
            Err(StorageError::AlreadyExists(_)) => number += 1,
            Err(e) => return Err(e.into()),
        }
    }
    Err(crate::NodeError::Other(format!(
        "could not take the lead of {} after {MAX_ATTEMPTS} attempts: other processes keep taking it",
        lake.description()
    )))
}

/// Takes term `number` exactly, if no process has: false when one has. A follower that saw
/// the leader of term `number - 1` lapse contends for the next term only, so that two
/// followers contending never fence each other's win (ADR 0053).
pub async fn take_term(lake: &Lake, number: u64, node: &str) -> Result<bool> {
    let path = format!("{TERM_PREFIX}{number}");
    match lake
        .put_if_absent(&path, term_record(node, number, true))
        .await
    {
        Ok(()) => Ok(true),
        Err(StorageError::AlreadyExists(_)) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// The highest term any process took; 0 for none.
pub async fn highest_term(lake: &Lake) -> Result<u64> {
    let terms = lake.list(TERM_PREFIX).await?;
    Ok(terms
        .iter()
        .filter_map(|p| p.strip_prefix(TERM_PREFIX)?.parse::<u64>().ok())
        .max()
        .unwrap_or(0))
}

/// A leader's beats, running until [`Beating::end`] (or until dropped, which leaves the beat to
/// stand still, as a crash does).
pub struct Beating {
    lake: Lake,
    term: u64,
    task: tokio::task::JoinHandle<()>,
    superseded: Arc<AtomicBool>,
}

/// How a leader writes its beats: creating `cluster/alive/N`, then over the version it wrote
/// last (If-Match) where the store can, so that a second process beating for the same term
/// (on a store whose create-if-absent does not lock per key) is found out.
enum BeatWrites {
    First,
    Over(UpdateVersion),
    /// The store has no conditional overwrite (a folder).
    Unconditional,
}

impl Beating {
    /// Beats for term `term`, reachable at `addr`, every [`BEAT_EVERY`]. A beat that fails
    /// is logged and tried again at the next. Another process's beat found in `cluster/alive/N`
    /// stops the beating and marks it superseded.
    pub fn start(lake: Lake, term: u64, addr: String) -> Beating {
        let superseded = Arc::new(AtomicBool::new(false));
        let task = {
            let (lake, superseded) = (lake.clone(), superseded.clone());
            tokio::spawn(async move {
                let mut ticker = tokio::time::interval(BEAT_EVERY);
                ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                let mut writes = BeatWrites::First;
                for count in 1.. {
                    ticker.tick().await;
                    let beat = Beat {
                        term,
                        addr: addr.clone(),
                        count,
                        ended: false,
                    };
                    match beat_over(&lake, &beat, writes).await {
                        Ok(next) => writes = next,
                        Err((_, None)) => {
                            eprintln!("term {term}: another process beats for it: stepping down");
                            superseded.store(true, Ordering::SeqCst);
                            break;
                        }
                        Err((next, Some(e))) => {
                            eprintln!("cannot beat for term {term}: {e}");
                            writes = next;
                        }
                    }
                }
            })
        };
        Beating {
            lake,
            term,
            task,
            superseded,
        }
    }

    /// Whether another process beats for this term: this one is not its leader.
    pub fn superseded(&self) -> bool {
        self.superseded.load(Ordering::SeqCst)
    }

    /// Stops beating and marks the term ended, so that the next process leads at once.
    pub async fn end(self) -> Result<()> {
        self.task.abort();
        end_term(&self.lake, self.term).await
    }
}

impl Drop for Beating {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use object_store::memory::InMemory;

    use super::*;

    #[tokio::test]
    async fn each_contender_wins_a_distinct_term() {
        let lake = Lake::from_store(Arc::new(InMemory::new()), "memory");
        let mut handles = Vec::new();
        for i in 0..8 {
            let lake = lake.clone();
            handles.push(tokio::spawn(async move {
                take_lead(&lake, &format!("n{i}"), true)
                    .await
                    .unwrap()
                    .number
            }));
        }
        let mut terms = Vec::new();
        for h in handles {
            terms.push(h.await.unwrap());
        }
        terms.sort();
        terms.dedup();
        assert_eq!(
            terms.len(),
            8,
            "every contender got its own term: {terms:?}"
        );
    }

    #[tokio::test]
    async fn a_leader_beats_until_it_ends() {
        let lake = Lake::from_store(Arc::new(InMemory::new()), "memory");
        assert_eq!(latest_beat(&lake).await.unwrap(), None);
        let term = take_lead(&lake, "a", true).await.unwrap().number;
        assert_eq!(latest_beat(&lake).await.unwrap(), None);
        let beating = Beating::start(lake.clone(), term, "127.0.0.1:1".into());
        tokio::time::sleep(BEAT_EVERY * 3).await;
        let beat = latest_beat(&lake).await.unwrap().expect("a beat");
        assert!(beat.count >= 2 && !beat.ended, "{beat:?}");
        assert_eq!(beat.addr, "127.0.0.1:1");
        beating.end().await.unwrap();
        assert!(latest_beat(&lake).await.unwrap().unwrap().ended);
        // A second process beating for the same term is found out: its first beat finds the
        // first process's, and it stops.
        let first = Beating::start(lake.clone(), 7, "127.0.0.1:7".into());
        tokio::time::sleep(BEAT_EVERY / 2).await;
        let second = Beating::start(lake.clone(), 7, "127.0.0.1:8".into());
        tokio::time::sleep(BEAT_EVERY * 2).await;
        assert!(second.superseded() && !first.superseded());
        drop((first, second));
        // A later term without a beat yet hides the ended one.
        take_lead(&lake, "b", false).await.unwrap();
        assert_eq!(latest_beat(&lake).await.unwrap(), None);
    }
}
