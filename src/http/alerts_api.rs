//! `GET /api/v1/alerts?limit=N` (bearer `server.api_token`): recent alert groups with their
//! status, last alert, counts, current investigation and the storm they belong to;
//! `GET /api/v1/storms?limit=N`: recent alert storms with their groups (bounded).

use axum::extract::{Query, State};
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::ApiError;
use crate::alerts::Investigator;
use crate::alerts::grouping::InvState;
use crate::alerts::store::AlertGroup;
use crate::alerts::storm::{Storm, StormStatus, storm_key};
use crate::app::AppState;

/// Member groups shown per storm in `/api/v1/storms`.
const STORM_GROUPS_SHOWN: usize = 100;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/alerts", get(list))
        .route("/api/v1/storms", get(storms))
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
    /// The storm the group belongs to: its key, status and investigation.
    #[serde(skip_serializing_if = "Option::is_none")]
    storm: Option<StormRef>,
}

#[derive(Serialize)]
struct StormRef {
    key: String,
    status: StormStatus,
    investigation: Option<InvestigationRef>,
}

#[derive(Serialize)]
struct InvestigationRef {
    id: String,
    status: String,
}

/// The investigation of a group or storm as the API shows it (`pending` before submission).
fn investigation_ref(
    investigator: &dyn Investigator,
    id: &Option<String>,
    pending: bool,
) -> Option<InvestigationRef> {
    match id {
        _ if pending => Some(InvestigationRef {
            id: String::new(),
            status: "pending".into(),
        }),
        Some(id) => Some(InvestigationRef {
            id: id.clone(),
            status: investigator
                .state(id)
                .unwrap_or(InvState::Missing)
                .as_str()
                .to_string(),
        }),
        None => None,
    }
}

async fn list(
    State(state): State<AppState>,
    Query(q): Query<ListQuery>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let limit = q.limit.unwrap_or(50).clamp(1, 1000);
    let investigator = state.intake.investigator();
    let inv_ref =
        |id: &Option<String>, pending: bool| investigation_ref(investigator.as_ref(), id, pending);
    let storms = state.intake.storms();
    let storm_by = &state.config.alerts.storm_by;
    let mut storm_cache: std::collections::HashMap<String, Option<Storm>> = Default::default();
    let groups = state
        .intake
        .store()
        .recent_groups(limit)?
        .into_iter()
        .map(|group| {
            let investigation = inv_ref(&group.investigation_id, group.pending_since.is_some());
            let storm = match storm_key(storm_by, &group.last_alert.labels) {
                Some(key) if storms.member(&key, &group.key)?.is_some() => {
                    let storm = match storm_cache.get(&key) {
                        Some(s) => s.clone(),
                        None => {
                            let s = storms.get(&key)?;
                            storm_cache.insert(key.clone(), s.clone());
                            s
                        }
                    };
                    storm.map(|s| StormRef {
                        investigation: inv_ref(&s.investigation_id, s.pending_since.is_some()),
                        key: s.key,
                        status: s.status,
                    })
                }
                _ => None,
            };
            let firing_alerts = group.firing_count;
            Ok(GroupView {
                group,
                firing_alerts,
                investigation,
                storm,
            })
        })
        .collect::<Result<Vec<_>, crate::store::StoreError>>()?;
    Ok(Json(serde_json::json!({ "groups": groups })))
}

#[derive(Serialize)]
struct StormView {
    #[serde(flatten)]
    storm: Storm,
    investigation: Option<InvestigationRef>,
    /// The first member groups (at most `STORM_GROUPS_SHOWN`) with their own labels.
    groups: Vec<StormGroup>,
}

#[derive(Serialize)]
struct StormGroup {
    key: String,
    labels: std::collections::BTreeMap<String, String>,
    firing: bool,
}

async fn storms(
    State(state): State<AppState>,
    Query(q): Query<ListQuery>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let limit = q.limit.unwrap_or(50).clamp(1, 1000);
    let investigator = state.intake.investigator();
    let store = state.intake.storms();
    let storms = store
        .recent(limit)?
        .into_iter()
        .map(|storm| {
            let investigation = investigation_ref(
                investigator.as_ref(),
                &storm.investigation_id,
                storm.pending_since.is_some(),
            );
            let groups = store
                .members(&storm.key, STORM_GROUPS_SHOWN)?
                .into_iter()
                .map(|(key, m)| StormGroup {
                    key,
                    labels: m.labels,
                    firing: m.firing,
                })
                .collect();
            Ok(StormView {
                storm,
                investigation,
                groups,
            })
        })
        .collect::<Result<Vec<_>, crate::store::StoreError>>()?;
    Ok(Json(serde_json::json!({ "storms": storms })))
}
