//! The durable outbox: every delivery (a finding's email or webhook, the weekly report, a
//! Grafana annotation) is rendered once and stored in sled before any attempt; a
//! background worker (`worker.rs`) sends due entries and reschedules failures with capped
//! exponential backoff, so deliveries survive restarts and SMTP, webhook or Grafana
//! outages.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

use super::email::Mailer;
use super::grafana::AnnotationRequest;
use super::report::{ReportLedger, StoredReport};
use super::webhook::WebhookRequest;
use super::{Channel, Delivered, NotifyError};
use crate::agent::store::InvestigationStore;
use crate::alerts::store::AlertStore;
use crate::config::{Config, EmailAddress};
use crate::integrations::Upstreams;
use crate::integrations::grafana::GrafanaClient;
use crate::store::{Store, StoreError, Tree};
use crate::telemetry::Metrics;

/// A stored email.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredEmail {
    pub to: Vec<EmailAddress>,
    pub subject: String,
    pub text: String,
    pub html: String,
}

/// What one outbox entry delivers; the tag is its `Channel`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "channel", rename_all = "lowercase")]
pub enum Payload {
    Email(StoredEmail),
    Webhook(WebhookRequest),
    Report(StoredReport),
    Grafana(AnnotationRequest),
}

impl Payload {
    /// The channel's label.
    pub fn channel(&self) -> &'static str {
        match self {
            Self::Email(_) => Channel::Email,
            Self::Webhook(_) => Channel::Webhook,
            Self::Report(_) => Channel::Report,
            Self::Grafana(_) => Channel::Grafana,
        }
        .label()
    }
}

/// One pending delivery.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OutboxEntry {
    /// The investigation (or, for a report, the report) it is about.
    #[serde(rename = "investigation_id")]
    pub about: String,
    pub payload: Payload,
    pub attempts: u32,
    pub created_at: DateTime<Utc>,
    pub next_attempt_at: DateTime<Utc>,
    pub last_error: Option<String>,
    /// Set (and flushed) just before an at-most-once attempt starts; found set by the
    /// worker, it means the process stopped during that attempt.
    #[serde(default)]
    pub in_flight: Option<DateTime<Utc>>,
}

impl OutboxEntry {
    pub fn new(about: &str, payload: Payload) -> Self {
        let now = Utc::now();
        Self {
            about: about.to_string(),
            payload,
            attempts: 0,
            created_at: now,
            next_attempt_at: now,
            last_error: None,
            in_flight: None,
        }
    }
}

/// Sends notifications for final investigations, weekly reports and Grafana annotations.
/// Cheap to clone.
#[derive(Clone)]
pub struct Notifier {
    pub(super) inner: Arc<Inner>,
}

pub(super) struct Inner {
    pub config: Arc<Config>,
    pub outbox: Tree<OutboxEntry>,
    pub notified: Tree<DateTime<Utc>>,
    pub store: Store,
    pub investigations: InvestigationStore,
    pub alerts: AlertStore,
    pub reports: Option<Arc<dyn ReportLedger>>,
    /// Set when `smtp.host` is and someone receives mail (findings or reports).
    pub mailer: Option<Mailer>,
    /// Set with `grafana.annotate`: the shared Grafana client.
    pub grafana: Option<Arc<GrafanaClient>>,
    pub http: reqwest::Client,
    pub metrics: Arc<Metrics>,
    pub wake: Notify,
    seq: AtomicU64,
}

impl Notifier {
    /// None when nothing is delivered: no finding channel (`notify.email_to` needs
    /// `smtp.host`), no report recipients and no `grafana.annotate`. `alerts` is the one
    /// alert store intake writes (its cache is shared); `reports` records report
    /// deliveries; annotations go through the shared Grafana client of `upstreams`.
    pub fn new(
        config: Arc<Config>,
        upstreams: &Upstreams,
        store: &Store,
        alerts: AlertStore,
        reports: Option<Arc<dyn ReportLedger>>,
        metrics: Arc<Metrics>,
    ) -> Result<Option<Self>, NotifyError> {
        let findings_mail = !config.notify.email_to.is_empty();
        let report_mail = !config.report.recipients.is_empty();
        let mailer = match (&config.smtp.host, findings_mail || report_mail) {
            (Some(_), true) => Some(Mailer::new(&config.smtp)?),
            (None, true) => {
                if findings_mail {
                    tracing::warn!(
                        "notify.email_to is set but smtp.host is not: findings are not emailed"
                    );
                }
                None
            }
            _ => None,
        };
        let grafana = upstreams
            .grafana
            .clone()
            .filter(|_| config.grafana.annotate);
        if mailer.is_none() && config.notify.webhooks.is_empty() && grafana.is_none() {
            return Ok(None);
        }
        crate::install_crypto_provider();
        // A redirect would take the rendered finding somewhere the config never named.
        let http = reqwest::Client::builder()
            .user_agent(concat!("sre-agent/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(NotifyError::HttpClient)?;
        Ok(Some(Self {
            inner: Arc::new(Inner {
                outbox: store.tree("outbox")?,
                notified: store.tree("notified")?,
                investigations: InvestigationStore::open(store)?,
                alerts,
                reports,
                store: store.clone(),
                config,
                mailer,
                grafana,
                http,
                metrics,
                wake: Notify::new(),
                seq: AtomicU64::new(0),
            }),
        }))
    }

    /// Pending entries (for tests and status).
    pub fn pending(&self) -> Result<Vec<OutboxEntry>, StoreError> {
        self.inner
            .outbox
            .iter()
            .map(|r| r.map(|(_, e)| e))
            .collect()
    }

    /// Stores `entries` (not flushed: the caller flushes once for all of them) and wakes
    /// the worker after the caller's flush.
    pub(super) fn store_entries(&self, entries: &[OutboxEntry]) -> Result<(), StoreError> {
        for entry in entries {
            let nanos = entry.created_at.timestamp_nanos_opt().unwrap_or(0).max(0);
            let seq = self.inner.seq.fetch_add(1, Ordering::Relaxed) % 1_000_000;
            self.inner
                .outbox
                .insert(format!("{nanos:020}-{seq:06}"), entry)?;
        }
        Ok(())
    }

    /// Wakes the worker (after new entries were flushed).
    pub(super) fn wake(&self) {
        self.inner.wake.notify_one();
    }

    /// Forgets which investigations created before `cutoff` were notified (never those of
    /// the last two days, which `run` re-checks at start).
    pub fn sweep(&self, cutoff: DateTime<Utc>) -> Result<usize, StoreError> {
        let cutoff = cutoff.min(Utc::now() - TimeDelta::days(2));
        let old: Vec<Vec<u8>> = self
            .inner
            .notified
            .iter()
            .filter_map(Result::ok)
            .filter(|(_, at)| *at < cutoff)
            .map(|(k, _)| k)
            .collect();
        for k in &old {
            self.inner.notified.remove(k)?;
        }
        Ok(old.len())
    }

    /// Counts one delivery outcome in `sre_agent_notifications_total`.
    pub(super) fn count(&self, channel: &str, status: Delivered) {
        self.inner
            .metrics
            .notifications
            .with_label_values(&[channel, status.label()])
            .inc();
    }

    /// `sre_agent_reports_total{trigger,status}` once a report's delivery has ended.
    pub(super) fn count_report(
        &self,
        d: &super::report::ReportDelivery,
        status: super::report::ReportStatus,
    ) {
        self.inner
            .metrics
            .reports
            .with_label_values(&[d.trigger.label(), status.label()])
            .inc();
    }

    /// The wait before attempt `attempts + 1`: `retry_backoff` doubled per attempt, capped.
    pub(super) fn backoff(&self, attempts: u32) -> Duration {
        let n = &self.inner.config.notify;
        let factor = 2u32.saturating_pow(attempts.saturating_sub(1).min(20));
        n.retry_backoff
            .get()
            .saturating_mul(factor)
            .min(n.retry_max_backoff.get())
    }
}
