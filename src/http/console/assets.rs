//! The console's one stylesheet and one script, compiled into the binary (`include_str!`)
//! and served with a version in their path, so browsers may cache them for good.

use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::IntoResponse;
use axum::routing::get;

use crate::http::routes::Routes;

const CSS: &str = include_str!("assets/console.css");
const JS: &str = include_str!("assets/console.js");

/// The stylesheet's path (the version changes with every release).
pub const CSS_PATH: &str = concat!("/static/console-", env!("CARGO_PKG_VERSION"), ".css");
/// The script's path.
pub const JS_PATH: &str = concat!("/static/console-", env!("CARGO_PKG_VERSION"), ".js");

pub fn router() -> Routes {
    Routes::new()
        .route(CSS_PATH, get(css))
        .route(JS_PATH, get(js))
}

async fn css() -> impl IntoResponse {
    asset("text/css; charset=utf-8", CSS)
}

async fn js() -> impl IntoResponse {
    asset("text/javascript; charset=utf-8", JS)
}

fn asset(content_type: &'static str, body: &'static str) -> impl IntoResponse {
    (
        [
            (CONTENT_TYPE, content_type),
            (CACHE_CONTROL, "public, max-age=86400"),
            (axum::http::header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
}
