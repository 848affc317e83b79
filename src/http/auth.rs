//! Authentication as route layers: the JSON API needs `server.api_token` and `/metrics`
//! needs `server.metrics_token` (each only when set), checked before any extractor reads
//! the request; bearer tokens are compared in constant time. Webhooks have their own
//! schemes (token, basic, HMAC over the body) in `webhooks.rs`.

use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;
use subtle::ConstantTimeEq;

use super::ApiError;
use crate::app::AppState;
use crate::config::Secret;

/// Route layer of the JSON API (`server.api_token`).
pub async fn api_token(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    require_bearer(request.headers(), state.config.server.api_token.as_ref())?;
    Ok(next.run(request).await)
}

/// Route layer of `/metrics` (`server.metrics_token`).
pub async fn metrics_token(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    require_bearer(
        request.headers(),
        state.config.server.metrics_token.as_ref(),
    )?;
    Ok(next.run(request).await)
}

/// Constant-time equality of two byte strings (length is not secret).
pub fn secure_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

/// The bearer token of the request, if any.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Passes when no token is configured or the request carries it as a bearer token.
pub fn require_bearer(headers: &HeaderMap, expected: Option<&Secret>) -> Result<(), ApiError> {
    let Some(expected) = expected else {
        return Ok(());
    };
    match bearer(headers) {
        Some(got) if secure_eq(got.as_bytes(), expected.expose().as_bytes()) => Ok(()),
        Some(_) => Err(ApiError::Unauthorized("invalid bearer token".into())),
        None => Err(ApiError::Unauthorized(
            "missing bearer token (Authorization: Bearer …)".into(),
        )),
    }
}
