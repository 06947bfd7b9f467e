//! JSON-RPC 2.0 as MCP uses it: a POST body holds one message or a batch of them; a request
//! is answered by a response with its id, a notification (no id) by nothing.

use serde_json::{Value, json};

/// The error codes JSON-RPC defines, and MCP's for a resource that does not exist.
pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// A JSON-RPC error: its code and a message for the client.
#[derive(Debug, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    pub fn new(code: i64, message: impl ToString) -> RpcError {
        let message = pondra_cluster::bounded_message(message.to_string());
        RpcError { code, message }
    }

    pub fn invalid_params(message: impl ToString) -> RpcError {
        RpcError::new(INVALID_PARAMS, message)
    }

    /// The error response to the request `id` (null when the request's id is unknown).
    pub fn response(&self, id: Value) -> Value {
        json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": self.code, "message": self.message},
        })
    }
}

/// One message of a POST body.
#[derive(Debug)]
pub enum Message {
    /// A call the client awaits an answer to.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// A notification, or the client's answer to a request (this server sends none): both
    /// are taken without an answer.
    NoAnswer,
}

/// The messages of a POST body, and whether they came as a batch (answered as an array).
pub fn parse_body(body: &[u8]) -> Result<(Vec<Value>, bool), RpcError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| RpcError::new(PARSE_ERROR, format!("the body is not JSON: {e}")))?;
    match value {
        Value::Array(messages) if messages.is_empty() => Err(RpcError::new(
            INVALID_REQUEST,
            "an empty batch holds no message",
        )),
        Value::Array(messages) => Ok((messages, true)),
        single => Ok((vec![single], false)),
    }
}

/// Classifies one message; the error carries the id to answer it under, when it has one.
pub fn message(value: Value) -> Result<Message, (Value, RpcError)> {
    let Value::Object(mut fields) = value else {
        let error = RpcError::new(INVALID_REQUEST, "a JSON-RPC message is an object");
        return Err((Value::Null, error));
    };
    let id = fields.remove("id");
    let invalid = |id: Option<Value>, why: &str| {
        let error = RpcError::new(INVALID_REQUEST, why);
        (id.unwrap_or(Value::Null), error)
    };
    if fields.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return Err(invalid(id, "a JSON-RPC message has \"jsonrpc\": \"2.0\""));
    }
    if let Some(id) = &id
        && !(id.is_string() || id.is_i64() || id.is_u64())
    {
        return Err(invalid(None, "a request's id is a string or an integer"));
    }
    let method = match fields.remove("method") {
        Some(Value::String(method)) => method,
        Some(_) => return Err(invalid(id, "a method is a string")),
        None if fields.contains_key("result") || fields.contains_key("error") => {
            return Ok(Message::NoAnswer);
        }
        None => return Err(invalid(id, "a request names its method")),
    };
    let Some(id) = id else {
        return Ok(Message::NoAnswer);
    };
    let params = fields.remove("params").unwrap_or(Value::Null);
    if !(params.is_object() || params.is_null()) {
        return Err((id, RpcError::invalid_params("params are an object")));
    }
    Ok(Message::Request { id, method, params })
}

/// The response carrying `result` to the request `id`.
pub fn success(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// The string parameter `name` of `params`.
pub fn string_param<'a>(params: &'a Value, name: &str) -> Result<&'a str, RpcError> {
    match params.get(name) {
        Some(Value::String(text)) => Ok(text),
        Some(_) => Err(RpcError::invalid_params(format!("{name} is a string"))),
        None => Err(RpcError::invalid_params(format!(
            "the parameter {name} is missing"
        ))),
    }
}
