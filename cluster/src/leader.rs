//! Leadership through the lake: a process leads by creating `cluster/term/N`, for the next N,
//! with create-if-absent. Two processes can never both create the same term; the catalog then
//! fences every writer of an earlier term.

use bytes::Bytes;
use pondra_storage::{Lake, StorageError};

use crate::Result;

const TERM_PREFIX: &str = "cluster/term/";

/// How many terms a contender skips past before giving up (another process keeps winning).
const MAX_ATTEMPTS: usize = 64;

/// A term this process won.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Term {
    pub number: u64,
}

/// Takes the lead of the lake: creates the term object after the highest one present.
pub async fn take_lead(lake: &Lake, node: &str) -> Result<Term> {
    let mut number = highest_term(lake).await? + 1;
    for _ in 0..MAX_ATTEMPTS {
        let path = format!("{TERM_PREFIX}{number}");
        let body = Bytes::from(format!("{{\"node\":\"{node}\",\"term\":{number}}}\n"));
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

async fn highest_term(lake: &Lake) -> Result<u64> {
    let terms = lake.list(TERM_PREFIX).await?;
    Ok(terms
        .iter()
        .filter_map(|p| p.strip_prefix(TERM_PREFIX)?.parse::<u64>().ok())
        .max()
        .unwrap_or(0))
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
                take_lead(&lake, &format!("n{i}")).await.unwrap().number
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
}
