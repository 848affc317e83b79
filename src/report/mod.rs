//! The weekly reliability report: `Reporter` builds one for a period. Collectors gather the
//! sections concurrently (each one's failure becomes a note), one LLM call writes the
//! executive summary (or a deterministic one), the report is rendered as markdown and
//! HTML with PNG charts, stored, and emailed.
//!
//! - [`period`]: the ISO week a report is about and its time window.
//! - [`collect`]: alerts, alert hygiene (with `history`), SLOs, agent activity, cost, log
//!   errors, recurring incidents (`memory`), backups, changes since the previous report.
//! - [`model`]: the collected data, one struct per section.
//! - [`summary`]: the narrative LLM call and the automatic fallback.
//! - [`narrative`]: JSON answers to that call read into prose and actions.
//! - [`render`]: markdown, plain text, email-safe HTML, charts.
//! - [`email`]: the report email and its Message-ID; in the daemon it is stored in the
//!   notifier's outbox and delivered from there (retries across outages and restarts, at
//!   most once per period); a one-shot `sre-agent report --send` claims its period in the
//!   same ledger, then sends it directly.
//! - [`store`]: stored reports and the ledger of which report holds each period.

pub mod collect;
pub mod email;
pub mod model;
pub mod narrative;
pub mod period;
pub mod render;
pub mod store;
pub mod summary;

use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use crate::agent::Dispatcher;
use crate::alerts::store::AlertStore;
use crate::config::Config;
use crate::integrations::Upstreams;
use crate::llm::LlmClient;
use crate::notify::{Notifier, PeriodHolder, ReportDelivery, ReportLedger};
use crate::report::store::ReportStore;
use crate::store::{Store, StoreError};
use crate::telemetry::Metrics;
use model::{Report, ReportStatus, ReportTrigger};
use period::{PeriodSpec, ReportWindow};

/// A report failure that prevented even storing it.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What to produce.
#[derive(Clone, Copy, Debug)]
pub struct ReportRequest {
    pub trigger: ReportTrigger,
    pub period: PeriodSpec,
    /// "Now": the end of a `last` window (injectable for tests).
    pub now: DateTime<Utc>,
    /// Email it to `report.recipients`.
    pub send: bool,
}

/// Builds, stores and delivers reports. Cheap to clone; runs one report at a time.
#[derive(Clone)]
pub struct Reporter {
    config: Arc<Config>,
    upstreams: Upstreams,
    store: ReportStore,
    metrics: Arc<Metrics>,
    dispatcher: Option<Dispatcher>,
    /// The dispatcher's LLM client, shared for the narrative.
    llm: Option<LlmClient>,
    outbox: Option<Notifier>,
    alert_log: AlertStore,
    running: Arc<tokio::sync::Mutex<()>>,
}

impl Reporter {
    /// A reporter of `config`'s sections, reading the upstreams through the shared
    /// `upstreams` clients.
    pub fn new(
        config: Arc<Config>,
        upstreams: Upstreams,
        store: &Store,
        metrics: Arc<Metrics>,
    ) -> Result<Self, StoreError> {
        let alert_log = AlertStore::open(store)?;
        let store = ReportStore::open(store)?;
        if let Some(at) = store.last_delivered_at()? {
            metrics.last_report_timestamp.set(at.timestamp() as f64);
        }
        Ok(Self {
            config,
            upstreams,
            store,
            metrics,
            dispatcher: None,
            llm: None,
            outbox: None,
            alert_log,
            running: Arc::new(tokio::sync::Mutex::new(())),
        })
    }

    /// Reads the alert log through `alerts`, the daemon's one alert store (`new` opens its
    /// own handle, which suits the CLI and tests).
    pub fn with_alert_store(mut self, alerts: AlertStore) -> Self {
        self.alert_log = alerts;
        self
    }

    /// Reads the week's investigations and the daily LLM budget from `dispatcher`, and
    /// writes the narrative with its LLM client.
    pub fn with_dispatcher(mut self, dispatcher: Dispatcher) -> Self {
        self.llm = dispatcher.llm().cloned();
        self.dispatcher = Some(dispatcher);
        self
    }

    /// Delivers reports through `notifier`'s durable outbox (the daemon), instead of
    /// sending them directly with bounded retries (a one-shot command).
    pub fn with_outbox(mut self, notifier: Option<Notifier>) -> Self {
        self.outbox = notifier.filter(Notifier::can_mail);
        self
    }

    pub fn store(&self) -> &ReportStore {
        &self.store
    }

    pub fn timezone(&self) -> Tz {
        self.config.report.timezone.0
    }

    /// The window `spec` resolves to at `now`.
    pub fn window(&self, spec: PeriodSpec, now: DateTime<Utc>) -> ReportWindow {
        ReportWindow::resolve(
            spec,
            now,
            self.config.report.lookback.get(),
            self.timezone(),
        )
    }

    /// Whether delivering reports is configured (recipients and an SMTP host).
    pub fn can_send(&self) -> bool {
        !self.config.report.recipients.is_empty() && self.config.smtp.host.is_some()
    }

    /// Generates (and with `send`, emails) a report; stores it either way.
    pub async fn run(&self, req: ReportRequest) -> Result<Report, ReportError> {
        let _one_at_a_time = self.running.lock().await;
        let started = Instant::now();
        let window = self.window(req.period, req.now);
        let sources = collect::CollectContext {
            config: self.config.clone(),
            upstreams: self.upstreams.clone(),
            window,
            tz: self.timezone(),
            previous: self.store.previous(window.period)?,
            dispatcher: self.dispatcher.clone(),
            alert_log: Some(self.alert_log.clone()),
        };
        let data = collect::collect_all(&sources, &self.metrics).await;
        let spend = self.dispatcher.as_ref().map(|d| d.spend());
        // A reporter without the dispatcher's client builds one for this report.
        let own;
        let llm = match &self.llm {
            Some(shared) => Ok(shared),
            None => {
                own = LlmClient::new(&self.config.llm, self.metrics.clone());
                match &own {
                    Ok(Some(client)) => Ok(client),
                    Ok(None) => Err(summary::NOT_CONFIGURED.to_string()),
                    Err(e) => Err(e.to_string()),
                }
            }
        };
        let summary = summary::summarise(llm, spend, &data).await;
        let mut report = Report {
            id: uuid::Uuid::now_v7().to_string(),
            trigger: req.trigger,
            window,
            timezone: self.config.report.timezone.clone(),
            created_at: Utc::now(),
            status: ReportStatus::Generated,
            delivery_error: None,
            summary,
            data,
        };
        self.store.save(&report)?;
        if req.send {
            self.deliver(&mut report).await?;
        }
        // A queued report is counted by the outbox when its delivery ends.
        if report.status.counted() {
            self.metrics
                .reports
                .with_label_values(&[req.trigger.label(), report.status.label()])
                .inc();
        }
        self.metrics
            .report_duration
            .observe(started.elapsed().as_secs_f64());
        tracing::info!(
            id = %report.id, period = %window.period, trigger = req.trigger.label(),
            status = report.status.label(), "report done"
        );
        Ok(report)
    }

    async fn deliver(&self, report: &mut Report) -> Result<(), ReportError> {
        if !self.can_send() {
            report.delivery_error =
                Some("not sent: set report.recipients and smtp.host to email reports".into());
            self.store.save(report)?;
            return Ok(());
        }
        let to: Vec<_> = self
            .config
            .report
            .recipients
            .iter()
            .map(|r| r.0.clone())
            .collect();
        let rendered = render::for_email(report);
        let msg = email::message(to, &report.title(), &rendered);
        let message_id = email::message_id(report, &self.config.smtp);
        let period = report.window.period;
        let delivery = ReportDelivery {
            report_id: report.id.clone(),
            period: period.to_string(),
            message_id,
            trigger: report.trigger,
        };
        if let Some(outbox) = &self.outbox {
            match outbox.enqueue_report(delivery, &msg).await? {
                None => report.status = ReportStatus::Queued,
                Some(holder) => self.not_sent(report, &holder)?,
            }
            return Ok(());
        }
        // Without the daemon's outbox (a one-shot `report --send`): the period is claimed
        // and taken for sending in the same ledger first, and durably, so neither a second
        // run nor a later daemon's catch-up or API send emails the period again.
        let held = match self.store.claim(&delivery)? {
            None => self.store.sending(&delivery)?,
            held => held,
        };
        if let Some(holder) = held {
            return self.not_sent(report, &holder);
        }
        self.store.flush().await?;
        let result = email::send(
            &self.config.smtp,
            self.metrics.clone(),
            &msg,
            &delivery.message_id,
        )
        .await;
        match result {
            Ok(()) => {
                self.store.sent(&delivery)?;
                report.status = ReportStatus::Sent;
                self.metrics
                    .last_report_timestamp
                    .set(Utc::now().timestamp() as f64);
            }
            Err(e) => {
                report.delivery_error = Some(e.to_string());
                self.store.failed(&delivery, &e.to_string())?;
                report.status = ReportStatus::Failed;
            }
        }
        self.store.save(report)?;
        self.store.flush().await?;
        Ok(())
    }

    /// Records why `report` was not sent: `holder` has its period.
    fn not_sent(&self, report: &mut Report, holder: &PeriodHolder) -> Result<(), ReportError> {
        let period = report.window.period;
        report.delivery_error = Some(format!(
            "not sent: one report email goes out per period, and {period} already has {holder}"
        ));
        self.store.save(report)?;
        Ok(())
    }
}
