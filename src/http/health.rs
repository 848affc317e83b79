//! `/healthz` (liveness), `/readyz` (store open; each component's health), `/metrics`.

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use super::auth;
use crate::app::AppState;

pub fn router(state: &AppState) -> Router<AppState> {
    let metrics = Router::new()
        .route("/metrics", get(metrics))
        .route_layer(from_fn_with_state(state.clone(), auth::metrics_token));
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .merge(metrics)
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

async fn metrics(State(state): State<AppState>) -> Response {
    let body = state.metrics.encode();
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
        .into_response()
}
