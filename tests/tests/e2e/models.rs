//! Secrets and models in SQL (ADR 0082) through `pondra sql` processes on one lake, against an
//! OpenAI-compatible endpoint of the test's own (`models/endpoint.rs`): a batch's distinct
//! inputs in one embeddings request, a 429 asked again, answers kept in the lake so that
//! another process asks nothing, completions, the endpoint's errors, a statement timeout
//! while the endpoint is slow, and a secret that never reaches the lake in the clear.

mod endpoint;

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::{pondra, stderr, stdout};
use endpoint::Endpoint;

/// The API key the secret holds: it must appear nowhere in the lake's files.
const API_KEY: &str = "sk-test-4f1c9e0d";

/// `pondra sql --format csv` on `lake` with the variables `env`: its stdout, or its stderr
/// when it fails.
fn run(lake: &Path, env: &[(&str, &str)], sql: &str) -> Result<String, String> {
    let output = pondra()
        .envs(env.iter().copied())
        .args(["sql", "--format", "csv", "--dir"])
        .arg(lake)
        .arg(sql)
        .output()
        .unwrap();
    match output.status.success() {
        true => Ok(stdout(&output)),
        false => Err(stderr(&output)),
    }
}

fn ok(lake: &Path, sql: &str) -> String {
    run(lake, &[], sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn fails(lake: &Path, sql: &str) -> String {
    match run(lake, &[], sql) {
        Ok(out) => panic!("{sql} answered {out}"),
        Err(e) => e,
    }
}

#[test]
fn models_answer_in_batches_through_retries_and_from_the_lake() {
    let endpoint = Endpoint::start();
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    ok(
        &lake,
        &format!(
            "CREATE SECRET ai (TYPE openai, BASE_URL '{}', API_KEY '{API_KEY}'); \
             CREATE TABLE docs (id INT, body VARCHAR); \
             INSERT INTO docs VALUES (1, 'alpha'), (2, 'beta'), (3, 'alpha'), (4, NULL), (5, 'gamma')",
            endpoint.base_url()
        ),
    );
    let listed = ok(&lake, "SELECT * FROM duckdb_secrets()");
    assert_eq!(
        listed,
        "name,type,provider,persistent,storage\nai,openai,config,true,lake\n"
    );

    // Five rows, three distinct texts and a NULL: one request with the three, asked again
    // after the first answer's 429.
    let query = "SELECT id, ai_embed(body) AS v FROM docs ORDER BY id";
    let embedded = ok(&lake, query);
    let requests = endpoint.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    for request in &requests {
        assert_eq!(request.path, "/v1/embeddings");
        assert_eq!(request.authorization, format!("Bearer {API_KEY}"));
        assert_eq!(request.body["model"], "text-embedding-3-small");
        assert_eq!(
            request.body["input"],
            serde_json::json!(["alpha", "beta", "gamma"])
        );
    }
    // Each vector in the inputs' order, whatever order the endpoint listed them in.
    let expected = "id,v\n1,\"{5.0,97.0,0.5}\"\n2,\"{4.0,98.0,0.5}\"\n3,\"{5.0,97.0,0.5}\"\n4,\n\
                    5,\"{5.0,103.0,0.5}\"\n";
    assert_eq!(embedded, expected);

    // Another process reads the answers the first kept in the lake, and asks nothing.
    assert_eq!(ok(&lake, query), embedded);
    assert_eq!(endpoint.requests().len(), 2);
    assert!(lake.join("cluster/seal.key").exists());

    let completed = ok(
        &lake,
        "SELECT ai_complete('say ' || body, 'chat-small') FROM docs WHERE id <= 2 ORDER BY id",
    );
    assert_eq!(
        completed.lines().skip(1).collect::<Vec<_>>(),
        ["echo: say alpha", "echo: say beta"]
    );
    let chats = endpoint.requests_for("chat-small");
    assert_eq!(chats.len(), 2, "{chats:?}");
    assert!(chats.iter().all(|r| r.path == "/v1/chat/completions"));
    assert_eq!(chats[0].body["messages"][0]["role"], "user");

    assert_never_in_the_clear(&lake);
}

#[test]
fn endpoint_failures_fail_the_statement_with_their_message() {
    let endpoint = Endpoint::start();
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let create = format!(
        "CREATE SECRET ai (TYPE openai, BASE_URL '{}', API_KEY '{API_KEY}')",
        endpoint.base_url()
    );
    let no_secret = fails(&lake, "SELECT ai_complete('hello')");
    assert!(no_secret.contains("CREATE SECRET"), "{no_secret}");
    ok(&lake, &create);
    // The first answer of all is a 429; the one asked again says the model does not exist.
    let refused = fails(&lake, "SELECT ai_complete('hello', 'broken')");
    assert!(
        refused.contains("The model `broken` does not exist"),
        "{refused}"
    );
    assert!(refused.contains("404"), "{refused}");
    assert_eq!(endpoint.requests_for("broken").len(), 2);

    // 503 every time: asked 5 times again, then the statement fails.
    let flaky = fails(&lake, "SELECT ai_embed('hello', 'flaky')");
    assert!(flaky.contains("503"), "{flaky}");
    assert_eq!(endpoint.requests_for("flaky").len(), 6);

    // A slow endpoint does not hold a statement past its timeout.
    let started = Instant::now();
    let slow = fails(
        &lake,
        "SET statement_timeout = '1s'; SELECT ai_complete('hello', 'slow')",
    );
    assert!(slow.contains("statement timeout"), "{slow}");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );

    // Another sealing key does not open the secret, and says which variable sets the key.
    let other_key = "ab".repeat(32);
    let wrong = run(
        &lake,
        &[("PONDRA_SEAL_KEY", &other_key)],
        "SELECT ai_complete('hi')",
    );
    let wrong = wrong.expect_err("a secret opened with another key");
    assert!(wrong.contains("PONDRA_SEAL_KEY"), "{wrong}");
    assert_never_in_the_clear(&lake);
}

#[test]
fn a_sealing_key_from_the_environment_seals_and_opens_secrets() {
    let endpoint = Endpoint::start();
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let key = "0123456789abcdef".repeat(4);
    let with_key = [("PONDRA_SEAL_KEY", key.as_str())];
    let create = format!(
        "CREATE SECRET ai (TYPE openai, BASE_URL '{}', API_KEY '{API_KEY}')",
        endpoint.base_url()
    );
    run(&lake, &with_key, &create).unwrap();
    assert!(
        !lake.join("cluster/seal.key").exists(),
        "the lake made a key of its own"
    );
    let answer = run(&lake, &with_key, "SELECT ai_complete('hi', 'chat') AS a").unwrap();
    assert_eq!(answer, "a\necho: hi\n");
    let without = fails(&lake, "SELECT ai_complete('other', 'chat')");
    assert!(without.contains("PONDRA_SEAL_KEY is not set"), "{without}");
    let malformed = run(
        &lake,
        &[("PONDRA_SEAL_KEY", "abc")],
        "SELECT ai_complete('x')",
    );
    let malformed = malformed.expect_err("a key of three digits");
    assert!(
        malformed.contains("PONDRA_SEAL_KEY: a sealing key is 64 hex digits"),
        "{malformed}"
    );
    assert_never_in_the_clear(&lake);
}

/// No file of the lake holds the API key.
fn assert_never_in_the_clear(lake: &Path) {
    for entry in std::fs::read_dir(lake).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            assert_never_in_the_clear(&path);
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let found = bytes
            .windows(API_KEY.len())
            .any(|w| w == API_KEY.as_bytes());
        assert!(!found, "{} holds the API key", path.display());
    }
}
