//! The web console at `/`: server-rendered pages (maud) over the same components as the
//! API, readable without JavaScript; one embedded script follows running investigations
//! through `GET /api/v1/investigations/{id}/events`. Pages: investigations (filter, search,
//! pages), one investigation as a timeline with its thread of follow-ups, its recurrence and
//! the feedback form, alert groups, reports (as emailed, charts served by a route), the ask
//! form, component health and the redacted configuration.
//!
//! Security: with `server.api_token` set every page needs a login, which trades the token
//! for a signed session cookie (a bearer token is accepted too); every form carries a CSRF
//! token (`http/session.rs`); every page has a strict Content-Security-Policy (`page.rs`).

mod alerts;
mod assets;
mod feedback;
mod forms;
mod list;
mod login;
mod page;
mod reports;
mod status;
mod timeline;

use axum::extract::{Request, State};
use axum::http::header::{LOCATION, SET_COOKIE};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::{Next, from_fn, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use super::ApiError;
use super::auth::require_bearer_counted;
use super::session::{CSRF_COOKIE, ConsoleKeys, cookie, new_anchor, set_cookie};
use crate::app::AppState;
use crate::http::routes::Routes;
use page::{Csrf, PageError};

/// The console's routes; needs the [`ConsoleKeys`] extension (set in `http::router`).
pub fn router(state: &AppState) -> Routes {
    let pages = Routes::new()
        .route("/", get(list::page))
        .route("/investigations/{id}", get(timeline::page))
        .route("/investigations/{id}/followup", post(forms::follow_up))
        .route("/investigations/{id}/feedback", post(feedback::submit))
        .route("/ask", get(forms::ask_page).post(forms::ask))
        .route("/alerts", get(alerts::page))
        .route("/reports", get(reports::list))
        .route("/reports/{id}", get(reports::page))
        .route("/reports/{id}/email", get(reports::email))
        .route("/reports/{id}/charts/{chart}", get(reports::chart))
        .route("/status", get(status::page))
        .route("/logout", post(login::logout))
        .route_layer(from_fn_with_state(state.clone(), require_login));
    Routes::new()
        .merge(pages)
        .route("/login", get(login::page).post(login::submit))
        .layer(from_fn(csrf_cookie))
        .merge(assets::router())
}

/// With `server.api_token` set: passes a valid session cookie or bearer token; sends a
/// browser without either to the login page (other methods get 401).
async fn require_login(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let keys = request.extensions().get::<ConsoleKeys>().cloned();
    let Some(keys) = keys.filter(ConsoleKeys::login_required) else {
        return next.run(request).await;
    };
    let token = state.config.server.api_token.as_ref();
    if keys.has_session(request.headers()) {
        return next.run(request).await;
    }
    match require_bearer_counted(&request, token) {
        Ok(()) => return next.run(request).await,
        Err(e @ ApiError::TooManyGuesses(_)) => return PageError(e).into_response(),
        Err(_) => {}
    }
    if request.method() == Method::GET {
        let here = request.uri().path_and_query().map_or("/", |p| p.as_str());
        let target = format!(
            "/login?next={}",
            url::form_urlencoded::byte_serialize(here.as_bytes()).collect::<String>()
        );
        return (StatusCode::SEE_OTHER, [(LOCATION, target)]).into_response();
    }
    PageError(ApiError::Unauthorized(
        "log in first (the console needs server.api_token)".into(),
    ))
    .into_response()
}

/// Gives every browser a CSRF anchor cookie (set on its first page) and every handler the
/// matching token ([`Csrf`]) to put in its forms.
async fn csrf_cookie(mut request: Request, next: Next) -> Response {
    let Some(keys) = request.extensions().get::<ConsoleKeys>().cloned() else {
        return PageError(ApiError::Internal("console keys missing".into())).into_response();
    };
    let existing = cookie(request.headers(), CSRF_COOKIE)
        .filter(|a| a.len() == 32 && a.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(str::to_string);
    let (anchor, fresh) = match existing {
        Some(a) => (a, false),
        None => (new_anchor(), true),
    };
    request
        .extensions_mut()
        .insert(Csrf(keys.csrf_token(&anchor)));
    let mut resp = next.run(request).await;
    if fresh && let Ok(v) = HeaderValue::from_str(&set_cookie(CSRF_COOKIE, &anchor, None)) {
        resp.headers_mut().append(SET_COOKIE, v);
    }
    resp
}
