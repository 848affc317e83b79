//! Read-only tools the LLM may call: the [`Tool`] trait, the [`catalog`] that registers
//! every tool whose integration is configured, the [`ToolRegistry`] (argument validation,
//! metrics), shared argument reading ([`args`]) and formatting ([`format`]), and
//! [`ToolError`]s returned to the model as text; [`mcp`] makes the allow-listed tools of the
//! operator's MCP servers tools like the others. Tools never write upstream.

pub mod args;
mod builtin;
pub mod catalog;
pub mod closest;
pub mod compact;
mod error;
pub mod format;
pub mod grafana;
pub mod http_declared;
mod k8s_format;
pub mod kubernetes;
pub mod loki;
pub mod mcp;
pub mod no_data;
pub mod overview;
pub mod pbs;
pub mod prometheus;
pub mod promql;
pub mod proxmox;
mod registry;
mod resolution;
pub mod runbooks;
mod schema;
mod steps;
pub mod trend;
pub mod truenas;
pub mod units;

use async_trait::async_trait;
use serde_json::Value;

use crate::analyze::Fact;

pub use builtin::CurrentTime;
pub use catalog::build_registry;
pub use error::{CatalogError, ToolError};
pub use registry::{ToolDefinition, ToolOutcome, ToolRegistry};
pub use schema::validate_arguments;

/// A read-only tool the agent can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name matching `^[a-zA-Z0-9_-]{1,64}$`; a contract with prompts and dashboards.
    fn name(&self) -> &'static str;
    /// One or two sentences telling the model when to use it.
    fn description(&self) -> &'static str;
    /// JSON Schema (`{"type":"object","properties":{…},"required":[…]}`) of the arguments.
    fn parameters(&self) -> Value;
    /// Runs the tool with validated arguments; an `Err` goes back to the model as text.
    async fn call(&self, args: Value) -> Result<String, ToolError>;
    /// Runs the tool, returning its text and the typed facts it computed (a rate, a time
    /// to full); tools that compute none keep this default.
    async fn call_with_facts(&self, args: Value) -> Result<ToolOutput, ToolError> {
        self.call(args).await.map(ToolOutput::text)
    }
}

/// What a tool returns: text for the model, and typed facts for the finding's figures.
#[derive(Clone, Debug, Default)]
pub struct ToolOutput {
    pub text: String,
    pub facts: Vec<Fact>,
}

impl ToolOutput {
    pub fn text(text: String) -> Self {
        Self {
            text,
            facts: Vec::new(),
        }
    }
}

/// Whether `name` is a valid tool name.
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}
