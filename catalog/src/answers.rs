//! Answers of language models (ADR 0082), kept under `a/<key>`: the key is the hex SHA-256 of
//! what was asked (the executor makes it), the value the answer's bytes. An answer never
//! changes under its key, so a later call reads it instead of asking again.
//!
//! Snapshots hold them in shards by the key's first byte: a commit that adds answers copies
//! the shards it touches, not every answer.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// The hex digits of an answer's key: a SHA-256.
pub const ANSWER_KEY_DIGITS: usize = 64;

/// One answer a commit adds.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelAnswer {
    /// 64 lowercase hex digits.
    pub key: String,
    /// The answer's bytes, base64 in a commit handed to the leader.
    #[serde(with = "base64_bytes")]
    pub value: Vec<u8>,
}

impl fmt::Debug for ModelAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ModelAnswer({}, {} bytes)", self.key, self.value.len())
    }
}

/// Whether `key` is an answer's key: 64 lowercase hex digits.
pub fn is_answer_key(key: &str) -> bool {
    key.len() == ANSWER_KEY_DIGITS
        && key
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The answers a snapshot holds, by key.
#[derive(Clone, Default)]
pub struct ModelAnswers {
    shards: HashMap<u8, Arc<HashMap<String, Bytes>>>,
}

impl ModelAnswers {
    /// The answer kept under `key`, if one is.
    pub fn get(&self, key: &str) -> Option<&Bytes> {
        self.shards.get(&shard_of(key))?.get(key)
    }

    pub fn insert(&mut self, key: String, value: Bytes) {
        assert!(is_answer_key(&key), "an answer's key is a SHA-256 in hex");
        let shard = self.shards.entry(shard_of(&key)).or_default();
        Arc::make_mut(shard).insert(key, value);
    }

    pub fn len(&self) -> usize {
        self.shards.values().map(|shard| shard.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl fmt::Debug for ModelAnswers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ModelAnswers({} answers)", self.len())
    }
}

/// The shard of a key: its first two hex digits.
fn shard_of(key: &str) -> u8 {
    key.get(..2)
        .and_then(|digits| u8::from_str_radix(digits, 16).ok())
        .unwrap_or(0)
}

mod base64_bytes {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(deserializer)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_found_by_key_and_shared_by_shard() {
        let key = |n: u8| format!("{n:02x}{}", "0".repeat(62));
        let mut answers = ModelAnswers::default();
        answers.insert(key(1), Bytes::from_static(b"one"));
        answers.insert(key(2), Bytes::from_static(b"two"));
        let before = answers.clone();
        answers.insert(
            format!("01{}", "1".repeat(62)),
            Bytes::from_static(b"three"),
        );
        assert_eq!(answers.len(), 3);
        assert_eq!(before.len(), 2);
        assert_eq!(answers.get(&key(2)), Some(&Bytes::from_static(b"two")));
        assert!(Arc::ptr_eq(&answers.shards[&2], &before.shards[&2]));
        assert!(answers.get(&key(3)).is_none());
    }

    #[test]
    fn an_answer_goes_through_json_as_base64() {
        let answer = ModelAnswer {
            key: "ab".repeat(32),
            value: vec![0, 1, 255],
        };
        let json = serde_json::to_string(&answer).unwrap();
        assert!(json.contains("\"AAH/\""), "{json}");
        assert_eq!(serde_json::from_str::<ModelAnswer>(&json).unwrap(), answer);
        assert!(is_answer_key(&answer.key));
        assert!(!is_answer_key("AB"));
    }
}
