//! Producer lines (ADR 0078): a producer's appends in flight together, handed to the committer
//! in the order of their sequence numbers. Per producer name, the node keeps the last append
//! that took its place in line; the next one (which names the sequence it follows) prepares
//! its rows once that one has been handed over, and is handed over next.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pondra_catalog::Snapshot;
use tokio::sync::{Notify, watch};

use crate::Result;
use crate::error::NodeError;
use crate::node::Node;

/// Where an append in line stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Stage {
    /// It has its place; its rows are being prepared.
    Placed,
    /// It was handed to the committer.
    Handed,
    /// It is committed, or failed.
    Done,
}

/// The last append of each producer that took its place in line.
#[derive(Default)]
pub(crate) struct ProducerLines {
    last: Mutex<HashMap<String, (u64, watch::Receiver<Stage>)>>,
    /// Told whenever an append takes its place.
    placed: Notify,
}

/// An append's place in its producer's line; its stage turns `Done` when dropped.
pub struct LinePlace {
    lines: Arc<ProducerLines>,
    pub(crate) producer: String,
    pub(crate) sequence: u64,
    /// The sequence it follows: the catalog must keep one at or past it when it commits.
    pub(crate) follows: u64,
    before: Option<watch::Receiver<Stage>>,
    stage: watch::Sender<Stage>,
}

impl LinePlace {
    /// The name of the producer whose line it is in.
    pub fn producer(&self) -> &str {
        &self.producer
    }

    /// The sequence number of its append.
    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    /// Waits until the append before it in line has reached `stage` (at once without one).
    pub(crate) async fn wait_before(&self, stage: Stage) {
        if let Some(before) = &self.before {
            let mut before = before.clone();
            let _ = before.wait_for(|s| *s >= stage).await;
        }
    }

    /// Marks it handed to the committer.
    pub(crate) fn handed(&self) {
        self.stage.send_replace(Stage::Handed);
    }

    /// What its commit checks against the round's latest snapshot.
    pub(crate) fn check(&self) -> LineCheck {
        LineCheck {
            producer: self.producer.clone(),
            sequence: self.sequence,
            follows: self.follows,
        }
    }
}

/// The check an append in line makes as it commits.
pub(crate) struct LineCheck {
    producer: String,
    sequence: u64,
    follows: u64,
}

impl LineCheck {
    /// Whether it may commit after `latest`: the lake keeps the sequence it follows, and not
    /// its own.
    pub(crate) fn fits(&self, latest: &Snapshot) -> std::result::Result<(), NodeError> {
        let kept = latest.producers.get(&self.producer).copied().unwrap_or(0);
        match kept >= self.follows && kept < self.sequence {
            true => Ok(()),
            false => Err(out_of_order(
                &self.producer,
                self.sequence,
                self.follows,
                kept,
            )),
        }
    }
}

impl Drop for LinePlace {
    fn drop(&mut self) {
        self.stage.send_replace(Stage::Done);
        let mut last = self.lines.last.lock().expect("producer lines lock");
        if last
            .get(&self.producer)
            .is_some_and(|(s, _)| *s == self.sequence)
        {
            last.remove(&self.producer);
        }
    }
}

fn out_of_order(producer: &str, sequence: u64, follows: u64, kept: u64) -> NodeError {
    NodeError::OutOfOrder(format!(
        "{producer}'s append {sequence} follows {follows}, and the lake keeps {kept}: \
         send again from the first append not acknowledged"
    ))
}

impl Node {
    /// Takes a place in `producer`'s line for the append numbered `sequence`, which follows
    /// the one numbered `follows`: behind that append when it is in line here, at once when
    /// the lake keeps it. Otherwise waits for either up to `patience`, then fails as out of
    /// order. A retry of an append the lake keeps already is not given a place (None).
    pub async fn take_place(
        &self,
        producer: &str,
        sequence: u64,
        follows: u64,
        patience: Duration,
    ) -> Result<Option<LinePlace>> {
        assert!(follows < sequence, "an append follows an earlier one");
        let deadline = Instant::now() + patience;
        loop {
            let snapshot = self.snapshot();
            let kept = snapshot.producers.get(producer).copied().unwrap_or(0);
            if kept >= sequence {
                return Ok(None);
            }
            let placed = self.lines.placed.notified();
            if let Some(place) = self.place_if_ready(producer, sequence, follows, kept) {
                return Ok(Some(place));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(out_of_order(producer, sequence, follows, kept));
            }
            tokio::select! {
                _ = placed => {}
                _ = self.wait_for_commit_after(snapshot.commit, deadline - now) => {}
            }
        }
    }

    fn place_if_ready(
        &self,
        producer: &str,
        sequence: u64,
        follows: u64,
        kept: u64,
    ) -> Option<LinePlace> {
        let mut last = self.lines.last.lock().expect("producer lines lock");
        let before = match last.get(producer) {
            Some((s, stage)) if *s == follows => Some(stage.clone()),
            _ if kept >= follows => None,
            _ => return None,
        };
        let (stage, watched) = watch::channel(Stage::Placed);
        last.insert(producer.to_string(), (sequence, watched));
        drop(last);
        self.lines.placed.notify_waiters();
        Some(LinePlace {
            lines: self.lines.clone(),
            producer: producer.to_string(),
            sequence,
            follows,
            before,
            stage,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn appends_take_places_behind_their_predecessors() {
        let (_dir, node) = crate::test_support::node_with(&[]).await;
        let patience = Duration::from_millis(50);
        let first = node.take_place("p", 1, 0, patience).await.unwrap().unwrap();
        assert!(
            first.before.is_none(),
            "the lake keeps nothing, which 0 follows"
        );
        // The third comes before the second: it waits for the second to take its place.
        let waiting = node.clone();
        let third =
            tokio::spawn(
                async move { waiting.take_place("p", 3, 2, Duration::from_secs(30)).await },
            );
        tokio::task::yield_now().await;
        let second = node.take_place("p", 2, 1, patience).await.unwrap().unwrap();
        let third = third.await.unwrap().unwrap().unwrap();
        let behind_first = second.before.clone().unwrap();
        let behind_second = third.before.clone().unwrap();
        assert_eq!(*behind_first.borrow(), Stage::Placed);
        first.handed();
        assert_eq!(*behind_first.borrow(), Stage::Handed);
        assert_eq!(*behind_second.borrow(), Stage::Placed);
        let gap = node.take_place("p", 9, 7, patience).await;
        assert!(
            matches!(gap, Err(NodeError::OutOfOrder(_))),
            "nothing numbered 7"
        );
        drop(first);
        assert_eq!(*behind_first.borrow(), Stage::Done);
        let kept = |sequence: Option<u64>| {
            let mut snapshot = (*node.snapshot()).clone();
            if let Some(sequence) = sequence {
                snapshot.producers.insert("p".into(), sequence);
            }
            snapshot
        };
        assert!(second.check().fits(&kept(Some(1))).is_ok());
        assert!(
            second.check().fits(&kept(None)).is_err(),
            "its predecessor failed"
        );
        assert!(
            second.check().fits(&kept(Some(2))).is_err(),
            "it was committed already"
        );
    }

    fn batch(value: i32) -> arrow::array::RecordBatch {
        crate::test_support::int_rows([value])
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn appends_in_line_commit_in_order_and_fail_after_a_failed_one() {
        let (_dir, node) = crate::test_support::node_with(&["CREATE TABLE t (v INT)"]).await;
        let patience = Duration::from_secs(5);
        let mut places = Vec::new();
        for sequence in 1..=3 {
            let place = node.take_place("p", sequence, sequence - 1, patience).await;
            places.push(place.unwrap().unwrap());
        }
        // Appended from the last to the first: each still commits after the one before.
        let mut appends = Vec::new();
        for place in places.into_iter().rev() {
            let (node, value) = (node.clone(), place.sequence as i32);
            appends.push(tokio::spawn(async move {
                node.append_in_line("t", &[batch(value)], place).await
            }));
        }
        for append in appends {
            let (outcome, _) = append.await.unwrap().unwrap();
            assert_eq!(outcome, crate::AppendOutcome::Appended(1));
        }
        let rows = node.execute("SELECT string_agg(v::VARCHAR, ',' ORDER BY _offset) FROM t");
        let rows = format!("{:?}", rows.await.unwrap());
        assert!(rows.contains("\"1,2,3\""), "{rows}");
        assert_eq!(node.snapshot().producers.get("p"), Some(&3));
        // The fourth fails before its commit: the fifth, behind it, is refused.
        let fourth = node.take_place("p", 4, 3, patience).await.unwrap().unwrap();
        let fifth = node.take_place("p", 5, 4, patience).await.unwrap().unwrap();
        let failed = node.append_in_line("missing", &[batch(4)], fourth).await;
        assert!(failed.is_err());
        let refused = node.append_in_line("t", &[batch(5)], fifth).await;
        assert!(
            matches!(refused, Err(NodeError::OutOfOrder(_))),
            "{refused:?}"
        );
        assert_eq!(node.snapshot().producers.get("p"), Some(&3));
        // A retry of the fourth then the fifth goes through; a retry of the third is a duplicate.
        assert!(
            node.take_place("p", 3, 2, patience)
                .await
                .unwrap()
                .is_none()
        );
        for sequence in [4, 5] {
            let place = node.take_place("p", sequence, sequence - 1, patience).await;
            let place = place.unwrap().unwrap();
            let appended = node
                .append_in_line("t", &[batch(sequence as i32)], place)
                .await;
            assert_eq!(appended.unwrap().0, crate::AppendOutcome::Appended(1));
        }
    }

    /// On a keyed table an append takes the write lock alone: one in line waits for the one
    /// before it without holding the lock, or the two would wait for each other.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn appends_in_line_to_a_keyed_table_do_not_wait_for_each_other() {
        let create = "CREATE TABLE t (v INT PRIMARY KEY)";
        let (_dir, node) = crate::test_support::node_with(&[create]).await;
        let patience = Duration::from_secs(5);
        let mut appends = Vec::new();
        let mut places = Vec::new();
        for sequence in 1..=4 {
            let place = node.take_place("k", sequence, sequence - 1, patience).await;
            places.push(place.unwrap().unwrap());
        }
        for place in places.into_iter().rev() {
            let (node, value) = (node.clone(), place.sequence as i32);
            appends.push(tokio::spawn(async move {
                node.append_in_line("t", &[batch(value)], place).await
            }));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let all = async {
            let mut outcomes = Vec::new();
            for append in appends {
                outcomes.push(append.await.unwrap().unwrap().0);
            }
            outcomes
        };
        let done = tokio::time::timeout(Duration::from_secs(60), all).await;
        let outcomes = done.expect("the appends in line finish");
        assert_eq!(outcomes, vec![crate::AppendOutcome::Appended(1); 4]);
        assert_eq!(node.snapshot().producers.get("k"), Some(&4));
    }
}
