//! `GET /api/v1/openapi.json`: the OpenAPI 3.1 document of every route, built by utoipa
//! from the handlers' `#[utoipa::path]` annotations and the bodies' `ToSchema` derives, so
//! it changes with the code. Served without authentication: it describes the API and holds
//! no secret, and tools (schemathesis, client generators) need it before they have a token.
//!
//! A new route needs its annotation and a line in `paths(...)` below; the test
//! `tests/it/trust/openapi.rs` fails, naming the route, until it has both.

use std::borrow::Cow;
use std::sync::LazyLock;

use axum::Router;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, Schema, Type};
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::openapi::{RefOr, ServerBuilder};
use utoipa::{Modify, OpenApi, PartialSchema, ToSchema};

use super::{
    alerts_api, follow_up, health, investigation_events, investigations, reports, webhooks,
};
use crate::app::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/v1/openapi.json", get(document))
}

/// The document, rendered once.
static DOCUMENT: LazyLock<String> = LazyLock::new(|| {
    ApiDoc::openapi()
        .to_pretty_json()
        .expect("the OpenAPI document serializes")
});

/// The OpenAPI 3.1 document of this daemon.
#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "meta",
    responses((status = 200, description = "This document (OpenAPI 3.1)", content_type = "application/json", body = Object)))]
pub(super) async fn document() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        DOCUMENT.as_str(),
    )
        .into_response()
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "sre-agent",
        description = "Alert investigations with an LLM and weekly reliability reports. \
            `/api/v1/*` needs `Authorization: Bearer <server.api_token>` when a token is \
            configured (always beyond loopback); `/metrics` needs `server.metrics_token` when set; \
            the webhooks need `webhook.token` (bearer), basic credentials or a Grafana HMAC \
            signature when configured. Every error is JSON `{\"error\": \"…\"}`."
    ),
    paths(
        investigations::ask,
        investigations::list,
        investigations::show,
        investigations::remove,
        investigations::feedback,
        follow_up::follow_up,
        investigation_events::events,
        alerts_api::list,
        reports::list,
        reports::create,
        reports::show,
        document,
        webhooks::grafana,
        webhooks::alertmanager,
        health::healthz,
        health::readyz,
        health::metrics,
    ),
    components(schemas(crate::api::ErrorBody, Report)),
    modifiers(&Security),
    tags(
        (name = "investigations", description = "Questions and alert investigations"),
        (name = "alerts", description = "Alert groups received by the webhooks"),
        (name = "reports", description = "Weekly reliability reports"),
        (name = "webhooks", description = "Alert intake from Grafana and Alertmanager"),
        (name = "operations", description = "Health, readiness and Prometheus metrics"),
        (name = "meta", description = "This document"),
    )
)]
pub struct ApiDoc;

/// The security schemes the annotations name.
struct Security;

impl Modify for Security {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        doc.servers = Some(vec![ServerBuilder::new().url("/").build()]);
        let components = doc.components.get_or_insert_with(Default::default);
        let bearer = |what: &str| {
            let mut http = Http::new(HttpAuthScheme::Bearer);
            http.description = Some(what.to_string());
            SecurityScheme::Http(http)
        };
        components.add_security_scheme(
            "api_token",
            bearer("server.api_token (required when configured)"),
        );
        components.add_security_scheme(
            "metrics_token",
            bearer("server.metrics_token (required when configured)"),
        );
        components.add_security_scheme("webhook_token", bearer("webhook.token"));
        let mut basic = Http::new(HttpAuthScheme::Basic);
        basic.description = Some("webhook.basic_user / webhook.basic_password".into());
        components.add_security_scheme("webhook_basic", SecurityScheme::Http(basic));
    }
}

/// A stored report (`GET /api/v1/reports/{id}`, `POST /api/v1/reports`): its top-level
/// fields; the window, summary and collected data are objects whose fields follow the
/// report's sections (see the README), so they are not pinned here.
pub struct Report;

impl PartialSchema for Report {
    fn schema() -> RefOr<Schema> {
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

impl ToSchema for Report {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Report")
    }
}

/// `GET /readyz`.
#[derive(serde::Serialize, ToSchema)]
pub struct Readiness {
    /// "ready" or "not ready".
    status: String,
    /// "ok" or "error".
    store: String,
    /// Each configured integration's last probe, by name.
    #[schema(value_type = Object)]
    components: serde_json::Value,
}

/// A webhook body as Grafana (version "1") or Alertmanager (version "4") sends it; read
/// leniently: unknown fields are ignored, null and absent optional fields are accepted.
#[derive(serde::Serialize, ToSchema)]
pub struct WebhookPayload {
    /// "1" (Grafana) or "4" (Alertmanager); absent is accepted.
    version: Option<String>,
    #[serde(rename = "groupKey")]
    group_key: Option<String>,
    /// "firing" or "resolved": the default of alerts without their own.
    status: Option<String>,
    #[serde(rename = "truncatedAlerts")]
    truncated_alerts: Option<u64>,
    alerts: Vec<WebhookAlert>,
}

/// One alert of a webhook body.
#[derive(serde::Serialize, ToSchema)]
pub struct WebhookAlert {
    status: Option<String>,
    /// Label values; numbers and other JSON values are kept as their JSON text.
    #[schema(value_type = Option<Object>)]
    labels: Option<serde_json::Value>,
    #[schema(value_type = Option<Object>)]
    annotations: Option<serde_json::Value>,
    /// RFC 3339; Go's zero time means none.
    #[serde(rename = "startsAt")]
    starts_at: Option<String>,
    #[serde(rename = "endsAt")]
    ends_at: Option<String>,
    #[serde(rename = "generatorURL")]
    generator_url: Option<String>,
    /// Computed from the labels when absent.
    fingerprint: Option<String>,
    #[serde(rename = "silenceURL")]
    silence_url: Option<String>,
    #[serde(rename = "dashboardURL")]
    dashboard_url: Option<String>,
    #[serde(rename = "panelURL")]
    panel_url: Option<String>,
    #[schema(value_type = Option<Object>)]
    values: Option<serde_json::Value>,
    #[serde(rename = "valueString")]
    value_string: Option<String>,
}

/// One Server-Sent Event of `GET /api/v1/investigations/{id}/events`.
#[derive(serde::Serialize, ToSchema)]
pub struct TimelineEvent {
    /// "step" (one timeline entry) or "status" (the final status; the stream ends).
    event: String,
    /// The entry's index in the timeline (`step` events), for `Last-Event-ID`.
    id: Option<String>,
    /// JSON: the timeline entry (an `Event`), or `{"status": …}`.
    data: String,
}
