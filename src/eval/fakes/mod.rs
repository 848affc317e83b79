//! Small HTTP servers that answer like the user's upstreams, fed from a scenario's files:
//! Loki (streams filtered by a small LogQL subset), Kubernetes (objects listed, fetched and
//! filtered like the API server does), and answers by path for Proxmox VE, PBS, TrueNAS
//! and Grafana. Each listens on a free loopback port and stops when dropped.

mod answers;
mod kubernetes;
mod loki;

use axum::Router;

pub use answers::{AnswerService, answers_router};
pub use kubernetes::{kubeconfig, kubernetes_router};
pub use loki::{LogLine, loki_router};

use super::EvalError;

/// A running fake; stops when dropped.
pub struct FakeServer {
    pub url: String,
    handle: tokio::task::JoinHandle<()>,
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.handle.abort();
    }
}

impl FakeServer {
    /// Serves `router` on 127.0.0.1 at a free port.
    pub async fn start(router: Router) -> Result<Self, EvalError> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| EvalError::Tool {
                tool: "fake upstream",
                reason: e.to_string(),
            })?;
        let addr = listener.local_addr().map_err(|e| EvalError::Tool {
            tool: "fake upstream",
            reason: e.to_string(),
        })?;
        let handle = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Ok(Self {
            url: format!("http://{addr}"),
            handle,
        })
    }
}
