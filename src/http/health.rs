//! `/healthz` (liveness), `/readyz` (store open; each component's health), `/metrics`.

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use super::auth;
use crate::app::AppState;
use crate::http::routes::Routes;

pub fn router(state: &AppState) -> Routes {
    let metrics = Routes::new()
        .route("/metrics", get(metrics))
        .route_layer(from_fn_with_state(state.clone(), auth::metrics_token));
    Routes::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .merge(metrics)
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "operations",
    responses((status = 200, description = "Alive", content_type = "text/plain", body = String)))]
pub(super) async fn healthz() -> &'static str {
    "ok"
}

/// Readiness: the store is open; the health of each configured integration.
#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses(
        (status = 200, description = "Ready", body = Readiness),
        (status = 503, description = "The store is not usable", body = Readiness),
    ))]
pub(super) async fn readyz(State(state): State<AppState>) -> Response {
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

/// Prometheus metrics (text exposition format 0.0.4).
#[utoipa::path(get, path = "/metrics", tag = "operations", security((), ("metrics_token" = [])),
    responses(
        (status = 200, description = "Metrics", content_type = "text/plain", body = String),
        (status = 401, description = "Missing or wrong credentials", body = crate::api::ErrorBody)
    ))]
pub(super) async fn metrics(State(state): State<AppState>) -> Response {
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

/// `GET /readyz`.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct Readiness {
    /// "ready" or "not ready".
    status: String,
    /// "ok" or "error".
    store: String,
    /// Each configured integration's last probe, by name.
    #[schema(value_type = Object)]
    components: serde_json::Value,
}
