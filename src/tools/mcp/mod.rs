//! The operator's MCP servers as tools (`[[mcp.servers]]`): each allow-listed tool of a
//! server becomes `mcp_<server>_<tool>`, with the server's description fenced (it is the
//! server's text) and its input schema. A call goes to the server over its connection
//! (`link.rs`, kept up by a supervisor that restarts a server that died, with backoff), waits
//! at most the server's `timeout`, and comes back as text fitted to the output limit
//! (`render.rs`); while the server is down its tools answer an error saying so. Tools not
//! on the allow-list are never registered, so the model cannot name them.

mod child;
mod link;
mod render;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{CallToolRequestParams, CallToolResponse};
use serde_json::Value;

pub use link::{McpServer, component};

use super::{Tool, ToolError};
use crate::config::{Config, McpServerConfig};
use crate::telemetry::Metrics;

/// One allow-listed tool of an MCP server.
pub struct McpTool {
    name: &'static str,
    /// The tool's own name on its server.
    remote: String,
    server: Arc<McpServer>,
    max_chars: usize,
    /// Said until the server has listed the tool.
    placeholder: &'static str,
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &'static str {
        self.name
    }

    fn description(&self) -> &'static str {
        self.server
            .listed(&self.remote)
            .map_or(self.placeholder, |l| l.description)
    }

    fn parameters(&self) -> Value {
        self.server.listed(&self.remote).map_or_else(
            || serde_json::json!({"type": "object", "properties": {}}),
            |l| l.schema,
        )
    }

    async fn call(&self, args: Value) -> Result<String, ToolError> {
        let peer = self.server.peer().map_err(ToolError::Answer)?;
        if self.server.listed(&self.remote).is_none() {
            return Err(ToolError::Answer(format!(
                "MCP server {} does not list the tool {:?}",
                self.server.name(),
                self.remote
            )));
        }
        let mut params = CallToolRequestParams::new(self.remote.clone());
        if let Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        let timeout = self.server.timeout();
        // Dropping the call on timeout sends the server a cancellation.
        let answer = tokio::time::timeout(timeout, peer.call_tool_once(params)).await;
        let server = self.server.name();
        match answer {
            Err(_) => Err(ToolError::Answer(format!(
                "MCP server {server} did not answer within {timeout:?} (mcp.servers timeout)"
            ))),
            Ok(Err(e)) => Err(ToolError::Answer(format!(
                "MCP server {server}: {}",
                link::describe(&e)
            ))),
            Ok(Ok(CallToolResponse::Complete(result))) => {
                render::result_text(&result, self.max_chars).map_err(|text| {
                    ToolError::Answer(format!("MCP server {server} says the call failed: {text}"))
                })
            }
            Ok(Ok(_)) => Err(ToolError::Answer(format!(
                "MCP server {server} asked for input or started a task; sre-agent supports neither"
            ))),
        }
    }
}

/// The tools of `[[mcp.servers]]`, each server started (its supervisor runs from now on).
pub fn build(config: &Config, metrics: &Arc<Metrics>) -> (Vec<Arc<McpServer>>, Vec<McpTool>) {
    let max_chars = config.llm.max_tool_output_chars;
    let mut servers = Vec::new();
    let mut tools = Vec::new();
    for spec in &config.mcp.servers {
        metrics.init_mcp_client(&spec.name);
        let server = McpServer::start(spec.clone(), metrics.clone());
        for remote in &spec.tools {
            tools.push(tool(spec, remote, &server, max_chars));
        }
        servers.push(server);
    }
    (servers, tools)
}

fn tool(
    spec: &McpServerConfig,
    remote: &str,
    server: &Arc<McpServer>,
    max_chars: usize,
) -> McpTool {
    // Names and placeholders are `&'static str` like every tool's; they come from the
    // configuration, once per process.
    McpTool {
        name: Box::leak(spec.tool_name(remote).into_boxed_str()),
        remote: remote.to_string(),
        server: server.clone(),
        max_chars,
        placeholder: Box::leak(
            format!(
                "Tool {remote:?} of the operator's MCP server {:?} (not connected yet).",
                spec.name
            )
            .into_boxed_str(),
        ),
    }
}

/// What `check-config` says of one server: the tools it listed from the allow-list, those
/// it did not list, or why it could not be started or listed.
pub struct Probe {
    pub name: String,
    pub result: Result<(Vec<String>, Vec<String>), String>,
}

/// Starts every configured server once, waits for each to start and list its tools (at
/// most its `timeout`), then stops them.
pub async fn probe(config: &Config) -> Vec<Probe> {
    let metrics = Arc::new(Metrics::new(&config.llm.model));
    let (servers, _) = build(config, &metrics);
    let waits = servers.iter().map(|s| async move {
        let wait = s.start_limit().saturating_add(Duration::from_secs(1));
        s.first_attempt(wait).await;
        let result = match s.peer() {
            Ok(_) => {
                let allowed = &config
                    .mcp
                    .servers
                    .iter()
                    .find(|c| c.name == s.name())
                    .map(|c| c.tools.clone())
                    .unwrap_or_default();
                let (listed, missing) =
                    allowed.iter().cloned().partition(|t| s.listed(t).is_some());
                Ok((listed, missing))
            }
            Err(_) => Err(s
                .error()
                .unwrap_or_else(|| format!("did not start within {:?}", s.start_limit()))),
        };
        Probe {
            name: s.name().to_string(),
            result,
        }
    });
    futures::future::join_all(waits).await
}
