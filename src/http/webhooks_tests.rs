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
