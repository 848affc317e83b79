//! The investigation loop: call the LLM with the tool definitions, run the tool calls of
//! one turn in parallel (bounded), feed fenced results back, until a final answer or a
//! limit (steps, tokens, cost, context, `llm.answer_after`: `limits.rs`); on a limit one
//! last call without tools asks for the finding. When the health sweep found a problem
//! with what the trigger is about (`llm.answer_first`), the first calls send no tools and
//! ask for the answer from the facts; tools follow if the model calls one or its answers
//! are unusable twice. The alert-first checks (`evidence.rs`) are then cut to the rule's
//! value now: the facts hold the rest.
//!
//! Small models go astray, so the loop corrects them a bounded number of times:
//! - a call identical to an earlier one (same tool, same canonical arguments) is not run
//!   again: it gets the earlier result with a note;
//! - unknown tools get the list of offered ones; unreadable arguments get the reason;
//!   after [`MAX_CORRECTIONS`] turns in which no call could run, one last call without
//!   tools asks for the finding from the results gathered (when any returned data), else
//!   the investigation ends `inconclusive`;
//! - an answer before any tool ran gets one request to call tools first; a model that still
//!   calls none gets the results of the general tools (`general.rs`) to answer from;
//! - an empty or unparseable final answer gets one request for the JSON; then the finding
//!   is built from the evidence gathered, `inconclusive`, never an empty summary;
//! - a probable cause that restates the trigger while facts that began before it are
//!   neither cited nor named gets one request to choose among them (`cause.rs`);
//! - a finding's citations are checked against the calls that ran; without a cited result
//!   that returned data its confidence is lowered to low;
//! - a finding whose words name none of the problems and changes the sweep showed gets the
//!   top-ranked ones as its probable cause, marked as computed (`grounding.rs`): measured,
//!   asking the model to name them again rarely helped and cost a call;
//! - before each call the conversation is fitted into `llm.context_tokens`; a server that
//!   still says it does not fit gets a tighter fit, [`MAX_CONTEXT_RETRIES`] times.

mod cause;
mod general;
mod grounding;
mod limits;
mod outcomes;
mod turn;

use limits::{Limit, Trouble};

use std::sync::Arc;
use std::time::Instant;

use super::call_log::CallLog;
use super::context::select_tools;
use super::evidence::EvidencePlanner;
use super::health;
use super::memory::IncidentMemory;
use super::prompt::{self, initial_messages};
use super::{Event, EventKind, Investigation};
use crate::agent::store::InvestigationStore;
use crate::analyze::Sweep;
use crate::config::LlmConfig;
use crate::llm::{
    ChatMessage, ChatResponse, ContextWindow, Fit, LlmClient, LlmError, ToolCall, estimate_tokens,
};
use crate::tools::{ToolDefinition, ToolRegistry};

/// Turns in which no call could run (unknown tools, unreadable arguments, the same call
/// again) that a model is corrected for; one more ends the investigation `inconclusive`.
pub const MAX_CORRECTIONS: u32 = 2;

/// Retries after the server said a request does not fit the model's context.
pub const MAX_CONTEXT_RETRIES: u32 = 2;

/// First checks run when the health sweep found a problem with what the trigger is about.
const EVIDENCE_WITH_LEAD: usize = 1;

/// Runs investigations; shared by the dispatcher's workers.
#[derive(Clone)]
pub struct Runner {
    llm: Option<LlmClient>,
    tools: ToolRegistry,
    store: InvestigationStore,
    max_steps: u32,
    /// No tool step starts after this long (`None`: no limit).
    answer_after: Option<std::time::Duration>,
    answer_first: bool,
    max_tokens: u64,
    max_cost: f64,
    max_parallel: usize,
    context_tokens: u64,
    evidence: EvidencePlanner,
    sweep: Sweep,
    memory: Option<IncidentMemory>,
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
            answer_after: Some(config.answer_after.get()).filter(|d| !d.is_zero()),
            answer_first: config.answer_first,
            max_tokens: config.max_tokens_per_investigation,
            max_cost: config.max_cost_per_investigation_usd,
            max_parallel: config.max_parallel_tools.max(1),
            context_tokens: config.context_tokens,
            evidence: EvidencePlanner::default(),
            sweep: Sweep::default(),
            memory: None,
        }
    }

    /// Starts alert investigations with what `memory` holds about earlier ones.
    pub fn with_memory(mut self, memory: IncidentMemory) -> Self {
        self.memory = Some(memory);
        self
    }

    /// Runs the health sweep's `sweep` at the start of every investigation.
    pub fn with_sweep(mut self, sweep: Sweep) -> Self {
        self.sweep = sweep;
        self
    }

    /// Gathers alert-first evidence with `planner` before the first LLM call.
    pub fn with_evidence(mut self, planner: EvidencePlanner) -> Self {
        self.evidence = planner;
        self
    }

    pub fn model(&self) -> Option<&str> {
        self.llm.as_ref().map(LlmClient::model)
    }

    /// The LLM client, when one is configured.
    pub fn llm(&self) -> Option<&LlmClient> {
        self.llm.as_ref()
    }

    /// The tools the model may call.
    pub fn tools(&self) -> &ToolRegistry {
        &self.tools
    }

    /// Runs `inv` (already marked running) to a final status; events are stored as they happen.
    pub async fn run(&self, inv: Investigation) -> Investigation {
        let seq = self.store.events(&inv.id).map(|e| e.len()).unwrap_or(0) as u32;
        let recall = self.memory.as_ref().and_then(|m| {
            m.recall(&inv, chrono::Utc::now())
                .inspect_err(
                    |e| tracing::warn!(id = %inv.id, error = %e, "cannot read incident memory"),
                )
                .ok()
                .flatten()
        });
        let fenced = recall.as_ref().map(|r| r.fenced());
        // The health sweep: ranked facts before the first LLM call, in its first message.
        let gathered = match self.llm {
            Some(_) => health::gather(&self.sweep, &inv).await,
            None => None,
        };
        let now = chrono::Utc::now();
        let context = inv.context.as_ref().map(|c| c.render());
        let mut messages = initial_messages(&inv.prompt, context.as_deref(), fenced);
        let mut log = CallLog::default();
        let mut integrations = Vec::new();
        if let (Some(g), Some(ChatMessage::User(first))) = (&gathered, messages.last_mut()) {
            first.push_str("\n\n");
            first.push_str(&g.message(now));
            for r in g.records(now) {
                log.push(r);
            }
            integrations = g.integrations();
        }
        let tools = select_tools(self.tools.definitions(), self.context_tokens, &integrations);
        let mut s = Session::new(self, self.llm.as_ref(), inv, seq, messages, tools, log);
        if let Some(g) = &gathered {
            s.pinned = g.pinned();
            s.alert_start = g.alert_start;
            s.symptoms = g.about_trigger();
            s.answer_first = self.answer_first && g.has_lead();
            let mut message = format!(
                "health sweep: {} checks in {} ms, {} facts ({} shown)",
                g.checks,
                g.elapsed.as_millis(),
                g.total,
                g.shown.len()
            );
            if !g.notes.is_empty() {
                message.push_str(&format!("; {}", g.notes.join("; ")));
            }
            s.record(EventKind::Note { message });
            // Each shown fact on the timeline as the call that shows it, under its citable
            // id: the console links a finding's `fact_N` to it, a follow-up can quote it.
            for r in g.records(now) {
                s.record(EventKind::ToolCall {
                    id: r.id,
                    name: r.name,
                    arguments: r.arguments,
                    duration_ms: 0,
                    ok: true,
                    output_excerpt: r.output.chars().take(turn::EXCERPT_CHARS).collect(),
                });
            }
        }
        if self.llm.is_none() {
            return s.fail(&LlmError::NotConfigured);
        }
        if s.inv.attempts > 1 {
            let message = "restarted from the beginning after an interruption".to_string();
            s.record(EventKind::Note { message });
        }
        if let Some(r) = &recall {
            let message = format!("incident memory: {}", r.recurrence.describe());
            s.record(EventKind::Note { message });
        }
        // Alert-first evidence: run as the model's own earlier calls (`evidence_N`), so it
        // sees the facts even if it calls no tool, and can cite them.
        let mut planned = self.evidence.plan(&s.inv, &self.tools).await;
        if gathered.as_ref().is_some_and(|g| g.has_lead()) {
            // The sweep's facts already tell what the trigger is about, with rates and
            // since when: the rule's value now is the only first check they do not hold;
            // the range reads after it restated them in other units and cost a small
            // model seconds of reading.
            planned.truncate(EVIDENCE_WITH_LEAD);
        }
        if !planned.is_empty() {
            let calls = planned
                .into_iter()
                .enumerate()
                .map(|(i, p)| ToolCall {
                    id: format!("evidence_{}", i + 1),
                    name: p.name.to_string(),
                    arguments: p.arguments,
                })
                .collect();
            s.run_turn(None, calls).await;
        }
        let mut done = s.investigate().await;
        if let (Some(r), Some(f)) = (recall, done.finding.as_mut()) {
            f.recurrence = Some(r.recurrence);
        }
        done
    }
}

/// One investigation in progress.
struct Session<'a> {
    runner: &'a Runner,
    llm: Option<&'a LlmClient>,
    inv: Investigation,
    seq: u32,
    step: u32,
    messages: Vec<ChatMessage>,
    tools: Arc<Vec<ToolDefinition>>,
    log: CallLog,
    window: ContextWindow,
    trouble: Trouble,
    /// Health-sweep facts about the trigger: key figures whatever the finding cites.
    pinned: Vec<String>,
    /// When the alert began (`None` for a question): what may have caused it began before.
    alert_start: Option<chrono::DateTime<chrono::Utc>>,
    /// Ids of the sweep's facts about what the trigger is about (its symptom).
    symptoms: Vec<String>,
    /// Answering from the sweep's facts (`llm.answer_first`): calls without tools, until
    /// the answers are unusable twice.
    answer_first: bool,
    started: tokio::time::Instant,
}

impl<'a> Session<'a> {
    fn new(
        runner: &'a Runner,
        llm: Option<&'a LlmClient>,
        inv: Investigation,
        seq: u32,
        messages: Vec<ChatMessage>,
        tools: Vec<ToolDefinition>,
        log: CallLog,
    ) -> Self {
        Self {
            runner,
            llm,
            inv,
            seq,
            step: 0,
            started: tokio::time::Instant::now(),
            messages,
            tools: Arc::new(tools),
            log,
            window: ContextWindow::new(runner.context_tokens),
            trouble: Trouble::default(),
            pinned: Vec::new(),
            alert_start: None,
            symptoms: Vec::new(),
            answer_first: false,
        }
    }

    fn record(&mut self, kind: EventKind) {
        let event = Event::new(self.step, kind);
        if let Err(e) = self
            .runner
            .store
            .append_event(&self.inv.id, self.seq, &event)
        {
            tracing::error!(id = %self.inv.id, error = %e, "cannot store investigation event");
        }
        self.seq += 1;
    }

    /// A remark on the investigation: in its notes and its timeline.
    fn note(&mut self, message: String) {
        self.inv.notes.push(message.clone());
        self.record(EventKind::Note { message });
    }

    async fn investigate(mut self) -> Investigation {
        loop {
            let elapsed = self.started.elapsed();
            if let Some(limit) = self.runner.limit_hit(&self.inv, self.step, elapsed) {
                return self.at_limit(limit).await;
            }
            let fit = self.fit();
            if !fit.fits {
                let why = format!(
                    "context limit reached (~{} prompt tokens of {} after summarising older \
                     tool output; llm.context_tokens = {})",
                    fit.estimate,
                    self.window.prompt_limit(),
                    self.runner.context_tokens
                );
                return self.at_limit(Limit::hard(why)).await;
            }
            // The sweep found the trigger's problem: its first call answers from the facts.
            // Asked which fact caused the alert, the model chooses among facts it has.
            let with_tools = !self.answer_first && self.trouble.restated.is_none();
            if self.answer_first && self.step == 0 {
                self.note(
                    "the health sweep found a problem with what the trigger is about; \
                     the first call asks for the answer from its facts"
                        .to_string(),
                );
                self.messages
                    .push(ChatMessage::User(prompt::answer_from_facts()));
            }
            let resp = match self.chat(with_tools).await {
                Ok(r) => r,
                Err(e) if e.is_context_overflow() => {
                    self.trouble.context_retries += 1;
                    if self.trouble.context_retries > MAX_CONTEXT_RETRIES {
                        return self.inconclusive(format!(
                            "the conversation does not fit the model's context window, also \
                             after summarising older tool output ({e}); set llm.context_tokens \
                             to the server's context size"
                        ));
                    }
                    self.window.tighten();
                    continue;
                }
                Err(e) => return self.fail(&e),
            };
            if resp.tool_calls.is_empty() {
                if let Some(done) = self.conclude(resp.content).await {
                    return done;
                }
                continue;
            }
            // A model that calls tools while asked to answer from the facts gets them.
            self.answer_first = false;
            if let Err(e) = self.runner.store.put(&self.inv) {
                tracing::warn!(id = %self.inv.id, error = %e, "cannot store investigation progress");
            }
            if self.run_turn(resp.content, resp.tool_calls).await {
                self.trouble.bad_turns += 1;
                if self.trouble.bad_turns > MAX_CORRECTIONS {
                    let why = self.trouble.describe_bad_turns();
                    return self.answer_without_tools(why).await;
                }
            }
        }
    }

    /// Fits the conversation into the context window (with the tools: every call sends them).
    fn fit(&mut self) -> Fit {
        let fit = self.window.fit(&mut self.messages, &self.tools);
        if fit.summarised > 0 {
            let message = format!(
                "summarised {} older messages to fit the context (~{} of {} prompt tokens)",
                fit.summarised,
                fit.estimate,
                self.window.prompt_limit()
            );
            self.record(EventKind::Note { message });
        }
        fit
    }

    /// One LLM call (one step), counted and recorded.
    /// The next model call: with the tools to call, or (`with_tools` false) for the
    /// answer only, the same tools sent but not callable.
    async fn chat(&mut self, with_tools: bool) -> Result<ChatResponse, LlmError> {
        let llm = self.llm.ok_or(LlmError::NotConfigured)?;
        // The first call answering from the facts sends no tools: nothing is cached yet
        // to keep, and their definitions are a third of a small model's first prompt.
        let first_answer = !with_tools && self.answer_first;
        let tools = match first_answer {
            true => Arc::new(Vec::new()),
            false => self.tools.clone(),
        };
        let estimated = estimate_tokens(&self.messages, &tools);
        self.step += 1;
        let start = Instant::now();
        // Answering first, a call the model makes anyway is taken (it then gets the tools).
        let answer = match with_tools || first_answer {
            true => llm.chat(&self.messages, &tools).await,
            false => llm.answer_only(&self.messages, &tools).await,
        };
        let resp = match answer {
            Ok(r) => r,
            Err(e) => {
                self.record(EventKind::Error {
                    message: e.to_string(),
                });
                return Err(e);
            }
        };
        self.window.calibrate(estimated, resp.usage.prompt);
        self.inv.steps = self.step;
        self.inv.tokens += resp.usage;
        self.inv.cost_usd += resp.cost_usd;
        self.record(EventKind::LlmCall {
            tokens: resp.usage,
            cost_usd: resp.cost_usd,
            latency_ms: start.elapsed().as_millis() as u64,
            tool_calls: resp.tool_calls.iter().map(|c| c.name.clone()).collect(),
        });
        if !resp.repairs.is_empty() {
            let message = format!("read leniently: {}", resp.repairs.join("; "));
            self.record(EventKind::Note { message });
        }
        Ok(resp)
    }
}
