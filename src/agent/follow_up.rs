//! Follow-up questions: a new investigation linked to its parent, whose context (fenced as
//! untrusted data by the prompt, like an alert's) is the parent's question, finding and the
//! output of the tool calls its evidence cites. The question itself is the user's (trusted).

use std::fmt::Write as _;

use super::{Event, EventKind, Investigation, InvestigationRequest, Trigger};
use crate::text::truncate;

/// The most characters of the parent's own context (an alert payload) carried over.
const PARENT_CONTEXT_CHARS: usize = 2_000;
/// The most characters of one cited tool output carried over.
const OUTPUT_CHARS: usize = 600;
/// The most cited tool outputs carried over.
const MAX_OUTPUTS: usize = 8;

/// What the prompt of a follow-up adds after the user's question.
const INSTRUCTION: &str = "\n\nThis follows up an earlier investigation: its question, \
    finding and the tool results behind it are in the data below. Their call ids belong to \
    that investigation; call tools again for evidence you cite.";

/// The user's own question in the prompt of a follow-up (the whole prompt of any other).
pub fn asked(prompt: &str) -> &str {
    prompt.strip_suffix(INSTRUCTION).unwrap_or(prompt)
}

/// The request that asks `question` as a follow-up of `parent` (with its timeline `events`).
pub fn follow_up_request(
    parent: &Investigation,
    events: &[Event],
    question: &str,
) -> InvestigationRequest {
    let question = question.trim();
    let prompt = format!("{question}{INSTRUCTION}");
    InvestigationRequest {
        trigger: Trigger::Ask,
        title: question.chars().take(super::TITLE_CHARS).collect(),
        prompt,
        context: Some(parent_context(parent, events).into()),
        group_key: None,
    }
}

fn parent_context(parent: &Investigation, events: &[Event]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Earlier investigation {} ({}, {}): {}",
        parent.id,
        parent.trigger.label(),
        parent.status.as_str(),
        parent.prompt.trim()
    );
    let context = parent.context.as_ref().map(|c| c.render());
    if let Some(c) = context.as_deref().filter(|c| !c.trim().is_empty()) {
        let _ = writeln!(
            out,
            "\nIts context:\n{}",
            truncate(c.trim(), PARENT_CONTEXT_CHARS)
        );
    }
    match &parent.finding {
        Some(f) => {
            let _ = write!(out, "\nIts finding:\n{}", f.to_markdown());
        }
        None => {
            let _ = writeln!(out, "\nIt has no finding.");
        }
    }
    let cited: Vec<&str> = parent
        .finding
        .iter()
        .flat_map(|f| f.evidence.iter().chain(&f.figures))
        .flat_map(|e| e.tool_call_ids.iter().map(String::as_str))
        .collect();
    let calls = events.iter().filter_map(|e| match &e.kind {
        EventKind::ToolCall {
            id,
            name,
            arguments,
            output_excerpt,
            ..
        } if cited.contains(&id.as_str()) => Some((id, name, arguments, output_excerpt)),
        _ => None,
    });
    let mut header = false;
    for (id, name, arguments, output) in calls.take(MAX_OUTPUTS) {
        if !header {
            out.push_str("\nThe tool results its evidence cites:\n");
            header = true;
        }
        let _ = writeln!(
            out,
            "- {id} {name} {arguments}:\n{}",
            truncate(output.trim(), OUTPUT_CHARS)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{Evidence, Finding, InvestigationStatus};

    fn parent() -> (Investigation, Vec<Event>) {
        let mut inv = Investigation::new(
            InvestigationRequest {
                trigger: Trigger::Ask,
                title: "why is pve2 slow?".into(),
                prompt: "why is pve2 slow?".into(),
                context: None,
                group_key: None,
            },
            "m",
        );
        inv.status = InvestigationStatus::Finished;
        inv.finding = Some(Finding {
            summary: "pve2 swaps".into(),
            evidence: vec![Evidence {
                claim: "memory 97% used".into(),
                tool_call_ids: vec!["call_1".into()],
            }],
            ..Default::default()
        });
        let tool = |id: &str, out: &str| {
            Event::new(
                1,
                EventKind::ToolCall {
                    id: id.into(),
                    name: "prometheus_query".into(),
                    arguments: serde_json::json!({"query": "up"}),
                    duration_ms: 3,
                    ok: true,
                    output_excerpt: out.into(),
                },
            )
        };
        (
            inv,
            vec![tool("call_1", "mem 97%"), tool("call_2", "unrelated")],
        )
    }

    #[test]
    fn a_follow_up_carries_the_finding_and_only_the_cited_outputs_as_context() {
        let (inv, events) = parent();
        let req = follow_up_request(&inv, &events, "  and since when?  ");
        assert_eq!(req.title, "and since when?");
        assert!(req.prompt.starts_with("and since when?\n"));
        assert_eq!(asked(&req.prompt), "and since when?");
        assert_eq!(asked("why?"), "why?");
        assert_eq!(req.trigger, Trigger::Ask);
        let ctx = req.context.unwrap().render().into_owned();
        assert!(ctx.contains("why is pve2 slow?"), "{ctx}");
        assert!(ctx.contains("pve2 swaps") && ctx.contains("memory 97% used"));
        assert!(ctx.contains("call_1 prometheus_query") && ctx.contains("mem 97%"));
        assert!(!ctx.contains("unrelated"), "{ctx}");
    }
}
