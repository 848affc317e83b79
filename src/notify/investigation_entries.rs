//! From a final investigation to its outbox entries. The source of truth is the
//! investigation store's finished index (written with the final status): the notifier
//! drains it at start and whenever the dispatcher says it grew (`Dispatcher::finished`, a
//! wake without a payload), so a notifier that was busy or down skips nothing. `notified`
//! makes it idempotent.

use std::time::Duration;

use chrono::Utc;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::outbox::{Notifier, OutboxEntry, Payload, StoredEmail};
use super::templates::Subject;
use super::{grafana, webhook};
use crate::agent::{Investigation, InvestigationStatus};
use crate::store::StoreError;
use crate::telemetry::Task;
use crate::telemetry::supervise::contained;

impl Notifier {
    /// Enqueues the notifications for `inv` once (idempotent per investigation id);
    /// returns how many entries were stored.
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
        if inner.mailer.is_some() && !inner.config.notify.email_to.is_empty() {
            payloads.push(Payload::Email(StoredEmail {
                to: inner.config.notify.email_to.clone(),
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
        if inner.grafana.is_some()
            && let Some(req) = grafana::render(&subject)
        {
            payloads.push(Payload::Grafana(req));
        }
        let entries: Vec<_> = payloads
            .into_iter()
            .map(|p| OutboxEntry::new(&inv.id, p))
            .collect();
        self.store_entries(&entries)?;
        inner.notified.insert(&inv.id, &Utc::now())?;
        inner.store.flush().await?;
        self.wake();
        Ok(entries.len())
    }

    /// Enqueues every investigation in the finished index, then takes it out of the
    /// index; returns how many were enqueued. One still running (its final status not
    /// stored yet) stays for the next pass.
    pub async fn drain_finished(&self) -> Result<usize, StoreError> {
        let store = &self.inner.investigations;
        let mut enqueued = 0;
        for id in store.finished_ids()? {
            match store.get(&id)? {
                Some(inv) if !inv.status.is_final() => continue,
                Some(inv) if self.enqueue(&inv).await? > 0 => enqueued += 1,
                _ => {}
            }
            store.take_finished(&id)?;
        }
        Ok(enqueued)
    }

    /// Runs until `token`: drains the finished index at start and each time `finished`
    /// changes, and sends due entries.
    pub async fn run(self, mut finished: watch::Receiver<()>, token: CancellationToken) {
        let listener = {
            let this = self.clone();
            let token = token.clone();
            tokio::spawn(async move {
                loop {
                    // A pass that panics is retried like one that failed.
                    let drained =
                        contained(Task::Notifier, &this.inner.metrics, this.drain_finished());
                    let wait = match drained.await {
                        Some(Ok(_)) => None,
                        Some(Err(e)) => {
                            tracing::error!(error = %e, "cannot enqueue notifications of finished investigations");
                            Some(Duration::from_secs(5))
                        }
                        None => Some(Duration::from_secs(5)),
                    };
                    tokio::select! {
                        _ = token.cancelled() => break,
                        _ = tokio::time::sleep(wait.unwrap_or(Duration::from_secs(3600))), if wait.is_some() => {}
                        changed = finished.changed() => if changed.is_err() {
                            // The dispatcher is gone: nothing more finishes.
                            token.cancelled().await;
                            break;
                        },
                    }
                }
            })
        };
        loop {
            let wait = match contained(Task::Notifier, &self.inner.metrics, self.send_due()).await {
                Some(Ok(wait)) => wait,
                Some(Err(e)) => {
                    tracing::error!(error = %e, "notification outbox failed");
                    Duration::from_secs(5)
                }
                None => Duration::from_secs(5),
            };
            tokio::select! {
                _ = token.cancelled() => break,
                _ = self.inner.wake.notified() => {}
                _ = tokio::time::sleep(wait) => {}
            }
        }
        listener.abort();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use chrono::TimeDelta;

    use super::*;
    use crate::agent::store::InvestigationStore;
    use crate::agent::{InvestigationRequest, Trigger};
    use crate::alerts::store::AlertStore;
    use crate::config::{Config, NotifyWebhook, WebhookFormat};
    use crate::store::Store;
    use crate::telemetry::Metrics;

    fn finished(store: &InvestigationStore, created_days_ago: i64) -> Investigation {
        let mut inv = Investigation::new(
            InvestigationRequest {
                trigger: Trigger::Ask,
                title: "disk".into(),
                prompt: "why".into(),
                context: None,
                group_key: None,
            },
            "m",
        );
        inv.created_at = Utc::now() - TimeDelta::days(created_days_ago);
        store.put(&inv).unwrap();
        store
            .update(&inv.id, |i| {
                i.status = InvestigationStatus::Inconclusive;
                i.finished_at = Some(Utc::now());
            })
            .unwrap()
            .unwrap()
    }

    /// Investigations queued days ago that finish in a burst, waking the notifier fewer times than they are: every one is still enqueued, once.
    #[tokio::test]
    async fn a_lagging_notifier_enqueues_every_finished_investigation_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let invs = InvestigationStore::open(&store).unwrap();
        let mut config = Config::default();
        // Nothing listens there: entries stay in the outbox, retrying.
        config.notify.webhooks = vec![NotifyWebhook {
            url: "http://127.0.0.1:9/hook".parse().unwrap(),
            format: WebhookFormat::Json,
        }];
        config.notify.retry_backoff = crate::config::HumanDuration::secs(600);
        let (tx, rx) = watch::channel(());
        let mut ids = Vec::new();
        for _ in 0..12 {
            let inv = finished(&invs, 3);
            ids.push(inv.id.clone());
            tx.send_replace(());
        }
        let upstreams = crate::integrations::Upstreams::from_config(&config).unwrap();
        let notifier = Notifier::new(
            Arc::new(config),
            &upstreams,
            &store,
            AlertStore::open(&store).unwrap(),
            None,
            Arc::new(Metrics::new("m")),
        )
        .unwrap()
        .unwrap();
        let token = CancellationToken::new();
        let running = tokio::spawn(notifier.clone().run(rx, token.clone()));
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let about = || {
            let mut a: Vec<String> = notifier
                .pending()
                .unwrap()
                .into_iter()
                .map(|e| e.about)
                .collect();
            a.sort();
            a
        };
        while about().len() < ids.len() && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // A later wake (another finished event) enqueues nothing twice.
        let late = finished(&invs, 0);
        ids.push(late.id.clone());
        tx.send_replace(());
        while about().len() < ids.len() && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        ids.sort();
        assert_eq!(about(), ids, "one entry per finished investigation");
        assert!(
            invs.finished_ids().unwrap().is_empty(),
            "the index is drained"
        );
        token.cancel();
        running.await.unwrap();
    }
}
