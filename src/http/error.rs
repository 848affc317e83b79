//! `ApiError`: every handler error becomes JSON `{"error": "..."}` with the right status.
//! Internal errors are logged with their detail; the client only learns that one happened.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::agent::{OverBudget, SubmitError};
use crate::api::OverBudgetAnswer;

/// An error answered to an HTTP client.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    /// A webhook body over `webhook.max_body_bytes` (the only body limit answered here).
    #[error(
        "request body is larger than the limit of {0} bytes (webhook.max_body_bytes): send \
         fewer alerts per notification (Alertmanager: group_by per instance) or raise the limit"
    )]
    PayloadTooLarge(usize),
    #[error("request headers are larger than the limit of {0} bytes")]
    HeadersTooLarge(usize),
    /// A body that is not declared as the JSON the route reads.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// A Host this daemon does not answer to (`http/browser.rs`).
    #[error("{0}")]
    MisdirectedRequest(String),
    /// Too many wrong tokens from this client: 429 with `Retry-After` (seconds).
    #[error("too many wrong tokens from this client; try again in {0} s")]
    TooManyGuesses(u64),
    #[error("{0}")]
    Unavailable(String),
    /// No room for the work now (too many webhook bodies being read): 503 with
    /// `Retry-After` (seconds), which senders retry.
    #[error("{message}")]
    Busy { retry_after: u64, message: String },
    #[error("the request took longer than {0:?} (server.request_timeout)")]
    RequestTimeout(std::time::Duration),
    /// A daily budget is used up: 429 naming the budget, `Retry-After` the next UTC midnight.
    #[error("{0}")]
    OverBudget(Box<OverBudget>),
    #[error("internal error: {0}")]
    Internal(String),
}

impl ApiError {
    /// The HTTP status this error is answered with.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::HeadersTooLarge(_) => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            Self::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::MisdirectedRequest(_) => StatusCode::MISDIRECTED_REQUEST,
            Self::TooManyGuesses(_) => StatusCode::TOO_MANY_REQUESTS,
            Self::Unavailable(_) | Self::Busy { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Self::RequestTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            Self::OverBudget(_) => StatusCode::TOO_MANY_REQUESTS,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let Self::OverBudget(e) = &self {
            return over_budget(e);
        }
        let status = self.status();
        let message = match &self {
            Self::Internal(detail) => {
                tracing::error!(error = %detail, "request failed");
                "internal error; the daemon's log has the details".to_string()
            }
            other => {
                if status.is_server_error() {
                    tracing::warn!(error = %other, "request failed");
                }
                other.to_string()
            }
        };
        let mut resp = (status, Json(serde_json::json!({ "error": message }))).into_response();
        if let Self::TooManyGuesses(seconds)
        | Self::Busy {
            retry_after: seconds,
            ..
        } = self
        {
            resp.headers_mut()
                .insert(axum::http::header::RETRY_AFTER, seconds.into());
        }
        if status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        resp
    }
}

/// 429 with the budget's key and what was spent; `Retry-After` is the next UTC midnight.
fn over_budget(e: &OverBudget) -> Response {
    let now = chrono::Utc::now();
    let midnight = (now.date_naive() + chrono::Days::new(1))
        .and_hms_opt(0, 0, 0)
        .map(|m| m.and_utc());
    let retry = midnight.map_or(0, |m| (m - now).num_seconds().max(1));
    let mut resp = (
        StatusCode::TOO_MANY_REQUESTS,
        Json(OverBudgetAnswer::from(e)),
    )
        .into_response();
    resp.headers_mut()
        .insert(axum::http::header::RETRY_AFTER, retry.into());
    resp
}

impl From<SubmitError> for ApiError {
    fn from(e: SubmitError) -> Self {
        match e {
            SubmitError::OverBudget(e) => Self::OverBudget(Box::new(e)),
            SubmitError::Store(e) => e.into(),
        }
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(e: crate::store::StoreError) -> Self {
        match e {
            // Senders retry a 503; the detail (a path, an I/O error) stays in the log.
            crate::store::StoreError::NotStored(detail) => {
                tracing::error!(error = %detail, "request not stored");
                Self::Unavailable(
                    "the request could not be stored (storage is failing); try again".into(),
                )
            }
            e => Self::Internal(e.to_string()),
        }
    }
}
