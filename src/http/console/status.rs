//! `GET /status`: the health of the store and of every configured upstream (the last check
//! of the health checker, as `/readyz` reports it) and the redacted configuration, as
//! `sre-agent check-config` prints it.

use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use maud::html;

use super::page::{Chrome, Csrf, layout, respond, time};
use crate::app::AppState;
use crate::http::session::ConsoleKeys;

pub async fn page(
    State(state): State<AppState>,
    Extension(csrf): Extension<Csrf>,
    Extension(keys): Extension<ConsoleKeys>,
) -> Response {
    let store_ok = state.store.is_healthy();
    let components = state.health.read().map(|c| c.clone()).unwrap_or_default();
    let chrome = Chrome {
        csrf: &csrf,
        login: keys.login_required(),
    };
    let body = html! {
        h1 { "Status" }
        h2 { "Components" }
        table {
            caption.visually-hidden { "Component health" }
            thead { tr {
                th scope="col" { "Component" } th scope="col" { "Health" }
                th scope="col" { "URL" } th scope="col" { "Checked" } th scope="col" { "Error" }
            } }
            tbody {
                tr {
                    td { "store" }
                    td { @if store_ok { span.badge.s-finished { "ok" } } @else { span.badge.s-error { "error" } } }
                    td { code { (state.config.server.data_dir.display()) } }
                    td {} td {}
                }
                @for (name, c) in &components {
                    tr {
                        td { (name) }
                        td { @if c.healthy { span.badge.s-finished { "ok" } } @else { span.badge.s-error { "error" } } }
                        td { code { (c.url) } }
                        td { (time(c.checked_at)) }
                        td { (c.error.as_deref().unwrap_or("")) }
                    }
                }
            }
        }
        @if components.is_empty() {
            p.muted { "No upstream checked yet (none configured, or the first check is running)." }
        }
        h2 { "Configuration" }
        p.muted { "As " code { "sre-agent check-config" } " prints it: every secret is " code { "***" } "." }
        pre.config { (state.config.redacted_summary()) }
    };
    respond(StatusCode::OK, layout(&chrome, "Status", "/status", body))
}
