//! What every console page shares: the layout (navigation, the CSRF token for forms and
//! scripts), the security headers (a Content-Security-Policy without inline scripts or
//! styles), HTML error pages, and small formatting helpers. maud escapes every string it
//! renders, so user-controlled text (alert labels, questions, tool output) stays text.

use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use maud::{DOCTYPE, Markup, html};

use crate::agent::InvestigationStatus;
use crate::alerts::AlertStatus;
use crate::http::ApiError;

/// The policy of every console page: scripts, styles, images and connections from the
/// daemon itself only; no inline script or style; not framed elsewhere.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self'; connect-src 'self'; frame-src 'self'; form-action 'self'; \
    base-uri 'none'; frame-ancestors 'none'";

/// The CSRF token of this browser, put in the request by the console's cookie layer.
#[derive(Clone, Debug)]
pub struct Csrf(pub String);

/// What the layout needs to know about the request.
pub struct Chrome<'a> {
    pub csrf: &'a Csrf,
    /// Whether a login exists (show "Log out").
    pub login: bool,
}

/// A whole page: `title` in the head, `body` inside the layout.
pub fn layout(chrome: &Chrome<'_>, title: &str, current: &str, body: Markup) -> Markup {
    let nav = [
        ("/", "Investigations"),
        ("/ask", "Ask"),
        ("/alerts", "Alerts"),
        ("/reports", "Reports"),
        ("/status", "Status"),
    ];
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="csrf-token" content=(chrome.csrf.0);
                title { (title) " · sre-agent" }
                link rel="stylesheet" href=(super::assets::CSS_PATH);
                script src=(super::assets::JS_PATH) defer {}
            }
            body {
                header.top {
                    a.brand href="/" { "sre-agent" }
                    nav aria-label="Console" {
                        ul {
                            @for (href, label) in nav {
                                li {
                                    @if href == current {
                                        a href=(href) aria-current="page" { (label) }
                                    } @else {
                                        a href=(href) { (label) }
                                    }
                                }
                            }
                        }
                    }
                    @if chrome.login {
                        form.logout method="post" action="/logout" {
                            input type="hidden" name="_csrf" value=(chrome.csrf.0);
                            button type="submit" { "Log out" }
                        }
                    }
                }
                main id="main" { (body) }
            }
        }
    }
}

/// An HTML response with the console's security headers.
pub fn respond(status: StatusCode, markup: Markup) -> Response {
    let mut resp = (status, markup.into_string()).into_response();
    secure(resp.headers_mut(), CSP);
    resp
}

/// Sets the content type and security headers of a console document with policy `csp`.
pub fn secure(h: &mut HeaderMap, csp: &'static str) {
    h.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert("content-security-policy", HeaderValue::from_static(csp));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("referrer-policy", HeaderValue::from_static("same-origin"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

/// A console error: an HTML page with the status and what went wrong.
pub struct PageError(pub ApiError);

impl From<ApiError> for PageError {
    fn from(e: ApiError) -> Self {
        Self(e)
    }
}

impl From<crate::agent::SubmitError> for PageError {
    fn from(e: crate::agent::SubmitError) -> Self {
        Self(e.into())
    }
}

impl From<crate::store::StoreError> for PageError {
    fn from(e: crate::store::StoreError) -> Self {
        Self(e.into())
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let status = self.0.status();
        let message = match &self.0 {
            ApiError::Internal(detail) => {
                tracing::error!(error = %detail, "console request failed");
                "internal error; the daemon's log has the details".to_string()
            }
            other => other.to_string(),
        };
        let body = html! {
            (DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    title { (status.as_u16()) " · sre-agent" }
                    link rel="stylesheet" href=(super::assets::CSS_PATH);
                }
                body {
                    main id="main" {
                        h1 { (status.canonical_reason().unwrap_or("Error")) }
                        p.error role="alert" { (message) }
                        p { a href="/" { "Back to the investigations" } }
                    }
                }
            }
        };
        let mut resp = respond(status, body);
        if let ApiError::TooManyGuesses(seconds) = self.0 {
            resp.headers_mut()
                .insert(axum::http::header::RETRY_AFTER, seconds.into());
        }
        resp
    }
}

/// A status as a badge (its class colours it).
pub fn status_badge(status: InvestigationStatus) -> Markup {
    html! { span class={ "badge s-" (status.as_str()) } { (status.as_str()) } }
}

/// An alert's status as a badge.
pub fn alert_status(status: AlertStatus) -> Markup {
    let name = match status {
        AlertStatus::Firing => "firing",
        AlertStatus::Resolved => "resolved",
    };
    html! { span class={ "badge s-" (name) } { (name) } }
}

/// A time as UTC text, machine-readable in `datetime`.
pub fn time(at: DateTime<Utc>) -> Markup {
    html! { time datetime=(at.to_rfc3339()) { (at.format("%Y-%m-%d %H:%M:%S UTC")) } }
}

/// `url` when it is an http(s) URL (never `javascript:` and the like), for links: the
/// check notifications use too.
pub use crate::notify::safe_url;

/// A path inside the console to go back to after login: relative to this site only. It
/// must start with one `/` followed by anything but `/` or `\`, with no backslash or
/// control character anywhere, also once percent-decoded (browsers drop tabs and line
/// breaks from a URL and read `\` as `/`, so `/%09/evil.example` would leave the site).
pub fn local_path(next: &str) -> &str {
    let decoded = percent_decoded(next);
    let ok = [next, decoded.as_str()].iter().all(|p| {
        let mut chars = p.chars();
        chars.next() == Some('/')
            && chars.next().is_none_or(|c| c != '/')
            && !p.chars().any(|c| c == '\\' || c.is_control())
    });
    if ok { next } else { "/" }
}

/// `s` with every `%XX` escape decoded, repeatedly until nothing changes (a few rounds at
/// most), invalid UTF-8 replaced.
fn percent_decoded(s: &str) -> String {
    let mut text = s.to_string();
    for _ in 0..4 {
        let bytes = text.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            let hex = |b: u8| char::from(b).to_digit(16);
            let escape = bytes
                .get(i + 1)
                .copied()
                .and_then(hex)
                .zip(bytes.get(i + 2).copied().and_then(hex));
            match (bytes[i], escape) {
                (b'%', Some((hi, lo))) => {
                    out.push((hi * 16 + lo) as u8);
                    i += 3;
                }
                (b, _) => {
                    out.push(b);
                    i += 1;
                }
            }
        }
        let next = String::from_utf8_lossy(&out).into_owned();
        if next == text {
            break;
        }
        text = next;
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_web_links_and_local_paths_pass() {
        assert_eq!(safe_url("https://grafana/d/x"), Some("https://grafana/d/x"));
        assert_eq!(safe_url("javascript:alert(1)"), None);
        assert_eq!(safe_url(" JaVaScRiPt:alert(1)"), None);
        assert_eq!(safe_url("data:text/html,x"), None);
        assert_eq!(local_path("/investigations/1?x=y"), "/investigations/1?x=y");
        for bad in [
            "//evil.example/",
            "https://evil.example/",
            "/\\evil",
            "x",
            "/\t/evil.example",
            "/%09/evil.example",
            "/%2F/evil.example",
            "/%2f%2fevil.example",
            "/%5Cevil.example",
            "/\r\n/evil.example",
            "/%0d%0aSet-Cookie:x",
            "",
        ] {
            assert_eq!(local_path(bad), "/", "{bad}");
        }
    }

    #[test]
    fn an_error_page_says_what_went_wrong_with_its_status() {
        let resp = PageError(ApiError::NotFound("no investigation <x>".into())).into_response();
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
        assert_eq!(resp.headers()["content-security-policy"], CSP);
        let body = futures::executor::block_on(http_body_util::BodyExt::collect(resp.into_body()))
            .unwrap()
            .to_bytes();
        let body = String::from_utf8_lossy(&body);
        assert!(body.contains("no investigation &lt;x&gt;"), "{body}");
    }
}
