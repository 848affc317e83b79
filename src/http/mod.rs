//! The axum router: one `router()` per resource, merged here, with the request-metrics
//! middleware around all of them. Handlers parse, authorize and delegate; no business logic.

mod alerts_api;
pub mod auth;
mod error;
mod health;
pub mod investigations;
mod reports;
mod request_metrics;
mod webhooks;

use axum::Router;
use axum::middleware;

pub use error::ApiError;

use crate::app::AppState;

/// The whole HTTP API.
pub fn router(state: AppState) -> Router {
    Router::new()
        .merge(health::router())
        .merge(investigations::router())
        .merge(webhooks::router())
        .merge(alerts_api::router())
        .merge(reports::router())
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            request_metrics::track,
        ))
        .with_state(state)
}

async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::NotFound(format!("no route for {}", uri.path()))
}
