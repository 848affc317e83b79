//! Which tools a small model is offered. Every tool definition costs prompt tokens on every
//! step and a small model picks worse among many, so for a context of
//! [`SMALL_CONTEXT_TOKENS`] or less at most [`MAX_SMALL_TOOLS`] are offered, chosen by
//! what the health sweep found, never by the words of the trigger:
//!
//! 1. the general query tools ([`GENERAL`]);
//! 2. the tools of the integrations whose facts ranked highest, in their order (at most
//!    [`PER_INTEGRATION`] each);
//! 3. one tool of every other configured integration, so none is hidden;
//! 4. the rest in registration order, while there is room.
//!
//! Tools keep their registration order in the request, and the same tools are offered at
//! every step, so a server's prompt cache stays valid.

use crate::analyze::tool_integration;
use crate::tools::ToolDefinition;

/// Contexts up to this many tokens get a chosen few tools.
pub const SMALL_CONTEXT_TOKENS: u64 = 8192;

/// The most tools offered in a small context.
pub const MAX_SMALL_TOOLS: usize = 10;

/// Tools of one ranked integration offered in a small context.
const PER_INTEGRATION: usize = 3;

/// The general query tools, offered first whenever they are configured.
const GENERAL: [&str; 5] = [
    "prometheus_query",
    "prometheus_query_range",
    "prometheus_instance_overview",
    "prometheus_alerts",
    "current_time",
];

/// The tools to offer in a context of `context_tokens`, given the integrations of the
/// health sweep's most relevant facts (`ranked`, most relevant first): all of them in a
/// large context, else the chosen few (see the module docs), in registration order.
pub fn select_tools(
    all: Vec<ToolDefinition>,
    context_tokens: u64,
    ranked: &[String],
) -> Vec<ToolDefinition> {
    if context_tokens > SMALL_CONTEXT_TOKENS || all.len() <= MAX_SMALL_TOOLS {
        return all;
    }
    let mut keep: Vec<usize> = Vec::new();
    let take = |i: usize, keep: &mut Vec<usize>| {
        if keep.len() < MAX_SMALL_TOOLS && !keep.contains(&i) {
            keep.push(i);
        }
    };
    for name in GENERAL {
        if let Some(i) = all.iter().position(|t| t.name == name) {
            take(i, &mut keep);
        }
    }
    for wanted in ranked {
        let mut n = 0;
        for (i, t) in all.iter().enumerate() {
            if tool_integration(t.name) == wanted && !keep.contains(&i) && n < PER_INTEGRATION {
                take(i, &mut keep);
                n += 1;
            }
        }
    }
    let mut seen: Vec<&str> = keep
        .iter()
        .map(|&i| tool_integration(all[i].name))
        .collect();
    for (i, t) in all.iter().enumerate() {
        let family = tool_integration(t.name);
        if !seen.contains(&family) {
            seen.push(family);
            take(i, &mut keep);
        }
    }
    for i in 0..all.len() {
        take(i, &mut keep);
    }
    keep.sort_unstable();
    all.into_iter()
        .enumerate()
        .filter(|(i, _)| keep.binary_search(i).is_ok())
        .map(|(_, t)| t)
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::catalog::builtin_names;

    fn every_tool() -> Vec<ToolDefinition> {
        builtin_names()
            .into_iter()
            .map(|name| ToolDefinition {
                name,
                description: "d",
                parameters: json!({"type": "object"}),
            })
            .collect()
    }

    fn names(ranked: &[&str], context: u64) -> Vec<&'static str> {
        let ranked: Vec<String> = ranked.iter().map(|s| s.to_string()).collect();
        select_tools(every_tool(), context, &ranked)
            .into_iter()
            .map(|t| t.name)
            .collect()
    }

    #[test]
    fn the_integration_of_the_top_facts_gets_its_tools_and_every_other_one_is_still_offered() {
        let got = names(&["k8s"], 8192);
        assert!(got.len() <= MAX_SMALL_TOOLS);
        for want in GENERAL {
            assert!(got.contains(&want), "{want} missing from {got:?}");
        }
        let k8s = got.iter().filter(|n| n.starts_with("k8s_")).count();
        assert_eq!(k8s, PER_INTEGRATION, "{got:?}");
        // With no fact from them, the other integrations still have a tool each, as room
        // allows (none is hidden because the trigger lacks a word).
        let families: Vec<&str> = got.iter().map(|n| tool_integration(n)).collect();
        for other in ["runbook", "loki"] {
            assert!(families.contains(&other), "{other} hidden: {got:?}");
        }
    }

    #[test]
    fn a_large_context_gets_every_tool() {
        assert_eq!(names(&[], 32768).len(), builtin_names().len());
        assert_eq!(names(&["truenas"], 4096).len(), MAX_SMALL_TOOLS);
    }
}
