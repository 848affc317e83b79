//! Loki tools: `loki_query` (LogQL, lines grouped by pattern or metric series summarised)
//! and `loki_error_summary` (error counts per job plus the most frequent error patterns).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use serde_json::{Value, json};

use super::args::{ArgError, ago, arg, parse_duration, required};
use super::compact::{Unit, compact_logs, compact_matrix, compact_vector, format_number};
use super::no_data::loki_no_lines;
use super::prometheus::auto_step;
use super::{Tool, ToolError};
use crate::integrations::LokiClient;
use crate::integrations::loki::LokiResult;
use crate::integrations::prometheus::QueryResult;
use crate::text::truncate;

/// Most log lines fetched per call (Loki's own cap is 5000).
const MAX_LINES: u64 = 1000;
/// The line filter that marks an error.
const ERROR_FILTER: &str = r#"|~ "(?i)(error|fail|panic|fatal)""#;

fn since_arg(args: &Value, default: &str) -> Result<(String, Duration), ArgError> {
    let s = arg(args, "since").unwrap_or(default);
    let d = parse_duration(s)?;
    if d.is_zero() || d > Duration::from_secs(30 * 86400) {
        return Err(ArgError::Invalid(format!(
            "\"since\" must be between 1s and 30d, got {s:?}"
        )));
    }
    Ok((s.to_string(), d))
}

/// `loki_query`: a LogQL log or metric query over the last `since`.
pub struct LokiQuery {
    pub client: Arc<LokiClient>,
    pub max_chars: usize,
}

impl LokiQuery {
    /// The name the tool registers under.
    pub const NAME: &'static str = "loki_query";
}

#[async_trait]
impl Tool for LokiQuery {
    fn name(&self) -> &'static str {
        Self::NAME
    }
    fn description(&self) -> &'static str {
        "LogQL query over the last 'since' (default 1h); log lines come back grouped by pattern."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {
            "query": {"type": "string"},
            "since": {"type": "string", "description": "e.g. 15m, 6h"},
            "limit": {"type": "integer", "description": "max lines, default 200"}
        }, "required": ["query"]})
    }
    async fn call(&self, args: Value) -> Result<String, ToolError> {
        let query = required(&args, "query")?;
        let (_, since) = since_arg(&args, "1h")?;
        let limit = args.get("limit").and_then(Value::as_u64).unwrap_or(200);
        if limit == 0 || limit > MAX_LINES {
            return Err(
                ArgError::Invalid(format!("\"limit\" must be between 1 and {MAX_LINES}")).into(),
            );
        }
        let end = Utc::now();
        let start = ago(end, since)?;
        let result = self
            .client
            .query_range(
                query,
                start,
                end,
                Some(limit as u32),
                Some(auto_step(since)),
            )
            .await?;
        Ok(match result {
            LokiResult::Streams(streams) if streams.iter().all(|s| s.entries.is_empty()) => {
                let text = loki_no_lines(&self.client, start, end).await;
                truncate(&text, self.max_chars)
            }
            LokiResult::Streams(streams) => {
                let mut out = compact_logs(&streams, self.max_chars.saturating_sub(80));
                let total: usize = streams.iter().map(|s| s.entries.len()).sum();
                if total as u64 >= limit {
                    out.push_str(&format!(
                        "\n(limit {limit} reached: more lines exist; narrow the query or since)"
                    ));
                }
                out
            }
            LokiResult::Matrix(series) if series.is_empty() => {
                let text = loki_no_lines(&self.client, start, end).await;
                truncate(&text, self.max_chars)
            }
            LokiResult::Matrix(series) => compact_matrix(&series, Unit::Plain, self.max_chars),
        })
    }
}

/// `loki_error_summary`: error line counts per job and the top error patterns.
pub struct LokiErrorSummary {
    pub client: Arc<LokiClient>,
    pub max_chars: usize,
}

/// `selector` as a stream selector: braces added when missing.
fn selector_arg(args: &Value) -> Result<String, ArgError> {
    let s = arg(args, "selector").unwrap_or(r#"job=~".+""#).trim();
    let s = if s.starts_with('{') {
        s.to_string()
    } else {
        format!("{{{s}}}")
    };
    if !s.ends_with('}') || s.len() < 3 {
        return Err(ArgError::StreamSelector(s));
    }
    Ok(s)
}

impl LokiErrorSummary {
    /// The name the tool registers under.
    pub const NAME: &'static str = "loki_error_summary";
}

#[async_trait]
impl Tool for LokiErrorSummary {
    fn name(&self) -> &'static str {
        Self::NAME
    }
    fn description(&self) -> &'static str {
        "Error/fail/panic log counts per job and top error patterns (default last 1h, all jobs)."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {
            "since": {"type": "string"},
            "selector": {"type": "string", "description": "e.g. {job=\"api\"}"}
        }})
    }
    async fn call(&self, args: Value) -> Result<String, ToolError> {
        let (since_text, since) = since_arg(&args, "1h")?;
        let selector = selector_arg(&args)?;
        let counts_query = format!(
            "sum by (job) (count_over_time({selector} {ERROR_FILTER} [{}s]))",
            since.as_secs().max(1)
        );
        let end = Utc::now();
        let start = ago(end, since)?;
        let lines_query = format!("{selector} {ERROR_FILTER}");
        let (counts, lines) = tokio::join!(
            self.client.query(&counts_query, Some(end)),
            self.client
                .query_range(&lines_query, start, end, Some(500), None)
        );
        let counts = counts?;
        let half = self.max_chars / 2;
        let mut out = format!("error lines per job, last {since_text} ({counts_query}):\n");
        let counts_text = match counts {
            QueryResult::Vector(v) if v.is_empty() => "no error lines".to_string(),
            QueryResult::Vector(v) => compact_vector(&v, Unit::Plain, half),
            QueryResult::Scalar { value, .. } => format_number(value, Unit::Plain),
            other => format!("unexpected result {other:?}"),
        };
        out.push_str(&counts_text);
        out.push('\n');
        let rest = self.max_chars.saturating_sub(out.chars().count() + 1);
        match lines? {
            LokiResult::Streams(s) => out.push_str(&compact_logs(&s, rest)),
            LokiResult::Matrix(_) => {}
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_get_braces_and_bad_ones_are_explained() {
        let sel = |v: Value| selector_arg(&json!({"selector": v}));
        assert_eq!(sel(json!("job=\"api\"")).unwrap(), "{job=\"api\"}");
        assert_eq!(sel(json!("{app=\"x\"}")).unwrap(), "{app=\"x\"}");
        assert_eq!(selector_arg(&json!({})).unwrap(), "{job=~\".+\"}");
        let err = sel(json!("{job=\"api\"")).unwrap_err();
        assert_eq!(err, ArgError::StreamSelector("{job=\"api\"".into()));
        assert!(err.to_string().contains("stream selector"));
    }

    #[test]
    fn logql_arguments_of_arbitrary_utf8_are_a_selector_or_an_error() {
        use proptest::prelude::*;
        use proptest::test_runner::{Config, TestRunner};

        let config = Config {
            cases: 1000,
            failure_persistence: None,
            ..Config::default()
        };
        let strategy = (any::<String>(), any::<String>());
        TestRunner::new(config)
            .run(&strategy, |(selector, since)| {
                let args = json!({"selector": selector, "since": since});
                if let Ok(s) = selector_arg(&args) {
                    let braced = s.starts_with('{') && s.ends_with('}');
                    prop_assert!(braced, "{:?}", s);
                }
                if let Ok((_, d)) = since_arg(&args, "1h") {
                    prop_assert!(!d.is_zero() && d <= Duration::from_secs(30 * 86400));
                    prop_assert!(super::super::args::ago(chrono::Utc::now(), d).is_ok());
                }
                Ok(())
            })
            .unwrap();
    }
}
