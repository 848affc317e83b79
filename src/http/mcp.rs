//! `/mcp`: sre-agent's MCP server over Streamable HTTP (`crate::mcp`), behind the bearer
//! `server.api_token` like `/api/v1` (wrong tokens count against the client the same way;
//! no console cookie: MCP clients send the token), and
//! absent when `mcp.serve = false`. No request timeout layer: a tool call is bounded by
//! the tool's own timeouts.

use axum::extract::{Request, State};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::Response;
use tokio_util::sync::CancellationToken;

use super::ApiError;
use super::auth::require_bearer_counted;
use super::routes::Routes;
use crate::app::AppState;

pub fn router(state: &AppState) -> Routes {
    if !state.config.mcp.serve {
        return Routes::new();
    }
    Routes::new()
        .nest_service(
            "/mcp",
            // Stateless: no session outlives its request, so nothing needs cancelling.
            crate::mcp::http_service(state, CancellationToken::new()),
        )
        .layer(from_fn_with_state(state.clone(), token))
}

async fn token(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    require_bearer_counted(&request, state.config.server.api_token.as_ref())?;
    Ok(next.run(request).await)
}
