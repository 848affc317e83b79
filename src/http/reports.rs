//! `/api/v1/reports`: generate a report now (`POST`), list stored reports, fetch one as
//! JSON, HTML (`?format=html`, charts as data: URIs) or markdown. Bearer `server.api_token`.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;

use super::ApiError;
use crate::api::{CreateReport, ReportListItem};
use crate::app::AppState;
use crate::http::routes::Routes;
use crate::report::model::{Report, ReportTrigger};
use crate::report::period::PeriodSpec;
use crate::report::{ReportRequest, render};

pub fn router() -> Routes {
    Routes::new()
        .route("/api/v1/reports", get(list).post(create))
        .route("/api/v1/reports/{id}", get(show))
}

/// Generates the report of a period now (and mails it with `send`).
#[utoipa::path(post, path = "/api/v1/reports", tag = "reports", security(("api_token" = [])),
    request_body(content = Option<CreateReport>, description = "Optional; an empty body is the last full week, not sent"),
    responses(
        (status = 200, description = "The generated report", body = ReportBody),
        (status = 500, description = "Internal error (details in the daemon's log)", body = crate::api::ErrorBody),
        crate::api::BodyRefusals,
        crate::api::Refusals
    ))]
pub(super) async fn create(
    State(state): State<AppState>,
    body: Bytes,
) -> Result<Json<Report>, ApiError> {
    // A body is declared JSON (`browser::require_json`); an empty one asks for the default.
    let body: CreateReport = if body.iter().all(u8::is_ascii_whitespace) {
        CreateReport::default()
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| ApiError::BadRequest(format!("invalid JSON body: {e}")))?
    };
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
    // Saturating: the configuration bounds each value, not their product.
    let llm = (config.llm.timeout.get()).saturating_mul(config.llm.max_retries.saturating_add(1));
    config
        .report
        .collector_timeout
        .get()
        .saturating_add(llm)
        .saturating_add(config.smtp.timeout.get())
}

#[derive(Deserialize)]
pub(super) struct ListQuery {
    limit: Option<usize>,
}

/// Stored reports, newest first.
#[utoipa::path(get, path = "/api/v1/reports", tag = "reports", security(("api_token" = [])),
    params(("limit" = Option<usize>, Query, maximum = 500, description = "At most this many (default 50)")),
    responses(
        (status = 200, description = "Reports", body = Vec<ReportListItem>),
        (status = 400, description = "Bad input", body = crate::api::ErrorBody),
        crate::api::Refusals
    ))]
pub(super) async fn list(
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
pub(super) struct ShowQuery {
    format: Option<String>,
}

/// One stored report as JSON, HTML (charts inline) or markdown.
#[utoipa::path(get, path = "/api/v1/reports/{id}", tag = "reports", security(("api_token" = [])),
    params(
        ("id" = String, Path, description = "Report id"),
        ("format" = Option<String>, Query, description = "json (default), html, markdown or md"),
    ),
    responses(
        (status = 200, description = "The report", content(
            (ReportBody = "application/json"),
            (String = "text/html"),
            (String = "text/markdown"),
        )),
        (status = 400, description = "Bad input", body = crate::api::ErrorBody),
        (status = 401, description = "Missing or wrong credentials", body = crate::api::ErrorBody),
        (status = 404, description = "Not found", body = crate::api::ErrorBody),
        (status = 408, description = "Took longer than server.request_timeout", body = crate::api::ErrorBody),
        (status = 431, description = "Headers over the limit", body = crate::api::ErrorBody)
    ))]
pub(super) async fn show(
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

/// A stored report (`GET /api/v1/reports/{id}`, `POST /api/v1/reports`): its top-level
/// fields; the window, summary and collected data are objects whose fields follow the
/// report's sections (see the README), so they are not pinned here.
pub struct ReportBody;

impl utoipa::PartialSchema for ReportBody {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, Type};
        let object = || {
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .additional_properties(Some(AdditionalProperties::FreeForm(true)))
        };
        let string = || ObjectBuilder::new().schema_type(Type::String);
        object()
            .property("id", string())
            .property("trigger", crate::report::model::ReportTrigger::schema())
            .property("window", object())
            .property("timezone", string())
            .property(
                "created_at",
                string().format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
                    utoipa::openapi::KnownFormat::DateTime,
                ))),
            )
            .property("status", crate::report::model::ReportStatus::schema())
            .property(
                "delivery_error",
                ObjectBuilder::new().schema_type(utoipa::openapi::schema::SchemaType::from_iter([
                    Type::String,
                    Type::Null,
                ])),
            )
            .property("summary", object())
            .property("data", object())
            .required("id")
            .required("trigger")
            .required("window")
            .required("timezone")
            .required("created_at")
            .required("status")
            .required("summary")
            .required("data")
            .into()
    }
}

impl utoipa::ToSchema for ReportBody {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("Report")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_a_report_may_take_saturates_instead_of_overflowing() {
        let mut config = crate::config::Config::default();
        config.llm.timeout = crate::config::HumanDuration::secs(60);
        config.llm.max_retries = 2;
        let normal = time_needed(&config);
        assert_eq!(
            normal,
            config.report.collector_timeout.get()
                + std::time::Duration::from_secs(180)
                + config.smtp.timeout.get()
        );
        config.llm.timeout = crate::config::HumanDuration::secs(u64::MAX / 2);
        config.llm.max_retries = u32::MAX;
        assert_eq!(time_needed(&config).as_secs(), u64::MAX);
    }
}
