//! What happened to one received alert.

use serde::{Deserialize, Serialize};

/// What happened to one received alert; the `outcome` label of `alerts_received_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Queued,
    Deduped,
    Cooldown,
    Budget,
    Ignored,
    Resolved,
    /// Attached to a storm of its alert (`alerts::storm`) instead of its own investigation.
    Storm,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Deduped => "deduped",
            Self::Cooldown => "cooldown",
            Self::Budget => "budget",
            Self::Ignored => "ignored",
            Self::Resolved => "resolved",
            Self::Storm => "storm",
        }
    }
}
