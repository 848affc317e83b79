//! The per-request time limit: a handler (reading a slow body included) that has not
//! answered within it is dropped and the client gets 408 with a JSON error.

use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::ApiError;

/// Layer (`from_fn_with_state(limit, request_timeout)`) answering 408 after `limit`.
pub async fn request_timeout(State(limit): State<Duration>, req: Request, next: Next) -> Response {
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(resp) => resp,
        Err(_) => ApiError::RequestTimeout(limit).into_response(),
    }
}
