//! Grafana's HMAC signature on a webhook: which endpoints need one, the check of the
//! signature and its timestamp, and the signatures seen lately (a replayed request is
//! refused; one whose request was not accepted is released for the sender's retry).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::http::HeaderMap;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::ApiError;
use crate::alerts::AlertSource;
use crate::config::WebhookConfig;

/// Grafana's default HMAC signature header.
pub const SIGNATURE_HEADER: &str = "x-grafana-alerting-signature";
/// The timestamp header Grafana sends when `hmacConfig.timestampHeader` is set to it.
pub const TIMESTAMP_HEADER: &str = "x-grafana-alerting-timestamp";

/// Signatures remembered at most; past it the soonest to expire is forgotten first.
const MAX_REMEMBERED_SIGNATURES: usize = 10_000;

/// HMAC is checked on the Grafana endpoint; Alertmanager cannot sign, so there it is
/// required only when it is the sole configured method (which then locks that endpoint).
pub(super) fn needs_hmac(cfg: &WebhookConfig, source: AlertSource) -> bool {
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

pub(super) fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use axum::http::{HeaderValue, StatusCode};

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
