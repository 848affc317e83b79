//! The JSON bodies of `/api/v1/*`, shared by the HTTP handlers (`http/`) that answer them
//! and the CLI (`cli/`) that reads them from a running daemon. Domain types (an
//! `Investigation`, a `Report`) stay with their parts; this module only composes them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::agent::{Event, Feedback, Investigation, InvestigationStatus};
use crate::report::model::{ReportStatus, ReportTrigger};

/// The longest question `POST /api/v1/ask` accepts, in characters.
pub const MAX_QUESTION_CHARS: usize = 8_000;

/// `POST /api/v1/ask`.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct AskRequest {
    pub question: Option<String>,
}

/// The answer to `POST /api/v1/ask`: the queued investigation.
#[derive(Debug, Serialize, Deserialize)]
pub struct Queued {
    pub id: String,
    pub status: InvestigationStatus,
}

/// The 429 answer to `POST /api/v1/ask` when a daily budget is used up.
#[derive(Debug, Serialize, Deserialize)]
pub struct OverBudgetAnswer {
    /// What happened, naming the budget's key and what was spent.
    pub error: String,
    /// The key of the budget that is used up: `alerts.max_investigations_per_day` or
    /// `alerts.daily_cost_limit_usd`.
    pub budget: String,
    pub investigations_today: u32,
    pub max_investigations_per_day: u32,
    pub spent_usd: f64,
    /// Reserved by queued and running work.
    pub reserved_usd: f64,
    /// 0: no cost limit.
    pub daily_cost_limit_usd: f64,
    /// What this investigation would have reserved.
    pub needed_usd: f64,
}

impl From<&crate::agent::OverBudget> for OverBudgetAnswer {
    fn from(e: &crate::agent::OverBudget) -> Self {
        let b = &e.budget;
        Self {
            error: e.to_string(),
            budget: e.limit.key().to_string(),
            investigations_today: b.investigations,
            max_investigations_per_day: b.max_per_day,
            spent_usd: b.spent_usd,
            reserved_usd: b.reserved_usd,
            daily_cost_limit_usd: b.cost_limit_usd,
            needed_usd: e.needed_usd,
        }
    }
}

/// An investigation with its timeline, as `GET /api/v1/investigations/{id}` answers.
#[derive(Debug, Serialize, Deserialize)]
pub struct InvestigationDetail {
    #[serde(flatten)]
    pub investigation: Investigation,
    pub events: Vec<Event>,
}

/// `POST /api/v1/investigations/{id}/feedback`: `verdict` is "right" or "wrong"; the note
/// is at most [`crate::agent::memory::MAX_FEEDBACK_NOTE_CHARS`] characters.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeedbackRequest {
    pub verdict: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The answer to a feedback request: the feedback as stored.
#[derive(Debug, Serialize, Deserialize)]
pub struct FeedbackStored {
    pub id: String,
    pub feedback: Feedback,
}

/// One page of `GET /api/v1/investigations`, newest first.
pub use crate::agent::store::Page as InvestigationPage;

/// `POST /api/v1/reports`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateReport {
    #[serde(default)]
    pub send: bool,
    /// "last" (default) or "YYYY-Www".
    #[serde(default)]
    pub period: Option<String>,
}

/// One line of `GET /api/v1/reports`.
#[derive(Debug, Serialize, Deserialize)]
pub struct ReportListItem {
    pub id: String,
    pub period: String,
    pub title: String,
    pub trigger: ReportTrigger,
    pub status: ReportStatus,
    pub created_at: DateTime<Utc>,
}
