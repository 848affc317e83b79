//! The collectors: each gathers one section's data within `report.collector_timeout`,
//! concurrently with the others, and never fails the report: what it could not get
//! becomes a note naming the service, URL and error.

mod agent;
mod alerts;
mod backups;
mod changes;
mod cost;
mod history;
pub mod hygiene;
mod logs;
mod memory;
mod slos;

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, NaiveDate, Utc};
use chrono_tz::Tz;

use super::model::{Report, ReportData, Section};
use super::period::ReportWindow;
use crate::config::Config;
use crate::integrations::Upstreams;
use crate::telemetry::Metrics;

pub use logs::normalise_line;

/// What every collector reads.
pub struct CollectContext {
    pub config: Arc<Config>,
    /// The shared clients of the configured upstreams.
    pub upstreams: Upstreams,
    pub window: ReportWindow,
    pub tz: Tz,
    /// The most recent stored report of an earlier period, for "changes".
    pub previous: Option<Report>,
    /// The investigations store, when the report runs inside the daemon.
    pub dispatcher: Option<crate::agent::Dispatcher>,
    /// The alerts received over webhooks (for alert hygiene), when there is a store.
    pub alert_log: Option<crate::alerts::store::AlertStore>,
}

impl CollectContext {
    /// The `[..]` range of the window, e.g. `604800s`.
    pub fn range(&self) -> String {
        self.window.promql_range()
    }

    /// The days of the window in the report time zone, oldest first.
    pub fn days(&self) -> Vec<NaiveDate> {
        let first = self.window.start.with_timezone(&self.tz).date_naive();
        let last = (self.window.end - chrono::Duration::seconds(1))
            .with_timezone(&self.tz)
            .date_naive();
        first.iter_days().take_while(|d| *d <= last).collect()
    }

    /// The local day label ("Mon 16") of a unix time.
    pub fn day_of(&self, unix: f64) -> NaiveDate {
        DateTime::<Utc>::from_timestamp(unix as i64, 0)
            .unwrap_or_default()
            .with_timezone(&self.tz)
            .date_naive()
    }
}

/// "Mon 16".
pub fn day_label(d: NaiveDate) -> String {
    d.format("%a %-d").to_string()
}

crate::telemetry::labelled! {
    /// The report's collectors: the `collector` label of `sre_agent_report_collector_*`.
    pub enum Collector {
        Alerts => "alerts",
        Slos => "slos",
        Agent => "agent",
        Cost => "cost",
        Logs => "logs",
        Memory => "memory",
        Hygiene => "hygiene",
        Backups => "backups",
        Changes => "changes",
    }
}

crate::telemetry::labelled! {
    /// How one collector run ended: the `status` label of
    /// `sre_agent_report_collector_runs_total`.
    pub enum CollectorRun {
        Ok => "ok",
        /// Finished with notes of what it could not collect.
        Error => "error",
        Timeout => "timeout",
    }
}

/// Runs every collector concurrently, each under its own timeout.
pub async fn collect_all(ctx: &CollectContext, metrics: &Metrics) -> ReportData {
    let timeout = ctx.config.report.collector_timeout.get();
    let history = std::sync::OnceLock::new();
    let (alerts, slos, agent, cost, logs, memory) = tokio::join!(
        timed(
            Collector::Alerts,
            timeout,
            metrics,
            alerts::collect(ctx, &history)
        ),
        timed(Collector::Slos, timeout, metrics, slos::collect(ctx)),
        timed(Collector::Agent, timeout, metrics, agent::collect(ctx)),
        timed(Collector::Cost, timeout, metrics, cost::collect(ctx)),
        timed(Collector::Logs, timeout, metrics, logs::collect(ctx)),
        timed(Collector::Memory, timeout, metrics, memory::collect(ctx)),
    );
    let mut data = ReportData {
        alerts,
        slos,
        agent,
        cost,
        logs,
        memory,
        changes: Section::default(),
        hygiene: Section::default(),
        backups: None,
    };
    // Alert hygiene reads the alerts collector's history (and the rules, received alerts).
    data.hygiene = timed(
        Collector::Hygiene,
        timeout,
        metrics,
        hygiene::collect(ctx, history.into_inner()),
    )
    .await;
    if backups::configured(&ctx.config) {
        data.backups =
            Some(timed(Collector::Backups, timeout, metrics, backups::collect(ctx)).await);
    }
    // Changes compares the sections just collected with the previous report: no I/O.
    data.changes = timed(Collector::Changes, timeout, metrics, async {
        changes::collect(ctx.previous.as_ref(), &data)
    })
    .await;
    data
}

async fn timed<T: Default>(
    collector: Collector,
    timeout: Duration,
    metrics: &Metrics,
    fut: impl Future<Output = Section<T>>,
) -> Section<T> {
    let name = collector.label();
    let started = Instant::now();
    let (section, run) = match tokio::time::timeout(timeout, fut).await {
        Ok(s) if s.notes.is_empty() => (s, CollectorRun::Ok),
        Ok(s) => (s, CollectorRun::Error),
        Err(_) => (
            Section::failed(format!("{name} collector timed out after {timeout:?}")),
            CollectorRun::Timeout,
        ),
    };
    let status = run.label();
    metrics
        .report_collector_duration
        .with_label_values(&[name])
        .observe(started.elapsed().as_secs_f64());
    metrics
        .report_collector_runs
        .with_label_values(&[name, status])
        .inc();
    if run != CollectorRun::Ok {
        tracing::warn!(collector = name, status, notes = ?section.notes, "report collector incomplete");
    }
    section
}

/// The note for an unconfigured source.
pub(crate) fn not_configured(service: &str, key: &str) -> String {
    format!("{service} is not configured (set {key})")
}
