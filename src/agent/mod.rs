//! Investigations: the types shared with alerts, schedules and reports (the typed alert
//! data an alert investigation starts with, [`AlertContext`], and its [`GroupKey`]), the
//! [`Dispatcher`] (durable queue + workers), the investigation loop (`runner`) with its
//! bounded corrections of small models, its prompt with fenced untrusted data (`prompt`),
//! the tools offered in a small context (`context`), the calls made and their citation
//! check ([`CallLog`]), the structured [`Finding`], the daily budgets every investigation
//! answers to ([`SpendLedger`]), incident memory with people's feedback
//! ([`IncidentMemory`]), and their store.

mod alert_context;
mod asked_time;
mod budget;
mod call_log;
mod context;
mod dispatcher;
mod evidence;
mod figures;
mod finding;
mod follow_up;
mod group_key;
mod health;
pub mod memory;
mod prompt;
mod promql;
mod prose;
mod runner;
pub mod spend;
pub mod store;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use alert_context::{
    AlertContext, AlertSample, AlertScope, Context, GroupSummary, StormReinvestigation,
    StormSummary,
};
pub use budget::{Budget, Limit, OverBudget, Spender, SubmitError, investigation_reserve};
pub use call_log::{CallLog, CallRecord};
pub use context::{MAX_SMALL_TOOLS, SMALL_CONTEXT_TOKENS, select_tools};
pub use dispatcher::{Dispatcher, DispatcherError, FeedbackOutcome, build_tools};
pub use finding::{Evidence, Finding};
pub use follow_up::{asked, follow_up_request};
pub use group_key::GroupKey;
pub use memory::{Feedback, IncidentMemory, Recurrence, Verdict};
pub use prompt::{fence, first_request_body, system_prompt, user_message};
pub use runner::{MAX_CONTEXT_RETRIES, MAX_CORRECTIONS, Runner};
pub use spend::{Claim, DayTotals, SpendLedger};

use crate::llm::Usage;

crate::telemetry::labelled! {
    /// What started an investigation (the `trigger` label of `sre_agent_investigations_total`).
    #[derive(Serialize, Deserialize, utoipa::ToSchema)]
    #[serde(rename_all = "lowercase")]
    pub enum Trigger {
        Ask => "ask",
        Alert => "alert",
        Schedule => "schedule",
    }
}

/// Where an investigation is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum InvestigationStatus {
    Queued,
    Running,
    Finished,
    /// Ended without a usable answer from the model (garbage, loops, unknown tools, an
    /// overflowing context): the finding lists the evidence gathered, at low confidence.
    Inconclusive,
    Failed,
    LimitReached,
    Cancelled,
}

impl InvestigationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Finished => "finished",
            Self::Inconclusive => "inconclusive",
            Self::Failed => "failed",
            Self::LimitReached => "limit_reached",
            Self::Cancelled => "cancelled",
        }
    }

    /// Whether this status is final (the investigation will not run again).
    pub fn is_final(self) -> bool {
        !matches!(self, Self::Queued | Self::Running)
    }

    pub fn parse(s: &str) -> Option<Self> {
        serde_json::from_value(Value::String(s.to_string())).ok()
    }

    /// Every status, in life order (for help texts and metric labels).
    pub const ALL: [Self; 7] = [
        Self::Queued,
        Self::Running,
        Self::Finished,
        Self::Inconclusive,
        Self::Failed,
        Self::LimitReached,
        Self::Cancelled,
    ];

    /// "queued, running, finished, …": the statuses for error messages.
    pub fn names() -> String {
        Self::ALL.map(Self::as_str).join(", ")
    }
}

/// A request to investigate something.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct InvestigationRequest {
    pub trigger: Trigger,
    pub title: String,
    /// The question or instruction (trusted: from the config or the user).
    pub prompt: String,
    /// Untrusted data (an alert's labels and annotations, a follow-up's earlier
    /// investigation), fenced by the agent.
    pub context: Option<Context>,
    /// The alert group's (or storm's) name in the alert store, when `trigger` is `Alert`.
    pub group_key: Option<String>,
}

/// Characters of a question kept as its investigation's title.
const TITLE_CHARS: usize = 80;

impl InvestigationRequest {
    /// A person's question (the API, the console, the CLI, MCP): the question is the
    /// prompt, its start the title, nothing untrusted around it.
    pub fn ask(question: &str) -> Self {
        Self {
            trigger: Trigger::Ask,
            title: question.chars().take(TITLE_CHARS).collect(),
            prompt: question.to_string(),
            context: None,
            group_key: None,
        }
    }
}

/// One investigation, as stored and served by the API.
#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Investigation {
    /// A uuid v7: ids sort in creation order.
    pub id: String,
    pub trigger: Trigger,
    pub title: String,
    pub status: InvestigationStatus,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub model: String,
    pub tokens: Usage,
    pub cost_usd: f64,
    pub finding: Option<Finding>,
    pub error: Option<String>,
    pub group_key: Option<String>,
    /// Remarks added by others, e.g. "resolved at …".
    pub notes: Vec<String>,
    pub prompt: String,
    /// Untrusted data the investigation started with (see [`InvestigationRequest`]).
    pub context: Option<Context>,
    /// LLM calls made.
    #[serde(default)]
    pub steps: u32,
    /// Times a worker started it (more than 1 after a restart).
    #[serde(default)]
    pub attempts: u32,
    /// A person's verdict on the finding (the latest one given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<Feedback>,
    /// The investigation this one follows up (`POST /api/v1/investigations/{id}/followup`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
}

impl Investigation {
    /// A new `queued` investigation for `req`.
    pub fn new(req: InvestigationRequest, model: &str) -> Self {
        Self {
            id: uuid::Uuid::now_v7().to_string(),
            trigger: req.trigger,
            title: req.title,
            status: InvestigationStatus::Queued,
            created_at: Utc::now(),
            started_at: None,
            finished_at: None,
            model: model.to_string(),
            tokens: Usage::default(),
            cost_usd: 0.0,
            finding: None,
            error: None,
            group_key: req.group_key,
            notes: Vec::new(),
            prompt: req.prompt,
            context: req.context,
            steps: 0,
            attempts: 0,
            feedback: None,
            parent_id: None,
        }
    }

    /// The alert data, for an alert investigation.
    pub fn alert(&self) -> Option<&AlertContext> {
        self.context.as_ref().and_then(Context::alert)
    }

    /// Wall time from start to end, when both are known.
    pub fn duration(&self) -> Option<std::time::Duration> {
        (self.finished_at? - self.started_at?).to_std().ok()
    }
}

/// One entry of an investigation's timeline.
#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Event {
    pub at: DateTime<Utc>,
    /// The LLM step this belongs to (1-based).
    pub step: u32,
    #[serde(flatten)]
    pub kind: EventKind,
}

#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventKind {
    LlmCall {
        tokens: Usage,
        cost_usd: f64,
        latency_ms: u64,
        /// Tool calls requested (names); empty for a final answer.
        tool_calls: Vec<String>,
    },
    ToolCall {
        id: String,
        name: String,
        arguments: Value,
        duration_ms: u64,
        ok: bool,
        /// The first 500 characters of the output.
        output_excerpt: String,
    },
    Error {
        message: String,
    },
    Note {
        message: String,
    },
}

impl Event {
    pub fn new(step: u32, kind: EventKind) -> Self {
        Self {
            at: Utc::now(),
            step,
            kind,
        }
    }

    /// A one-line description for progress output.
    pub fn describe(&self) -> String {
        match &self.kind {
            EventKind::LlmCall {
                tokens,
                latency_ms,
                tool_calls,
                ..
            } => {
                let what = if tool_calls.is_empty() {
                    "answer".to_string()
                } else {
                    format!("calls {}", tool_calls.join(", "))
                };
                format!(
                    "step {}: LLM {what} ({} tokens, {latency_ms} ms)",
                    self.step,
                    tokens.total()
                )
            }
            EventKind::ToolCall {
                name,
                arguments,
                duration_ms,
                ok,
                ..
            } => format!(
                "step {}: tool {name} {arguments} → {} ({duration_ms} ms)",
                self.step,
                if *ok { "ok" } else { "error" }
            ),
            EventKind::Error { message } => format!("step {}: error: {message}", self.step),
            EventKind::Note { message } => format!("step {}: {message}", self.step),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_reads_back_from_its_name_and_the_final_ones_are_those_that_ended() {
        for s in InvestigationStatus::ALL {
            assert_eq!(InvestigationStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(
            InvestigationStatus::parse("inconclusive"),
            Some(InvestigationStatus::Inconclusive)
        );
        assert!(InvestigationStatus::Inconclusive.is_final());
        let finals: Vec<&str> = InvestigationStatus::ALL
            .into_iter()
            .filter(|s| s.is_final())
            .map(InvestigationStatus::as_str)
            .collect();
        assert_eq!(
            finals,
            [
                "finished",
                "inconclusive",
                "failed",
                "limit_reached",
                "cancelled"
            ]
        );
    }

    #[test]
    fn every_trigger_is_stored_by_its_label() {
        for t in Trigger::ALL {
            assert_eq!(serde_json::to_value(t).unwrap(), t.label());
        }
    }
}
