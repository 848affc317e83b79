//! Rejections made outside the handlers, made like `ApiError`'s: a request head larger than
//! `MAX_HEADER_BYTES` gets 431, and the plain-text or empty errors of axum's extractors and
//! router (a body over the limit, malformed JSON or query strings, a wrong method) become
//! JSON `{"error": "…"}` with their status kept. HTML error pages of the console are kept.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::ApiError;

/// The largest request head (names, values and URI) answered; larger ones get 431. Far
/// above what Grafana, Alertmanager and browsers send, far below hyper's own 400 KiB buffer.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;

/// The longest extractor message kept in the JSON error.
const MAX_MESSAGE_BYTES: usize = 4096;

/// Layer answering 431 when the request's headers and URI exceed `MAX_HEADER_BYTES`.
pub async fn header_limit(req: Request, next: Next) -> Response {
    let size = req.uri().to_string().len()
        + req
            .headers()
            .iter()
            .map(|(k, v)| k.as_str().len() + v.len() + 4)
            .sum::<usize>();
    if size > MAX_HEADER_BYTES {
        return ApiError::HeadersTooLarge(MAX_HEADER_BYTES).into_response();
    }
    next.run(req).await
}

/// Layer turning every error answer that is not JSON into `{"error": "…"}`.
pub async fn json_errors(req: Request, next: Next) -> Response {
    let resp = next.run(req).await;
    let status = resp.status();
    // axum's rejections are text/plain or empty; the console's HTML pages stay as they are.
    let plain = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|v| v.starts_with("text/plain"));
    if !(status.is_client_error() || status.is_server_error()) || !plain {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let text = axum::body::to_bytes(body, MAX_MESSAGE_BYTES)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    let allow = parts
        .headers
        .get(header::ALLOW)
        .and_then(|v| v.to_str().ok());
    let message = match (status, allow) {
        (_, _) if !text.is_empty() => text,
        (StatusCode::METHOD_NOT_ALLOWED, Some(allow)) => {
            format!("method not allowed for this path (it allows {allow})")
        }
        _ => default_message(status),
    };
    let body = serde_json::json!({ "error": message }).to_string();
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(body))
}

fn default_message(status: StatusCode) -> String {
    status
        .canonical_reason()
        .unwrap_or("request refused")
        .to_lowercase()
}
