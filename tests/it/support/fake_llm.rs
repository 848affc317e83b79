//! A scripted OpenAI-compatible `/v1/chat/completions` server: each request gets the next
//! scripted reply (the last one repeats when the script runs out), and every request's
//! headers and JSON body are recorded for assertions. `start_slow` answers each request
//! after a delay, like a real model on a small CPU (to watch an investigation run).

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

/// One scripted answer.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

/// One received request.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub headers: Vec<(String, String)>,
    pub body: Value,
    pub raw: String,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn messages(&self) -> &Vec<Value> {
        self.body["messages"].as_array().expect("messages array")
    }

    /// The tool messages' contents of this request.
    pub fn tool_results(&self) -> Vec<String> {
        self.messages()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// Whether the request offers tools the model may call (a final call sends them with
    /// `tool_choice: "none"`).
    pub fn has_tools(&self) -> bool {
        self.body
            .get("tools")
            .is_some_and(|t| t.as_array().is_some_and(|a| !a.is_empty()))
            && self.body["tool_choice"] != "none"
    }
}

#[derive(Default)]
struct Shared {
    script: Vec<Reply>,
    next: usize,
    requests: Vec<Recorded>,
    delay: std::time::Duration,
    /// Pick the reply by the request's turn (its assistant messages so far) instead of by
    /// arrival: a run retried after a crash starts the script again.
    by_turn: bool,
    /// The reply to a request that offers no tools (the final call at a limit), when set.
    without_tools: Option<Reply>,
}

/// The running fake; stops when dropped.
pub struct FakeLlm {
    /// The base URL to configure as `llm.base_url` (ends with /v1).
    pub url: String,
    shared: Arc<Mutex<Shared>>,
    handle: tokio::task::JoinHandle<()>,
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        self.handle.abort();
    }
}

impl FakeLlm {
    pub async fn start(script: Vec<Reply>) -> FakeLlm {
        Self::start_slow(script, std::time::Duration::ZERO).await
    }

    /// A fake whose reply is picked by the conversation's turn: the first request of every
    /// investigation gets `script[0]`, the one after one assistant message `script[1]`, …
    pub async fn start_by_turn(script: Vec<Reply>) -> FakeLlm {
        let fake = Self::start(script).await;
        fake.shared.lock().unwrap().by_turn = true;
        fake
    }

    /// A fake that waits `delay` before each answer.
    pub async fn start_slow(script: Vec<Reply>, delay: std::time::Duration) -> FakeLlm {
        let shared = Arc::new(Mutex::new(Shared {
            script,
            delay,
            ..Default::default()
        }));
        let app = Router::new()
            .route("/v1/chat/completions", post(handle))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let handle = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        FakeLlm {
            url: format!("http://{addr}/v1"),
            shared,
            handle,
        }
    }

    /// Answers every request that offers no tools with `reply`, whatever the script says.
    pub fn answer_without_tools(&self, reply: Reply) {
        self.shared.lock().unwrap().without_tools = Some(reply);
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.lock().unwrap().requests.clone()
    }

    /// `[llm]` TOML pointing at this fake.
    pub fn config(&self, extra: &str) -> String {
        format!(
            "[llm]\nbase_url = \"{}\"\nmodel = \"fake-model\"\n{extra}\n\
             [llm.pricing.\"fake-model\"]\ninput_per_million = 2.0\n\
             output_per_million = 8.0\ncached_input_per_million = 0.5\n",
            self.url
        )
    }
}

async fn handle(
    State(shared): State<Arc<Mutex<Shared>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let reply = next_reply(&shared, &headers, &body);
    let delay = shared.lock().unwrap().delay;
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let Some(reply) = reply else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "empty script").into_response();
    };
    let mut resp = (
        StatusCode::from_u16(reply.status).unwrap(),
        axum::Json(reply.body),
    )
        .into_response();
    for (k, v) in reply.headers {
        resp.headers_mut().insert(
            axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    resp
}

/// Records the request and picks its scripted reply.
fn next_reply(shared: &Mutex<Shared>, headers: &HeaderMap, body: &Bytes) -> Option<Reply> {
    let raw = String::from_utf8_lossy(body).into_owned();
    let mut s = shared.lock().unwrap();
    s.requests.push(Recorded {
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_string()))
            .collect(),
        body: serde_json::from_str(&raw).unwrap_or(Value::Null),
        raw,
    });
    if let Some(r) = s.without_tools.clone()
        && !s.requests.last().is_some_and(Recorded::has_tools)
    {
        return Some(r);
    }
    let turn = if s.by_turn {
        s.requests.last().map_or(0, |r| {
            r.body["messages"]
                .as_array()
                .map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count())
        })
    } else {
        s.next
    };
    let idx = turn.min(s.script.len().saturating_sub(1));
    s.next += 1;
    s.script.get(idx).cloned()
}

fn usage(prompt: u64, completion: u64, cached: u64) -> Value {
    json!({"prompt_tokens": prompt, "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached}})
}

/// A reply with tool calls `(id, name, arguments JSON text)`.
pub fn tool_calls(calls: &[(&str, &str, &str)], tokens: (u64, u64, u64)) -> Reply {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| {
            json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
        })
        .collect();
    Reply {
        status: 200,
        headers: Vec::new(),
        body: json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "fake-model",
            "choices": [{"index": 0, "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": null, "tool_calls": calls}}],
            "usage": usage(tokens.0, tokens.1, tokens.2)}),
    }
}

/// A final answer with `content`.
pub fn answer(content: &str, tokens: (u64, u64, u64)) -> Reply {
    Reply {
        status: 200,
        headers: Vec::new(),
        body: json!({"id": "chatcmpl-2", "object": "chat.completion", "model": "fake-model",
            "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": content}}],
            "usage": usage(tokens.0, tokens.1, tokens.2)}),
    }
}

/// A JSON finding as the model would write it.
pub fn finding_json(summary: &str, call_id: &str) -> String {
    json!({"summary": summary, "probable_cause": "a test cause", "severity": "warning",
        "confidence": "high", "evidence": [{"claim": "seen in a tool result",
        "tool_call_ids": [call_id]}], "next_steps": ["check the thing"]})
    .to_string()
}

/// An OpenAI-shaped error reply.
pub fn error(status: u16, message: &str, headers: &[(&str, &str)]) -> Reply {
    Reply {
        status,
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        body: json!({"error": {"message": message, "type": "test_error", "param": null,
            "code": null}}),
    }
}
