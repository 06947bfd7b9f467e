//! Models in SQL (ADR 0082): `ai_embed` and `ai_complete` over a batch. Each distinct input is
//! answered, in this order, by the answers the statement got already, by the answers the lake
//! keeps (`a/<key>`), and only then by the model's endpoint, which the node reaches for the
//! executor ([`ModelAccess`]): every input not answered yet, of one model, in one call. The
//! answers the endpoint gave are kept with the statement ([`StatementModels`]) for the node to
//! commit once it ends, since the executor commits nothing.

mod batch;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use pondra_planner::ModelOp;
use sha2::{Digest, Sha256};

use crate::Result;
use crate::control::StatementControl;

pub(crate) use batch::evaluate_model;

/// How the executor reaches a model's endpoint and the answers the lake keeps: given by the
/// node that runs the statement.
pub trait ModelAccess: Send + Sync {
    /// The answer the lake keeps under each of `keys`, where it keeps one.
    fn cached(&self, keys: &[&str]) -> Vec<Option<Bytes>>;

    /// `model`'s embedding of each of `inputs`, in order: blocks until they are answered, the
    /// endpoint fails (its message is the error) or `control` stops the statement.
    fn embed(
        &self,
        model: &str,
        inputs: &[String],
        control: &StatementControl,
    ) -> Result<Vec<Vec<f32>>>;

    /// `model`'s answer to each of `prompts`, in order, as `embed` is.
    fn complete(
        &self,
        model: &str,
        prompts: &[String],
        control: &StatementControl,
    ) -> Result<Vec<String>>;
}

/// A statement's way to the models, and the answers it got from their endpoint.
pub struct StatementModels {
    access: Arc<dyn ModelAccess>,
    /// Answers the endpoint gave this statement, by key, not yet committed.
    fresh: Mutex<HashMap<String, Bytes>>,
}

impl fmt::Debug for StatementModels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StatementModels({} fresh answers)", self.lock().len())
    }
}

impl StatementModels {
    pub fn new(access: Arc<dyn ModelAccess>) -> Arc<StatementModels> {
        Arc::new(StatementModels {
            access,
            fresh: Mutex::new(HashMap::new()),
        })
    }

    /// The answers the endpoint gave since the last call, by key, for the node to commit.
    pub fn take_fresh(&self) -> Vec<(String, Bytes)> {
        self.lock().drain().collect()
    }

    /// The answer to each of `keys` this statement got, or else the lake keeps, where one is.
    fn answers(&self, keys: &[&str]) -> Vec<Option<Bytes>> {
        let mut answers: Vec<Option<Bytes>> = {
            let fresh = self.lock();
            keys.iter().map(|key| fresh.get(*key).cloned()).collect()
        };
        let unknown: Vec<usize> = (0..keys.len()).filter(|&i| answers[i].is_none()).collect();
        if unknown.is_empty() {
            return answers;
        }
        let asked: Vec<&str> = unknown.iter().map(|&i| keys[i]).collect();
        let cached = self.access.cached(&asked);
        assert_eq!(
            cached.len(),
            asked.len(),
            "one cached answer or none per key"
        );
        for (i, answer) in unknown.into_iter().zip(cached) {
            answers[i] = answer;
        }
        answers
    }

    fn keep(&self, key: String, answer: Bytes) {
        self.lock().insert(key, answer);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Bytes>> {
        self.fresh.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The key an answer is kept under: the hex SHA-256 of the kind of answer, the model and the
/// input, each followed by a NUL byte.
pub fn answer_key(op: ModelOp, model: &str, input: &str) -> String {
    let mut hash = Sha256::new();
    for part in [op.kind(), model, input] {
        hash.update(part.as_bytes());
        hash.update([0u8]);
    }
    hash.finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_tell_kinds_models_and_inputs_apart() {
        let key = answer_key(ModelOp::Embed, "m", "hello");
        assert!(pondra_catalog::is_answer_key(&key), "{key}");
        assert_ne!(key, answer_key(ModelOp::Complete, "m", "hello"));
        assert_ne!(key, answer_key(ModelOp::Embed, "m2", "hello"));
        // The NUL after each part keeps "m" + "xhello" apart from "mx" + "hello".
        assert_ne!(
            answer_key(ModelOp::Embed, "m", "xhello"),
            answer_key(ModelOp::Embed, "mx", "hello")
        );
    }
}
