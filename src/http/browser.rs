//! What a web page the operator visits can make the daemon do: nothing. A page can send
//! a form or `text/plain` post anywhere without asking (no CORS preflight), and a page at a
//! DNS name rebound to 127.0.0.1 reaches the daemon as its own origin. So:
//!
//! - [`require_json`] (route layer of the JSON API and the webhooks): a body must be
//!   declared `Content-Type: application/json` (what Grafana and Alertmanager send, and
//!   what a page cannot send cross-site without a preflight the daemon never grants), else
//!   415. An empty body may come without a type.
//! - [`same_origin`] (every route): a state-changing request (POST, PUT, PATCH, DELETE)
//!   that a browser marks as coming from another site is refused with 403: an `Origin`
//!   other than the daemon's own (the request's `Host`, or `server.public_url`), `Origin:
//!   null`, or, without `Origin`, `Sec-Fetch-Site: cross-site`/`same-site`. Webhook senders
//!   and the CLI send no `Origin`.
//! - [`known_host`] (every route, only when no `server.api_token` is set, which means a
//!   loopback listener): a request whose `Host` is not a loopback name (`localhost`,
//!   `127.0.0.1`, `[::1]`, any port) or the host of `server.public_url` gets 421 (DNS
//!   rebinding). With a token a rebound page has no credentials (the session cookie
//!   belongs to the real name), so a LAN or reverse-proxy name is served.

use std::net::IpAddr;

use axum::extract::{Request, State};
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE, HOST, ORIGIN, TRANSFER_ENCODING};
use axum::http::{HeaderMap, Method};
use axum::middleware::Next;
use axum::response::Response;

use super::ApiError;
use crate::app::AppState;

/// Route layer: a request with a body must declare it JSON.
pub async fn require_json(request: Request, next: Next) -> Result<Response, ApiError> {
    if matches!(
        *request.method(),
        Method::POST | Method::PUT | Method::PATCH
    ) {
        check_json(request.headers())?;
    }
    Ok(next.run(request).await)
}

fn check_json(headers: &HeaderMap) -> Result<(), ApiError> {
    let declared = headers.get(CONTENT_TYPE).map(|v| {
        v.to_str()
            .unwrap_or("")
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    });
    match declared.as_deref() {
        Some("application/json") => Ok(()),
        None if !has_body(headers) => Ok(()),
        other => Err(ApiError::UnsupportedMediaType(format!(
            "the body must be JSON sent with Content-Type: application/json (this request \
             has {})",
            other.map_or("no Content-Type".to_string(), |t| format!("{t:?}"))
        ))),
    }
}

/// Whether the request says a body follows.
fn has_body(headers: &HeaderMap) -> bool {
    let length = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim() != "0");
    length.unwrap_or_else(|| headers.contains_key(TRANSFER_ENCODING))
}

/// Layer: a state-changing request from another site's page is refused.
pub async fn same_origin(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let changes = matches!(
        *request.method(),
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    );
    if changes {
        let public_url = state.config.server.public_url.as_ref().map(|u| &u.0);
        if let Some(why) = cross_site(request.headers(), public_url) {
            tracing::warn!(method = %request.method(), path = request.uri().path(), why,
                "refused a request from another site's page");
            return Err(ApiError::Forbidden(format!(
                "refused: {why}; a web page of another origin cannot change anything here"
            )));
        }
    }
    Ok(next.run(request).await)
}

/// Why the request comes from another site's page, if it does.
fn cross_site(headers: &HeaderMap, public_url: Option<&url::Url>) -> Option<String> {
    let Some(origin) = headers.get(ORIGIN) else {
        let site = headers
            .get("sec-fetch-site")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        return matches!(site, "cross-site" | "same-site")
            .then(|| format!("the browser says this request is {site}"));
    };
    let origin = origin.to_str().unwrap_or("");
    let refused = || Some(format!("the origin {origin:?} is not this daemon's"));
    let Ok(parsed) = url::Url::parse(origin) else {
        return refused();
    };
    let (Some(host), Some(port)) = (parsed.host_str(), parsed.port_or_known_default()) else {
        return refused();
    };
    let own_host = headers
        .get(HOST)
        .and_then(|v| v.to_str().ok())
        .and_then(split_host)
        .is_some_and(|(h, p)| h.eq_ignore_ascii_case(host) && p.unwrap_or(port) == port);
    let public = public_url.is_some_and(|u| {
        u.host_str().is_some_and(|h| h.eq_ignore_ascii_case(host))
            && u.port_or_known_default() == Some(port)
            && u.scheme() == parsed.scheme()
    });
    if own_host || public { None } else { refused() }
}

/// Layer: without `server.api_token`, only requests naming this machine are served.
pub async fn known_host(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    if state.config.server.api_token.is_none() {
        let public_url = state.config.server.public_url.as_ref().map(|u| &u.0);
        let host = request
            .headers()
            .get(HOST)
            .map(|v| v.to_str().unwrap_or("?").to_string())
            .or_else(|| request.uri().authority().map(|a| a.to_string()));
        if let Some(host) = host
            && !local_host(&host, public_url)
        {
            tracing::warn!(host = %host, path = request.uri().path(),
                "refused a request naming another host (DNS rebinding?)");
            return Err(ApiError::MisdirectedRequest(format!(
                "refused: Host {host:?} is not this machine; without server.api_token the \
                 daemon answers only to localhost, 127.0.0.1, [::1] and the host of \
                 server.public_url"
            )));
        }
    }
    Ok(next.run(request).await)
}

/// Whether `host` (a Host header) names a loopback address or `public_url`'s host.
fn local_host(host: &str, public_url: Option<&url::Url>) -> bool {
    let Some((name, _)) = split_host(host) else {
        return false;
    };
    let name = name.strip_suffix('.').unwrap_or(name);
    let ip = name
        .strip_prefix('[')
        .and_then(|n| n.strip_suffix(']'))
        .unwrap_or(name)
        .parse::<IpAddr>();
    name.eq_ignore_ascii_case("localhost")
        || ip.is_ok_and(|ip| ip.is_loopback())
        || public_url
            .and_then(|u| u.host_str())
            .is_some_and(|h| h.eq_ignore_ascii_case(name))
}

/// A Host header's host (IPv6 in brackets) and port, if it is well-formed.
fn split_host(host: &str) -> Option<(&str, Option<u16>)> {
    let host = host.trim();
    let (name, port) = if host.starts_with('[') {
        host.split_at_checked(host.find(']')? + 1)?
    } else {
        match host.find(':') {
            Some(colon) => host.split_at_checked(colon)?,
            None => (host, ""),
        }
    };
    let port = match port {
        "" => None,
        p => Some(p.strip_prefix(':')?.parse().ok()?),
    };
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '[' | ']' | ':'));
    ok.then_some((name, port))
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn loopback_names_and_the_public_host_are_local_and_nothing_else() {
        let public = url::Url::parse("https://sre.example.com/").unwrap();
        for host in [
            "localhost",
            "LocalHost:8787",
            "localhost.:1",
            "127.0.0.1",
            "127.0.0.1:8787",
            "127.8.9.10:80",
            "[::1]",
            "[::1]:8787",
            "sre.example.com",
            "sre.example.com:8443",
        ] {
            assert!(local_host(host, Some(&public)), "{host}");
        }
        for host in [
            "evil.example",
            "localhost.evil.example",
            "127.0.0.1.nip.io:8787",
            "[::2]:80",
            "10.0.0.1:8787",
            "sre.example.com.evil.example",
            "localhost:8787:1",
            "localhost:x",
            "local host",
            "",
            "[::1",
        ] {
            assert!(!local_host(host, Some(&public)), "{host}");
        }
        assert!(!local_host("sre.example.com", None));
    }

    #[test]
    fn an_origin_is_the_daemons_own_when_it_names_the_host_asked_or_the_public_url() {
        let public = url::Url::parse("https://sre.example.com/").unwrap();
        let own = |origin: &str, host: &str| {
            cross_site(
                &headers(&[("origin", origin), ("host", host)]),
                Some(&public),
            )
            .is_none()
        };
        assert!(own("http://127.0.0.1:8787", "127.0.0.1:8787"));
        assert!(own("https://sre.lan", "sre.lan"));
        assert!(own("https://sre.lan", "sre.lan:443"));
        assert!(
            own("https://sre.example.com", "127.0.0.1:8787"),
            "behind a proxy"
        );
        assert!(
            !own("http://sre.example.com", "127.0.0.1:8787"),
            "another scheme"
        );
        assert!(!own("http://127.0.0.1:8788", "127.0.0.1:8787"));
        assert!(!own("https://evil.example", "127.0.0.1:8787"));
        assert!(!own("null", "127.0.0.1:8787"));
        assert!(!own("", "127.0.0.1:8787"));
        let site = |s: &str| cross_site(&headers(&[("sec-fetch-site", s)]), None).is_none();
        assert!(site("same-origin") && site("none") && !site("cross-site") && !site("same-site"));
        assert!(
            cross_site(&HeaderMap::new(), None).is_none(),
            "not a browser"
        );
    }

    #[test]
    fn only_a_body_declared_json_or_no_body_passes() {
        for ok in [
            headers(&[("content-type", "application/json")]),
            headers(&[("content-type", "Application/JSON; charset=utf-8")]),
            headers(&[]),
            headers(&[("content-length", "0")]),
        ] {
            assert!(check_json(&ok).is_ok(), "{ok:?}");
        }
        for bad in [
            headers(&[("content-type", "text/plain")]),
            headers(&[("content-type", "application/x-www-form-urlencoded")]),
            headers(&[("content-type", "application/json-seq")]),
            headers(&[("content-length", "12")]),
            headers(&[("transfer-encoding", "chunked")]),
        ] {
            let err = check_json(&bad).unwrap_err();
            assert!(
                err.to_string().contains("Content-Type: application/json"),
                "{err}"
            );
        }
    }
}
