//! An OpenAI-compatible endpoint of the test's own on loopback: it records every request and
//! answers deterministically. The first request it gets is answered 429, once; model
//! `broken` is refused with OpenAI's error body, `flaky` always answers 503 (with a
//! `Retry-After` of 0), and `slow` answers after 5 s.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// One request the endpoint got.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub path: String,
    pub authorization: String,
    pub body: Value,
}

pub struct Endpoint {
    pub address: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl Endpoint {
    /// Listens on a loopback port of its own, answering each connection on a thread.
    pub fn start() -> Endpoint {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let requests: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let recorded = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let recorded = recorded.clone();
                std::thread::spawn(move || serve(stream, &recorded));
            }
        });
        Endpoint { address, requests }
    }

    /// The base URL a secret names.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    /// Every request so far, in the order they came.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// The requests so far whose body names `model`.
    pub fn requests_for(&self, model: &str) -> Vec<Recorded> {
        let named = |r: &Recorded| r.body["model"] == model;
        self.requests().into_iter().filter(named).collect()
    }
}

/// Answers the requests of one connection until the client closes it.
fn serve(stream: TcpStream, recorded: &Mutex<Vec<Recorded>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    while let Some(request) = read_request(&mut reader) {
        let first = {
            let mut requests = recorded.lock().unwrap();
            requests.push(request.clone());
            requests.len() == 1
        };
        let (status, headers, body) = answer(&request, first);
        let head = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{headers}\r\n",
            body.len()
        );
        if writer.write_all(head.as_bytes()).is_err() || writer.write_all(body.as_bytes()).is_err()
        {
            return;
        }
    }
}

/// The next request on the connection: its path, bearer and JSON body.
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Recorded> {
    let mut line = String::new();
    reader.read_line(&mut line).ok().filter(|&n| n > 0)?;
    let path = line.split_whitespace().nth(1)?.to_string();
    let (mut length, mut authorization) = (0, String::new());
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().ok()?,
            "authorization" => authorization = value.trim().to_string(),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(Recorded {
        path,
        authorization,
        body,
    })
}

/// The status line's code and reason, extra header lines, and the body for `request`.
fn answer(request: &Recorded, first: bool) -> (&'static str, &'static str, String) {
    let model = request.body["model"].as_str().unwrap_or_default();
    if first {
        let body = json!({"error": {"message": "Rate limit reached"}});
        return ("429 Too Many Requests", "", body.to_string());
    }
    match model {
        "broken" => {
            let body = json!({"error": {"message": "The model `broken` does not exist"}});
            return ("404 Not Found", "", body.to_string());
        }
        "flaky" => return ("503 Service Unavailable", "retry-after: 0\r\n", "{}".into()),
        "slow" => std::thread::sleep(Duration::from_secs(5)),
        _ => {}
    }
    let body = match request.path.as_str() {
        "/v1/embeddings" => embeddings(&request.body["input"]),
        "/v1/chat/completions" => {
            let prompt = request.body["messages"][0]["content"]
                .as_str()
                .unwrap_or("");
            json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": format!("echo: {prompt}")}}]})
        }
        _ => return ("404 Not Found", "", "{}".into()),
    };
    ("200 OK", "", body.to_string())
}

/// Each input's embedding: its length, its first byte and one half, listed last first, each
/// with its index, as an endpoint may order them.
fn embeddings(inputs: &Value) -> Value {
    let inputs = inputs.as_array().cloned().unwrap_or_default();
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .rev()
        .map(|(index, input)| {
            let text = input.as_str().unwrap_or_default();
            let first = text.bytes().next().unwrap_or(0);
            json!({"index": index, "embedding": [text.len() as f64, first as f64, 0.5]})
        })
        .collect();
    json!({"object": "list", "data": data})
}
