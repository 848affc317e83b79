//! `POST /webhook/grafana` and `POST /webhook/alertmanager`: the sender's token or basic
//! credentials are checked by a route layer before the body is read (`auth.rs`), then that
//! the body is declared JSON (`browser.rs`, as both senders do); here room is reserved for
//! the body among those being read (`webhook.max_inflight_bytes`, `inflight.rs`), the
//! body is bounded (`webhook.max_body_bytes`), its Grafana HMAC signature checked (fresh
//! and never accepted twice, `signatures.rs`), parsed, and answered 2xx only once the alerts are on disk
//! (the alert inbox, see `alerts::intake::pipeline`); decisions follow at once,
//! investigations in the background.
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::from_fn_with_state;
use axum::routing::post;
use axum::{Extension, Json};
use http_body_util::LengthLimitError;

use super::ApiError;
use super::auth;
use super::inflight::{InflightBodies, ROOM_WAIT};
use super::signatures::{SeenSignatures, check_hmac, needs_hmac, unix_now};
use crate::alerts::{Accepted, AlertSource, IntakeSummary, Settle, parse_webhook};
use crate::app::AppState;
use crate::http::routes::Routes;

pub fn router(state: &AppState) -> Routes {
    Routes::new()
        .route("/webhook/grafana", post(grafana))
        .route("/webhook/alertmanager", post(alertmanager))
        .route_layer(axum::middleware::from_fn(super::browser::require_json))
        .route_layer(from_fn_with_state(state.clone(), auth::webhook_sender))
        .layer(Extension(Arc::new(SeenSignatures::default())))
        .layer(Extension(InflightBodies::new(
            state.config.webhook.max_inflight_bytes,
        )))
        .layer(DefaultBodyLimit::disable())
}

/// Grafana unified alerting webhook (payload version "1"); answered once stored.
#[utoipa::path(post, path = "/webhook/grafana", tag = "webhooks",
    security((), ("webhook_token" = []), ("webhook_basic" = [])),
    request_body(content = WebhookPayload, description = "Grafana's webhook JSON; unknown fields are ignored"),
    params(
        ("X-Grafana-Alerting-Signature" = Option<String>, Header, description = "hex HMAC-SHA256 (webhook.hmac_secret)"),
        ("X-Grafana-Alerting-Timestamp" = Option<String>, Header, description = "unix seconds covered by the signature"),
    ),
    responses(
        (status = 200, description = "Every alert stored and decided; investigations follow", body = IntakeSummary),
        (status = 202, description = "Every alert stored; decided after the batches ahead of it (`deferred`)", body = IntakeSummary),
        (status = 500, description = "Internal error (details in the daemon's log)", body = crate::api::ErrorBody),
        (status = 503, description = "Not stored (a disk fault, or too many bodies being read: webhook.max_inflight_bytes); retry after `Retry-After`", body = crate::api::ErrorBody),
        crate::api::BodyRefusals,
        crate::api::Refusals
    ))]
pub(super) async fn grafana(
    State(state): State<AppState>,
    Extension(seen): Extension<Arc<SeenSignatures>>,
    Extension(inflight): Extension<InflightBodies>,
    headers: HeaderMap,
    body: Body,
) -> Result<(StatusCode, Json<IntakeSummary>), ApiError> {
    receive(state, &seen, &inflight, AlertSource::Grafana, headers, body).await
}

/// Alertmanager webhook (payload version "4"); answered once stored.
#[utoipa::path(post, path = "/webhook/alertmanager", tag = "webhooks",
    security((), ("webhook_token" = []), ("webhook_basic" = [])),
    request_body(content = WebhookPayload, description = "Alertmanager's webhook JSON; unknown fields are ignored"),
    responses(
        (status = 200, description = "Every alert stored and decided; investigations follow", body = IntakeSummary),
        (status = 202, description = "Every alert stored; decided after the batches ahead of it (`deferred`)", body = IntakeSummary),
        (status = 500, description = "Internal error (details in the daemon's log)", body = crate::api::ErrorBody),
        (status = 503, description = "Not stored (a disk fault, or too many bodies being read: webhook.max_inflight_bytes); retry after `Retry-After`", body = crate::api::ErrorBody),
        crate::api::BodyRefusals,
        crate::api::Refusals
    ))]
pub(super) async fn alertmanager(
    State(state): State<AppState>,
    Extension(seen): Extension<Arc<SeenSignatures>>,
    Extension(inflight): Extension<InflightBodies>,
    headers: HeaderMap,
    body: Body,
) -> Result<(StatusCode, Json<IntakeSummary>), ApiError> {
    receive(
        state,
        &seen,
        &inflight,
        AlertSource::Alertmanager,
        headers,
        body,
    )
    .await
}

async fn receive(
    state: AppState,
    seen: &Arc<SeenSignatures>,
    inflight: &InflightBodies,
    source: AlertSource,
    headers: HeaderMap,
    body: Body,
) -> Result<(StatusCode, Json<IntakeSummary>), ApiError> {
    let cfg = &state.config.webhook;
    // Held until the answer: the body, its parse and its batch are in memory until then.
    let _room = inflight
        .reserve(
            declared_length(&headers).map_or(cfg.max_body_bytes, |n| {
                usize::try_from(n).map_or(cfg.max_body_bytes, |n| n.min(cfg.max_body_bytes))
            }),
            ROOM_WAIT,
        )
        .await?;
    let body = read_limited(&headers, body, cfg.max_body_bytes)
        .await
        .inspect_err(|e| {
            if matches!(e, ApiError::PayloadTooLarge(_)) {
                // Senders do not retry a 4xx: these alerts never arrive.
                tracing::warn!(
                    source = source.label(),
                    limit = cfg.max_body_bytes,
                    "webhook body refused with 413: over webhook.max_body_bytes; its alerts are lost"
                );
            }
        })?;
    let mut settle = Settle::default();
    if needs_hmac(cfg, source) {
        let now = unix_now();
        let signed = check_hmac(cfg, &headers, &body, now)?;
        let skew = cfg.hmac_max_skew.get().as_secs() as i64;
        let until = signed.sent_at.unwrap_or(now).max(now).saturating_add(skew);
        seen.claim(&signed.signature, until, now)?;
        let (seen, signature) = (seen.clone(), signed.signature);
        // Told even when this request ends before its batch is written or synced: a
        // batch not stored must not make the sender's retry a replay.
        settle = Settle::new(move |stored| match stored {
            true => seen.stored(&signature),
            false => seen.release(&signature),
        });
    }
    ingest(&state, source, &body, settle).await
}

async fn ingest(
    state: &AppState,
    source: AlertSource,
    body: &[u8],
    settle: Settle,
) -> Result<(StatusCode, Json<IntakeSummary>), ApiError> {
    let batch = parse_webhook(source, body).map_err(ApiError::BadRequest)?;
    if batch.capped > 0 {
        tracing::warn!(
            source = source.label(),
            alerts = batch.capped,
            "alerts with labels or annotations over the intake's bounds were cut to them"
        );
        state
            .metrics
            .alerts_capped
            .with_label_values(&[source.label()])
            .inc_by(batch.capped as u64);
    }
    if batch.truncated_alerts > 0 {
        tracing::warn!(
            source = source.label(),
            truncated = batch.truncated_alerts,
            "sender truncated alerts (max_alerts / maxAlerts)"
        );
    }
    Ok(
        match state.intake.accept(source, body, batch, settle).await? {
            Accepted::Decided(summary) => (StatusCode::OK, Json(summary)),
            Accepted::Deferred(summary) => (StatusCode::ACCEPTED, Json(summary)),
        },
    )
}

/// The body's `Content-Length`, when it declares one.
fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
}

/// Reads the body, failing with 413 past `max` bytes (by Content-Length or while reading).
async fn read_limited(headers: &HeaderMap, body: Body, max: usize) -> Result<Bytes, ApiError> {
    if declared_length(headers).is_some_and(|n| n > max as u64) {
        return Err(ApiError::PayloadTooLarge(max));
    }
    axum::body::to_bytes(body, max).await.map_err(|e| {
        let over_limit = std::iter::successors(Some(&e as &dyn std::error::Error), |s| s.source())
            .any(|s| s.is::<LengthLimitError>());
        if over_limit {
            ApiError::PayloadTooLarge(max)
        } else {
            ApiError::BadRequest(format!("cannot read request body: {e}"))
        }
    })
}

/// A webhook body as Grafana (version "1") or Alertmanager (version "4") sends it; read
/// leniently: unknown fields are ignored, null and absent optional fields are accepted.
#[derive(serde::Serialize, utoipa::ToSchema)]
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
#[derive(serde::Serialize, utoipa::ToSchema)]
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
