//! `POST /api/v1/investigations/{id}/followup` `{"question": "…"}` (bearer
//! `server.api_token`): asks a follow-up question of a finished investigation. The answer
//! is a new investigation linked to its parent (`parent_id`), with the parent's finding and
//! cited evidence as fenced context and the same budgets as any other.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;

use super::ApiError;
use crate::agent::follow_up_request;
use crate::api::{AskRequest, MAX_QUESTION_CHARS, Queued};
use crate::app::AppState;
use crate::http::routes::Routes;

pub fn router() -> Routes {
    Routes::new().route("/api/v1/investigations/{id}/followup", post(follow_up))
}

/// Asks a follow-up question of an ended investigation: a new, linked investigation.
#[utoipa::path(post, path = "/api/v1/investigations/{id}/followup", tag = "investigations",
    security(("api_token" = [])),
    params(("id" = String, Path, description = "The ended investigation to follow up")),
    request_body = AskRequest,
    responses(
        (status = 202, description = "Queued", body = Queued),
        (status = 429, description = "A daily budget is used up (names it)", body = crate::api::OverBudgetAnswer),
        (status = 404, description = "Not found", body = crate::api::ErrorBody),
        (status = 409, description = "The investigation has not ended yet", body = crate::api::ErrorBody),
        crate::api::BodyRefusals,
        crate::api::Refusals
    ))]
pub(super) async fn follow_up(
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let body: AskRequest = serde_json::from_slice(&body)
        .map_err(|e| ApiError::BadRequest(format!("invalid JSON body: {e}")))?;
    let queued = submit(&state, &id, body.question.as_deref().unwrap_or_default()).await?;
    Ok((StatusCode::ACCEPTED, Json(queued)).into_response())
}

/// Validates `question` and queues it as a follow-up of `parent_id` (also used by the
/// console's form).
pub async fn submit(state: &AppState, parent_id: &str, question: &str) -> Result<Queued, ApiError> {
    let question = validate_question(question)?;
    let parent = state
        .dispatcher
        .get(parent_id)?
        .ok_or_else(|| ApiError::NotFound(format!("no investigation {parent_id}")))?;
    if !parent.status.is_final() {
        return Err(ApiError::Conflict(format!(
            "investigation {parent_id} is still {}; ask a follow-up once it has ended",
            parent.status.as_str()
        )));
    }
    let events = state.dispatcher.events(parent_id)?;
    let req = follow_up_request(&parent, &events, question);
    let inv = state.dispatcher.submit_follow_up(parent_id, req).await?;
    Ok(Queued {
        id: inv.id,
        status: inv.status,
    })
}

/// The trimmed question, or why it cannot be asked.
pub fn validate_question(question: &str) -> Result<&str, ApiError> {
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
    Ok(question)
}
