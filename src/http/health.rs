//! `/healthz` (liveness), `/readyz` (store open; each component's health), `/metrics`.

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use super::{ApiError, auth};
use crate::app::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
}

async fn healthz() -> &'static str {
    "ok"
}

async fn readyz(State(state): State<AppState>) -> Response {
    let store_ok = state.store.is_healthy();
    let components = state.health.read().map(|c| c.clone()).unwrap_or_default();
    let body = json!({
        "status": if store_ok { "ready" } else { "not ready" },
        "store": if store_ok { "ok" } else { "error" },
        "components": components,
    });
    let code = if store_ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, Json(body)).into_response()
}

async fn metrics(State(state): State<AppState>, headers: HeaderMap) -> Result<Response, ApiError> {
    auth::require_bearer(&headers, state.config.server.metrics_token.as_ref())?;
    let body = state.metrics.encode();
    Ok((
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
        .into_response())
}
