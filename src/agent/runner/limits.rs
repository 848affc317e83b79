//! What bounds the tool loop: the limits that stop it before a step (steps, the time
//! after which the model answers, tokens, cost) with the status of the finding asked for
//! after them, and the trouble so far that bounds corrections.

use super::{MAX_CORRECTIONS, Runner};
use crate::agent::{Finding, Investigation, InvestigationStatus};

impl Runner {
    /// Which limit stops the loop before step `step + 1`, `elapsed` into the
    /// investigation, if any.
    pub(super) fn limit_hit(
        &self,
        inv: &Investigation,
        step: u32,
        elapsed: std::time::Duration,
    ) -> Option<Limit> {
        if step >= self.max_steps {
            return Some(Limit::hard(format!(
                "step limit reached ({} steps)",
                self.max_steps
            )));
        }
        // The planned end of a slow model's search, not a limit breached: its finding
        // is `finished`.
        if let Some(after) = self.answer_after.filter(|a| step > 0 && elapsed >= *a) {
            return Some(Limit {
                why: format!(
                    "answering now, {} s in (llm.answer_after = {} s)",
                    elapsed.as_secs(),
                    after.as_secs()
                ),
                status: InvestigationStatus::Finished,
            });
        }
        if self.max_tokens > 0 && inv.tokens.total() >= self.max_tokens {
            return Some(Limit::hard(format!(
                "token limit reached ({} of {} tokens)",
                inv.tokens.total(),
                self.max_tokens
            )));
        }
        if self.max_cost > 0.0 && inv.cost_usd >= self.max_cost {
            return Some(Limit::hard(format!(
                "cost limit reached (${:.4} of ${:.4})",
                inv.cost_usd, self.max_cost
            )));
        }
        None
    }
}

/// What stopped the tool loop, and the status of the finding asked for after it.
pub(super) struct Limit {
    pub why: String,
    pub status: InvestigationStatus,
}

impl Limit {
    /// A limit breached: the finding after it is `limit_reached`.
    pub(super) fn hard(why: String) -> Self {
        Self {
            why,
            status: InvestigationStatus::LimitReached,
        }
    }
}

/// What went wrong so far, to bound corrections and to say why an investigation ended.
#[derive(Default)]
pub(super) struct Trouble {
    /// Turns in which no call could run.
    pub(super) bad_turns: u32,
    pub(super) repeats: u32,
    pub(super) unknown_tools: Vec<String>,
    pub(super) bad_arguments: u32,
    pub(super) asked_for_json: bool,
    pub(super) asked_for_tools: bool,
    /// Whether the general tools ran for a model that would call none.
    pub(super) ran_general: bool,
    /// The finding whose probable cause restated its trigger, kept while the model is
    /// asked once which fact caused it.
    pub(super) restated: Option<Finding>,
    /// Whether the model was asked for the cause (once per investigation).
    pub(super) asked_cause: bool,
    pub(super) context_retries: u32,
}

impl Trouble {
    pub(super) fn describe_bad_turns(&self) -> String {
        let mut what = Vec::new();
        if self.repeats > 0 {
            what.push(format!("repeated identical calls {} times", self.repeats));
        }
        if !self.unknown_tools.is_empty() {
            what.push(format!(
                "called unknown tools ({})",
                self.unknown_tools.join(", ")
            ));
        }
        if self.bad_arguments > 0 {
            what.push(format!(
                "sent arguments that are not JSON {} times",
                self.bad_arguments
            ));
        }
        format!(
            "the model kept making calls that could not run ({}), also after {MAX_CORRECTIONS} \
             corrections",
            what.join("; ")
        )
    }
}
