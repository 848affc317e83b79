//! `/api/v1/reports`: generate a report now (`POST`), list stored reports, fetch one as
//! JSON, HTML (`?format=html`, charts as data: URIs) or markdown. Bearer `server.api_token`.

use axum::extract::{Path, Query, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;

use super::ApiError;
use crate::api::{CreateReport, ReportListItem};
use crate::app::AppState;
use crate::report::model::{Report, ReportTrigger};
use crate::report::period::PeriodSpec;
use crate::report::{ReportRequest, render};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/reports", get(list).post(create))
        .route("/api/v1/reports/{id}", get(show))
}

async fn create(
    State(state): State<AppState>,
    body: Option<Json<CreateReport>>,
) -> Result<Json<Report>, ApiError> {
    let body = body.map(|Json(b)| b).unwrap_or_default();
    let period: PeriodSpec =
        body.period.as_deref().unwrap_or("last").parse().map_err(
            |e: crate::report::period::InvalidPeriod| ApiError::BadRequest(e.to_string()),
        )?;
    let req = ReportRequest {
        trigger: ReportTrigger::Api,
        period,
        now: chrono::Utc::now(),
        send: body.send,
    };
    let report = state
        .reports
        .run(req)
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(Json(report))
}

/// How long generating and sending a report may take: its collectors, the narrative call
/// with its retries, and the SMTP session.
pub fn time_needed(config: &crate::config::Config) -> std::time::Duration {
    let llm = config.llm.timeout.get() * (config.llm.max_retries + 1);
    config.report.collector_timeout.get() + llm + config.smtp.timeout.get()
}

#[derive(Deserialize)]
struct ListQuery {
    limit: Option<usize>,
}

async fn list(
    State(state): State<AppState>,
    Query(q): Query<ListQuery>,
) -> Result<Json<Vec<ReportListItem>>, ApiError> {
    let reports = state.reports.store().list(q.limit.unwrap_or(50).min(500))?;
    Ok(Json(
        reports
            .into_iter()
            .map(|r| ReportListItem {
                title: r.title(),
                period: r.window.period.to_string(),
                id: r.id,
                trigger: r.trigger,
                status: r.status,
                created_at: r.created_at,
            })
            .collect(),
    ))
}

#[derive(Deserialize)]
struct ShowQuery {
    format: Option<String>,
}

async fn show(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<ShowQuery>,
) -> Result<Response, ApiError> {
    let report = state
        .reports
        .store()
        .get(&id)?
        .ok_or_else(|| ApiError::NotFound(format!("no report {id}")))?;
    Ok(match q.format.as_deref().unwrap_or("json") {
        "json" => Json(report).into_response(),
        "html" => (
            [(CONTENT_TYPE, "text/html; charset=utf-8")],
            render::to_html(&report),
        )
            .into_response(),
        "markdown" | "md" => (
            [(CONTENT_TYPE, "text/markdown; charset=utf-8")],
            render::to_markdown(&report),
        )
            .into_response(),
        other => {
            return Err(ApiError::BadRequest(format!(
                "unknown format {other:?}: use json, html or markdown"
            )));
        }
    })
}
