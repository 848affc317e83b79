//! The JSON bodies of `/api/v1/*`, shared by the HTTP handlers (`http/`) that answer them
//! and the CLI (`cli/`) that reads them from a running daemon. Domain types (an
//! `Investigation`, a `Report`) stay with their parts; this module only composes them.
//! The error answers every operation shares are documented here once ([`Refusals`],
//! [`BodyRefusals`]), for the handlers' OpenAPI annotations.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::agent::{Event, Feedback, Investigation, InvestigationStatus};
use crate::report::model::{ReportStatus, ReportTrigger};

/// The longest question `POST /api/v1/ask` accepts, in characters.
pub const MAX_QUESTION_CHARS: usize = 8_000;

/// `POST /api/v1/ask`.
#[derive(Debug, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AskRequest {
    /// Required; blank is refused.
    #[schema(min_length = 1, max_length = 8000)]
    pub question: Option<String>,
}

/// The answer to `POST /api/v1/ask`: the queued investigation.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Queued {
    pub id: String,
    pub status: InvestigationStatus,
}

/// The 429 answer to `POST /api/v1/ask` when a daily budget is used up.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
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
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct InvestigationDetail {
    #[serde(flatten)]
    pub investigation: Investigation,
    pub events: Vec<Event>,
}

/// `POST /api/v1/investigations/{id}/feedback`: `verdict` is "right" or "wrong"; the note
/// is at most [`crate::agent::memory::MAX_FEEDBACK_NOTE_CHARS`] characters.
#[derive(Debug, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FeedbackRequest {
    pub verdict: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The answer to a feedback request: the feedback as stored.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct FeedbackStored {
    pub id: String,
    pub feedback: Feedback,
}

/// One page of `GET /api/v1/investigations`, newest first.
pub use crate::agent::store::Page as InvestigationPage;

/// `POST /api/v1/reports`.
#[derive(Debug, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateReport {
    #[serde(default)]
    pub send: bool,
    /// "last" (default) or "YYYY-Www".
    #[serde(default)]
    pub period: Option<String>,
}

/// Every error answer of the HTTP API and the webhooks.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// What was wrong, for a person to read (internal details stay in the daemon's log).
    pub error: String,
}

/// The refusals every authenticated API operation may answer, documented once and listed
/// in each operation's `responses(…)`.
#[derive(utoipa::IntoResponses)]
pub enum Refusals {
    #[response(status = 401, description = "Missing or wrong credentials")]
    Unauthorized(ErrorBody),
    #[response(status = 408, description = "Took longer than server.request_timeout")]
    Timeout(ErrorBody),
    #[response(status = 431, description = "Headers over the limit")]
    HeadersTooLarge(ErrorBody),
}

/// What an operation that reads a JSON body may refuse it for, besides [`Refusals`].
#[derive(utoipa::IntoResponses)]
pub enum BodyRefusals {
    #[response(status = 400, description = "Bad input")]
    BadInput(ErrorBody),
    #[response(status = 413, description = "Body over the limit")]
    TooLarge(ErrorBody),
    #[response(
        status = 415,
        description = "The body is not declared Content-Type: application/json"
    )]
    NotJson(ErrorBody),
}

/// One line of `GET /api/v1/reports`.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReportListItem {
    pub id: String,
    pub period: String,
    pub title: String,
    pub trigger: ReportTrigger,
    pub status: ReportStatus,
    pub created_at: DateTime<Utc>,
}
