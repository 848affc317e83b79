//! Bearer-token checks with constant-time comparison.

use axum::http::HeaderMap;
use subtle::ConstantTimeEq;

use super::ApiError;
use crate::config::Secret;

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
