//! The axum router: one `router()` per resource, merged here, with the request-metrics
//! middleware around all of them and authentication as route layers (`auth.rs`). Handlers
//! parse and delegate; no business logic.

mod alerts_api;
mod auth;
mod error;
mod health;
mod investigations;
mod reports;
mod request_metrics;
mod server;
mod webhooks;

use axum::Router;
use axum::middleware;

pub use error::ApiError;
pub use server::{App, ServeError};

use crate::app::AppState;

/// The whole HTTP API.
pub fn router(state: AppState) -> Router {
    let api = Router::new()
        .merge(investigations::router())
        .merge(alerts_api::router())
        .merge(reports::router())
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            auth::api_token,
        ));
    Router::new()
        .merge(health::router(&state))
        .merge(webhooks::router(&state))
        .merge(api)
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
