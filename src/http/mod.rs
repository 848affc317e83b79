//! The axum router: one `router()` per resource (a `Routes`, which keeps its paths for the
//! request metrics), merged here, with the request-metrics middleware around all of them and authentication as route layers (`auth.rs`). Handlers
//! parse and delegate; no business logic. The web console (`console/`) is served at `/`.
//! What a browser may do is limited around all of them (`browser.rs`: JSON bodies declared
//! as such, no state change from another site's page, no DNS rebinding without a token).
//! The MCP server (`mcp.rs`) is served at `/mcp`.

mod alerts_api;
mod auth;
mod browser;
mod console;
mod error;
mod follow_up;
mod health;
mod inflight;
mod investigation_events;
mod investigations;
mod limits;
mod login_throttle;
mod mcp;
mod openapi;
mod panics;
mod rejections;
mod reports;
mod request_metrics;
mod routes;
mod session;
mod signatures;
#[cfg(test)]
mod supervise_tests;
mod webhooks;

use axum::middleware;
use axum::{Extension, Router};

use routes::Routes;

pub use error::ApiError;

use crate::app::AppState;

/// The whole HTTP API.
pub fn router(state: AppState) -> Router {
    let server = &state.config.server;
    let limit =
        middleware::from_fn_with_state(server.request_timeout.get(), limits::request_timeout);
    // Generating a report waits for its collectors, the LLM and SMTP.
    let report_limit = middleware::from_fn_with_state(
        server
            .request_timeout
            .get()
            .max(reports::time_needed(&state.config)),
        limits::request_timeout,
    );
    let api = Routes::new()
        .merge(investigations::router().layer(limit.clone()))
        .merge(alerts_api::router().layer(limit.clone()))
        .merge(reports::router().layer(report_limit))
        .merge(follow_up::router().layer(limit.clone()))
        .merge(investigation_events::router())
        .route_layer(middleware::from_fn(browser::require_json))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            auth::api_token,
        ));
    let (routes, paths) = Routes::new()
        .merge(health::router(&state).layer(limit.clone()))
        .merge(webhooks::router(&state).layer(limit.clone()))
        .merge(openapi::router().layer(limit.clone()))
        .merge(api)
        .merge(mcp::router(&state))
        .merge(console::router(&state).layer(limit))
        .into_parts();
    for path in paths {
        state.metrics.init_endpoint(path);
    }
    routes
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            browser::same_origin,
        ))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            browser::known_host,
        ))
        .layer(middleware::from_fn(rejections::json_errors))
        .layer(middleware::from_fn(rejections::header_limit))
        .layer(Extension(console_keys(&state)))
        .layer(middleware::from_fn_with_state(
            state.metrics.clone(),
            panics::catch_panic,
        ))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            request_metrics::track,
        ))
        .with_state(state)
}

/// The console's keys, with the sessions ended by logout kept in the store.
fn console_keys(state: &AppState) -> session::ConsoleKeys {
    let keys = session::ConsoleKeys::new(state.config.server.api_token.as_ref());
    match state.store.tree(session::ENDED_SESSIONS) {
        Ok(ended) => keys.with_ended_sessions(ended),
        Err(e) => {
            tracing::error!(error = %e, "cannot open the console's ended sessions: logging out ends a session only in its browser");
            keys
        }
    }
}

async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::NotFound(format!("no route for {}", uri.path()))
}
