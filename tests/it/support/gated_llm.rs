//! An OpenAI-compatible LLM that holds every request until its gate opens (never, if it is
//! not opened): for tests that need investigations running at a known moment (concurrency,
//! kill -9 mid-run). Once open it answers a tool call first and the finding after.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::routing::post;
use serde_json::Value;
use tokio::sync::watch;

use super::fake_llm::{Reply, answer, finding_json, tool_calls};

/// An LLM that holds every request until the gate opens (never, if it is not opened),
/// then answers a tool call first and the finding after; counts the requests it got.
pub struct GatedLlm {
    /// The base URL to configure as `llm.base_url` (ends with /v1).
    pub url: String,
    gate: watch::Sender<bool>,
    seen: Arc<std::sync::atomic::AtomicUsize>,
    handle: tokio::task::JoinHandle<()>,
}

impl Drop for GatedLlm {
    fn drop(&mut self) {
        self.handle.abort();
    }
}

type Gate = (watch::Receiver<bool>, Arc<std::sync::atomic::AtomicUsize>);

async fn gated_reply(State((mut gate, seen)): State<Gate>, body: String) -> axum::Json<Value> {
    seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let _ = gate.wait_for(|open| *open).await;
    let has_tool_result = body.contains("\"role\":\"tool\"");
    let reply: Reply = if has_tool_result {
        answer(&finding_json("all quiet", "call_1"), (100, 20, 0))
    } else {
        tool_calls(&[("call_1", "current_time", "{}")], (100, 20, 0))
    };
    axum::Json(reply.body)
}

impl GatedLlm {
    pub async fn start() -> GatedLlm {
        let (gate, rx) = watch::channel(false);
        let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let app = Router::new()
            .route("/v1/chat/completions", post(gated_reply))
            .with_state((rx, seen.clone()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let handle = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        GatedLlm {
            url: format!("http://{addr}/v1"),
            gate,
            seen,
            handle,
        }
    }

    pub fn open(&self) {
        self.gate.send_replace(true);
    }

    pub fn requests(&self) -> usize {
        self.seen.load(std::sync::atomic::Ordering::SeqCst)
    }
}
