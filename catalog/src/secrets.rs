//! Secrets (ADR 0082): credentials kept under `e/<name>`. The type is kept in the clear, for
//! listings; the options are sealed with ChaCha20-Poly1305, so that a copy or a dump of the
//! catalog does not hold them. The name and the type are the sealed options' associated data:
//! a sealed value moved under another name or type does not open.

use std::collections::BTreeMap;
use std::fmt;

use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};

/// The environment variable that holds the sealing key, as 64 hex digits.
pub const SEAL_KEY_VARIABLE: &str = "PONDRA_SEAL_KEY";

/// The lake object that holds a lake's own sealing key when `PONDRA_SEAL_KEY` is not set.
pub const SEAL_KEY_OBJECT: &str = "cluster/seal.key";

/// The bytes of a sealing key.
const KEY_LEN: usize = 32;

/// A secret's type and options in the clear. Its `Debug` shows the option names only.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretOptions {
    /// `openai`, ...: what the secret is for.
    #[serde(rename = "type")]
    pub secret_type: String,
    /// Option names in lower case (`base_url`, `api_key`) to their values.
    pub options: BTreeMap<String, String>,
}

impl fmt::Debug for SecretOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretOptions")
            .field("secret_type", &self.secret_type)
            .field("options", &self.options.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// A secret as the catalog keeps it: the name and type in the clear, the options sealed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedSecret {
    pub name: String,
    #[serde(rename = "type")]
    pub secret_type: String,
    /// The nonce the options were sealed with, in hex.
    pub nonce: String,
    /// The options as JSON, sealed, with the tag after them, in hex.
    pub sealed: String,
}

/// The key secrets are sealed with: `PONDRA_SEAL_KEY`, or the lake's own (`cluster/seal.key`).
/// Its `Debug` shows nothing of it.
#[derive(Clone, PartialEq, Eq)]
pub struct SealKey([u8; KEY_LEN]);

impl fmt::Debug for SealKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SealKey(..)")
    }
}

/// Why a sealed secret did not open.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    /// Its tag does not match under this key: sealed with another key, or changed.
    #[error(
        "secret {0} does not open with this sealing key: it was sealed with another one (set \
         {SEAL_KEY_VARIABLE} to the 64 hex digits it was created under, or unset it if it was \
         created with the lake's {SEAL_KEY_OBJECT})"
    )]
    WrongKey(String),
    #[error("secret {name} is corrupt: {message}")]
    Corrupt { name: String, message: String },
}

impl SealKey {
    /// A key from its 64 hex digits.
    pub fn from_hex(text: &str) -> Result<SealKey, String> {
        let bytes = from_hex(text.trim())
            .filter(|bytes| bytes.len() == KEY_LEN)
            .ok_or_else(|| format!("a sealing key is {} hex digits", KEY_LEN * 2))?;
        Ok(SealKey(bytes.try_into().expect("checked length")))
    }

    /// A new random key.
    pub fn generate() -> SealKey {
        let mut bytes = [0u8; KEY_LEN];
        SystemRandom::new()
            .fill(&mut bytes)
            .expect("the system's random source");
        SealKey(bytes)
    }

    /// The key as 64 hex digits, as `from_hex` reads it.
    pub fn to_hex(&self) -> String {
        to_hex(&self.0)
    }

    /// `options` sealed as the secret `name`, under a fresh random nonce.
    pub fn seal(&self, name: &str, options: &SecretOptions) -> SealedSecret {
        let mut nonce = [0u8; NONCE_LEN];
        SystemRandom::new()
            .fill(&mut nonce)
            .expect("the system's random source");
        let mut sealed = serde_json::to_vec(options).expect("options as JSON");
        self.cipher()
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                associated_data(name, &options.secret_type),
                &mut sealed,
            )
            .expect("sealing fits in memory");
        SealedSecret {
            name: name.to_string(),
            secret_type: options.secret_type.clone(),
            nonce: to_hex(&nonce),
            sealed: to_hex(&sealed),
        }
    }

    /// The options `secret` holds, when it opens with this key.
    pub fn open(&self, secret: &SealedSecret) -> Result<SecretOptions, SealError> {
        let corrupt = |message: &str| SealError::Corrupt {
            name: secret.name.clone(),
            message: message.to_string(),
        };
        let nonce = from_hex(&secret.nonce)
            .and_then(|n| Nonce::try_assume_unique_for_key(&n).ok())
            .ok_or_else(|| corrupt("its nonce is not 24 hex digits"))?;
        let mut sealed = from_hex(&secret.sealed).ok_or_else(|| corrupt("not hex"))?;
        let aad = associated_data(&secret.name, &secret.secret_type);
        let opened = self
            .cipher()
            .open_in_place(nonce, aad, &mut sealed)
            .map_err(|_| SealError::WrongKey(secret.name.clone()))?;
        let options: SecretOptions =
            serde_json::from_slice(opened).map_err(|e| corrupt(&e.to_string()))?;
        if options.secret_type != secret.secret_type {
            return Err(corrupt("its sealed type is not its type"));
        }
        Ok(options)
    }

    fn cipher(&self) -> LessSafeKey {
        let key = UnboundKey::new(&CHACHA20_POLY1305, &self.0).expect("a 32-byte key");
        LessSafeKey::new(key)
    }
}

/// What a sealed secret is bound to besides its key: its name and type.
fn associated_data(name: &str, secret_type: &str) -> Aad<Vec<u8>> {
    Aad::from(format!("{name}\0{secret_type}").into_bytes())
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&text[at..at + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> SecretOptions {
        SecretOptions {
            secret_type: "openai".into(),
            options: BTreeMap::from([
                ("api_key".to_string(), "sk-test".to_string()),
                ("base_url".to_string(), "http://127.0.0.1:9/v1".to_string()),
            ]),
        }
    }

    #[test]
    fn sealed_options_open_with_their_key_only() {
        let key = SealKey::generate();
        let sealed = key.seal("mine", &options());
        assert!(!sealed.sealed.contains(&to_hex(b"sk-test")));
        assert_eq!(key.open(&sealed), Ok(options()));
        let other = SealKey::generate();
        assert_eq!(other.open(&sealed), Err(SealError::WrongKey("mine".into())));
        assert!(
            SealError::WrongKey("mine".into())
                .to_string()
                .contains(SEAL_KEY_VARIABLE)
        );
    }

    #[test]
    fn a_sealed_value_is_bound_to_its_name_and_type() {
        let key = SealKey::generate();
        let sealed = key.seal("mine", &options());
        let renamed = SealedSecret {
            name: "theirs".into(),
            ..sealed.clone()
        };
        assert!(matches!(key.open(&renamed), Err(SealError::WrongKey(_))));
        let retyped = SealedSecret {
            secret_type: "s3".into(),
            ..sealed
        };
        assert!(matches!(key.open(&retyped), Err(SealError::WrongKey(_))));
    }

    #[test]
    fn keys_read_back_from_hex_and_debug_shows_no_secret() {
        let key = SealKey::generate();
        assert_eq!(SealKey::from_hex(&key.to_hex()), Ok(key.clone()));
        assert!(SealKey::from_hex("abc").is_err());
        assert!(SealKey::from_hex(&"zz".repeat(32)).is_err());
        assert_eq!(format!("{key:?}"), "SealKey(..)");
        assert!(!format!("{:?}", options()).contains("sk-test"));
    }
}
