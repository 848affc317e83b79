//! `GET /alerts`: recent alert groups with their status, counts, last decision (deduped,
//! cooldown, over the daily budget, joined a storm…) and their current investigation.

use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use maud::html;

use super::page::{Chrome, Csrf, PageError, alert_status, layout, respond, status_badge, time};
use crate::alerts::store::Samples;
use crate::app::AppState;
use crate::http::session::ConsoleKeys;

/// Groups shown.
const GROUPS: usize = 100;

pub async fn page(
    State(state): State<AppState>,
    Extension(csrf): Extension<Csrf>,
    Extension(keys): Extension<ConsoleKeys>,
) -> Result<Response, PageError> {
    let groups = state
        .intake
        .store()
        .recent_groups(GROUPS, None, Samples::Last)?
        .groups;
    let mut rows = Vec::with_capacity(groups.len());
    for g in groups {
        let inv = match &g.investigation_id {
            Some(id) => state.dispatcher.get(id)?,
            None => None,
        };
        rows.push((g, inv));
    }
    let chrome = Chrome {
        csrf: &csrf,
        login: keys.login_required(),
    };
    let body = html! {
        h1 { "Alert groups" }
        @if rows.is_empty() {
            p { "No alert received yet. Point Grafana or Alertmanager at "
                code { "/webhook/grafana" } " or " code { "/webhook/alertmanager" } "." }
        } @else {
            table {
                caption.visually-hidden { "Alert groups, most recent first" }
                thead { tr {
                    th scope="col" { "Group" } th scope="col" { "Status" }
                    th scope="col" { "Firing" } th scope="col" { "Received" }
                    th scope="col" { "Investigations" } th scope="col" { "Last decision" }
                    th scope="col" { "Last seen" } th scope="col" { "Investigation" }
                } }
                tbody {
                    @for (g, inv) in &rows {
                        tr {
                            td { (g.title) br; span.muted { (g.source.label()) } }
                            td { (alert_status(g.status)) }
                            td { (g.firing_count) }
                            td { (g.received) }
                            td { (g.investigations) }
                            td { (g.last_outcome.label()) }
                            td { (time(g.last_seen)) }
                            td {
                                @if let Some(inv) = inv {
                                    a href={ "/investigations/" (inv.id) } { (inv.title) }
                                    " " (status_badge(inv.status))
                                } @else if g.pending_since.is_some() {
                                    "pending"
                                } @else if let Some(id) = &g.investigation_id {
                                    code { (id) } " (deleted)"
                                } @else { "none" }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(respond(
        StatusCode::OK,
        layout(&chrome, "Alerts", "/alerts", body),
    ))
}
