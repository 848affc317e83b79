//! What happened to one received alert.

use serde::{Deserialize, Serialize};

crate::telemetry::labelled! {
    /// What happened to one received alert; the `outcome` label of `alerts_received_total`.
    #[derive(Serialize, Deserialize, utoipa::ToSchema)]
    #[serde(rename_all = "lowercase")]
    pub enum Outcome {
        Queued => "queued",
        Deduped => "deduped",
        Cooldown => "cooldown",
        Budget => "budget",
        Ignored => "ignored",
        Resolved => "resolved",
        /// Attached to a storm of its alert (`alerts::storm`) instead of its own investigation.
        Storm => "storm",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_is_stored_by_its_label() {
        for o in Outcome::ALL {
            assert_eq!(serde_json::to_value(o).unwrap(), o.label());
        }
    }
}
