//! The health sweep: deterministic analyzers, one per failure class, run in parallel at
//! the start of every investigation against every configured integration, each within a
//! time limit. Each returns typed [`Fact`]s (the entity, what is wrong, value and unit, since
//! when, the rate and the time until a limit, a severity, and the tool call that shows
//! it). [`rank`] orders them by what they share with the trigger (labels, hosts, names,
//! time) and by severity; the agent puts the top ones in the model's first message.
//!
//! The sweep never reads the trigger's words to decide what to run: it runs what the
//! configured integrations allow. Queries are built from constants and from labels found
//! in the data, never by pasting alert text into PromQL or LogQL.
//!
//! - `fact.rs`, `quantity.rs`: the typed result and its units;
//! - `sweep.rs`: the catalog of analyzers per integration, the parallel run, each within a time limit;
//! - `rank.rs`: relevance by entities, time and severity;
//! - `pattern.rs`: the pattern of a log line (numbers and ids as placeholders);
//! - `logs/`: analyzers over Loki (what changed in each service's logs, error bursts);
//! - `prom/`: analyzers over Prometheus (node_exporter, process-exporter, cAdvisor,
//!   kube-state-metrics, blackbox);
//! - `kube/`: analyzers over the Kubernetes API (pods, nodes, rollouts);
//! - `proxmox.rs` (with `proxmox_load.rs`), `pbs.rs` (with `pbs_attempts.rs`), `truenas.rs`:
//!   analyzers over the appliances' APIs; `proxmox_unprotected.rs` (with
//!   `proxmox_coverage.rs`): guests no enabled backup job covers; `proxmox_balloon.rs`: VMs
//!   whose balloon holds their memory down while they run near it; `truenas_tasks.rs`: cloud
//!   sync, replication and rsync tasks failing or overdue by their schedule.

mod cron;
mod fact;
pub mod kube;
pub mod logs;
mod one_entity;
mod pattern;
pub mod pbs;
mod pbs_attempts;
mod pbs_verify;
pub mod prom;
pub mod proxmox;
pub mod proxmox_backup_age;
mod proxmox_balloon;
pub mod proxmox_coverage;
mod proxmox_load;
mod proxmox_replication;
mod proxmox_schedule;
mod proxmox_tasks;
mod proxmox_unprotected;
mod quantity;
mod quote;
pub mod rank;
mod readable;
mod resolve;
mod sweep;
pub mod truenas;
mod truenas_scan;
mod truenas_tasks;

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};

pub use fact::{
    Entity, Fact, FactClass, Rate, Severity, Source, host_of, keep_most_severe, tool_integration,
};
pub use pattern::line_pattern;
pub use quantity::{Quantity, Unit, human_bytes, human_seconds, is_alarm, is_identity, round_sig};
pub use quote::quote_line;
pub use rank::{Focus, Ranked, rank};
pub use readable::readable_line;
pub use resolve::Resolver;
pub use sweep::{ANALYZER_TIME_LIMIT, ONSET_LEAD, Sweep, SweepReport};

use crate::integrations::UpstreamError;

/// What an analyzer may look at: the time now, the incident's window and what the trigger
/// is about.
#[derive(Clone, Debug)]
pub struct Scope {
    pub now: DateTime<Utc>,
    /// Start of the window looked at: before the alert's start (or the question's time)
    /// by a lead-in that grows with the incident's age.
    pub window_start: DateTime<Utc>,
    /// When the incident began (now when unknown), never before the window's start.
    pub started: DateTime<Utc>,
    /// What the trigger is about. An analyzer that describes a few of many entities as
    /// context may prefer those the trigger is about; it never decides which analyzers
    /// run, and no text of it goes into a query.
    pub focus: Option<Arc<Focus>>,
    /// Prometheus' metric names over this window and their declared types, read by the
    /// first analyzer that needs them (`prom::Prom::metric_names`, `metric_types`): the
    /// scope's clones share one read per sweep.
    pub metric_names: prom::MetricNames,
}

/// Shortest and longest window an analyzer looks back over.
const MIN_WINDOW: TimeDelta = TimeDelta::hours(1);
const MAX_WINDOW: TimeDelta = TimeDelta::days(7);

impl Scope {
    /// The scope of an incident that began at `started` (an ask: `None`, the last hour):
    /// from an hour before it began (at least an hour, at most a week back) until now.
    pub fn new(now: DateTime<Utc>, started: Option<DateTime<Utc>>) -> Self {
        let started = started.filter(|s| *s <= now).unwrap_or(now);
        let age = now.signed_duration_since(started);
        let lookback = age
            .checked_add(&MIN_WINDOW)
            .unwrap_or(MAX_WINDOW)
            .clamp(MIN_WINDOW, MAX_WINDOW);
        let window_start = now.checked_sub_signed(lookback).unwrap_or(now);
        Self {
            now,
            window_start,
            started: started.max(window_start),
            focus: None,
            metric_names: prom::MetricNames::default(),
        }
    }

    /// The scope with what the trigger is about.
    pub fn with_focus(mut self, focus: Focus) -> Self {
        self.focus = Some(Arc::new(focus));
        self
    }

    /// Whether the trigger is about `entity` (its labels, host or name); false without a
    /// focus.
    pub fn is_about(&self, entity: &Entity) -> bool {
        self.focus.as_ref().is_some_and(|f| f.is_about(entity))
    }

    /// The window's length.
    pub fn window(&self) -> TimeDelta {
        self.now.signed_duration_since(self.window_start)
    }

    /// The window as a PromQL range (`[3900s]`).
    pub fn promql_range(&self) -> String {
        format!("[{}s]", self.window().num_seconds().max(60))
    }
}

/// Why an analyzer could not run.
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    #[error("{0}")]
    Other(String),
}

/// One deterministic check of one failure class.
#[async_trait]
pub trait Analyzer: Send + Sync {
    /// A stable name (`filesystem_space`), in notes and facts.
    fn name(&self) -> &'static str;
    /// The facts found: only what is worth a person's attention (an empty list when all
    /// is well).
    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError>;
    /// Whether it reads around the incident's start (the log lines of its first minutes):
    /// such an analyzer runs again around the onset of a state the trigger is about when
    /// that began well before the trigger did.
    fn reads_around_start(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn the_window_grows_with_the_incidents_age_within_an_hour_and_a_week() {
        let now = Utc.with_ymd_and_hms(2026, 11, 26, 12, 0, 0).unwrap();
        assert_eq!(Scope::new(now, None).window(), TimeDelta::hours(1));
        let s = Scope::new(now, Some(now - TimeDelta::minutes(10)));
        assert_eq!(s.window(), TimeDelta::minutes(70));
        assert_eq!(s.promql_range(), "[4200s]");
        let old = Scope::new(now, Some(now - TimeDelta::days(30)));
        assert_eq!(old.window(), TimeDelta::days(7));
        let future = Scope::new(now, Some(now + TimeDelta::days(1)));
        assert_eq!(future.window(), TimeDelta::hours(1));
        let ancient = Scope::new(now, Some(DateTime::<Utc>::MIN_UTC));
        assert_eq!(ancient.window(), TimeDelta::days(7));
        assert_eq!(ancient.started, ancient.window_start);
        assert_eq!(s.started, now - TimeDelta::minutes(10));
        assert_eq!(future.started, now);
    }
}
