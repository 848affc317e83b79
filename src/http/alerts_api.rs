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
struct ListQuery {
    limit: Option<usize>,
}

#[derive(Serialize)]
struct GroupView {
    #[serde(flatten)]
    group: AlertGroup,
    firing_alerts: usize,
    investigation: Option<InvestigationRef>,
}

#[derive(Serialize)]
struct InvestigationRef {
    id: String,
    status: String,
}

async fn list(
    State(state): State<AppState>,
    Query(q): Query<ListQuery>,
) -> Result<Json<serde_json::Value>, ApiError> {
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
    Ok(Json(serde_json::json!({ "groups": groups })))
}
