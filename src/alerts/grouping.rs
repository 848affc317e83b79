//! Pure grouping and decision logic: the group key from `alerts.group_by`, the group title,
//! and whether a firing alert gets a new investigation (queued) or not (deduped, cooldown,
//! budget, ignored).

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::alerts::store::{GroupState, Outcome};

/// The state of a group's current investigation, as the dispatcher reports it.
#[derive(Clone, Debug, PartialEq)]
pub enum InvState {
    Queued,
    Running,
    /// Finished, failed or limit_reached: blocks new ones during the cooldown.
    Done {
        status: String,
        finished_at: DateTime<Utc>,
    },
    Cancelled,
    /// Unknown id (deleted): blocks nothing.
    Missing,
}

impl InvState {
    pub fn as_str(&self) -> &str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Done { status, .. } => status,
            Self::Cancelled => "cancelled",
            Self::Missing => "missing",
        }
    }
}

/// Investigations used today (count, cost) against the configured limits.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    pub used: u32,
    pub cost_usd: f64,
    pub max_per_day: u32,
    pub cost_limit_usd: f64,
}

impl Budget {
    pub fn exhausted(&self) -> bool {
        self.used >= self.max_per_day
            || (self.cost_limit_usd > 0.0 && self.cost_usd >= self.cost_limit_usd)
    }
}

/// `{alertname="X", instance="y"}` from the `group_by` labels present, in `group_by`
/// order; alerts carrying none of them group by their fingerprint.
pub fn group_key(
    group_by: &[String],
    labels: &BTreeMap<String, String>,
    fingerprint: &str,
) -> String {
    let parts: Vec<String> = group_by
        .iter()
        .filter_map(|name| labels.get(name).map(|v| format!("{name}={v:?}")))
        .collect();
    if parts.is_empty() {
        format!("{{fingerprint={fingerprint:?}}}")
    } else {
        format!("{{{}}}", parts.join(", "))
    }
}

/// "HighErrorRate (job=checkout, instance=web1)": the alertname plus the other key labels.
pub fn group_title(group_by: &[String], labels: &BTreeMap<String, String>) -> String {
    let name = labels
        .get("alertname")
        .filter(|n| !n.is_empty())
        .map(String::as_str)
        .unwrap_or("Alert");
    let rest: Vec<String> = group_by
        .iter()
        .filter(|k| k.as_str() != "alertname")
        .filter_map(|k| labels.get(k).map(|v| format!("{k}={v}")))
        .collect();
    if rest.is_empty() {
        name.to_string()
    } else {
        format!("{name} ({})", rest.join(", "))
    }
}

/// What to do with a firing alert of `group` (its state before this alert).
/// `budget` is only asked when everything else allows a new investigation.
pub fn decide_firing(
    group: Option<&GroupState>,
    inv: &InvState,
    ignored: bool,
    now: DateTime<Utc>,
    cooldown: Duration,
    budget: impl FnOnce() -> Budget,
) -> Outcome {
    if ignored {
        return Outcome::Ignored;
    }
    if group.is_some_and(|g| g.pending_since.is_some() && g.investigation_id.is_none()) {
        return Outcome::Deduped;
    }
    match inv {
        InvState::Queued | InvState::Running => return Outcome::Deduped,
        InvState::Done { finished_at, .. } => {
            let since = (now - *finished_at).to_std().unwrap_or(Duration::ZERO);
            if since < cooldown {
                return Outcome::Cooldown;
            }
        }
        InvState::Cancelled | InvState::Missing => {}
    }
    if budget().exhausted() {
        Outcome::Budget
    } else {
        Outcome::Queued
    }
}

#[cfg(test)]
#[path = "grouping_tests.rs"]
mod tests;
