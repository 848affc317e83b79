//! `POST /webhook/grafana` and `POST /webhook/alertmanager`: the sender's token or basic
//! credentials are checked by a route layer before the body is read (`auth.rs`), then that
//! the body is declared JSON (`browser.rs`, as both senders do); here room is reserved for
//! the body among those being read (`webhook.max_inflight_bytes`, `inflight.rs`), the
//! body is bounded (`webhook.max_body_bytes`), its Grafana HMAC signature checked (fresh,
//! and never accepted twice), parsed, and answered 2xx only once the alerts are on disk
//! (the alert inbox, see `alerts::intake::pipeline`); decisions follow at once,
//! investigations in the background.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::from_fn_with_state;
use axum::routing::post;
use axum::{Extension, Json};
use hmac::{Hmac, Mac};
use http_body_util::LengthLimitError;
use sha2::Sha256;

use super::ApiError;
use super::auth;
use super::inflight::{InflightBodies, ROOM_WAIT};
use crate::alerts::{Accepted, AlertSource, IntakeSummary, Settle, parse_webhook};
use crate::app::AppState;
use crate::config::WebhookConfig;
use crate::http::routes::Routes;

/// Grafana's default HMAC signature header.
pub const SIGNATURE_HEADER: &str = "x-grafana-alerting-signature";
/// The timestamp header Grafana sends when `hmacConfig.timestampHeader` is set to it.
pub const TIMESTAMP_HEADER: &str = "x-grafana-alerting-timestamp";

/// Signatures remembered at most; past it the soonest to expire is forgotten first.
const MAX_REMEMBERED_SIGNATURES: usize = 10_000;

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
        (status = 400, description = "Bad input", body = crate::api::ErrorBody),
        (status = 401, description = "Missing or wrong credentials", body = crate::api::ErrorBody),
        (status = 408, description = "Took longer than server.request_timeout", body = crate::api::ErrorBody),
        (status = 413, description = "Body over the limit", body = crate::api::ErrorBody),
        (status = 415, description = "The body is not declared Content-Type: application/json", body = crate::api::ErrorBody),
        (status = 431, description = "Headers over the limit", body = crate::api::ErrorBody),
        (status = 500, description = "Internal error (details in the daemon's log)", body = crate::api::ErrorBody),
        (status = 503, description = "Not stored (a disk fault, or too many bodies being read: webhook.max_inflight_bytes); retry after `Retry-After`", body = crate::api::ErrorBody)
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
        (status = 400, description = "Bad input", body = crate::api::ErrorBody),
        (status = 401, description = "Missing or wrong credentials", body = crate::api::ErrorBody),
        (status = 408, description = "Took longer than server.request_timeout", body = crate::api::ErrorBody),
        (status = 413, description = "Body over the limit", body = crate::api::ErrorBody),
        (status = 415, description = "The body is not declared Content-Type: application/json", body = crate::api::ErrorBody),
        (status = 431, description = "Headers over the limit", body = crate::api::ErrorBody),
        (status = 500, description = "Internal error (details in the daemon's log)", body = crate::api::ErrorBody),
        (status = 503, description = "Not stored (a disk fault, or too many bodies being read: webhook.max_inflight_bytes); retry after `Retry-After`", body = crate::api::ErrorBody)
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
                    source = source.as_str(),
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
            source = source.as_str(),
            alerts = batch.capped,
            "alerts with labels or annotations over the intake's bounds were cut to them"
        );
        state
            .metrics
            .alerts_capped
            .with_label_values(&[source.as_str()])
            .inc_by(batch.capped as u64);
    }
    if batch.truncated_alerts > 0 {
        tracing::warn!(
            source = source.as_str(),
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

/// HMAC is checked on the Grafana endpoint; Alertmanager cannot sign, so there it is
/// required only when it is the sole configured method (which then locks that endpoint).
fn needs_hmac(cfg: &WebhookConfig, source: AlertSource) -> bool {
    cfg.hmac_secret.is_some()
        && (source == AlertSource::Grafana || (cfg.token.is_none() && cfg.basic_user.is_none()))
}

/// A verified signature: its bytes and the timestamp it covered, if any.
#[derive(Debug)]
pub struct Signed {
    pub signature: Vec<u8>,
    pub sent_at: Option<i64>,
}

/// Verifies `X-Grafana-Alerting-Signature` = hex HMAC-SHA256(secret, [ts ":"] body), and
/// with a timestamp header (required by `webhook.hmac_require_timestamp`), that it is within
/// `webhook.hmac_max_skew` of `now`, before or after.
pub fn check_hmac(
    cfg: &WebhookConfig,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> Result<Signed, ApiError> {
    let Some(secret) = &cfg.hmac_secret else {
        return Err(ApiError::Internal(
            "HMAC checked with no hmac_secret".into(),
        ));
    };
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let signature = header(SIGNATURE_HEADER).ok_or_else(|| {
        ApiError::Unauthorized("missing X-Grafana-Alerting-Signature (webhook.hmac_secret)".into())
    })?;
    let signature = hex::decode(signature.trim_start_matches("sha256="))
        .map_err(|_| ApiError::Unauthorized("X-Grafana-Alerting-Signature is not hex".into()))?;
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.expose().as_bytes())
        .expect("HMAC takes any key length");
    let timestamp = header(TIMESTAMP_HEADER);
    if timestamp.is_none() && cfg.hmac_require_timestamp {
        return Err(ApiError::Unauthorized(
            "missing X-Grafana-Alerting-Timestamp (webhook.hmac_require_timestamp)".into(),
        ));
    }
    let mut sent_at = None;
    if let Some(ts) = timestamp {
        let sent: i64 = ts.parse().map_err(|_| {
            ApiError::Unauthorized("X-Grafana-Alerting-Timestamp is not unix seconds".into())
        })?;
        let skew = cfg.hmac_max_skew.get().as_secs();
        // abs_diff: a timestamp near i64::MIN or MAX must not overflow into "fresh".
        if now.abs_diff(sent) > skew {
            let when = if sent > now { "in the future" } else { "old" };
            return Err(ApiError::Unauthorized(format!(
                "stale X-Grafana-Alerting-Timestamp ({}s {when}; webhook.hmac_max_skew is {skew}s)",
                now.abs_diff(sent)
            )));
        }
        mac.update(ts.as_bytes());
        mac.update(b":");
        sent_at = Some(sent);
    }
    mac.update(body);
    mac.verify_slice(&signature)
        .map_err(|_| ApiError::Unauthorized("invalid X-Grafana-Alerting-Signature".into()))?;
    Ok(Signed { signature, sent_at })
}

/// Signatures accepted within the freshness window, so a captured request cannot be
/// replayed while its timestamp is still fresh (or, unsigned by time, for one window).
#[derive(Default)]
pub struct SeenSignatures {
    /// signature → (unix second after which it is forgotten, its batch is stored).
    until: Mutex<HashMap<Vec<u8>, (i64, bool)>>,
}

impl SeenSignatures {
    /// Records `signature` until `until`; refuses one already recorded: 401 once its batch
    /// is stored, 503 while it is being stored (its sender's retry may still be needed).
    pub fn claim(&self, signature: &[u8], until: i64, now: i64) -> Result<(), ApiError> {
        let mut seen = self.until.lock().unwrap_or_else(|e| e.into_inner());
        match seen.get(signature) {
            Some(&(t, true)) if t >= now => {
                return Err(ApiError::Unauthorized(
                    "replayed X-Grafana-Alerting-Signature (this signed request was already accepted)"
                        .into(),
                ));
            }
            Some(&(t, false)) if t >= now => {
                return Err(ApiError::Unavailable(
                    "this signed request is still being stored; try again".into(),
                ));
            }
            _ => {}
        }
        if seen.len() >= MAX_REMEMBERED_SIGNATURES {
            seen.retain(|_, &mut (t, _)| t >= now);
        }
        if seen.len() >= MAX_REMEMBERED_SIGNATURES
            && let Some(soonest) = seen.iter().min_by_key(|(_, t)| t.0).map(|(k, _)| k.clone())
        {
            seen.remove(&soonest);
        }
        seen.insert(signature.to_vec(), (until, false));
        Ok(())
    }

    /// Marks `signature`'s batch stored: a request with it again is a replay.
    pub fn stored(&self, signature: &[u8]) {
        let mut seen = self.until.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, stored)) = seen.get_mut(signature) {
            *stored = true;
        }
    }

    /// Forgets `signature` (its request was not accepted after all).
    pub fn release(&self, signature: &[u8]) {
        let mut seen = self.until.lock().unwrap_or_else(|e| e.into_inner());
        seen.remove(signature);
    }
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
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

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;
    use crate::config::{HumanDuration, Secret};

    fn cfg() -> WebhookConfig {
        WebhookConfig {
            hmac_secret: Some(Secret::new("s3cr3t")),
            hmac_max_skew: HumanDuration::secs(300),
            ..WebhookConfig::default()
        }
    }

    fn sign(secret: &str, ts: Option<&str>, body: &[u8]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        if let Some(ts) = ts {
            mac.update(ts.as_bytes());
            mac.update(b":");
        }
        mac.update(body);
        hex::encode(mac.finalize().into_bytes())
    }

    fn headers(pairs: &[(&'static str, String)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn a_signature_over_timestamp_colon_body_is_accepted() {
        let body = br#"{"alerts":[]}"#;
        let now = 1_748_772_960;
        let h = headers(&[
            (TIMESTAMP_HEADER, now.to_string()),
            (
                SIGNATURE_HEADER,
                sign("s3cr3t", Some(&now.to_string()), body),
            ),
        ]);
        check_hmac(&cfg(), &h, body, now + 10).unwrap();
    }

    #[test]
    fn a_signature_over_the_body_alone_is_accepted_without_a_timestamp() {
        let body = b"{}";
        let h = headers(&[(SIGNATURE_HEADER, sign("s3cr3t", None, body))]);
        check_hmac(&cfg(), &h, body, 0).unwrap();
    }

    #[test]
    fn wrong_secret_tampered_body_stale_or_missing_signatures_are_refused() {
        let body = b"{}";
        let now = 1_748_772_960;
        let ts = now.to_string();
        let good = sign("s3cr3t", Some(&ts), body);
        let cases = [
            headers(&[
                (TIMESTAMP_HEADER, ts.clone()),
                (SIGNATURE_HEADER, sign("other", Some(&ts), body)),
            ]),
            headers(&[
                (TIMESTAMP_HEADER, (now + 1).to_string()),
                (SIGNATURE_HEADER, good.clone()),
            ]),
            headers(&[(SIGNATURE_HEADER, good.clone())]),
            headers(&[(TIMESTAMP_HEADER, ts.clone())]),
            headers(&[
                (TIMESTAMP_HEADER, ts.clone()),
                (SIGNATURE_HEADER, "zz".into()),
            ]),
        ];
        for h in cases {
            assert!(check_hmac(&cfg(), &h, body, now).is_err(), "{h:?}");
        }
        let stale = headers(&[(TIMESTAMP_HEADER, ts.clone()), (SIGNATURE_HEADER, good)]);
        let err = check_hmac(&cfg(), &stale, body, now + 301).unwrap_err();
        assert!(err.to_string().contains("stale"), "{err}");
    }

    #[test]
    fn a_signature_being_stored_asks_for_a_retry_is_a_replay_once_stored_and_free_once_lost() {
        let seen = SeenSignatures::default();
        let (sig, now) = (b"sig".as_slice(), 1_000);
        seen.claim(sig, now + 300, now).unwrap();
        let again = seen.claim(sig, now + 300, now).unwrap_err();
        assert_eq!(again.status(), StatusCode::SERVICE_UNAVAILABLE, "{again}");
        // Its batch was not stored (a failed sync, a request gone before the write).
        seen.release(sig);
        seen.claim(sig, now + 300, now).unwrap();
        seen.stored(sig);
        let replay = seen.claim(sig, now + 300, now).unwrap_err();
        assert_eq!(replay.status(), StatusCode::UNAUTHORIZED, "{replay}");
    }

    #[test]
    fn hmac_applies_to_alertmanager_only_when_it_is_the_sole_method() {
        assert!(needs_hmac(&cfg(), AlertSource::Grafana));
        assert!(needs_hmac(&cfg(), AlertSource::Alertmanager));
        let with_token = WebhookConfig {
            token: Some(Secret::new("t")),
            ..cfg()
        };
        assert!(!needs_hmac(&with_token, AlertSource::Alertmanager));
        assert!(needs_hmac(&with_token, AlertSource::Grafana));
    }
}
