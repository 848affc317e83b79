//! `GET /api/v1/alerts?limit=N` (bearer `server.api_token`): recent alert groups with their
//! status, last alert, counts and current investigation.

use axum::extract::{Query, State};
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::ApiError;
use crate::alerts::grouping::InvState;
use crate::alerts::store::AlertGroup;
use crate::app::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/v1/alerts", get(list))
}

#[derive(Deserialize)]
pub(super) struct ListQuery {
    limit: Option<usize>,
}

/// The answer of `GET /api/v1/alerts`.
#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct GroupList {
    groups: Vec<GroupView>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct GroupView {
    #[serde(flatten)]
    group: AlertGroup,
    firing_alerts: usize,
    investigation: Option<InvestigationRef>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct InvestigationRef {
    id: String,
    status: String,
}

/// Recent alert groups with their status, last alert, counts and investigation.
#[utoipa::path(get, path = "/api/v1/alerts", tag = "alerts", security(("api_token" = [])),
    params(("limit" = Option<usize>, Query, description = "At most this many groups (1..=1000, default 50)")),
    responses(
        (status = 200, description = "Alert groups, most recent first", body = GroupList),
        (status = 400, description = "Bad input", body = crate::api::ErrorBody),
        (status = 401, description = "Missing or wrong credentials", body = crate::api::ErrorBody),
        (status = 408, description = "Took longer than server.request_timeout", body = crate::api::ErrorBody),
        (status = 431, description = "Headers over the limit", body = crate::api::ErrorBody)
    ))]
pub(super) async fn list(
    State(state): State<AppState>,
    Query(q): Query<ListQuery>,
) -> Result<Json<GroupList>, ApiError> {
    let limit = q.limit.unwrap_or(50).clamp(1, 1000);
    let investigator = state.intake.investigator();
    let groups = state
        .intake
        .store()
        .recent_groups(limit)?
        .into_iter()
        .map(|group| {
            let investigation = match &group.investigation_id {
                Some(id) => Some(InvestigationRef {
                    id: id.clone(),
                    status: investigator
                        .state(id)
                        .unwrap_or(InvState::Missing)
                        .as_str()
                        .to_string(),
                }),
                None if group.pending_since.is_some() => Some(InvestigationRef {
                    id: String::new(),
                    status: "pending".into(),
                }),
                None => None,
            };
            let firing_alerts = group.firing_count;
            GroupView {
                group,
                firing_alerts,
                investigation,
            }
        })
        .collect::<Vec<_>>();
    Ok(Json(GroupList { groups }))
}
