//! `GET /api/v1/alerts?limit=N&cursor=C` (bearer `server.api_token`): alert groups by
//! newest activity first, with their status, last alert (every sample alert with
//! `samples=true`), counts, current investigation and the storm they belong to;
//! `next_cursor` fetches the next page (`null` on the last).
//! Reads only the groups of the page (an index by last activity), however much is stored.
//! `GET /api/v1/storms?limit=N`: recent alert storms with their groups (bounded).

use axum::Json;
use axum::extract::{Query, State};
use axum::routing::get;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use super::ApiError;
use crate::alerts::Investigator;
use crate::alerts::grouping::InvState;
use crate::alerts::store::{AlertGroup, Samples};
use crate::alerts::storm::{Storm, StormStatus, storm_key};
use crate::app::AppState;
use crate::http::routes::Routes;

/// Member groups shown per storm in `/api/v1/storms`.
const STORM_GROUPS_SHOWN: usize = 100;

pub fn router() -> Routes {
    Routes::new()
        .route("/api/v1/alerts", get(list))
        .route("/api/v1/storms", get(storms))
}

/// Largest page.
const MAX_LIMIT: usize = 1000;

#[derive(Deserialize)]
pub(super) struct ListQuery {
    limit: Option<String>,
    cursor: Option<String>,
    samples: Option<String>,
}

impl ListQuery {
    /// `limit` (1..=1000, default 50), or a 400 naming it.
    fn limit(&self) -> Result<usize, ApiError> {
        match self.limit.as_deref().filter(|l| !l.is_empty()) {
            None => Ok(50),
            Some(l) => l
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=MAX_LIMIT).contains(n))
                .ok_or_else(|| {
                    ApiError::BadRequest(format!("limit {l:?} must be 1..={MAX_LIMIT}"))
                }),
        }
    }

    /// `samples` (`true` for every group's sample alerts, default `false`: the last alert
    /// only), or a 400 naming it.
    fn samples(&self) -> Result<Samples, ApiError> {
        match self.samples.as_deref().filter(|s| !s.is_empty()) {
            None | Some("false") => Ok(Samples::Last),
            Some("true") => Ok(Samples::All),
            Some(s) => Err(ApiError::BadRequest(format!(
                "samples {s:?} must be true or false"
            ))),
        }
    }

    /// The decoded `cursor`, or a 400.
    fn cursor(&self) -> Result<Option<Vec<u8>>, ApiError> {
        match self.cursor.as_deref().filter(|c| !c.is_empty()) {
            None => Ok(None),
            Some(c) => URL_SAFE_NO_PAD.decode(c).map(Some).map_err(|_| {
                ApiError::BadRequest(format!(
                    "cursor {c:?} is not one this API returned (pass next_cursor as it is)"
                ))
            }),
        }
    }
}

/// The answer of `GET /api/v1/alerts`.
#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct GroupList {
    groups: Vec<GroupView>,
    /// Pass as `cursor` for the next page; `null` on the last.
    next_cursor: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct GroupView {
    #[serde(flatten)]
    group: AlertGroup,
    firing_alerts: usize,
    investigation: Option<InvestigationRef>,
    /// The storm the group belongs to: its key, status and investigation.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    storm: Option<StormRef>,
}

#[derive(Serialize)]
struct StormRef {
    key: String,
    status: StormStatus,
    investigation: Option<InvestigationRef>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct InvestigationRef {
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

/// Recent alert groups with their status, last alert, counts and investigation.
#[utoipa::path(get, path = "/api/v1/alerts", tag = "alerts", security(("api_token" = [])),
    params(
        ("limit" = Option<usize>, Query, description = "At most this many groups (1..=1000, default 50)"),
        ("cursor" = Option<String>, Query, description = "The `next_cursor` of the previous page"),
        ("samples" = Option<bool>, Query, description = "`true`: each group's sample alerts (`alerts`, the latest of up to 20 fingerprints); default `false`: `last_alert` only")
    ),
    responses(
        (status = 200, description = "Alert groups, newest activity first", body = GroupList),
        (status = 400, description = "Bad input", body = crate::api::ErrorBody),
        crate::api::Refusals
    ))]
pub(super) async fn list(
    State(state): State<AppState>,
    Query(q): Query<ListQuery>,
) -> Result<Json<GroupList>, ApiError> {
    let limit = q.limit()?;
    let cursor = q.cursor()?;
    let samples = q.samples()?;
    let investigator = state.intake.investigator();
    let inv_ref =
        |id: &Option<String>, pending: bool| investigation_ref(investigator.as_ref(), id, pending);
    let storms = state.intake.storms();
    let storm_by = &state.config.alerts.storm_by;
    let mut storm_cache: std::collections::HashMap<String, Option<Storm>> = Default::default();
    let page = state
        .intake
        .store()
        .recent_groups(limit, cursor.as_deref(), samples)?;
    let groups = page
        .groups
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
    Ok(Json(GroupList {
        groups,
        next_cursor: page.next.map(|k| URL_SAFE_NO_PAD.encode(k)),
    }))
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

/// Recent alert storms (many groups at once) with their investigation and first groups.
#[utoipa::path(get, path = "/api/v1/storms", tag = "alerts", security(("api_token" = [])),
    params(("limit" = Option<usize>, Query, description = "At most this many storms (1..=1000, default 50)")),
    responses(
        (status = 200, description = "`{\"storms\": […]}`, most recent first", body = Object),
        (status = 400, description = "Bad input", body = crate::api::ErrorBody),
        crate::api::Refusals
    ))]
pub(super) async fn storms(
    State(state): State<AppState>,
    Query(q): Query<ListQuery>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let limit = q.limit()?;
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
