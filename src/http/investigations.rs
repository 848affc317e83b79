//! The investigations API (bearer `server.api_token` when set): `POST /api/v1/ask` (429
//! naming the budget when a daily budget is used up),
//! `GET /api/v1/investigations` (newest first, paginated), `GET|DELETE
//! /api/v1/investigations/{id}`, `POST /api/v1/investigations/{id}/feedback`.

use std::collections::HashMap;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use super::ApiError;
use crate::agent::{Feedback, FeedbackOutcome, InvestigationRequest, InvestigationStatus};
use crate::api::{
    AskRequest, FeedbackRequest, FeedbackStored, InvestigationDetail, MAX_QUESTION_CHARS, Queued,
};
use crate::app::AppState;
use crate::http::routes::Routes;

pub fn router() -> Routes {
    Routes::new()
        .route("/api/v1/ask", post(ask))
        .route("/api/v1/investigations", get(list))
        .route("/api/v1/investigations/{id}", get(show).delete(remove))
        .route("/api/v1/investigations/{id}/feedback", post(feedback))
}

/// Queues an investigation of a free-text question.
#[utoipa::path(post, path = "/api/v1/ask", tag = "investigations", security(("api_token" = [])),
    request_body = AskRequest,
    responses(
        (status = 202, description = "Queued", body = Queued),
        (status = 429, description = "A daily budget is used up (names it)", body = crate::api::OverBudgetAnswer),
        crate::api::BodyRefusals,
        crate::api::Refusals
    ))]
pub(super) async fn ask(State(state): State<AppState>, body: Bytes) -> Result<Response, ApiError> {
    let body: AskRequest = serde_json::from_slice(&body)
        .map_err(|e| ApiError::BadRequest(format!("invalid JSON body: {e}")))?;
    let question = body.question.unwrap_or_default();
    let question = question.trim();
    if question.is_empty() {
        return Err(ApiError::BadRequest(
            "\"question\" is required and must not be empty".into(),
        ));
    }
    if question.chars().count() > MAX_QUESTION_CHARS {
        return Err(ApiError::BadRequest(format!(
            "\"question\" is longer than {MAX_QUESTION_CHARS} characters"
        )));
    }
    let submitted = state
        .dispatcher
        .submit(InvestigationRequest::ask(question))
        .await;
    let inv = submitted?;
    let body = Queued {
        id: inv.id,
        status: inv.status,
    };
    Ok((StatusCode::ACCEPTED, Json(body)).into_response())
}

/// Investigations, newest first, one page at a time.
#[utoipa::path(get, path = "/api/v1/investigations", tag = "investigations", security(("api_token" = [])),
    params(
        ("status" = Option<InvestigationStatus>, Query, description = "Only investigations in this status"),
        ("limit" = Option<usize>, Query, minimum = 1, maximum = 500, description = "Page size (default 50)"),
        ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page"),
    ),
    responses(
        (status = 200, description = "One page", body = crate::api::InvestigationPage),
        (status = 400, description = "Bad input", body = crate::api::ErrorBody),
        crate::api::Refusals
    ))]
pub(super) async fn list(
    State(state): State<AppState>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let status = match q.get("status").filter(|s| !s.is_empty()) {
        None => None,
        Some(s) => Some(InvestigationStatus::parse(s).ok_or_else(|| {
            ApiError::BadRequest(format!(
                "unknown status {s:?} ({})",
                InvestigationStatus::names()
            ))
        })?),
    };
    let limit = match q.get("limit") {
        None => 50,
        Some(l) => l
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=500).contains(n))
            .ok_or_else(|| ApiError::BadRequest(format!("limit {l:?} must be 1..=500")))?,
    };
    let cursor = q
        .get("cursor")
        .map(String::as_str)
        .filter(|c| !c.is_empty());
    let page = state.dispatcher.list(status, limit, cursor)?;
    Ok(Json(page).into_response())
}

/// One investigation with its timeline.
#[utoipa::path(get, path = "/api/v1/investigations/{id}", tag = "investigations", security(("api_token" = [])),
    params(("id" = String, Path, description = "Investigation id")),
    responses(
        (status = 200, description = "The investigation and its events", body = InvestigationDetail),
        (status = 404, description = "Not found", body = crate::api::ErrorBody),
        crate::api::Refusals
    ))]
pub(super) async fn show(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<InvestigationDetail>, ApiError> {
    let investigation = state
        .dispatcher
        .get(&id)?
        .ok_or_else(|| ApiError::NotFound(format!("no investigation {id}")))?;
    let events = state.dispatcher.events(&id)?;
    Ok(Json(InvestigationDetail {
        investigation,
        events,
    }))
}

/// Deletes an investigation (a running one is cancelled first).
#[utoipa::path(delete, path = "/api/v1/investigations/{id}", tag = "investigations", security(("api_token" = [])),
    params(("id" = String, Path, description = "Investigation id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "Not found", body = crate::api::ErrorBody),
        crate::api::Refusals
    ))]
pub(super) async fn remove(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    if state.dispatcher.delete(&id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(format!("no investigation {id}")))
    }
}

/// A person's verdict on a finding; a second one replaces the first.
#[utoipa::path(post, path = "/api/v1/investigations/{id}/feedback", tag = "investigations",
    security(("api_token" = [])),
    params(("id" = String, Path, description = "Investigation id")),
    request_body = crate::api::FeedbackRequest,
    responses(
        (status = 200, description = "The feedback as stored", body = crate::api::FeedbackStored),
        (status = 404, description = "Not found", body = crate::api::ErrorBody),
        (status = 409, description = "The investigation has not ended yet", body = crate::api::ErrorBody),
        crate::api::BodyRefusals,
        crate::api::Refusals
    ))]
pub(super) async fn feedback(
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Json<FeedbackStored>, ApiError> {
    let body: FeedbackRequest = serde_json::from_slice(&body)
        .map_err(|e| ApiError::BadRequest(format!("invalid JSON body: {e}")))?;
    let feedback =
        give_feedback(&state, &id, body.verdict.as_deref(), body.note.as_deref()).await?;
    Ok(Json(FeedbackStored { id, feedback }))
}

/// Checks a person's verdict on the finding of `id` and stores it (the API's and the
/// console's feedback): 400 for a bad verdict or note, 404 for an unknown investigation,
/// 409 while it runs.
pub async fn give_feedback(
    state: &AppState,
    id: &str,
    verdict: Option<&str>,
    note: Option<&str>,
) -> Result<Feedback, ApiError> {
    let feedback = Feedback::given(verdict, note).map_err(ApiError::BadRequest)?;
    match state.dispatcher.feedback(id, feedback.clone()).await? {
        FeedbackOutcome::Stored(_) => Ok(feedback),
        FeedbackOutcome::NotFound => Err(ApiError::NotFound(format!("no investigation {id}"))),
        FeedbackOutcome::NotFinal(status) => Err(ApiError::Conflict(format!(
            "investigation {id} is {}; give feedback once it has ended",
            status.as_str()
        ))),
    }
}
