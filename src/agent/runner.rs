//! The investigation loop: call the LLM with the tool definitions, run the tool calls of
//! one turn in parallel (bounded), feed fenced results back, until a final answer or a
//! limit (steps, tokens, cost); on a limit one last call without tools asks for the
//! finding. Repeated calls (same tool, same canonical arguments) are not run again.

use std::collections::HashMap;
use std::time::Instant;

use futures::StreamExt;
use serde_json::Value;

use super::evidence::EvidencePlanner;
use super::prompt::{fence, system_prompt, user_message};
use super::{Event, EventKind, Finding, Investigation, InvestigationStatus};
use crate::agent::store::InvestigationStore;
use crate::config::LlmConfig;
use crate::llm::{ChatMessage, LlmClient, LlmError, ToolCall};
use crate::tools::{ToolDefinition, ToolRegistry};

/// Longest tool output excerpt kept in stored events.
const EXCERPT_CHARS: usize = 500;

/// Runs investigations; shared by the dispatcher's workers.
#[derive(Clone)]
pub struct Runner {
    llm: Option<LlmClient>,
    tools: ToolRegistry,
    store: InvestigationStore,
    max_steps: u32,
    max_tokens: u64,
    max_cost: f64,
    max_parallel: usize,
    evidence: EvidencePlanner,
}

/// The JSON body of the first request of an investigation (for size checks and benches).
pub fn first_request_body(
    config: &LlmConfig,
    tools: &[ToolDefinition],
    prompt: &str,
    context: Option<&str>,
) -> Value {
    let messages = [
        ChatMessage::System(system_prompt().into()),
        ChatMessage::User(user_message(prompt, context)),
    ];
    crate::llm::request_body(&config.model, &messages, tools)
}

/// What one tool call of a turn turned into.
struct CallResult {
    call: ToolCall,
    ok: bool,
    text: String,
    duration_ms: u64,
}

impl Runner {
    pub fn new(
        config: &LlmConfig,
        llm: Option<LlmClient>,
        tools: ToolRegistry,
        store: InvestigationStore,
    ) -> Self {
        Self {
            llm,
            tools,
            store,
            max_steps: config.max_steps.max(1),
            max_tokens: config.max_tokens_per_investigation,
            max_cost: config.max_cost_per_investigation_usd,
            max_parallel: config.max_parallel_tools.max(1),
            evidence: EvidencePlanner::default(),
        }
    }

    /// Gathers alert-first evidence with `planner` before the first LLM call.
    pub fn with_evidence(mut self, planner: EvidencePlanner) -> Self {
        self.evidence = planner;
        self
    }

    pub fn model(&self) -> Option<&str> {
        self.llm.as_ref().map(LlmClient::model)
    }

    /// Runs `inv` (already marked running) to a final status; events are stored as they happen.
    pub async fn run(&self, mut inv: Investigation) -> Investigation {
        let mut seq = self.store.events(&inv.id).map(|e| e.len()).unwrap_or(0) as u32;
        let mut record = |inv: &Investigation, step: u32, kind: EventKind| {
            if let Err(e) = self
                .store
                .append_event(&inv.id, seq, &Event::new(step, kind))
            {
                tracing::error!(id = %inv.id, error = %e, "cannot store investigation event");
            }
            seq += 1;
        };
        let Some(llm) = &self.llm else {
            let msg = LlmError::NotConfigured.to_string();
            record(
                &inv,
                0,
                EventKind::Error {
                    message: msg.clone(),
                },
            );
            inv.status = InvestigationStatus::Failed;
            inv.error = Some(msg);
            return inv;
        };
        if inv.attempts > 1 {
            let message = "restarted from the beginning after an interruption".to_string();
            record(&inv, 0, EventKind::Note { message });
        }
        let defs = self.tools.definitions();
        let mut messages = vec![
            ChatMessage::System(system_prompt().into()),
            ChatMessage::User(user_message(&inv.prompt, inv.context.as_deref())),
        ];
        let mut seen: HashMap<String, String> = HashMap::new();
        // Alert-first evidence: run as the model's own earlier calls (`evidence_N`), so it
        // sees the facts even if it calls no tool, and can cite them.
        let planned = self.evidence.plan(&inv, &self.tools).await;
        if !planned.is_empty() {
            let calls: Vec<ToolCall> = planned
                .into_iter()
                .enumerate()
                .map(|(i, p)| ToolCall {
                    id: format!("evidence_{}", i + 1),
                    name: p.name.to_string(),
                    arguments: p.arguments,
                })
                .collect();
            messages.push(ChatMessage::Assistant {
                content: None,
                tool_calls: calls.clone(),
            });
            for r in self.run_tools(calls, &mut seen).await {
                let output_excerpt: String = r.text.chars().take(EXCERPT_CHARS).collect();
                messages.push(ChatMessage::Tool {
                    tool_call_id: r.call.id.clone(),
                    content: fence("tool", &r.text),
                });
                record(
                    &inv,
                    0,
                    EventKind::ToolCall {
                        id: r.call.id,
                        name: r.call.name,
                        arguments: r.call.arguments,
                        duration_ms: r.duration_ms,
                        ok: r.ok,
                        output_excerpt,
                    },
                );
            }
        }
        let mut step = 0;
        let limit = loop {
            if let Some(why) = self.limit_hit(&inv, step) {
                break why;
            }
            step += 1;
            let start = Instant::now();
            let resp = match llm.chat(&messages, &defs).await {
                Ok(r) => r,
                Err(e) => {
                    let message = e.to_string();
                    record(
                        &inv,
                        step,
                        EventKind::Error {
                            message: message.clone(),
                        },
                    );
                    inv.status = InvestigationStatus::Failed;
                    inv.error = Some(message);
                    return inv;
                }
            };
            inv.steps = step;
            inv.tokens += resp.usage;
            inv.cost_usd += resp.cost_usd;
            record(
                &inv,
                step,
                EventKind::LlmCall {
                    tokens: resp.usage,
                    cost_usd: resp.cost_usd,
                    latency_ms: start.elapsed().as_millis() as u64,
                    tool_calls: resp.tool_calls.iter().map(|c| c.name.clone()).collect(),
                },
            );
            if resp.tool_calls.is_empty() {
                inv.finding = Some(Finding::parse(resp.content.as_deref().unwrap_or("")));
                inv.status = InvestigationStatus::Finished;
                return inv;
            }
            if let Err(e) = self.store.put(&inv) {
                tracing::warn!(id = %inv.id, error = %e, "cannot store investigation progress");
            }
            messages.push(ChatMessage::Assistant {
                content: resp.content.clone(),
                tool_calls: resp.tool_calls.clone(),
            });
            for r in self.run_tools(resp.tool_calls, &mut seen).await {
                let output_excerpt: String = r.text.chars().take(EXCERPT_CHARS).collect();
                messages.push(ChatMessage::Tool {
                    tool_call_id: r.call.id.clone(),
                    content: fence("tool", &r.text),
                });
                record(
                    &inv,
                    step,
                    EventKind::ToolCall {
                        id: r.call.id,
                        name: r.call.name,
                        arguments: r.call.arguments,
                        duration_ms: r.duration_ms,
                        ok: r.ok,
                        output_excerpt,
                    },
                );
            }
        };
        record(
            &inv,
            step,
            EventKind::Note {
                message: limit.clone(),
            },
        );
        inv.notes.push(limit.clone());
        messages.push(ChatMessage::User(format!(
            "{limit}. No more tool calls: give the final JSON answer now from what you gathered."
        )));
        step += 1;
        let start = Instant::now();
        match llm.chat(&messages, &[]).await {
            Ok(resp) => {
                inv.steps = step;
                inv.tokens += resp.usage;
                inv.cost_usd += resp.cost_usd;
                record(
                    &inv,
                    step,
                    EventKind::LlmCall {
                        tokens: resp.usage,
                        cost_usd: resp.cost_usd,
                        latency_ms: start.elapsed().as_millis() as u64,
                        tool_calls: Vec::new(),
                    },
                );
                inv.finding = Some(Finding::parse(resp.content.as_deref().unwrap_or("")));
            }
            Err(e) => {
                let message = e.to_string();
                record(
                    &inv,
                    step,
                    EventKind::Error {
                        message: message.clone(),
                    },
                );
                inv.error = Some(message);
            }
        }
        inv.status = InvestigationStatus::LimitReached;
        inv
    }

    /// Which limit stops the loop before step `step + 1`, if any.
    fn limit_hit(&self, inv: &Investigation, step: u32) -> Option<String> {
        if step >= self.max_steps {
            return Some(format!("step limit reached ({} steps)", self.max_steps));
        }
        if self.max_tokens > 0 && inv.tokens.total() >= self.max_tokens {
            return Some(format!(
                "token limit reached ({} of {} tokens)",
                inv.tokens.total(),
                self.max_tokens
            ));
        }
        if self.max_cost > 0.0 && inv.cost_usd >= self.max_cost {
            return Some(format!(
                "cost limit reached (${:.4} of ${:.4})",
                inv.cost_usd, self.max_cost
            ));
        }
        None
    }

    /// Runs one turn's calls in parallel (bounded), in order; repeats are not run again.
    async fn run_tools(
        &self,
        calls: Vec<ToolCall>,
        seen: &mut HashMap<String, String>,
    ) -> Vec<CallResult> {
        let plan: Vec<(ToolCall, Option<String>)> = calls
            .into_iter()
            .map(|call| {
                let key = format!("{}\u{0}{}", call.name, canonical(&call.arguments));
                let earlier = seen.get(&key).cloned();
                if earlier.is_none() {
                    seen.insert(key, call.id.clone());
                }
                (call, earlier)
            })
            .collect();
        futures::stream::iter(plan)
            .map(|(call, earlier)| self.run_one(call, earlier))
            .buffered(self.max_parallel)
            .collect()
            .await
    }

    async fn run_one(&self, call: ToolCall, earlier: Option<String>) -> CallResult {
        let start = Instant::now();
        let (ok, text) = if let Some(prev) = earlier {
            (
                false,
                format!(
                    "error: not run again: this exact call (same tool and arguments) was already \
                     made as {prev}; use that result or try something different"
                ),
            )
        } else if let Value::String(raw) = &call.arguments {
            let why = serde_json::from_str::<Value>(raw)
                .err()
                .map_or_else(|| "not an object".to_string(), |e| e.to_string());
            (
                false,
                format!(
                    "error: arguments are not a valid JSON object ({why}); send a JSON object \
                     matching the parameters of {}",
                    call.name
                ),
            )
        } else {
            let out = self.tools.call(&call.name, call.arguments.clone()).await;
            (out.ok, out.text)
        };
        CallResult {
            call,
            ok,
            text,
            duration_ms: start.elapsed().as_millis() as u64,
        }
    }
}

/// JSON with object keys sorted at every level, so equal arguments give equal text.
fn canonical(v: &Value) -> String {
    fn sort(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let sorted: std::collections::BTreeMap<_, _> =
                    m.iter().map(|(k, v)| (k.clone(), sort(v))).collect();
                Value::Object(sorted.into_iter().collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(sort).collect()),
            other => other.clone(),
        }
    }
    sort(v).to_string()
}
