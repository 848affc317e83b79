//! The JSON bodies of `/api/v1/*`, shared by the HTTP handlers (`http/`) that answer them
//! and the CLI (`cli/`) that reads them from a running daemon. Domain types (an
//! `Investigation`, a `Report`) stay with their parts; this module only composes them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::agent::{Event, Investigation, InvestigationStatus};
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

/// An investigation with its timeline, as `GET /api/v1/investigations/{id}` answers.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct InvestigationDetail {
    #[serde(flatten)]
    pub investigation: Investigation,
    pub events: Vec<Event>,
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
