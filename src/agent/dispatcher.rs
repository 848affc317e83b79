//! The dispatcher: a durable queue in sled and a pool of `alerts.concurrency` workers.
//! `submit` stores the investigation `queued` and flushes before returning; at start,
//! queued and interrupted (running) ones are picked up again, deduplicated by id, so a
//! crash neither loses nor doubles work, and one interrupted more than
//! `alerts.max_interrupted_retries` times is failed with the reason. Every investigation
//! holds a [`Claim`] on the daily budget (`spend`) from admission to its end, settled to its
//! real cost. A run that panics is stored `failed` ("panicked: …", `panics.rs`) and is not
//! resumed. A final investigation is recorded in the store's finished index with its final
//! status; once that is flushed, [`Dispatcher::finished`] wakes whoever reads the index
//! (the notifier).

mod feedback;
mod panics;
mod queries;
mod tools;

pub use feedback::FeedbackOutcome;
pub use tools::build_tools;

use std::collections::{HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, NaiveDate, Utc};
use futures::FutureExt;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::budget::SubmitError;
use super::evidence::EvidencePlanner;
use super::memory::IncidentMemory;
use super::runner::Runner;
use crate::analyze::Sweep;

use super::spend::{Claim, SpendLedger};
use super::{Investigation, InvestigationRequest, InvestigationStatus};
use crate::agent::store::InvestigationStore;
use crate::config::Config;
use crate::integrations::Upstreams;
use crate::llm::LlmClient;
use crate::store::{Store, StoreError};
use crate::telemetry::supervise::{record_panic, restarting};
use crate::telemetry::{Metrics, Task};
use crate::tools::ToolRegistry;

/// Queues and runs investigations. Cheap to clone.
#[derive(Clone)]
pub struct Dispatcher {
    inner: Arc<Inner>,
}

struct Inner {
    store: InvestigationStore,
    memory: IncidentMemory,
    runner: Runner,
    metrics: Arc<Metrics>,
    model: String,
    concurrency: usize,
    tx: mpsc::UnboundedSender<String>,
    rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<String>>,
    /// Ids sent to the workers and not done yet: the in-memory dedupe.
    pending: Mutex<HashSet<String>>,
    running: AtomicI64,
    /// Changed each time a final investigation is flushed (its id in the finished index).
    finished: watch::Sender<()>,
    /// The daily budgets.
    spend: SpendLedger,
    /// The budget claim of each queued or running investigation.
    claims: Mutex<HashMap<String, Claim>>,
    max_interrupted_retries: u32,
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
}

impl Dispatcher {
    /// A dispatcher over `store` with the LLM and tools of `config`, reading the upstreams
    /// through the shared `upstreams` clients; workers start with [`Dispatcher::start`].
    pub fn new(
        config: &Config,
        upstreams: &Upstreams,
        store: &Store,
        metrics: Arc<Metrics>,
    ) -> Result<Self, DispatcherError> {
        let llm = LlmClient::new(&config.llm, metrics.clone())?;
        let tools = build_tools(config, upstreams, metrics.clone())?;
        let evidence = EvidencePlanner::new(upstreams);
        let sweep = Sweep::new(config, upstreams);
        if config.llm.base_url.is_some()
            && let Some(warning) = crate::config::unpriced_model_warning(&config.llm)
        {
            tracing::warn!(model = %config.llm.model, "{warning}");
        }
        Ok(Self::assemble(
            config, store, metrics, llm, tools, evidence, sweep,
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
            Sweep::default(),
        )
    }

    fn assemble(
        config: &Config,
        store: &Store,
        metrics: Arc<Metrics>,
        llm: Option<LlmClient>,
        tools: ToolRegistry,
        evidence: EvidencePlanner,
        sweep: Sweep,
    ) -> Result<Self, StoreError> {
        let memory = IncidentMemory::open(store)?;
        let investigations = InvestigationStore::open(store)?;
        let spend = SpendLedger::open(store, &investigations, config, metrics.clone())?;
        let store = investigations;
        let runner = Runner::new(&config.llm, llm, tools, store.clone())
            .with_evidence(evidence)
            .with_sweep(sweep)
            .with_memory(memory.clone());
        let (tx, rx) = mpsc::unbounded_channel();
        let finished = watch::Sender::new(());
        let d = Self {
            inner: Arc::new(Inner {
                store,
                memory,
                runner,
                metrics,
                model: config.llm.model.clone(),
                concurrency: config.alerts.concurrency.max(1),
                tx,
                rx: tokio::sync::Mutex::new(rx),
                pending: Mutex::new(HashSet::new()),
                running: AtomicI64::new(0),
                finished,
                spend,
                claims: Mutex::new(HashMap::new()),
                max_interrupted_retries: config.alerts.max_interrupted_retries,
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
            // Admitted before the restart: counted already; reserve again while it waits.
            let day = self
                .get(&id)?
                .map_or_else(today, |i| i.created_at.date_naive());
            self.keep_claim(&id, self.inner.spend.resume(day));
            self.send(id);
        }
        for _ in 0..self.inner.concurrency {
            let (d, token) = (self.clone(), token.clone());
            let metrics = self.inner.metrics.clone();
            tracker.spawn(restarting(
                Task::InvestigationWorker,
                metrics,
                token.clone(),
                move || d.clone().worker(token.clone()),
            ));
        }
        Ok(())
    }

    /// Stores `req` as a `queued` investigation (flushed) and hands it to the workers, if
    /// the daily budgets (`alerts.max_investigations_per_day`, `alerts.daily_cost_limit_usd`)
    /// allow one more: else [`SubmitError::OverBudget`] says which, and nothing is stored.
    pub async fn submit(&self, req: InvestigationRequest) -> Result<Investigation, SubmitError> {
        let claim = self.inner.spend.admit(req.trigger, today())?;
        Ok(self.enqueue(req, claim).await?)
    }

    /// Like [`Dispatcher::submit`] for an alert investigation the intake already decided
    /// within the budget: its decision's held place becomes the investigation's (held
    /// again if it cannot be stored).
    pub async fn submit_decided(
        &self,
        req: InvestigationRequest,
    ) -> Result<Investigation, StoreError> {
        let claim = self.inner.spend.admit_decided(today())?;
        let stored = self.enqueue(req, claim).await;
        if stored.is_err() {
            self.inner.spend.hold();
        }
        stored
    }

    async fn enqueue(
        &self,
        req: InvestigationRequest,
        claim: Claim,
    ) -> Result<Investigation, StoreError> {
        self.enqueue_with(req, None, claim).await
    }

    async fn enqueue_with(
        &self,
        req: InvestigationRequest,
        parent_id: Option<&str>,
        claim: Claim,
    ) -> Result<Investigation, StoreError> {
        let mut inv = Investigation::new(req, &self.inner.model);
        inv.parent_id = parent_id.map(str::to_string);
        let stored = async {
            self.inner.store.put(&inv)?;
            self.inner.store.enqueue(&inv.id)?;
            self.inner.store.flush().await
        };
        if let Err(e) = stored.await {
            if let Err(refund) = claim.refund() {
                tracing::error!(error = %refund, "cannot take back a budget count");
            }
            return Err(e);
        }
        self.keep_claim(&inv.id, claim);
        self.update_queue_depth();
        self.send(inv.id.clone());
        Ok(inv)
    }

    /// The tools investigations call (also offered by the MCP server).
    pub fn tools(&self) -> &ToolRegistry {
        self.inner.runner.tools()
    }

    /// The daily budgets.
    pub fn spend(&self) -> &SpendLedger {
        &self.inner.spend
    }

    fn keep_claim(&self, id: &str, claim: Claim) {
        if let Ok(mut claims) = self.inner.claims.lock() {
            claims.insert(id.to_string(), claim);
        }
    }

    fn take_claim(&self, id: &str) -> Option<Claim> {
        self.inner.claims.lock().ok()?.remove(id)
    }

    /// Like [`Dispatcher::submit`] for a follow-up question of `parent_id`: the same
    /// budgets apply as to any investigation.
    pub async fn submit_follow_up(
        &self,
        parent_id: &str,
        req: InvestigationRequest,
    ) -> Result<Investigation, SubmitError> {
        let claim = self.inner.spend.admit(req.trigger, today())?;
        Ok(self.enqueue_with(req, Some(parent_id), claim).await?)
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
            if let Some(claim) = self.take_claim(id) {
                claim.refund()?;
            }
            self.inner.store.dequeue(id)?;
            self.inner.store.flush().await?;
            self.update_queue_depth();
            self.count_final(&inv);
            self.inner.finished.send_replace(());
        }
        Ok(cancelled)
    }

    pub fn add_note(&self, id: &str, note: &str) -> Result<(), StoreError> {
        self.inner
            .store
            .update(id, |inv| inv.notes.push(note.to_string()))
            .map(|_| ())
    }

    /// Deletes `id` with its events (a queued one will not run); false when absent.
    pub async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        let existed = self.inner.store.delete(id)?;
        drop(self.take_claim(id));
        self.inner.store.flush().await?;
        self.update_queue_depth();
        Ok(existed)
    }

    /// Changes each time an investigation reaching a final status is flushed: the
    /// finished index (`InvestigationStore::finished_ids`) has something new.
    pub fn finished(&self) -> watch::Receiver<()> {
        self.inner.finished.subscribe()
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
            match AssertUnwindSafe(self.process(&id)).catch_unwind().await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::error!(%id, error = %e, "investigation could not be stored; it stays queued")
                }
                // Outside the run (storing, remembering): made final all the same, so the
                // same input does not run again at every start.
                Err(panic) => {
                    let what =
                        record_panic(&self.inner.metrics, Task::Investigation, panic.as_ref());
                    if let Err(e) = self.fail_panicked(&id, &what).await {
                        tracing::error!(%id, error = %e, "a panicked investigation could not be stored failed");
                    }
                }
            }
            if let Ok(mut p) = self.inner.pending.lock() {
                p.remove(&id);
            }
        }
    }

    /// Runs one queued (or interrupted) investigation to a final status.
    async fn process(&self, id: &str) -> Result<(), StoreError> {
        let store = &self.inner.store;
        // Held until the end: settled below, released by its drop on every other path.
        let claim = self.take_claim(id);
        let max = self.inner.max_interrupted_retries;
        let (mut claimed, mut gave_up) = (false, false);
        let inv = store.update(id, |inv| {
            claimed = !inv.status.is_final();
            // Still `running` here: the daemon stopped while it ran, `attempts` times.
            gave_up = claimed && inv.status == InvestigationStatus::Running && inv.attempts > max;
            if gave_up {
                inv.status = InvestigationStatus::Failed;
                inv.finished_at = Some(Utc::now());
                inv.error = Some(format!(
                    "interrupted {} times (the daemon stopped while it ran); not retried \
                     again (alerts.max_interrupted_retries = {max})",
                    inv.attempts
                ));
            } else if claimed {
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
        let claim = claim.unwrap_or_else(|| self.inner.spend.resume(inv.created_at.date_naive()));
        if gave_up {
            tracing::warn!(%id, error = ?inv.error, "interrupted investigation failed");
            return self.end(id, inv, claim).await;
        }
        // Durable before it runs, so a kill -9 mid-run is counted as an interruption.
        store.flush().await?;
        self.inner.running.fetch_add(1, Ordering::Relaxed);
        self.update_queue_depth();
        tracing::info!(%id, trigger = inv.trigger.label(), title = %inv.title, "investigation started");
        let started = inv.clone();
        let done = AssertUnwindSafe(self.inner.runner.run(inv))
            .catch_unwind()
            .await
            .unwrap_or_else(|panic| self.panicked(started, panic.as_ref()));
        self.inner.running.fetch_sub(1, Ordering::Relaxed);
        let mut done = done;
        done.finished_at = Some(Utc::now());
        self.end(id, done, claim).await
    }

    /// Stores a final investigation, settles its budget claim and announces it.
    async fn end(&self, id: &str, done: Investigation, claim: Claim) -> Result<(), StoreError> {
        let store = &self.inner.store;
        // Metrics first, so whoever sees the final record also sees it counted.
        self.count_final(&done);
        if let Some(d) = done.duration() {
            self.inner
                .metrics
                .investigation_duration
                .observe(d.as_secs_f64());
        }
        // Merge: notes (and feedback) may have been added while it ran.
        let stored = store.update(id, |cur| {
            let notes = std::mem::take(&mut cur.notes);
            let feedback = cur.feedback.take();
            *cur = done.clone();
            cur.feedback = feedback.or_else(|| cur.feedback.take());
            for n in notes {
                if !cur.notes.contains(&n) {
                    cur.notes.push(n);
                }
            }
        })?;
        if let Some(inv) = &stored
            && let Err(e) = self.inner.memory.remember(inv)
        {
            tracing::warn!(%id, error = %e, "cannot remember the investigation in incident memory");
        }
        store.dequeue(id)?;
        claim.settle(done.cost_usd)?;
        store.flush().await?;
        self.update_queue_depth();
        if let Some(inv) = stored {
            tracing::info!(%id, status = inv.status.as_str(), steps = inv.steps,
                tokens = inv.tokens.total(), cost_usd = inv.cost_usd, error = ?inv.error,
                "investigation ended");
            self.inner.finished.send_replace(());
        }
        Ok(())
    }

    fn count_final(&self, inv: &Investigation) {
        self.inner
            .metrics
            .investigations
            .with_label_values(&[inv.trigger.label(), inv.status.as_str()])
            .inc();
    }

    /// Deletes final investigations created before `cutoff` (`store.retention_days`), and
    /// forgets what incident memory holds from before it.
    pub fn sweep(&self, cutoff: DateTime<Utc>) -> Result<usize, StoreError> {
        self.inner.memory.sweep(cutoff)?;
        self.inner.store.sweep(cutoff)
    }
}

/// The current UTC day.
fn today() -> NaiveDate {
    Utc::now().date_naive()
}
