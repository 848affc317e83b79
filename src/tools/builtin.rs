//! Tools that need no integration.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Tool, ToolError};

/// `current_time`: the current time in UTC and as a Unix timestamp, so the model can
/// reason about "the last hour" and relative times.
pub struct CurrentTime;

impl CurrentTime {
    /// The name the tool registers under.
    pub const NAME: &'static str = "current_time";
}

#[async_trait]
impl Tool for CurrentTime {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn description(&self) -> &'static str {
        "Current time (UTC, RFC 3339 and Unix seconds)."
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }

    async fn call(&self, _args: Value) -> Result<String, ToolError> {
        let now = chrono::Utc::now();
        Ok(format!(
            "{} (unix {})",
            now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            now.timestamp()
        ))
    }
}
