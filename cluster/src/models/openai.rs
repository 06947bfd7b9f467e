//! An OpenAI-compatible endpoint (ADR 0082): `POST {BASE_URL}/embeddings` with up to 256
//! inputs a request, and `POST {BASE_URL}/chat/completions` with one prompt a request, a few at
//! once; the bearer is the secret's `API_KEY`. A 429 or 5xx answer is asked again, up to 5
//! times, after the `Retry-After` the endpoint names or a backoff from 200 ms; any other
//! failure is the statement's error, with the endpoint's own message.

use std::sync::OnceLock;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use pondra_catalog::SecretOptions;
use serde_json::{Value, json};

/// The base URL of a secret that names none: OpenAI's.
const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// The most inputs one embeddings request carries.
pub(crate) const EMBEDDINGS_PER_REQUEST: usize = 256;

/// How many requests of one call are in flight at once.
const REQUESTS_AT_ONCE: usize = 4;

/// How many times an answer of 429 or 5xx is asked again.
const RETRIES: u32 = 5;

/// The wait before the first retry; each next one waits twice as long.
const FIRST_BACKOFF: Duration = Duration::from_millis(200);

/// The longest wait before a retry, whatever `Retry-After` says.
const LONGEST_BACKOFF: Duration = Duration::from_secs(30);

/// How long one request may take, from connecting to the last byte of its answer.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How much of an answer that is not the endpoint's JSON error an error message quotes.
const QUOTED_BODY_CHARS: usize = 300;

/// The endpoint of one secret.
pub(crate) struct Endpoint {
    secret: String,
    base_url: String,
    api_key: Option<String>,
}

impl Endpoint {
    /// The endpoint the options of secret `secret` name.
    pub(crate) fn new(secret: &str, options: &SecretOptions) -> Endpoint {
        let base_url = options
            .options
            .get("base_url")
            .map_or(OPENAI_BASE_URL, String::as_str);
        Endpoint {
            secret: secret.to_string(),
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key: options.options.get("api_key").cloned(),
        }
    }

    /// `model`'s embedding of each of `inputs`, in order.
    pub(crate) async fn embed(
        &self,
        model: &str,
        inputs: Vec<String>,
    ) -> Result<Vec<Vec<f32>>, String> {
        let requests: Vec<_> = inputs
            .chunks(EMBEDDINGS_PER_REQUEST)
            .map(|chunk| self.embed_chunk(model, chunk))
            .collect();
        let chunks: Vec<Vec<Vec<f32>>> = futures::stream::iter(requests)
            .buffered(REQUESTS_AT_ONCE)
            .try_collect()
            .await?;
        Ok(chunks.into_iter().flatten().collect())
    }

    /// `model`'s answer to each of `prompts`, in order.
    pub(crate) async fn complete(
        &self,
        model: &str,
        prompts: Vec<String>,
    ) -> Result<Vec<String>, String> {
        let requests: Vec<_> = prompts
            .iter()
            .map(|prompt| self.complete_one(model, prompt))
            .collect();
        futures::stream::iter(requests)
            .buffered(REQUESTS_AT_ONCE)
            .try_collect()
            .await
    }

    /// One embeddings request: `chunk`'s vectors.
    async fn embed_chunk(&self, model: &str, chunk: &[String]) -> Result<Vec<Vec<f32>>, String> {
        let body = json!({ "model": model, "input": chunk });
        let answer = self.post("embeddings", &body).await?;
        self.embeddings(&answer, chunk.len())
    }

    /// One chat completions request: the model's answer to `prompt`.
    async fn complete_one(&self, model: &str, prompt: &str) -> Result<String, String> {
        let body = json!({
            "model": model,
            "messages": [{ "role": "user", "content": prompt }],
        });
        let answer = self.post("chat/completions", &body).await?;
        answer["choices"][0]["message"]["content"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| self.malformed("chat/completions", "choices[0].message.content"))
    }

    /// The vectors of an embeddings answer to `count` inputs, in the inputs' order.
    fn embeddings(&self, answer: &Value, count: usize) -> Result<Vec<Vec<f32>>, String> {
        let malformed = || self.malformed("embeddings", "data[].embedding");
        let mut data: Vec<&Value> = answer["data"]
            .as_array()
            .ok_or_else(malformed)?
            .iter()
            .collect();
        if data.len() != count {
            return Err(format!(
                "the endpoint of secret {} gave {} embeddings for {count} inputs",
                self.secret,
                data.len()
            ));
        }
        // Each names the input it embeds; an answer without indexes is in the inputs' order.
        data.sort_by_key(|item| item["index"].as_u64().unwrap_or(0));
        data.iter()
            .map(|item| {
                let values = item["embedding"].as_array().ok_or_else(malformed)?;
                values
                    .iter()
                    .map(|v| v.as_f64().map(|v| v as f32).ok_or_else(malformed))
                    .collect()
            })
            .collect()
    }

    fn malformed(&self, path: &str, expected: &str) -> String {
        format!(
            "the endpoint of secret {} answered {path} without {expected}",
            self.secret
        )
    }

    /// POSTs `body` to `{base_url}/{path}` and returns the answer's JSON: 429 and 5xx asked
    /// again, other failures the endpoint's message.
    async fn post(&self, path: &str, body: &Value) -> Result<Value, String> {
        let url = format!("{}/{path}", self.base_url);
        let client = client()?;
        for attempt in 0..=RETRIES {
            let mut request = client
                .post(&url)
                .header("content-type", "application/json")
                .body(body.to_string());
            if let Some(key) = &self.api_key {
                request = request.bearer_auth(key);
            }
            let response = request
                .send()
                .await
                .map_err(|e| self.failed_request(&url, &e))?;
            let status = response.status();
            let retry_after = retry_after(response.headers());
            let bytes = response
                .bytes()
                .await
                .map_err(|e| self.failed_request(&url, &e))?;
            if status.is_success() {
                return serde_json::from_slice(&bytes).map_err(|e| {
                    format!(
                        "the endpoint of secret {} answered {url} with no JSON: {e}",
                        self.secret
                    )
                });
            }
            let retried = status.as_u16() == 429 || status.is_server_error();
            if !retried || attempt == RETRIES {
                return Err(format!(
                    "the endpoint of secret {} answered {url} with {status}: {}",
                    self.secret,
                    error_message(&bytes)
                ));
            }
            let backoff = FIRST_BACKOFF * 2u32.pow(attempt);
            tokio::time::sleep(retry_after.unwrap_or(backoff).min(LONGEST_BACKOFF)).await;
        }
        unreachable!("the last attempt returns")
    }

    fn failed_request(&self, url: &str, error: &reqwest::Error) -> String {
        match error.is_timeout() {
            true => format!(
                "the endpoint of secret {} did not answer {url} within {} s",
                self.secret,
                REQUEST_TIMEOUT.as_secs()
            ),
            false => format!(
                "cannot reach the endpoint of secret {} at {url}: {error}",
                self.secret
            ),
        }
    }
}

/// The process's HTTP client: its connections are kept between statements.
fn client() -> Result<&'static reqwest::Client, String> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            reqwest::Client::builder()
                .connect_timeout(CONNECT_TIMEOUT)
                .timeout(REQUEST_TIMEOUT)
                .build()
                .map_err(|e| format!("cannot make an HTTP client for model endpoints: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The wait a `Retry-After` header of seconds names.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let text = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    let seconds: f64 = text.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
}

/// The message of an endpoint's failed answer: OpenAI's `{"error": {"message": ...}}` (or a
/// plain `error` or `message`), else the start of the body.
fn error_message(body: &[u8]) -> String {
    if let Ok(json) = serde_json::from_slice::<Value>(body) {
        let error = &json["error"];
        let message = error["message"]
            .as_str()
            .or_else(|| error.as_str())
            .or_else(|| json["message"].as_str());
        if let Some(message) = message {
            return message.to_string();
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    match text.char_indices().nth(QUOTED_BODY_CHARS) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_read_openais_message_or_quote_the_body() {
        let openai = br#"{"error": {"message": "Incorrect API key", "type": "invalid"}}"#;
        assert_eq!(error_message(openai), "Incorrect API key");
        assert_eq!(
            error_message(br#"{"error": "model not found"}"#),
            "model not found"
        );
        assert_eq!(error_message(b"  bad gateway \n"), "bad gateway");
        let long = "x".repeat(1000);
        assert_eq!(error_message(long.as_bytes()).len(), QUOTED_BODY_CHARS + 3);
    }

    #[test]
    fn embeddings_come_back_in_the_inputs_order() {
        let endpoint = Endpoint::new(
            "s",
            &SecretOptions {
                secret_type: "openai".into(),
                options: Default::default(),
            },
        );
        assert_eq!(endpoint.base_url, OPENAI_BASE_URL);
        let answer = json!({"data": [
            {"index": 1, "embedding": [2.0, 2.5]},
            {"index": 0, "embedding": [1.0, 1.5]},
        ]});
        let vectors = endpoint.embeddings(&answer, 2).unwrap();
        assert_eq!(vectors, vec![vec![1.0, 1.5], vec![2.0, 2.5]]);
        assert!(
            endpoint
                .embeddings(&answer, 3)
                .unwrap_err()
                .contains("2 embeddings for 3")
        );
    }
}
