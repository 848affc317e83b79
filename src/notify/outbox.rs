//! The durable outbox: every final investigation becomes one entry per channel (email,
//! each webhook), rendered once and stored in sled before any attempt; a background
//! worker sends due entries and reschedules failures with capped exponential backoff, so
//! notifications survive restarts and SMTP or webhook outages.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, broadcast};
use tokio_util::sync::CancellationToken;

use super::NotifyError;
use super::email::{EmailMessage, Mailer};
use super::templates::Subject;
use super::webhook::{self, WebhookRequest};
use crate::agent::{Dispatcher, Investigation, InvestigationStatus};
use crate::alerts::store::AlertStore;
use crate::config::Config;
use crate::store::{Store, StoreError, Tree};
use crate::telemetry::Metrics;

/// Time limit of one webhook POST.
const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(15);

/// A stored email (recipients as text, so it round-trips through JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredEmail {
    pub to: Vec<String>,
    pub subject: String,
    pub text: String,
    pub html: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "channel", rename_all = "lowercase")]
pub enum Payload {
    Email(StoredEmail),
    Webhook(WebhookRequest),
}

impl Payload {
    fn channel(&self) -> &'static str {
        match self {
            Self::Email(_) => "email",
            Self::Webhook(_) => "webhook",
        }
    }
}

/// One pending notification.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OutboxEntry {
    pub investigation_id: String,
    pub payload: Payload,
    pub attempts: u32,
    pub created_at: DateTime<Utc>,
    pub next_attempt_at: DateTime<Utc>,
    pub last_error: Option<String>,
}

/// Sends notifications for final investigations. Cheap to clone.
#[derive(Clone)]
pub struct Notifier {
    inner: Arc<Inner>,
}

struct Inner {
    config: Arc<Config>,
    outbox: Tree<OutboxEntry>,
    notified: Tree<DateTime<Utc>>,
    store: Store,
    alerts: AlertStore,
    mailer: Option<Mailer>,
    http: reqwest::Client,
    metrics: Arc<Metrics>,
    wake: Notify,
    seq: AtomicU64,
}

impl Notifier {
    /// None when no channel is configured (`notify.email_to` needs `smtp.host`).
    pub fn new(
        config: Arc<Config>,
        store: &Store,
        metrics: Arc<Metrics>,
    ) -> Result<Option<Self>, NotifyError> {
        let mailer = match (&config.smtp.host, config.notify.email_to.is_empty()) {
            (Some(_), false) => Some(Mailer::new(&config.smtp)?),
            (None, false) => {
                tracing::warn!(
                    "notify.email_to is set but smtp.host is not: findings are not emailed"
                );
                None
            }
            _ => None,
        };
        if mailer.is_none() && config.notify.webhooks.is_empty() {
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
                alerts: AlertStore::open(store)?,
                store: store.clone(),
                config,
                mailer,
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

    /// Enqueues the notifications for `inv` once (idempotent per investigation id).
    pub async fn enqueue(&self, inv: &Investigation) -> Result<usize, StoreError> {
        let inner = &self.inner;
        if inv.status == InvestigationStatus::Cancelled || !inv.status.is_final() {
            return Ok(0);
        }
        if inner.notified.contains(&inv.id)? {
            return Ok(0);
        }
        let group = match &inv.group_key {
            Some(k) => inner.alerts.group(k)?,
            None => None,
        };
        let public_url = inner
            .config
            .server
            .public_url
            .as_ref()
            .map(|u| u.0.as_str());
        let subject = Subject {
            inv,
            alert: group.as_ref().map(|g| &g.last_alert),
            public_url,
        };
        let mut payloads = Vec::new();
        if inner.mailer.is_some() {
            payloads.push(Payload::Email(StoredEmail {
                to: inner
                    .config
                    .notify
                    .email_to
                    .iter()
                    .map(|e| e.0.to_string())
                    .collect(),
                subject: subject.title(),
                text: subject.markdown(),
                html: subject.html(),
            }));
        }
        for hook in &inner.config.notify.webhooks {
            payloads.push(Payload::Webhook(webhook::render(
                hook.url.expose().as_str(),
                hook.format,
                &subject,
            )));
        }
        let now = Utc::now();
        for payload in &payloads {
            let nanos = now.timestamp_nanos_opt().unwrap_or(0).max(0);
            let seq = inner.seq.fetch_add(1, Ordering::Relaxed) % 1_000_000;
            inner.outbox.insert(
                format!("{nanos:020}-{seq:06}"),
                &OutboxEntry {
                    investigation_id: inv.id.clone(),
                    payload: payload.clone(),
                    attempts: 0,
                    created_at: now,
                    next_attempt_at: now,
                    last_error: None,
                },
            )?;
        }
        inner.notified.insert(&inv.id, &now)?;
        inner.store.flush().await?;
        inner.wake.notify_one();
        Ok(payloads.len())
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

    /// Runs until `token`: catches up on investigations that ended in the last day without
    /// a notification, enqueues each new final one from `events`, and sends due entries.
    pub async fn run(
        self,
        dispatcher: Dispatcher,
        mut events: broadcast::Receiver<Investigation>,
        token: CancellationToken,
    ) {
        let since = Utc::now() - TimeDelta::days(1);
        match dispatcher.between(since, DateTime::<Utc>::MAX_UTC) {
            Ok(invs) => {
                for inv in invs.iter().filter(|i| i.status.is_final()) {
                    if let Err(e) = self.enqueue(inv).await {
                        tracing::error!(error = %e, "cannot enqueue a notification");
                    }
                }
            }
            Err(e) => tracing::error!(error = %e, "cannot list investigations for notifications"),
        }
        let listener = {
            let this = self.clone();
            let token = token.clone();
            tokio::spawn(async move {
                loop {
                    let inv = tokio::select! {
                        _ = token.cancelled() => break,
                        ev = events.recv() => match ev {
                            Ok(inv) => inv,
                            Err(broadcast::error::RecvError::Lagged(n)) => {
                                tracing::warn!(missed = n, "notification events lagged; they are caught up at next start");
                                continue;
                            }
                            Err(broadcast::error::RecvError::Closed) => break,
                        },
                    };
                    if let Err(e) = this.enqueue(&inv).await {
                        tracing::error!(error = %e, investigation = %inv.id, "cannot enqueue a notification");
                    }
                }
            })
        };
        loop {
            let wait = match self.send_due().await {
                Ok(wait) => wait,
                Err(e) => {
                    tracing::error!(error = %e, "notification outbox failed");
                    Duration::from_secs(5)
                }
            };
            tokio::select! {
                _ = token.cancelled() => break,
                _ = self.inner.wake.notified() => {}
                _ = tokio::time::sleep(wait) => {}
            }
        }
        listener.abort();
    }

    /// Attempts every due entry once; returns how long until the next one is due.
    async fn send_due(&self) -> Result<Duration, StoreError> {
        let inner = &self.inner;
        let now = Utc::now();
        let mut next = Duration::from_secs(60);
        let entries: Vec<_> = inner.outbox.iter().collect::<Result<_, _>>()?;
        for (key, entry) in entries {
            if entry.next_attempt_at > now {
                next = next.min((entry.next_attempt_at - now).to_std().unwrap_or_default());
                continue;
            }
            let channel = entry.payload.channel();
            let result = self.attempt(&entry.payload).await;
            let count = |status: &str| {
                inner
                    .metrics
                    .notifications
                    .with_label_values(&[channel, status])
                    .inc()
            };
            match result {
                Ok(()) => {
                    count("sent");
                    inner.outbox.remove(&key)?;
                    tracing::info!(channel, investigation = %entry.investigation_id, "notification sent");
                }
                Err((retryable, e)) => {
                    let attempts = entry.attempts + 1;
                    if !retryable || attempts >= inner.config.notify.max_attempts.max(1) {
                        count("failed");
                        inner.outbox.remove(&key)?;
                        tracing::error!(channel, attempts, error = %e, investigation = %entry.investigation_id, "notification failed; giving up");
                        continue;
                    }
                    count("retry");
                    let backoff = self.backoff(attempts);
                    tracing::warn!(channel, attempts, ?backoff, error = %e, "notification failed; retrying");
                    next = next.min(backoff);
                    inner.outbox.insert(
                        &key,
                        &OutboxEntry {
                            attempts,
                            next_attempt_at: Utc::now()
                                + TimeDelta::from_std(backoff).unwrap_or_default(),
                            last_error: Some(e.to_string()),
                            ..entry
                        },
                    )?;
                }
            }
            inner.store.flush().await?;
        }
        Ok(next)
    }

    fn backoff(&self, attempts: u32) -> Duration {
        let n = &self.inner.config.notify;
        let factor = 2u32.saturating_pow(attempts.saturating_sub(1).min(20));
        n.retry_backoff
            .get()
            .saturating_mul(factor)
            .min(n.retry_max_backoff.get())
    }

    async fn attempt(&self, payload: &Payload) -> Result<(), (bool, super::NotifyError)> {
        match payload {
            Payload::Email(mail) => {
                let mailer = self.inner.mailer.as_ref().ok_or_else(|| {
                    (
                        false,
                        super::NotifyError::Config("smtp.host is no longer set".into()),
                    )
                })?;
                let to = mail.to.iter().filter_map(|t| t.parse().ok()).collect();
                let msg = EmailMessage {
                    to,
                    subject: mail.subject.clone(),
                    text: mail.text.clone(),
                    html: Some(mail.html.clone()),
                    inline_images: Vec::new(),
                };
                mailer.send(&msg).await.map_err(|e| (true, e))
            }
            Payload::Webhook(req) => webhook::send(&self.inner.http, req, WEBHOOK_TIMEOUT)
                .await
                .map_err(|(status, e)| (webhook::is_retryable(status), e)),
        }
    }
}
