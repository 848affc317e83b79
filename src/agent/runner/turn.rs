//! One turn of tool calls: unique ids, lenient names, identical calls answered with the
//! earlier result, unknown tools with the offered ones, unreadable arguments with the
//! reason; the calls that can run run in parallel (bounded), in order.

use std::time::Instant;

use futures::StreamExt;
use serde_json::Value;

use super::Session;
use crate::agent::EventKind;
use crate::agent::call_log::{CallRecord, canonical};
use crate::agent::prompt::{self, tool_result};
use crate::llm::{ChatMessage, ToolCall, match_tool_name};
use crate::tools::ToolRegistry;

/// Longest tool output excerpt kept in stored events.
pub(super) const EXCERPT_CHARS: usize = 500;
/// Most calls one turn may run; the rest are answered "too many calls in one turn" (a
/// model must not fan out into hundreds of upstream requests in one answer).
pub const MAX_CALLS_PER_TURN: usize = 8;

/// How one call of a turn is handled.
enum Plan {
    Run,
    /// A tool the registry does not know: run anyway (counted as `unknown`), answered
    /// with the offered tools.
    Unknown,
    BadArguments(String),
    /// Identical to an earlier call (of this or an earlier turn): its record.
    Repeat(CallRecord),
    /// Identical to the call at this index of the same turn.
    RepeatInTurn(usize),
    /// Past `MAX_CALLS_PER_TURN`: not run.
    TooMany,
}

impl Session<'_> {
    /// Runs one turn's calls; returns whether none of them could run.
    pub(super) async fn run_turn(
        &mut self,
        content: Option<String>,
        mut calls: Vec<ToolCall>,
    ) -> bool {
        let registry = &self.runner.tools;
        let known = registry.names();
        let mut ids: Vec<String> = Vec::new();
        for call in &mut calls {
            call.id = self.log.unique_id(&call.id, &ids);
            ids.push(call.id.clone());
            if registry.get(&call.name).is_none()
                && let Some(name) = match_tool_name(&call.name, &known)
            {
                call.name = name.to_string();
            }
        }
        self.messages.push(ChatMessage::Assistant {
            content,
            tool_calls: calls.clone(),
        });
        let plans: Vec<Plan> = calls
            .iter()
            .enumerate()
            .map(|(i, call)| {
                if i >= MAX_CALLS_PER_TURN {
                    return Plan::TooMany;
                }
                if let Some(earlier) = self.log.earlier(&call.name, &call.arguments) {
                    return Plan::Repeat(earlier.clone());
                }
                let same = |c: &ToolCall| {
                    c.name == call.name && canonical(&c.arguments) == canonical(&call.arguments)
                };
                if let Some(j) = calls[..i].iter().position(same) {
                    return Plan::RepeatInTurn(j);
                }
                if let Value::String(raw) = &call.arguments {
                    let why = serde_json::from_str::<Value>(raw)
                        .err()
                        .map_or_else(|| "not an object".to_string(), |e| e.to_string());
                    return Plan::BadArguments(why);
                }
                if registry.get(&call.name).is_none() {
                    return Plan::Unknown;
                }
                Plan::Run
            })
            .collect();
        let jobs: Vec<Option<(String, Value)>> = calls
            .iter()
            .zip(&plans)
            .map(|(call, plan)| {
                matches!(plan, Plan::Run | Plan::Unknown)
                    .then(|| (call.name.clone(), call.arguments.clone()))
            })
            .collect();
        let runs: Vec<Option<Ran>> = futures::stream::iter(jobs)
            .map(|job| run_call(registry, job))
            .buffered(self.runner.max_parallel)
            .collect()
            .await;
        let offered: Vec<&str> = self.tools.iter().map(|t| t.name).collect();
        let mut all_bad = true;
        let mut turn: Vec<CallRecord> = Vec::new();
        for ((call, plan), ran) in calls.into_iter().zip(plans).zip(runs) {
            let ran_ok = matches!(plan, Plan::Run);
            let mut facts = Vec::new();
            let (ok, output, message, repeat_of, duration_ms) = match (plan, ran) {
                (Plan::Run, Some((ok, text, found, ms))) => {
                    all_bad = false;
                    facts = found;
                    (ok, text.clone(), tool_result(&call.id, &text), None, ms)
                }
                (Plan::Unknown, Some((_, _, _, ms))) => {
                    self.trouble.unknown_tools.push(call.name.clone());
                    let text = prompt::unknown_tool(&call.name, &offered);
                    (false, text.clone(), text, None, ms)
                }
                (Plan::BadArguments(why), _) => {
                    self.trouble.bad_arguments += 1;
                    let text = prompt::bad_arguments(&call.name, &why);
                    (false, text.clone(), text, None, 0)
                }
                (Plan::Repeat(earlier), _) => {
                    self.trouble.repeats += 1;
                    let text = prompt::repeated_call(&earlier.id, &earlier.output);
                    (earlier.ok, earlier.output, text, Some(earlier.id), 0)
                }
                (Plan::RepeatInTurn(j), _) => {
                    self.trouble.repeats += 1;
                    let earlier = &turn[j];
                    let text = prompt::repeated_call(&earlier.id, &earlier.output);
                    let id = earlier.repeat_of.clone().unwrap_or(earlier.id.clone());
                    (earlier.ok, earlier.output.clone(), text, Some(id), 0)
                }
                (Plan::TooMany, _) => {
                    let text = format!(
                        "error: too many calls in one turn: only the first {MAX_CALLS_PER_TURN} \
                         ran; ask again for the ones you still need"
                    );
                    (false, text.clone(), text, None, 0)
                }
                (Plan::Run | Plan::Unknown, None) => unreachable!("every run yields an outcome"),
            };
            self.messages.push(ChatMessage::Tool {
                tool_call_id: call.id.clone(),
                content: message.clone(),
            });
            self.record(EventKind::ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
                duration_ms,
                ok,
                output_excerpt: if ran_ok { &output } else { &message }
                    .chars()
                    .take(EXCERPT_CHARS)
                    .collect(),
            });
            turn.push(CallRecord {
                id: call.id,
                name: call.name,
                arguments: call.arguments,
                ok,
                output,
                repeat_of,
                facts,
            });
        }
        for r in turn {
            self.log.push(r);
        }
        all_bad
    }
}

/// What one call returned: whether it returned data, its text, its facts, milliseconds.
type Ran = (bool, String, Vec<crate::analyze::Fact>, u64);

/// Runs one call, if there is one to run.
async fn run_call(registry: &ToolRegistry, job: Option<(String, Value)>) -> Option<Ran> {
    let (name, arguments) = job?;
    let start = Instant::now();
    let out = registry.call(&name, arguments).await;
    Some((
        out.ok,
        out.text,
        out.facts,
        start.elapsed().as_millis() as u64,
    ))
}
