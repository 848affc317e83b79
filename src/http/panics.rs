//! A handler that panics answers 500 (the generic JSON error) instead of dropping the
//! connection without an answer; the panic is logged and counted in
//! `sre_agent_panics_total{task="http_handler"}`.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::FutureExt;

use super::error::ApiError;
use crate::telemetry::supervise::record_panic;
use crate::telemetry::{Metrics, Task};

/// Layer (`from_fn_with_state(metrics, catch_panic)`) turning a handler's panic into a 500.
pub async fn catch_panic(
    State(metrics): State<Arc<Metrics>>,
    req: Request,
    next: Next,
) -> Response {
    match AssertUnwindSafe(next.run(req)).catch_unwind().await {
        Ok(response) => response,
        Err(panic) => {
            let what = record_panic(&metrics, Task::HttpHandler, panic.as_ref());
            ApiError::Internal(format!("a handler panicked: {what}")).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::middleware::from_fn_with_state;
    use axum::routing::get;

    use super::*;

    async fn boom() -> &'static str {
        panic!("handler bug")
    }

    #[tokio::test]
    async fn a_panicking_handler_answers_500_and_the_server_keeps_answering() {
        crate::install_crypto_provider();
        let metrics = Arc::new(Metrics::new("m"));
        let app = Router::new()
            .route("/boom", get(boom))
            .route("/ok", get(|| async { "fine" }))
            .layer(from_fn_with_state(metrics.clone(), catch_panic));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move { axum::serve(listener, app).await });
        let client = reqwest::Client::new();
        let boom = client
            .get(format!("http://{addr}/boom"))
            .send()
            .await
            .unwrap();
        assert_eq!(boom.status(), 500);
        let body = boom.text().await.unwrap();
        assert!(!body.contains("handler bug"), "{body}");
        let ok = client
            .get(format!("http://{addr}/ok"))
            .send()
            .await
            .unwrap();
        assert_eq!(ok.text().await.unwrap(), "fine");
        assert_eq!(metrics.panics.with_label_values(&["http_handler"]).get(), 1);
        server.abort();
    }
}
