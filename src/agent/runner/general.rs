//! The general tools, run for a model that calls no tool even when asked: the built-in
//! tools of the configured integrations that need no argument (firing alerts, scrape
//! targets, a log error summary, lists of pods or guests), in the order they are offered.
//! Which ones qualify comes from each tool's parameter schema, not from its name, so a new
//! integration's overview tool qualifies without an edit here.

use serde_json::{Value, json};

use crate::llm::ToolCall;
use crate::tools::ToolDefinition;
use crate::tools::catalog::{builtin_names, core_names};

/// Most general tools run.
const MAX_GENERAL: usize = 3;

/// The calls (ids `general_N`) of the offered built-in integration tools without required
/// arguments.
pub(super) fn calls(offered: &[ToolDefinition]) -> Vec<ToolCall> {
    let builtin = builtin_names();
    let core = core_names();
    offered
        .iter()
        .filter(|t| builtin.contains(&t.name) && !core.contains(&t.name))
        .filter(|t| {
            t.parameters
                .get("required")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty)
        })
        .take(MAX_GENERAL)
        .enumerate()
        .map(|(i, t)| ToolCall {
            id: format!("general_{}", i + 1),
            name: t.name.to_string(),
            arguments: json!({}),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(name: &'static str, parameters: Value) -> ToolDefinition {
        ToolDefinition {
            name,
            description: "",
            parameters,
        }
    }

    #[test]
    fn general_calls_are_integration_tools_without_required_arguments_in_offered_order() {
        let offered = vec![
            def("current_time", json!({"type": "object"})),
            def(
                "prometheus_query",
                json!({"type": "object", "required": ["query"]}),
            ),
            def("prometheus_alerts", json!({"type": "object"})),
            def("my_http_tool", json!({"type": "object"})),
            def(
                "loki_error_summary",
                json!({"type": "object", "required": []}),
            ),
            def("prometheus_targets", json!({"type": "object"})),
            def("grafana_alerts", json!({"type": "object"})),
        ];
        let calls = calls(&offered);
        let got: Vec<(&str, &str)> = calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("general_1", "prometheus_alerts"),
                ("general_2", "loki_error_summary"),
                ("general_3", "prometheus_targets")
            ]
        );
        assert_eq!(calls[0].arguments, json!({}));
    }
}
