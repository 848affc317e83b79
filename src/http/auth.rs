//! Authentication as route layers: the JSON API needs `server.api_token`, `/metrics`
//! needs `server.metrics_token`, and the webhooks `webhook.token` or basic auth (each only
//! when set), checked before any extractor reads the request, so an unauthenticated sender
//! never gets its body read; secrets are compared in constant time. The HMAC signature of
//! a webhook covers its body, so it is checked in `webhooks.rs`. The console's session
//! cookie (`session.rs`) also opens the API for reading. Wrong API tokens count against
//! the client like wrong console logins (`login_throttle.rs`): past the limit, 429.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Instant;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, Method};
use axum::middleware::Next;
use axum::response::Response;
use base64::Engine;

use super::ApiError;
use super::session::ConsoleKeys;
use crate::app::AppState;
use crate::config::{Secret, WebhookConfig, secure_eq};

/// Route layer of the JSON API (`server.api_token`). A console session cookie is accepted
/// for reading only (`GET`/`HEAD`, e.g. the event stream a page follows): a cookie is sent
/// by the browser on its own, so changes need the bearer token.
pub async fn api_token(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let reading = matches!(*request.method(), Method::GET | Method::HEAD);
    let session = reading
        && request
            .extensions()
            .get::<ConsoleKeys>()
            .is_some_and(|k| k.has_session(request.headers()));
    if !session {
        require_bearer_counted(&request, state.config.server.api_token.as_ref())?;
    }
    Ok(next.run(request).await)
}

/// [`require_bearer`], with wrong tokens counted against the client (its address, from
/// the listener) in the console's login throttle: once over the limit, every attempt of
/// that client, the right token included, is refused with 429 until the window ends.
pub fn require_bearer_counted(
    request: &Request,
    expected: Option<&Secret>,
) -> Result<(), ApiError> {
    let Some(keys) = request.extensions().get::<ConsoleKeys>() else {
        return require_bearer(request.headers(), expected);
    };
    if expected.is_none() || bearer(request.headers()).is_none() {
        return require_bearer(request.headers(), expected);
    }
    let client = client_ip(request);
    let now = Instant::now();
    if let Err(wait) = keys.logins().check(client, now) {
        tracing::warn!(%client, "API token refused: too many wrong tokens from this client");
        return Err(ApiError::TooManyGuesses(
            wait.as_secs() + u64::from(wait.subsec_nanos() > 0),
        ));
    }
    let checked = require_bearer(request.headers(), expected);
    if checked.is_err() {
        keys.logins().failed(client, now);
    }
    checked
}

/// The client's address, as the listener put it in the request (unspecified without it,
/// so every such client shares one count).
pub fn client_ip(request: &Request) -> IpAddr {
    request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |c| c.0.ip())
}

/// Route layer of `/metrics` (`server.metrics_token`).
pub async fn metrics_token(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    require_bearer(
        request.headers(),
        state.config.server.metrics_token.as_ref(),
    )?;
    Ok(next.run(request).await)
}

/// Route layer of the webhooks (`webhook.token`, `webhook.basic_user`).
pub async fn webhook_sender(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    check_header_auth(&state.config.webhook, request.headers())?;
    Ok(next.run(request).await)
}

/// Passes when neither `webhook.token` nor basic auth is configured, or when the sender
/// presents either configured one: Grafana sends one `Authorization` header, so requiring
/// both would refuse every sender.
pub fn check_header_auth(cfg: &WebhookConfig, headers: &HeaderMap) -> Result<(), ApiError> {
    let basic_expected = cfg.basic_user.as_ref().map(|user| {
        let password = cfg.basic_password.as_ref().map_or("", |p| p.expose());
        format!("{user}:{password}")
    });
    if cfg.token.is_none() && basic_expected.is_none() {
        return Ok(());
    }
    let token_ok = cfg
        .token
        .as_ref()
        .zip(bearer(headers))
        .map(|(t, got)| secure_eq(got.as_bytes(), t.expose().as_bytes()));
    let basic_ok = basic_expected
        .as_ref()
        .zip(basic(headers))
        .map(|(expected, got)| secure_eq(&got, expected.as_bytes()));
    match (token_ok, basic_ok) {
        (Some(true), _) | (_, Some(true)) => Ok(()),
        (Some(false), _) => Err(ApiError::Unauthorized("invalid bearer token".into())),
        (_, Some(false)) => Err(ApiError::Unauthorized(
            "invalid basic credentials".into(),
        )),
        (None, None) => Err(ApiError::Unauthorized(
            match (&cfg.token, &basic_expected) {
                (Some(_), None) => "missing bearer token (Authorization: Bearer …; webhook.token)",
                (None, _) => {
                    "missing basic credentials (Authorization: Basic …; webhook.basic_user)"
                }
                (Some(_), Some(_)) => {
                    "missing credentials (Authorization: Bearer … for webhook.token, or Basic … for webhook.basic_user)"
                }
            }
            .into(),
        )),
    }
}

/// The decoded `user:password` of a basic `Authorization` header, if any.
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

/// The bearer token of the request, if any.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Passes when no token is configured or the request carries it as a bearer token.
pub fn require_bearer(headers: &HeaderMap, expected: Option<&Secret>) -> Result<(), ApiError> {
    let Some(expected) = expected else {
        return Ok(());
    };
    match bearer(headers) {
        Some(got) if secure_eq(got.as_bytes(), expected.expose().as_bytes()) => Ok(()),
        Some(_) => Err(ApiError::Unauthorized("invalid bearer token".into())),
        None => Err(ApiError::Unauthorized(
            "missing bearer token (Authorization: Bearer …)".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(pairs: &[(&'static str, String)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    // Was `bearer_and_basic_must_both_match_when_both_are_configured`: with both set, every
    // sender was refused (one Authorization header cannot carry both). Its single-method
    // assertions are kept; the both-configured ones are the point of the change.
    #[test]
    fn a_token_or_basic_credentials_pass_alone_and_either_passes_when_both_are_configured() {
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

        let both = WebhookConfig {
            token: Some(Secret::new("t0k")),
            ..only_basic
        };
        check_header_auth(&both, &auth("Bearer t0k".into())).unwrap();
        check_header_auth(&both, &auth(basic("grafana", "pw"))).unwrap();
        for bad in [
            auth("Bearer t0x".into()),
            auth(basic("grafana", "nope")),
            auth(basic("t0k", "")),
            HeaderMap::new(),
        ] {
            assert!(check_header_auth(&both, &bad).is_err(), "{bad:?}");
        }
        let err = check_header_auth(&both, &HeaderMap::new()).unwrap_err();
        assert!(err.to_string().contains("webhook.token"), "{err}");
        assert!(err.to_string().contains("webhook.basic_user"), "{err}");
    }
}
