//! `POST /webhook/grafana` and `POST /webhook/alertmanager`: authorize (bearer, basic and
//! Grafana HMAC, all configured checks must pass), bound the body, parse, then answer 2xx
//! only once the alerts and decisions are flushed; investigations follow in the background.

use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::HeaderMap;
use axum::routing::post;
use axum::{Json, Router};
use base64::Engine;
use hmac::{Hmac, Mac};
use http_body_util::LengthLimitError;
use sha2::Sha256;

use super::ApiError;
use super::auth::{bearer, secure_eq};
use crate::alerts::{AlertSource, IntakeSummary, parse_webhook};
use crate::app::AppState;
use crate::config::WebhookConfig;

/// Grafana's default HMAC signature header.
pub const SIGNATURE_HEADER: &str = "x-grafana-alerting-signature";
/// The timestamp header Grafana sends when `hmacConfig.timestampHeader` is set to it.
pub const TIMESTAMP_HEADER: &str = "x-grafana-alerting-timestamp";

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/webhook/grafana", post(grafana))
        .route("/webhook/alertmanager", post(alertmanager))
        .layer(DefaultBodyLimit::disable())
}

async fn grafana(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<IntakeSummary>, ApiError> {
    receive(state, AlertSource::Grafana, headers, body).await
}

async fn alertmanager(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<IntakeSummary>, ApiError> {
    receive(state, AlertSource::Alertmanager, headers, body).await
}

async fn receive(
    state: AppState,
    source: AlertSource,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<IntakeSummary>, ApiError> {
    let cfg = &state.config.webhook;
    check_header_auth(cfg, &headers)?;
    let body = read_limited(&headers, body, cfg.max_body_bytes).await?;
    if needs_hmac(cfg, source) {
        check_hmac(cfg, &headers, &body, unix_now())?;
    }
    let batch = parse_webhook(source, &body).map_err(ApiError::BadRequest)?;
    if batch.truncated_alerts > 0 {
        tracing::warn!(
            source = source.as_str(),
            truncated = batch.truncated_alerts,
            "sender truncated alerts (max_alerts / maxAlerts)"
        );
    }
    let (summary, follow_ups) = state.intake.ingest(batch).await?;
    let intake = state.intake.clone();
    state.tasks.spawn(async move {
        for f in follow_ups {
            f.run(&intake).await;
        }
    });
    Ok(Json(summary))
}

/// Reads the body, failing with 413 past `max` bytes (by Content-Length or while reading).
async fn read_limited(headers: &HeaderMap, body: Body, max: usize) -> Result<Bytes, ApiError> {
    let declared = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
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

/// Bearer and basic checks (each only when configured).
pub fn check_header_auth(cfg: &WebhookConfig, headers: &HeaderMap) -> Result<(), ApiError> {
    if let Some(token) = &cfg.token {
        match bearer(headers) {
            Some(got) if secure_eq(got.as_bytes(), token.expose().as_bytes()) => {}
            Some(_) => return Err(ApiError::Unauthorized("invalid bearer token".into())),
            None => {
                return Err(ApiError::Unauthorized(
                    "missing bearer token (Authorization: Bearer …; webhook.token)".into(),
                ));
            }
        }
    }
    if let Some(user) = &cfg.basic_user {
        let password = cfg
            .basic_password
            .as_ref()
            .map(|p| p.expose())
            .unwrap_or("");
        let expected = format!("{user}:{password}");
        let got = basic(headers).ok_or_else(|| {
            ApiError::Unauthorized(
                "missing basic credentials (Authorization: Basic …; webhook.basic_user)".into(),
            )
        })?;
        if !secure_eq(&got, expected.as_bytes()) {
            return Err(ApiError::Unauthorized("invalid basic credentials".into()));
        }
    }
    Ok(())
}

fn basic(headers: &HeaderMap) -> Option<Vec<u8>> {
    let value = headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, creds) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    base64::engine::general_purpose::STANDARD
        .decode(creds.trim())
        .ok()
}

/// Verifies `X-Grafana-Alerting-Signature` = hex HMAC-SHA256(secret, [ts ":"] body), and
/// with a timestamp header, that it is within `webhook.hmac_max_skew` of `now` (replay).
pub fn check_hmac(
    cfg: &WebhookConfig,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> Result<(), ApiError> {
    let Some(secret) = &cfg.hmac_secret else {
        return Ok(());
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
    if let Some(ts) = header(TIMESTAMP_HEADER) {
        let sent: i64 = ts.parse().map_err(|_| {
            ApiError::Unauthorized("X-Grafana-Alerting-Timestamp is not unix seconds".into())
        })?;
        let skew = cfg.hmac_max_skew.get().as_secs() as i64;
        if (now - sent).abs() > skew {
            return Err(ApiError::Unauthorized(format!(
                "stale X-Grafana-Alerting-Timestamp ({}s from now; webhook.hmac_max_skew is {skew}s)",
                now - sent
            )));
        }
        mac.update(ts.as_bytes());
        mac.update(b":");
    }
    mac.update(body);
    mac.verify_slice(&signature)
        .map_err(|_| ApiError::Unauthorized("invalid X-Grafana-Alerting-Signature".into()))
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
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
    fn bearer_and_basic_must_both_match_when_both_are_configured() {
        let basic = |u: &str, p: &str| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"))
            )
        };
        let only_basic = WebhookConfig {
            basic_user: Some("grafana".into()),
            basic_password: Some(Secret::new("pw")),
            ..WebhookConfig::default()
        };
        let auth = |v: String| headers(&[("authorization", v)]);
        check_header_auth(&only_basic, &auth(basic("grafana", "pw"))).unwrap();
        assert!(check_header_auth(&only_basic, &auth(basic("grafana", "nope"))).is_err());
        assert!(check_header_auth(&only_basic, &HeaderMap::new()).is_err());
        let only_token = WebhookConfig {
            token: Some(Secret::new("t0k")),
            ..WebhookConfig::default()
        };
        check_header_auth(&only_token, &auth("Bearer t0k".into())).unwrap();
        assert!(check_header_auth(&only_token, &auth("Bearer t0x".into())).is_err());
        assert!(check_header_auth(&only_token, &auth(basic("a", "b"))).is_err());
        check_header_auth(&WebhookConfig::default(), &HeaderMap::new()).unwrap();
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
