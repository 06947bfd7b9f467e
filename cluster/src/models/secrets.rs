//! Secrets (ADR 0082) where they are sealed and opened: `CREATE SECRET` seals its options with
//! the sealing key, `PONDRA_SEAL_KEY` when set, else the lake's own, made by the first `CREATE
//! SECRET` as `cluster/seal.key` (created only if absent, so that processes racing to make it
//! agree on the one that won). A model call opens the secret of type `openai`.

use bytes::Bytes;
use pondra_catalog::{
    Change, SEAL_KEY_OBJECT, SEAL_KEY_VARIABLE, SealKey, SealedSecret, SecretOptions, Snapshot,
};
use pondra_planner::OPENAI_SECRET_TYPE;
use pondra_storage::StorageError;

use super::openai::Endpoint;
use crate::node::Node;
use crate::writes::commit::Prepared;
use crate::{NodeError, Result};

/// The session parameter naming the secret model calls use when several are of type `openai`.
pub(crate) const SECRET_SETTING: &str = "pondra.ai_secret";

impl Node {
    /// `CREATE SECRET`'s change: the options sealed under `name`.
    pub(crate) async fn prepare_create_secret(
        &self,
        snapshot: &Snapshot,
        name: String,
        options: SecretOptions,
        or_replace: bool,
        if_not_exists: bool,
    ) -> Result<Prepared> {
        const TAG: &str = "CREATE SECRET";
        if snapshot.secrets.contains_key(&name) {
            if if_not_exists {
                return Ok(Prepared::new(Vec::new(), TAG));
            }
            if !or_replace {
                return Err(NodeError::Other(format!("secret {name} already exists")));
            }
        }
        let key = self.seal_key(true).await?.expect("made when missing");
        let secret = key.seal(&name, &options);
        Ok(Prepared::new(vec![Change::SaveSecret { secret }], TAG))
    }

    /// The endpoint of the secret of type `openai` a model call uses: the one `chosen` names
    /// (`SET pondra.ai_secret`), else the only one.
    pub(crate) async fn model_endpoint(&self, chosen: Option<&str>) -> Result<Endpoint> {
        let snapshot = self.snapshot();
        let secret = openai_secret(&snapshot, chosen)?;
        let Some(key) = self.seal_key(false).await? else {
            return Err(NodeError::Other(format!(
                "secret {} cannot be opened: {SEAL_KEY_VARIABLE} is not set and the lake has no \
                 {SEAL_KEY_OBJECT}",
                secret.name
            )));
        };
        let options = key
            .open(&secret)
            .map_err(|e| NodeError::Other(e.to_string()))?;
        Ok(Endpoint::new(&secret.name, &options))
    }

    /// The sealing key: `PONDRA_SEAL_KEY`, else the lake's `cluster/seal.key`, made first
    /// with `create`; none when neither is there and not to be made.
    async fn seal_key(&self, create: bool) -> Result<Option<SealKey>> {
        if let Ok(text) = std::env::var(SEAL_KEY_VARIABLE) {
            let key = SealKey::from_hex(&text)
                .map_err(|e| NodeError::Other(format!("{SEAL_KEY_VARIABLE}: {e}")))?;
            return Ok(Some(key));
        }
        match self.read_lake_key().await? {
            Some(key) => Ok(Some(key)),
            None if create => Ok(Some(self.make_lake_key().await?)),
            None => Ok(None),
        }
    }

    /// The lake's `cluster/seal.key`, if it has one.
    async fn read_lake_key(&self) -> Result<Option<SealKey>> {
        let bytes = match self.lake.get(SEAL_KEY_OBJECT).await {
            Ok(bytes) => bytes,
            Err(StorageError::ObjectStore(object_store::Error::NotFound { .. })) => {
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        let text = String::from_utf8_lossy(&bytes);
        let key = SealKey::from_hex(&text).map_err(|e| {
            NodeError::Other(format!(
                "the lake's {SEAL_KEY_OBJECT} is not a sealing key: {e}"
            ))
        })?;
        Ok(Some(key))
    }

    /// Makes the lake's `cluster/seal.key`, or reads the one another process made first.
    async fn make_lake_key(&self) -> Result<SealKey> {
        let key = SealKey::generate();
        let written = Bytes::from(key.to_hex());
        match self.lake.put_if_absent(SEAL_KEY_OBJECT, written).await {
            Ok(()) => Ok(key),
            Err(StorageError::AlreadyExists(_)) => {
                let made = self.read_lake_key().await?;
                Ok(made.expect("the key another process made is there"))
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// `DROP SECRET`'s change.
pub(crate) fn prepare_drop_secret(
    snapshot: &Snapshot,
    name: String,
    if_exists: bool,
) -> Result<Prepared> {
    const TAG: &str = "DROP SECRET";
    if !snapshot.secrets.contains_key(&name) {
        return match if_exists {
            true => Ok(Prepared::new(Vec::new(), TAG)),
            false => Err(NodeError::Other(format!("secret {name} does not exist"))),
        };
    }
    Ok(Prepared::new(vec![Change::DropSecret { name }], TAG))
}

/// The secret of type `openai` a model call uses: the one named `chosen`, else the only one.
fn openai_secret(snapshot: &Snapshot, chosen: Option<&str>) -> Result<SealedSecret> {
    let openai: Vec<&SealedSecret> = snapshot
        .secrets
        .values()
        .map(|secret| secret.as_ref())
        .filter(|secret| secret.secret_type == OPENAI_SECRET_TYPE)
        .collect();
    if let Some(chosen) = chosen {
        return openai
            .into_iter()
            .find(|secret| secret.name == chosen)
            .cloned()
            .ok_or_else(|| {
                NodeError::Other(format!(
                    "{SECRET_SETTING} names {chosen}, which is no secret of type {OPENAI_SECRET_TYPE}"
                ))
            });
    }
    match openai.as_slice() {
        [secret] => Ok((*secret).clone()),
        [] => Err(NodeError::Other(format!(
            "no secret of type {OPENAI_SECRET_TYPE} to reach a model with: CREATE SECRET name \
             (TYPE {OPENAI_SECRET_TYPE}, BASE_URL '...', API_KEY '...') first"
        ))),
        several => {
            let names: Vec<&str> = several.iter().map(|s| s.name.as_str()).collect();
            Err(NodeError::Other(format!(
                "secrets {} are all of type {OPENAI_SECRET_TYPE}: choose one with SET \
                 {SECRET_SETTING} = 'name'",
                names.join(", ")
            )))
        }
    }
}
