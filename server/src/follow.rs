//! A `pondra sql` process on a lake a server leads (ADR 0053): it finds the leader by its beat,
//! prepares its writes itself, and hands each commit to the leader over HTTP.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use pondra_cluster::{
    CatalogError, ForwardedCommit, LAPSE, Lake, Leader, beat_of, highest_term, latest_beat,
    term_beats,
};

/// How long a probe of the leader's door waits.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// How long a commit keeps retrying a leader that does not answer.
const COMMIT_PATIENCE: Duration = Duration::from_secs(10);

/// The leader of `lake` this process should hand its commits to: the term and address of a
/// leader that answers; none when no leader lives (its term ended, or its beat stood still
/// for a lapse). A leader that beats but does not answer is an error. A term whose leader has
/// not beaten yet is one starting: it has a lapse to beat before it is taken for dead.
pub async fn live_leader(lake: &Lake) -> Result<Option<(u64, String)>, String> {
    let started = tokio::time::Instant::now();
    let beat = loop {
        let term = highest_term(lake).await.map_err(|e| e.to_string())?;
        if term == 0 {
            return Ok(None);
        }
        match beat_of(lake, term).await.map_err(|e| e.to_string())? {
            Some(beat) => break beat,
            // A process that never beats (`pondra sql`) took it: it leads no one else.
            None if !term_beats(lake, term).await.map_err(|e| e.to_string())? => {
                return Ok(None);
            }
            None if started.elapsed() < LAPSE => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            None => return Ok(None),
        }
    };
    if beat.ended {
        return Ok(None);
    }
    let client = client(PROBE_TIMEOUT)?;
    let health = format!("http://{}/health", beat.addr);
    if client
        .get(&health)
        .send()
        .await
        .is_ok_and(|r| r.status().is_success())
    {
        return Ok(Some((beat.term, beat.addr)));
    }
    // No answer: a leader that still beats is alive but out of reach; one whose beat stands
    // still for a lapse is dead.
    tokio::time::sleep(LAPSE).await;
    match latest_beat(lake).await.map_err(|e| e.to_string())? {
        Some(now) if now.term == beat.term && now.count != beat.count && !now.ended => {
            Err(format!(
                "the leader of this lake at {} is alive but does not answer here",
                beat.addr
            ))
        }
        _ => Ok(None),
    }
}

fn client(timeout: Duration) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .timeout(timeout)
        .build()
        .map_err(|e| format!("cannot make an HTTP client: {e}"))
}

/// The leader's HTTP door, which takes commits at `POST /cluster/commit`. Its address changes
/// when another node takes the lead, and a commit being retried goes to the new one.
pub struct HttpLeader {
    addr: std::sync::RwLock<String>,
    token: Option<String>,
    client: reqwest::Client,
}

impl HttpLeader {
    /// The leader at `addr`; `token` (an admin token, from `PONDRA_TOKEN`) when it asks for one.
    pub fn new(addr: &str, token: Option<String>) -> Result<Arc<HttpLeader>, String> {
        Ok(Arc::new(HttpLeader {
            addr: std::sync::RwLock::new(addr.to_string()),
            token,
            client: client(Duration::from_secs(30))?,
        }))
    }

    /// Sends commits to the leader at `addr` from now on.
    pub fn set_addr(&self, addr: &str) {
        *self.addr.write().expect("leader address lock") = addr.to_string();
    }

    /// One attempt: the commit number, or whether the failure may pass on a retry.
    async fn attempt(&self, body: &str) -> Result<u64, (bool, CatalogError)> {
        let addr = self.addr.read().expect("leader address lock").clone();
        let url = format!("http://{addr}/cluster/commit");
        let mut request = self.client.post(&url).body(body.to_string());
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        let response = match request.send().await {
            Ok(response) => response,
            // The answer may be lost after the leader committed: the retry names the same
            // (producer, sequence), which commits once.
            Err(e) => return Err((true, store_error(format!("the leader: {e}")))),
        };
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        let message = json["error"].as_str().unwrap_or(&text).to_string();
        match status.as_u16() {
            200 => json["commit"]
                .as_u64()
                .ok_or_else(|| (false, store_error(format!("the leader answered {text}")))),
            409 => Err((false, CatalogError::Conflict(message))),
            500..=599 => Err((true, store_error(message))),
            _ => Err((false, store_error(message))),
        }
    }
}

fn store_error(message: String) -> CatalogError {
    CatalogError::Store(message)
}

impl Leader for HttpLeader {
    fn commit(
        &self,
        commit: ForwardedCommit,
    ) -> Pin<Box<dyn Future<Output = Result<u64, CatalogError>> + Send + '_>> {
        Box::pin(async move {
            let body = serde_json::to_string(&commit).expect("a commit is JSON");
            let started = tokio::time::Instant::now();
            loop {
                match self.attempt(&body).await {
                    Ok(commit) => return Ok(commit),
                    Err((true, _)) if started.elapsed() < COMMIT_PATIENCE => {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                    Err((_, error)) => return Err(error),
                }
            }
        })
    }
}
