//! `GET /api/v1/alerts?limit=N&cursor=C` (bearer `server.api_token`): alert groups by
//! newest activity first, with their status, sample alerts, counts and current
//! investigation; `next_cursor` fetches the next page (`null` on the last). Reads only the
//! groups of the page (an index by last activity), however much is stored.

use axum::extract::{Query, State};
use axum::routing::get;
use axum::{Json, Router};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use super::ApiError;
use crate::alerts::grouping::InvState;
use crate::alerts::store::AlertGroup;
use crate::app::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/v1/alerts", get(list))
}

/// Largest page.
const MAX_LIMIT: usize = 1000;

#[derive(Deserialize)]
struct ListQuery {
    limit: Option<String>,
    cursor: Option<String>,
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

#[derive(Serialize)]
struct Page {
    groups: Vec<GroupView>,
    next_cursor: Option<String>,
}

async fn list(
    State(state): State<AppState>,
    Query(q): Query<ListQuery>,
) -> Result<Json<Page>, ApiError> {
    let limit = match q.limit.as_deref().filter(|l| !l.is_empty()) {
        None => 50,
        Some(l) => l
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| ApiError::BadRequest(format!("limit {l:?} must be 1..={MAX_LIMIT}")))?,
    };
    let cursor = match q.cursor.as_deref().filter(|c| !c.is_empty()) {
        None => None,
        Some(c) => Some(URL_SAFE_NO_PAD.decode(c).map_err(|_| {
            ApiError::BadRequest(format!(
                "cursor {c:?} is not one this API returned (pass next_cursor as it is)"
            ))
        })?),
    };
    let investigator = state.intake.investigator();
    let page = state
        .intake
        .store()
        .recent_groups(limit, cursor.as_deref())?;
    let groups = page
        .groups
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
        .collect();
    Ok(Json(Page {
        groups,
        next_cursor: page.next.map(|k| URL_SAFE_NO_PAD.encode(k)),
    }))
}
