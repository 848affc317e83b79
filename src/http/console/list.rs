//! `GET /`: investigations, newest first, filtered by status and trigger, searched by text
//! (title, question, finding, id), a page at a time (`cursor` is the last id shown).

use axum::Extension;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;

use super::page::{Chrome, Csrf, PageError, layout, respond, status_badge, time};
use crate::agent::{Investigation, InvestigationStatus, Trigger};
use crate::app::AppState;
use crate::http::ApiError;
use crate::http::session::ConsoleKeys;

/// Investigations shown on one page.
const PAGE: usize = 25;
/// The most records one page reads while searching (the rest is one "older" click away).
const MAX_SCAN: usize = 2_000;
const TRIGGERS: [Trigger; 3] = [Trigger::Ask, Trigger::Alert, Trigger::Schedule];

#[derive(Default, Deserialize)]
pub struct Filters {
    #[serde(default)]
    status: String,
    #[serde(default)]
    trigger: String,
    #[serde(default)]
    q: String,
    #[serde(default)]
    cursor: String,
}

pub async fn page(
    State(state): State<AppState>,
    Extension(csrf): Extension<Csrf>,
    Extension(keys): Extension<ConsoleKeys>,
    Query(f): Query<Filters>,
) -> Result<Response, PageError> {
    let status = match f.status.as_str() {
        "" => None,
        s => Some(InvestigationStatus::parse(s).ok_or_else(|| {
            ApiError::BadRequest(format!(
                "unknown status {s:?} ({})",
                InvestigationStatus::names()
            ))
        })?),
    };
    let trigger = match f.trigger.as_str() {
        "" => None,
        t => Some(
            TRIGGERS
                .into_iter()
                .find(|x| x.label() == t)
                .ok_or_else(|| {
                    ApiError::BadRequest(format!("unknown trigger {t:?} (ask, alert, schedule)"))
                })?,
        ),
    };
    let needle = f.q.trim().to_lowercase();
    let (items, next) = find(&state, status, trigger, &needle, &f.cursor)?;
    let chrome = Chrome {
        csrf: &csrf,
        login: keys.login_required(),
    };
    let body = html! {
        h1 { "Investigations" }
        (filters(&f))
        @if items.is_empty() {
            p { "No investigation matches." " " a href="/ask" { "Ask a question" } }
        } @else {
            table {
                caption.visually-hidden { "Investigations, newest first" }
                thead { tr {
                    th scope="col" { "Title" } th scope="col" { "Status" }
                    th scope="col" { "Trigger" } th scope="col" { "Created" }
                    th scope="col" { "Steps" } th scope="col" { "Cost" }
                } }
                tbody {
                    @for inv in &items { (row(inv)) }
                }
            }
        }
        nav.pager aria-label="Pages" {
            @if !f.cursor.is_empty() { a href=(link(&f, "")) { "Newest" } }
            @if let Some(n) = &next { a href=(link(&f, n)) rel="next" { "Older" } }
        }
    };
    Ok(respond(
        StatusCode::OK,
        layout(&chrome, "Investigations", "/", body),
    ))
}

/// One page of matches after `cursor`, and the cursor of the next page when there may be one.
fn find(
    state: &AppState,
    status: Option<InvestigationStatus>,
    trigger: Option<Trigger>,
    needle: &str,
    cursor: &str,
) -> Result<(Vec<Investigation>, Option<String>), PageError> {
    let mut items = Vec::new();
    let mut cursor = (!cursor.is_empty()).then(|| cursor.to_string());
    let mut scanned = 0;
    loop {
        let page = state.dispatcher.list(status, 200, cursor.as_deref())?;
        for inv in page.items {
            scanned += 1;
            cursor = Some(inv.id.clone());
            if trigger.is_none_or(|t| t == inv.trigger) && matches(&inv, needle) {
                items.push(inv);
                if items.len() == PAGE {
                    return Ok((items, cursor));
                }
            }
            if scanned >= MAX_SCAN {
                return Ok((items, cursor));
            }
        }
        if page.next_cursor.is_none() {
            return Ok((items, None));
        }
    }
}

fn matches(inv: &Investigation, needle: &str) -> bool {
    if needle.is_empty() {
        return true;
    }
    let finding = inv.finding.as_ref();
    [
        Some(inv.id.as_str()),
        Some(inv.title.as_str()),
        Some(inv.prompt.as_str()),
        finding.map(|f| f.summary.as_str()),
        finding.map(|f| f.probable_cause.as_str()),
    ]
    .into_iter()
    .flatten()
    .any(|text| text.to_lowercase().contains(needle))
}

fn row(inv: &Investigation) -> Markup {
    html! {
        tr {
            td {
                a href={ "/investigations/" (inv.id) } { (inv.title) }
                @if inv.parent_id.is_some() { " " span.muted { "(follow-up)" } }
                @if let Some(f) = &inv.finding {
                    br; span.muted { (crate::text::truncate(&f.summary, 140)) }
                }
            }
            td { (status_badge(inv.status)) }
            td { (inv.trigger.label()) }
            td { (time(inv.created_at)) }
            td { (inv.steps) }
            td { (format!("${:.4}", inv.cost_usd)) }
        }
    }
}

fn filters(f: &Filters) -> Markup {
    html! {
        form.filters method="get" action="/" role="search" {
            div {
                label for="f-status" { "Status" }
                select id="f-status" name="status" {
                    option value="" selected[f.status.is_empty()] { "any" }
                    @for s in InvestigationStatus::ALL {
                        option value=(s.as_str()) selected[f.status == s.as_str()] { (s.as_str()) }
                    }
                }
            }
            div {
                label for="f-trigger" { "Trigger" }
                select id="f-trigger" name="trigger" {
                    option value="" selected[f.trigger.is_empty()] { "any" }
                    @for t in TRIGGERS {
                        option value=(t.label()) selected[f.trigger == t.label()] { (t.label()) }
                    }
                }
            }
            div {
                label for="f-q" { "Search" }
                input id="f-q" type="search" name="q" value=(f.q) placeholder="pve2";
            }
            div { button type="submit" { "Filter" } }
        }
    }
}

/// This listing's address with `cursor`.
fn link(f: &Filters, cursor: &str) -> String {
    let mut q = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in [("status", &f.status), ("trigger", &f.trigger), ("q", &f.q)] {
        if !v.is_empty() {
            q.append_pair(k, v);
        }
    }
    if !cursor.is_empty() {
        q.append_pair("cursor", cursor);
    }
    format!("/?{}", q.finish())
}
