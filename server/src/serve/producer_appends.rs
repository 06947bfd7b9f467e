//! Exactly-once appends through the HTTP and Flight doors: a producer names each append with a
//! sequence number, and (to keep several in flight, ADR 0078) the number it follows.

use std::time::Duration;

use arrow::array::RecordBatch;
use pondra_cluster::{AppendOutcome, Node, NodeError};

/// How long an append waits for the one it follows to arrive or commit: a producer's appends
/// in flight together may reach the node in another order than they were sent.
const PATIENCE: Duration = Duration::from_secs(5);

/// An append's producer, its sequence number and the one it follows.
pub(super) struct ProducerClaim {
    producer: String,
    sequence: u64,
    follows: Option<u64>,
}

impl ProducerClaim {
    /// The claim the parameters `producer`, `seq` and `follows` make (`param` reads one), if
    /// any; an error names what is wrong with them.
    pub fn from_params<'a>(
        param: impl Fn(&str) -> Option<&'a str>,
    ) -> Result<Option<ProducerClaim>, String> {
        let number = |name: &str| {
            param(name)
                .map(|v| v.parse::<u64>())
                .transpose()
                .map_err(|_| format!("{name} must be a whole number"))
        };
        let (sequence, follows) = (number("seq")?, number("follows")?);
        let producer = match (param("producer"), sequence, follows) {
            (None, None, None) => return Ok(None),
            (Some(""), _, _) => return Err("a producer needs a name".into()),
            (Some(producer), Some(_), _) => producer.to_string(),
            _ => return Err("producer and seq go together (follows with them)".into()),
        };
        let sequence = sequence.expect("matched above");
        if follows.is_some_and(|f| f >= sequence) {
            return Err(format!(
                "an append follows an earlier one, not seq {sequence}"
            ));
        }
        Ok(Some(ProducerClaim {
            producer,
            sequence,
            follows,
        }))
    }
}

/// Appends `batches` to `table`, exactly once for a producer's claim: in its producer's line
/// when it says what it follows (out of order: `NodeError::OutOfOrder`, nothing written).
pub(super) async fn append(
    node: &Node,
    table: &str,
    batches: &[RecordBatch],
    claim: Option<ProducerClaim>,
) -> Result<AppendOutcome, NodeError> {
    let Some(claim) = claim else {
        return node.append(table, batches, None).await;
    };
    let Some(follows) = claim.follows else {
        let producer = Some((claim.producer.as_str(), claim.sequence));
        return node.append(table, batches, producer).await;
    };
    let place = node
        .take_place(&claim.producer, claim.sequence, follows, PATIENCE)
        .await?;
    match place {
        None => Ok(AppendOutcome::Duplicate),
        Some(place) => Ok(node.append_in_line(table, batches, place).await?.0),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn claim(pairs: &[(&str, &str)]) -> Result<Option<(String, u64, Option<u64>)>, String> {
        let params: HashMap<&str, &str> = pairs.iter().copied().collect();
        let claim = ProducerClaim::from_params(|name| params.get(name).copied())?;
        Ok(claim.map(|c| (c.producer, c.sequence, c.follows)))
    }

    #[test]
    fn parameters_make_a_claim_or_a_clear_error() {
        assert_eq!(claim(&[]), Ok(None));
        assert_eq!(
            claim(&[("producer", "p"), ("seq", "3")]),
            Ok(Some(("p".into(), 3, None)))
        );
        let line = [("producer", "p"), ("seq", "3"), ("follows", "2")];
        assert_eq!(claim(&line), Ok(Some(("p".into(), 3, Some(2)))));
        assert!(claim(&[("producer", "p")]).is_err());
        assert!(claim(&[("seq", "1")]).is_err());
        assert!(claim(&[("producer", "p"), ("seq", "x")]).is_err());
        assert!(claim(&[("producer", ""), ("seq", "1")]).is_err());
        assert!(claim(&[("producer", "p"), ("seq", "3"), ("follows", "3")]).is_err());
    }
}
