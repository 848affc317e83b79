//! The dispatcher: a durable queue in sled and a pool of `alerts.concurrency` workers.
//! `submit` stores the investigation `queued` and flushes before returning; at start,
//! queued and interrupted (running) ones are picked up again, deduplicated by id, so a
//! crash neither loses nor doubles work. Final investigations are broadcast to subscribers.

use std::collections::HashSet;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::evidence::EvidencePlanner;
use super::runner::Runner;
use super::{Event, Investigation, InvestigationRequest, InvestigationStatus};
use crate::agent::store::{InvestigationStore, Page};
use crate::config::Config;
use crate::llm::LlmClient;
use crate::store::{Store, StoreError};
use crate::telemetry::Metrics;
use crate::tools::ToolRegistry;

/// Queues and runs investigations. Cheap to clone.
#[derive(Clone)]
pub struct Dispatcher {
    inner: Arc<Inner>,
}

struct Inner {
    store: InvestigationStore,
    runner: Runner,
    metrics: Arc<Metrics>,
    model: String,
    concurrency: usize,
    tx: mpsc::UnboundedSender<String>,
    rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<String>>,
    /// Ids sent to the workers and not done yet: the in-memory dedupe.
    pending: Mutex<HashSet<String>>,
    running: AtomicI64,
    finished: broadcast::Sender<Investigation>,
}

/// The tools the agent may call, as configured (see `tools::catalog`).
pub fn build_tools(
    config: &Config,
    metrics: Arc<Metrics>,
) -> Result<ToolRegistry, crate::tools::CatalogError> {
    crate::tools::catalog::build_registry(config, metrics)
}

/// A dispatcher that could not be built.
#[derive(Debug, thiserror::Error)]
pub enum DispatcherError {
    #[error(transparent)]
    Llm(#[from] crate::llm::LlmError),
    #[error("building the tools: {0}")]
    Tools(#[from] crate::tools::CatalogError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("building the evidence clients: {0}")]
    Evidence(#[from] crate::integrations::UpstreamError),
}

impl Dispatcher {
    /// A dispatcher over `store` with the LLM and tools of `config`; workers start with
    /// [`Dispatcher::start`].
    pub fn new(
        config: &Config,
        store: &Store,
        metrics: Arc<Metrics>,
    ) -> Result<Self, DispatcherError> {
        let llm = LlmClient::new(&config.llm, metrics.clone())?;
        let tools = build_tools(config, metrics.clone())?;
        let evidence = EvidencePlanner::new(config)?;
        Ok(Self::assemble(
            config, store, metrics, llm, tools, evidence,
        )?)
    }

    /// A dispatcher with an explicit LLM client and tool registry (no alert-first evidence).
    pub fn with_parts(
        config: &Config,
        store: &Store,
        metrics: Arc<Metrics>,
        llm: Option<LlmClient>,
        tools: ToolRegistry,
    ) -> Result<Self, StoreError> {
        Self::assemble(
            config,
            store,
            metrics,
            llm,
            tools,
            EvidencePlanner::default(),
        )
    }

    fn assemble(
        config: &Config,
        store: &Store,
        metrics: Arc<Metrics>,
        llm: Option<LlmClient>,
        tools: ToolRegistry,
        evidence: EvidencePlanner,
    ) -> Result<Self, StoreError> {
        let store = InvestigationStore::open(store)?;
        let runner = Runner::new(&config.llm, llm, tools, store.clone()).with_evidence(evidence);
        let (tx, rx) = mpsc::unbounded_channel();
        let (finished, _) = broadcast::channel(256);
        let d = Self {
            inner: Arc::new(Inner {
                store,
                runner,
                metrics,
                model: config.llm.model.clone(),
                concurrency: config.alerts.concurrency.max(1),
                tx,
                rx: tokio::sync::Mutex::new(rx),
                pending: Mutex::new(HashSet::new()),
                running: AtomicI64::new(0),
                finished,
            }),
        };
        d.update_queue_depth();
        Ok(d)
    }

    /// Requeues stored work, then runs the workers until `token`.
    pub fn start(&self, token: CancellationToken, tracker: &TaskTracker) -> Result<(), StoreError> {
        let ids = self.inner.store.queued_ids()?;
        if !ids.is_empty() {
            tracing::info!(
                count = ids.len(),
                "resuming queued and interrupted investigations"
            );
        }
        for id in ids {
            self.send(id);
        }
        for _ in 0..self.inner.concurrency {
            tracker.spawn(self.clone().worker(token.clone()));
        }
        Ok(())
    }

    /// Stores `req` as a `queued` investigation (flushed) and hands it to the workers.
    pub async fn submit(&self, req: InvestigationRequest) -> Result<Investigation, StoreError> {
        let inv = Investigation::new(req, &self.inner.model);
        self.inner.store.put(&inv)?;
        self.inner.store.enqueue(&inv.id)?;
        self.inner.store.flush().await?;
        self.update_queue_depth();
        self.send(inv.id.clone());
        Ok(inv)
    }

    /// Stores `req` as a `queued` follow-up of `parent_id` (flushed) and hands it to the
    /// workers; the same budgets apply as to any investigation.
    pub async fn submit_follow_up(
        &self,
        parent_id: &str,
        req: InvestigationRequest,
    ) -> Result<Investigation, StoreError> {
        let mut inv = Investigation::new(req, &self.inner.model);
        inv.parent_id = Some(parent_id.to_string());
        self.inner.store.put(&inv)?;
        self.inner.store.enqueue(&inv.id)?;
        self.inner.store.flush().await?;
        self.update_queue_depth();
        self.send(inv.id.clone());
        Ok(inv)
    }

    /// The follow-ups of `parent_id`, oldest first.
    pub fn follow_ups(&self, parent_id: &str) -> Result<Vec<Investigation>, StoreError> {
        self.inner.store.follow_ups(parent_id)
    }

    /// Cancels `id` if it is still queued; true when it was.
    pub async fn cancel_queued(&self, id: &str, note: &str) -> Result<bool, StoreError> {
        let mut cancelled = false;
        let inv = self.inner.store.update(id, |inv| {
            cancelled = inv.status == InvestigationStatus::Queued;
            if cancelled {
                inv.status = InvestigationStatus::Cancelled;
                inv.finished_at = Some(Utc::now());
                inv.notes.push(note.to_string());
            }
        })?;
        if let (true, Some(inv)) = (cancelled, inv) {
            self.inner.store.dequeue(id)?;
            self.inner.store.flush().await?;
            self.update_queue_depth();
            self.count_final(&inv);
            let _ = self.inner.finished.send(inv);
        }
        Ok(cancelled)
    }

    pub fn add_note(&self, id: &str, note: &str) -> Result<(), StoreError> {
        self.inner
            .store
            .update(id, |inv| inv.notes.push(note.to_string()))
            .map(|_| ())
    }

    pub fn get(&self, id: &str) -> Result<Option<Investigation>, StoreError> {
        self.inner.store.get(id)
    }

    /// The timeline of `id`.
    pub fn events(&self, id: &str) -> Result<Vec<Event>, StoreError> {
        self.inner.store.events(id)
    }

    /// Newest first, paginated by id cursor.
    pub fn list(
        &self,
        status: Option<InvestigationStatus>,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<Page, StoreError> {
        self.inner.store.list(status, limit, cursor)
    }

    /// Deletes `id` with its events (a queued one will not run); false when absent.
    pub async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        let existed = self.inner.store.delete(id)?;
        self.inner.store.flush().await?;
        self.update_queue_depth();
        Ok(existed)
    }

    /// Every investigation that reached a final status from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Investigation> {
        self.inner.finished.subscribe()
    }

    /// How many investigations were created since `since` (cancelled ones excluded) and
    /// their total cost, for the daily budget.
    pub fn usage_since(&self, since: DateTime<Utc>) -> Result<(u32, f64), StoreError> {
        let all = self.inner.store.between(since, DateTime::<Utc>::MAX_UTC)?;
        Ok(all
            .iter()
            .filter(|i| i.status != InvestigationStatus::Cancelled)
            .fold((0, 0.0), |(n, c), i| (n + 1, c + i.cost_usd)))
    }

    /// Investigations created in `[from, to)`, oldest first.
    pub fn between(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<Investigation>, StoreError> {
        self.inner.store.between(from, to)
    }

    fn send(&self, id: String) {
        let fresh = self
            .inner
            .pending
            .lock()
            .map(|mut p| p.insert(id.clone()))
            .unwrap_or(false);
        if fresh {
            let _ = self.inner.tx.send(id);
        }
    }

    fn update_queue_depth(&self) {
        let queued =
            self.inner.store.queue_len() as i64 - self.inner.running.load(Ordering::Relaxed);
        self.inner.metrics.queue_depth.set(queued.max(0));
    }

    async fn worker(self, token: CancellationToken) {
        loop {
            let next = tokio::select! {
                biased;
                _ = token.cancelled() => return,
                id = async { self.inner.rx.lock().await.recv().await } => id,
            };
            let Some(id) = next else { return };
            if let Err(e) = self.process(&id).await {
                tracing::error!(%id, error = %e, "investigation could not be stored; it stays queued");
            }
            if let Ok(mut p) = self.inner.pending.lock() {
                p.remove(&id);
            }
        }
    }

    /// Runs one queued (or interrupted) investigation to a final status.
    async fn process(&self, id: &str) -> Result<(), StoreError> {
        let store = &self.inner.store;
        let mut claimed = false;
        let inv = store.update(id, |inv| {
            claimed = !inv.status.is_final();
            if claimed {
                inv.status = InvestigationStatus::Running;
                inv.started_at = Some(Utc::now());
                inv.attempts += 1;
            }
        })?;
        let Some(inv) = inv.filter(|_| claimed) else {
            store.dequeue(id)?;
            self.update_queue_depth();
            return Ok(());
        };
        self.inner.running.fetch_add(1, Ordering::Relaxed);
        self.update_queue_depth();
        tracing::info!(%id, trigger = inv.trigger.as_str(), title = %inv.title, "investigation started");
        let done = self.inner.runner.run(inv).await;
        self.inner.running.fetch_sub(1, Ordering::Relaxed);
        let mut done = done;
        done.finished_at = Some(Utc::now());
        // Metrics first, so whoever sees the final record also sees it counted.
        self.count_final(&done);
        if let Some(d) = done.duration() {
            self.inner
                .metrics
                .investigation_duration
                .observe(d.as_secs_f64());
        }
        // Merge: notes may have been added while it ran.
        let stored = store.update(id, |cur| {
            let notes = std::mem::take(&mut cur.notes);
            *cur = done.clone();
            for n in notes {
                if !cur.notes.contains(&n) {
                    cur.notes.push(n);
                }
            }
        })?;
        store.dequeue(id)?;
        store.flush().await?;
        self.update_queue_depth();
        if let Some(inv) = stored {
            tracing::info!(%id, status = inv.status.as_str(), steps = inv.steps,
                tokens = inv.tokens.total(), cost_usd = inv.cost_usd, error = ?inv.error,
                "investigation ended");
            let _ = self.inner.finished.send(inv);
        }
        Ok(())
    }

    fn count_final(&self, inv: &Investigation) {
        self.inner
            .metrics
            .investigations
            .with_label_values(&[inv.trigger.as_str(), inv.status.as_str()])
            .inc();
    }

    /// Deletes final investigations created before `cutoff` (`store.retention_days`).
    pub fn sweep(&self, cutoff: DateTime<Utc>) -> Result<usize, StoreError> {
        self.inner.store.sweep(cutoff)
    }
}
