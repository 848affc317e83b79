//! `sre-agent mcp`: sre-agent's MCP server over stdio, for desktop assistants and IDEs that
//! start a command. The read-only tools run in this process, built from the configuration
//! like the daemon's (no store needed); investigations and reports go to the running daemon
//! over its HTTP API (`daemon.rs`): the daemon owns the store (sled allows one process),
//! its workers run the investigations and its budgets admit them, exactly as for
//! `sre-agent ask`. Without a daemon the investigation tools answer that it is not running.
//! Logs go to stderr; stdout is the protocol.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::{Method, StatusCode};
use rmcp::ServiceExt;
use rmcp::transport::async_rw::AsyncRwTransport;

use super::daemon::{Daemon, DaemonError, base_url};
use crate::agent::InvestigationStatus;
use crate::api::{
    ErrorBody, InvestigationDetail, InvestigationPage, OverBudgetAnswer, Queued, ReportListItem,
};
use crate::config::Config;
use crate::mcp::backend::check_question;
use crate::mcp::{BackendError, Investigations, McpService};
use crate::report::model::Report;
use crate::telemetry::{self, Metrics};

/// Largest message read from the client.
const MAX_MESSAGE_BYTES: usize = 1024 * 1024;

/// Serves MCP on stdin/stdout until the client closes stdin.
pub async fn run(config: Config) -> anyhow::Result<()> {
    telemetry::logging::init(&config.log);
    let metrics = Arc::new(Metrics::new(&config.llm.model));
    let upstreams = crate::integrations::Upstreams::from_config(&config)?;
    let tools = crate::tools::build_registry(&config, &upstreams, metrics.clone())?;
    let service = McpService::new(tools, Arc::new(Remote { config }), metrics, "stdio");
    let transport = AsyncRwTransport::new_server(tokio::io::stdin(), tokio::io::stdout())
        .with_max_line_length(MAX_MESSAGE_BYTES);
    let running = service.serve(transport).await?;
    running.waiting().await?;
    Ok(())
}

/// The running daemon's API.
struct Remote {
    config: Config,
}

/// Ids are uuids: anything else is refused before it becomes part of a URL path.
fn check_id(id: &str) -> Result<&str, BackendError> {
    if !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        Ok(id)
    } else {
        Err(BackendError::Refused(format!(
            "no investigation {:?}",
            crate::text::truncate(id, 80)
        )))
    }
}

impl Remote {
    async fn daemon(&self) -> Result<Daemon, BackendError> {
        Daemon::find(&self.config, Duration::from_secs(30))
            .await
            .ok_or_else(|| {
                BackendError::Unavailable(format!(
                    "no sre-agent daemon answers at {} (server.listen); investigations need \
                     `sre-agent serve` running",
                    base_url(&self.config, None)
                ))
            })
    }

    async fn request<T: serde::de::DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<T, BackendError> {
        let daemon = self.daemon().await?;
        daemon.request(method, path, body).await.map_err(refusal)
    }
}

/// A daemon's answer as the MCP client should read it: its 429 names the used-up budget,
/// its other 4xx say what was wrong.
fn refusal(e: DaemonError) -> BackendError {
    if let DaemonError::Status { status, body, .. } = &e {
        if *status == StatusCode::TOO_MANY_REQUESTS
            && let Ok(a) = serde_json::from_str::<OverBudgetAnswer>(body)
        {
            return BackendError::OverBudget(a.error);
        }
        if status.is_client_error()
            && let Ok(a) = serde_json::from_str::<ErrorBody>(body)
        {
            return BackendError::Refused(a.error);
        }
    }
    BackendError::Unavailable(e.to_string())
}

#[async_trait]
impl Investigations for Remote {
    async fn ask(&self, question: &str) -> Result<Queued, BackendError> {
        let body = serde_json::json!({ "question": check_question(question)? });
        self.request(Method::POST, "/api/v1/ask", Some(&body)).await
    }

    async fn follow_up(&self, parent: &str, question: &str) -> Result<Queued, BackendError> {
        let body = serde_json::json!({ "question": check_question(question)? });
        let path = format!("/api/v1/investigations/{}/followup", check_id(parent)?);
        self.request(Method::POST, &path, Some(&body)).await
    }

    async fn detail(&self, id: &str) -> Result<Option<InvestigationDetail>, BackendError> {
        let path = format!("/api/v1/investigations/{}", check_id(id)?);
        let daemon = self.daemon().await?;
        match daemon.request(Method::GET, &path, None).await {
            Ok(d) => Ok(Some(d)),
            Err(DaemonError::Status {
                status: StatusCode::NOT_FOUND,
                ..
            }) => Ok(None),
            Err(e) => Err(refusal(e)),
        }
    }

    async fn list(
        &self,
        status: Option<InvestigationStatus>,
        limit: usize,
    ) -> Result<InvestigationPage, BackendError> {
        let mut path = format!("/api/v1/investigations?limit={limit}");
        if let Some(s) = status {
            path.push_str(&format!("&status={}", s.as_str()));
        }
        self.request(Method::GET, &path, None).await
    }

    async fn latest_report(&self) -> Result<Option<String>, BackendError> {
        let newest: Vec<ReportListItem> = self
            .request(Method::GET, "/api/v1/reports?limit=1", None)
            .await?;
        let Some(item) = newest.first() else {
            return Ok(None);
        };
        let path = format!("/api/v1/reports/{}", check_id(&item.id)?);
        let report: Report = self.request(Method::GET, &path, None).await?;
        Ok(Some(crate::report::render::to_markdown(&report)))
    }
}
