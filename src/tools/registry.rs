//! The registry of configured tools: definitions for the LLM request, and calls with
//! argument validation, an output cap, and `sre_agent_tool_*` metrics.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use super::mcp::McpServer;
use super::{Tool, ToolError, ToolOutput, is_valid_tool_name, validate_arguments};
use crate::analyze::Fact;
use crate::telemetry::Metrics;

/// What the LLM request carries for one tool.
#[derive(Clone, Debug, Serialize)]
pub struct ToolDefinition {
    pub name: &'static str,
    pub description: &'static str,
    pub parameters: Value,
}

/// The result of one tool call, ready for the model.
#[derive(Clone, Debug, Serialize)]
pub struct ToolOutcome {
    pub ok: bool,
    /// Tool output or error text, capped to the tool output limit.
    pub text: String,
    /// Typed facts the tool computed.
    pub facts: Vec<Fact>,
    pub duration: Duration,
}

/// The tools available to the agent.
#[derive(Clone)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
    metrics: Arc<Metrics>,
    max_output_chars: usize,
    /// The MCP servers whose tools are registered (their connections live as long as this).
    mcp_servers: Vec<Arc<McpServer>>,
}

impl ToolRegistry {
    pub fn new(metrics: Arc<Metrics>, max_output_chars: usize) -> Self {
        Self {
            tools: Vec::new(),
            metrics,
            max_output_chars,
            mcp_servers: Vec::new(),
        }
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// Keeps `servers` for [`ToolRegistry::mcp_servers`].
    pub fn add_mcp_servers(&mut self, servers: Vec<Arc<McpServer>>) {
        self.mcp_servers.extend(servers);
    }

    /// The `[[mcp.servers]]` behind the `mcp_*` tools, for health.
    pub fn mcp_servers(&self) -> &[Arc<McpServer>] {
        &self.mcp_servers
    }

    /// Adds a tool. Panics on an invalid or duplicate name: that is a programming error.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        let name = tool.name();
        assert!(is_valid_tool_name(name), "invalid tool name {name:?}");
        assert!(self.get(name).is_none(), "duplicate tool {name:?}");
        self.metrics.init_tool(name);
        self.tools.push(tool);
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|t| t.name()).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    pub fn max_output_chars(&self) -> usize {
        self.max_output_chars
    }

    /// Definitions of every registered tool, for the LLM request.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools
            .iter()
            .map(|t| ToolDefinition {
                name: t.name(),
                description: t.description(),
                parameters: t.parameters(),
            })
            .collect()
    }

    /// Calls `name` with `args`. Unknown tools, bad arguments and tool failures come back
    /// as `ok: false` with text the model can act on, and count as `status="error"`.
    pub async fn call(&self, name: &str, args: Value) -> ToolOutcome {
        let start = Instant::now();
        let result = match self.get(name) {
            None => Err(ToolError::UnknownTool {
                name: name.to_string(),
                available: self.names().join(", "),
            }),
            Some(tool) => match validate_arguments(&tool.parameters(), &args) {
                Err(reason) => Err(ToolError::Schema {
                    tool: name.to_string(),
                    reason,
                }),
                Ok(()) => tool.call_with_facts(args).await,
            },
        };
        let duration = start.elapsed();
        let label = if self.get(name).is_some() {
            name
        } else {
            "unknown"
        };
        let status = crate::telemetry::CallStatus::of(result.is_ok()).label();
        self.metrics
            .tool_call_duration
            .with_label_values(&[label])
            .observe(duration.as_secs_f64());
        self.metrics
            .tool_calls
            .with_label_values(&[label, status])
            .inc();
        let (ok, ToolOutput { text, facts }) = match result {
            Ok(out) => (true, out),
            Err(e) => (false, ToolOutput::text(format!("error: {e}"))),
        };
        ToolOutcome {
            ok,
            text: cap_chars(text, self.max_output_chars),
            facts,
            duration,
        }
    }
}

/// Cuts `text` to at most `max` characters, saying how much was cut.
pub(crate) fn cap_chars(text: String, max: usize) -> String {
    if text.chars().count() <= max {
        return text;
    }
    let keep = max.saturating_sub(60);
    let cut = crate::text::first_chars(&text, keep);
    let dropped = text.chars().count() - keep;
    format!("{cut}\n[… {dropped} more characters cut to fit the tool output limit]")
}
