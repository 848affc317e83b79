//! sre-agent as a Model Context Protocol server, on the official Rust SDK (`rmcp`): the
//! agent's read-only tools and four investigation tools (`ask`, `investigation`,
//! `investigations`, `follow_up`), and two resources (recent findings, the latest weekly
//! report). `server.rs` is the handler; `backend.rs` says where investigations come from
//! (the daemon's own components for `/mcp`, the daemon's API for `sre-agent mcp` over
//! stdio); `render.rs` writes them as fenced text; [`http_service`] is `/mcp` over
//! Streamable HTTP, mounted by `http/` behind `server.api_token`.
//!
//! The client side (the operator's MCP servers as tools) is `tools::mcp`.

pub mod backend;
mod render;
pub mod server;

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

pub use backend::{BackendError, Investigations, Local};
pub use server::{McpService, OWN_TOOLS};

use crate::app::AppState;

/// Largest request body `/mcp` reads.
const MAX_REQUEST_BYTES: usize = 256 * 1024;

/// `/mcp` over Streamable HTTP, stateless (one handler per request, no session kept in
/// memory) with JSON answers, on the daemon's own components. `Host` is checked against
/// loopback names only when no API token guards it (then a DNS-rebinding page could reach
/// it); with a token, a browser page cannot present it, so any host name may be used.
pub fn http_service(
    state: &AppState,
    stop: CancellationToken,
) -> StreamableHttpService<McpService, LocalSessionManager> {
    let service = McpService::new(
        state.dispatcher.tools().clone(),
        Arc::new(Local {
            dispatcher: state.dispatcher.clone(),
            reports: state.reports.clone(),
        }),
        state.metrics.clone(),
        "http",
    );
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_max_request_body_bytes(MAX_REQUEST_BYTES)
        .with_cancellation_token(stop);
    if state.config.server.api_token.is_some() {
        config = config.disable_allowed_hosts();
    }
    StreamableHttpService::new(
        move || Ok(service.clone()),
        LocalSessionManager::default().into(),
        config,
    )
}
