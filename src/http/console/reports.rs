//! `GET /reports`, `/reports/{id}`: weekly reports as they were emailed. The email's HTML
//! (inline styles, email-safe) is served alone at `/reports/{id}/email` under its own
//! policy (no script at all) and framed by the report page, so the console's pages keep a
//! policy without inline styles; its `cid:` charts are served by
//! `/reports/{id}/charts/{content-id}.png`.

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use maud::html;

use super::page::{Chrome, Csrf, PageError, layout, respond, secure, time};
use crate::app::AppState;
use crate::http::ApiError;
use crate::http::session::ConsoleKeys;
use crate::report::model::Report;
use crate::report::render;

/// Reports listed.
const REPORTS: usize = 52;

/// The email document's policy: its own inline styles and the daemon's images, nothing
/// else; framed only by the console.
const EMAIL_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; \
    base-uri 'none'; form-action 'none'; frame-ancestors 'self'";

pub async fn list(
    State(state): State<AppState>,
    Extension(csrf): Extension<Csrf>,
    Extension(keys): Extension<ConsoleKeys>,
) -> Result<Response, PageError> {
    let reports = state.reports.store().list(REPORTS)?;
    let chrome = Chrome {
        csrf: &csrf,
        login: keys.login_required(),
    };
    let body = html! {
        h1 { "Reports" }
        @if reports.is_empty() {
            p { "No report yet. One is made every week (" code { "report.schedule" } "), or now with "
                code { "sre-agent report" } " or " code { "POST /api/v1/reports" } "." }
        } @else {
            table {
                caption.visually-hidden { "Weekly reports, newest first" }
                thead { tr {
                    th scope="col" { "Report" } th scope="col" { "Period" }
                    th scope="col" { "Made by" } th scope="col" { "Delivery" } th scope="col" { "Created" }
                } }
                tbody {
                    @for r in &reports {
                        tr {
                            td { a href={ "/reports/" (r.id) } { (r.title()) } }
                            td { (r.window.period.to_string()) }
                            td { (r.trigger.label()) }
                            td { (r.status.label()) }
                            td { (time(r.created_at)) }
                        }
                    }
                }
            }
        }
    };
    Ok(respond(
        StatusCode::OK,
        layout(&chrome, "Reports", "/reports", body),
    ))
}

pub async fn page(
    State(state): State<AppState>,
    Extension(csrf): Extension<Csrf>,
    Extension(keys): Extension<ConsoleKeys>,
    Path(id): Path<String>,
) -> Result<Response, PageError> {
    let report = load(&state, &id)?;
    let chrome = Chrome {
        csrf: &csrf,
        login: keys.login_required(),
    };
    let title = report.title();
    let body = html! {
        h1 { (title) }
        p {
            "Delivery: " (report.status.label())
            @if let Some(e) = &report.delivery_error { " (" span.error { (e) } ")" }
            " · also as " a href={ "/api/v1/reports/" (report.id) "?format=markdown" } { "markdown" }
            " or " a href={ "/api/v1/reports/" (report.id) } { "JSON" }
        }
        iframe.report src={ "/reports/" (report.id) "/email" } title={ "The report as emailed: " (title) }
            sandbox="allow-same-origin" {}
    };
    Ok(respond(
        StatusCode::OK,
        layout(&chrome, &title, "/reports", body),
    ))
}

pub async fn email(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, PageError> {
    let report = load(&state, &id)?;
    let html = render::for_email(&report).html.replace(
        "src=\"cid:",
        &format!("src=\"/reports/{}/charts/", report.id),
    );
    let mut resp = html.into_response();
    secure(resp.headers_mut(), EMAIL_CSP);
    Ok(resp)
}

pub async fn chart(
    State(state): State<AppState>,
    Path((id, chart)): Path<(String, String)>,
) -> Result<Response, PageError> {
    let report = load(&state, &id)?;
    let wanted = chart.strip_suffix(".png").unwrap_or(&chart);
    let png = render::for_email(&report)
        .charts
        .into_iter()
        .find(|c| c.content_id == wanted)
        .map(|c| c.png)
        .ok_or_else(|| ApiError::NotFound(format!("report {id} has no chart {chart}")))?;
    Ok((
        [
            (CONTENT_TYPE, "image/png"),
            (CACHE_CONTROL, "private, max-age=3600"),
            (axum::http::header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        png,
    )
        .into_response())
}

fn load(state: &AppState, id: &str) -> Result<Report, PageError> {
    Ok(state
        .reports
        .store()
        .get(id)?
        .ok_or_else(|| ApiError::NotFound(format!("no report {id}")))?)
}
