//! `GET|POST /login`, `POST /logout`: trades `server.api_token` for a session cookie
//! (HttpOnly, SameSite=Strict), throttling wrong tokens per client (429 with Retry-After),
//! and ends the session again, on the server as well as in the browser. After a login the
//! browser goes back to `next` only when that is a path of this site (`local_path`).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Instant;

use axum::Extension;
use axum::extract::{ConnectInfo, Form, Query, State};
use axum::http::header::{LOCATION, RETRY_AFTER, SET_COOKIE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde::Deserialize;

use super::page::{Chrome, Csrf, PageError, layout, local_path, respond};
use crate::app::AppState;
use crate::config::secure_eq;
use crate::http::ApiError;
use crate::http::session::{ConsoleKeys, SESSION_COOKIE, SESSION_SECONDS, set_cookie};

#[derive(Deserialize)]
pub struct LoginQuery {
    next: Option<String>,
}

#[derive(Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    token: String,
    #[serde(default)]
    next: String,
    #[serde(rename = "_csrf", default)]
    csrf: String,
}

#[derive(Deserialize)]
pub struct CsrfForm {
    #[serde(rename = "_csrf", default)]
    csrf: String,
}

pub async fn page(
    Extension(csrf): Extension<Csrf>,
    Extension(keys): Extension<ConsoleKeys>,
    Query(q): Query<LoginQuery>,
) -> Response {
    if !keys.login_required() {
        return (StatusCode::SEE_OTHER, [(LOCATION, "/")]).into_response();
    }
    let next = local_path(q.next.as_deref().unwrap_or("/"));
    respond(StatusCode::OK, form(&csrf, next, None))
}

pub async fn submit(
    State(state): State<AppState>,
    Extension(csrf): Extension<Csrf>,
    Extension(keys): Extension<ConsoleKeys>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    Form(f): Form<LoginForm>,
) -> Result<Response, PageError> {
    if !keys.csrf_ok(&headers, &f.csrf) {
        return Err(csrf_refused());
    }
    let next = local_path(&f.next).to_string();
    let (Some(expected), Some(session)) =
        (state.config.server.api_token.as_ref(), keys.new_session())
    else {
        return Ok((StatusCode::SEE_OTHER, [(LOCATION, next)]).into_response());
    };
    // Without the listener's address (never in the daemon) every client shares one count.
    let client = peer.map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |p| p.0.0.ip());
    let now = Instant::now();
    if let Err(wait) = keys.logins().check(client, now) {
        tracing::warn!(%client, "console login refused: too many wrong tokens from this client");
        let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        let message = format!("Too many wrong tokens. Try again in {seconds} s.");
        let mut resp = respond(
            StatusCode::TOO_MANY_REQUESTS,
            form(&csrf, &next, Some(&message)),
        );
        resp.headers_mut()
            .insert(RETRY_AFTER, seconds.max(1).into());
        return Ok(resp);
    }
    if !secure_eq(f.token.trim().as_bytes(), expected.expose().as_bytes()) {
        keys.logins().failed(client, now);
        tracing::warn!(%client, "console login with a wrong token");
        let body = form(&csrf, &next, Some("That is not the API token."));
        return Ok(respond(StatusCode::UNAUTHORIZED, body));
    }
    let cookie = set_cookie(SESSION_COOKIE, &session, Some(SESSION_SECONDS));
    Ok((
        StatusCode::SEE_OTHER,
        [(LOCATION, next), (SET_COOKIE, cookie)],
    )
        .into_response())
}

pub async fn logout(
    Extension(keys): Extension<ConsoleKeys>,
    headers: HeaderMap,
    Form(f): Form<CsrfForm>,
) -> Result<Response, PageError> {
    if !keys.csrf_ok(&headers, &f.csrf) {
        return Err(csrf_refused());
    }
    keys.end_session(&headers)
        .await
        .map_err(|e| PageError(e.into()))?;
    Ok((
        StatusCode::SEE_OTHER,
        [
            (LOCATION, "/login".to_string()),
            (SET_COOKIE, set_cookie(SESSION_COOKIE, "", Some(0))),
        ],
    )
        .into_response())
}

/// The answer to a form without a valid CSRF token.
pub fn csrf_refused() -> PageError {
    PageError(ApiError::Forbidden(
        "the form has expired or did not come from this console; reload the page and send it again"
            .into(),
    ))
}

fn form(csrf: &Csrf, next: &str, error: Option<&str>) -> Markup {
    let chrome = Chrome { csrf, login: false };
    layout(
        &chrome,
        "Log in",
        "",
        html! {
            h1 { "Log in" }
            p { "The console needs the daemon's API token (" code { "server.api_token" } ")." }
            @if let Some(e) = error { p.error role="alert" { (e) } }
            form method="post" action="/login" {
                input type="hidden" name="_csrf" value=(csrf.0);
                input type="hidden" name="next" value=(next);
                p {
                    label for="token" { "API token" }
                    input id="token" name="token" type="password" autocomplete="current-password" required autofocus;
                }
                p { button.primary type="submit" { "Log in" } }
            }
        },
    )
}
