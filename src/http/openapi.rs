//! `GET /api/v1/openapi.json`: the OpenAPI 3.1 document of every route, built by utoipa
//! from the handlers' `#[utoipa::path]` annotations and the bodies' `ToSchema` derives, so
//! it changes with the code. Served without authentication: it describes the API and holds
//! no secret, and tools (schemathesis, client generators) need it before they have a token.
//!
//! A new route needs its annotation and a line in `paths(...)` below; the test
//! `tests/it/trust/openapi.rs` fails, naming the route, until it has both.

use std::sync::LazyLock;

use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use utoipa::openapi::ServerBuilder;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::{
    alerts_api, follow_up, health, investigation_events, investigations, reports, webhooks,
};
use crate::http::routes::Routes;

pub fn router() -> Routes {
    Routes::new().route("/api/v1/openapi.json", get(document))
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
        alerts_api::storms,
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
    components(schemas(crate::api::ErrorBody, reports::ReportBody)),
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
