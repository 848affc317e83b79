//! The webhook path: a batch is written to the alert inbox (`store::inbox`) and answered
//! once that write is on disk; one processor task then decides it, writes its groups and
//! logs its alerts, in the order the batches arrived.
//!
//! Why: senders need only know the batch is safe, and deciding a large batch costs
//! milliseconds of CPU under the decision lock, so webhooks in flight together would wait
//! for each other's decisions (`docs/decisions/0004-alert-inbox.md`). The inbox write is
//! one `write` and a shared `fdatasync`.
//!
//! A small batch (`DECIDED_ANSWER_MAX` alerts or fewer) that finds no other one waiting
//! is answered after its decisions are made and flushed (`queued`, `groups` and `storms`
//! filled in, 200): deciding it costs well under a millisecond, and whoever tries the
//! webhook by hand sees what it did. A larger one, or one with others ahead of it, is
//! answered once on disk (`deferred`, 202), and its decisions show in the API moments
//! later. Senders read only the status.
//!
//! Cancellation: once a batch is written its job is queued at once (in the order of the
//! inbox's numbers, under the inbox's write lock), and the processor syncs it itself before
//! deciding it, so a request that ends early (the client left, `server.request_timeout`)
//! still has its batch decided and the inbox checkpoint moves past it. A batch whose write
//! or sync failed is answered 503 (senders retry), given up by the processor and never
//! decided; its `Settle` learns which of the two happened.
//!
//! Panics: the processor runs under `telemetry::supervise` (`processor.rs`): a panic while
//! deciding a batch gives up that batch only, one elsewhere restarts the processor on the
//! same queue; both are counted in `sre_agent_panics_total{task="alert_intake"}`.
//!
//! Durability: a batch in the inbox is decided again after a crash unless a checkpoint
//! covers it. A checkpoint follows a store flush, so it never covers a batch whose group
//! writes or logged alerts could still be lost. Deciding again is idempotent: each group
//! row records the last inbox entry it absorbed (written with the row), so a group that
//! holds the batch already is skipped, and a batch whose alerts are in the log is not
//! logged again. Only a power loss between the two (a group row on disk, its log lines
//! not) logs the batch's skipped alerts as `deduped`.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::IntakeSummary;
use super::decisions::Decisions;
use super::submissions::Submissions;
use crate::alerts::{AlertSource, WebhookBatch, parse_webhook};
use crate::store::StoreError;
use crate::store::inbox::{Backlog, Inbox};
use crate::telemetry::supervise::restarting;
use crate::telemetry::{Metrics, Task};

/// Memory of the parsed batches waiting for the processor at most (each counted by
/// `WebhookBatch::memory_bytes`: a small alert takes some three times its JSON); past it a
/// webhook waits for room before its batch is written. A batch larger than this on its own
/// waits until the queue is empty.
pub(super) const QUEUE_BYTES: usize = 8 << 20;
/// The largest batch answered with its decisions (when no batch is ahead of it).
pub const DECIDED_ANSWER_MAX: usize = 20;
/// Longest time from a decided batch to the checkpoint covering it while batches keep
/// coming (a crash decides at most this much again).
pub(super) const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);
/// A checkpoint is taken sooner once no batch came for this long.
pub(super) const CHECKPOINT_QUIET: Duration = Duration::from_millis(50);

/// Told once whether a batch given to `Intake::accept` was stored (on disk, to be
/// decided) or not (its write or sync failed, or its request ended before the write), by
/// whichever of the request and the processor learns it first; once every copy is dropped
/// untold, it tells "not stored".
#[derive(Clone, Default)]
pub struct Settle(Option<Arc<Teller>>);

/// What to call with "stored", once.
type Tell = Box<dyn FnOnce(bool) + Send>;

struct Teller(std::sync::Mutex<Option<Tell>>);

impl Settle {
    pub fn new(f: impl FnOnce(bool) + Send + 'static) -> Self {
        Self(Some(Arc::new(Teller(std::sync::Mutex::new(Some(
            Box::new(f),
        ))))))
    }

    pub(super) fn tell(&self, stored: bool) {
        if let Some(t) = &self.0 {
            let f = t.0.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(f) = f {
                f(stored);
            }
        }
    }
}

impl Drop for Teller {
    fn drop(&mut self) {
        let f = self.0.get_mut().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(f) = f {
            f(false);
        }
    }
}

/// One batch for the processor.
pub(super) struct Job {
    pub(super) seq: u64,
    at: DateTime<Utc>,
    batch: WebhookBatch,
    /// The webhook waiting for the decisions (only when no batch was ahead of it).
    reply: Option<oneshot::Sender<Result<IntakeSummary, StoreError>>>,
    /// Its place in `QUEUE_BYTES`, given back once it is decided.
    _room: Option<OwnedSemaphorePermit>,
    /// False for a batch decided again after a crash whose alerts are in the log already.
    log: bool,
    /// Told once the processor knows whether the batch is on disk.
    settle: Settle,
}

/// The inbox, the processor's queue, and what the processor hands each batch to.
pub(super) struct Pipeline {
    pub(super) inbox: Inbox,
    jobs: mpsc::UnboundedSender<Job>,
    /// Bounds the queue's memory (`QUEUE_BYTES`).
    room: Arc<Semaphore>,
    /// Taken by `start`: the queue's receiving end and the batches an earlier process
    /// left unprocessed.
    start: std::sync::Mutex<Option<(mpsc::UnboundedReceiver<Job>, Backlog)>>,
    /// Batches accepted and not yet processed; submissions wait for it to reach 0
    /// (`Submissions`, through a receiver of it).
    backlog: watch::Sender<usize>,
    decisions: Arc<Decisions>,
    pub(super) submissions: Arc<Submissions>,
    pub(super) metrics: Arc<Metrics>,
}

impl Pipeline {
    /// A pipeline on `inbox` (with the entries `left` in it); `backlog` is the sender of
    /// the count `submissions` watches.
    pub(super) fn new(
        (inbox, left): (Inbox, Backlog),
        backlog: watch::Sender<usize>,
        decisions: Arc<Decisions>,
        submissions: Arc<Submissions>,
        metrics: Arc<Metrics>,
    ) -> Self {
        let (jobs, rx) = mpsc::unbounded_channel();
        Self {
            inbox,
            jobs,
            room: Arc::new(Semaphore::new(QUEUE_BYTES)),
            start: std::sync::Mutex::new(Some((rx, left))),
            backlog,
            decisions,
            submissions,
            metrics,
        }
    }
}

/// How a webhook's batch was taken.
#[derive(Debug)]
pub enum Accepted {
    /// Decided before the answer.
    Decided(IntakeSummary),
    /// On disk, to be decided after the batches ahead of it.
    Deferred(IntakeSummary),
}

/// The room a batch takes in the queue: what its parsed alerts take in memory (the body
/// itself is held by its request, bounded by `webhook.max_inflight_bytes`).
pub(super) fn queue_room(batch: &WebhookBatch) -> u32 {
    batch.memory_bytes().clamp(1, QUEUE_BYTES) as u32
}

fn tag(source: AlertSource) -> u8 {
    match source {
        AlertSource::Grafana => 1,
        AlertSource::Alertmanager => 2,
    }
}

fn source_of(tag: u8) -> Option<AlertSource> {
    match tag {
        1 => Some(AlertSource::Grafana),
        2 => Some(AlertSource::Alertmanager),
        _ => None,
    }
}

impl Pipeline {
    /// Takes a parsed webhook (`body` is what was parsed, kept to process again after a
    /// crash): returns once it is on disk and, when it is small and no batch is ahead of
    /// it, decided. `settle` is told whether it was stored, even when this future is
    /// dropped before then. Its effects run on the processor's task tracker.
    pub(super) async fn accept(
        &self,
        source: AlertSource,
        body: &[u8],
        batch: WebhookBatch,
        settle: Settle,
    ) -> Result<Accepted, StoreError> {
        let p = self;
        let at = Utc::now();
        let deferred = IntakeSummary {
            received: batch.alerts.len(),
            deferred: true,
            ..Default::default()
        };
        // Room is taken before the write: a request cancelled while it waits leaves
        // nothing behind.
        let want = queue_room(&batch);
        let room = p.room.clone().acquire_many_owned(want).await.ok();
        let small = batch.alerts.len() <= DECIDED_ANSWER_MAX;
        let told = settle.clone();
        // Written and queued with no await between: from here the processor owns the
        // batch, whatever happens to this request.
        let (seq, answer, unsent) = p.inbox.append_then(at, tag(source), body, |seq| {
            let alone = self.add_backlog(1) == 0;
            let (reply, answer) = if alone && small {
                let (tx, rx) = oneshot::channel();
                (Some(tx), Some(rx))
            } else {
                (None, None)
            };
            let job = Job {
                seq,
                at,
                batch,
                reply,
                _room: room,
                log: true,
                settle,
            };
            let unsent = p.jobs.send(job).err().map(|e| e.0.settle);
            (seq, answer, unsent)
        })?;
        if let Some(settle) = unsent {
            // Stopping: the next start decides it from the inbox.
            self.add_backlog(-1);
            let synced = p.inbox.sync(seq).await;
            settle.tell(synced.is_ok());
            synced?;
            return Ok(Accepted::Deferred(deferred));
        }
        let synced = p.inbox.sync(seq).await;
        told.tell(synced.is_ok());
        synced?;
        match answer {
            Some(rx) => match rx.await {
                Ok(Ok(summary)) => Ok(Accepted::Decided(summary)),
                Ok(Err(e)) => Err(e),
                Err(_) => Ok(Accepted::Deferred(deferred)),
            },
            None => Ok(Accepted::Deferred(deferred)),
        }
    }

    /// Batches accepted and not yet decided.
    pub(super) fn backlog(&self) -> usize {
        *self.backlog.borrow()
    }

    /// Decides the batches an earlier process left in the inbox (in order), then starts
    /// the processor on `tasks`; it stops at `token`, deciding what is queued first.
    /// Returns how many batches were left.
    pub(super) async fn start(
        self: &Arc<Self>,
        tasks: &TaskTracker,
        token: CancellationToken,
    ) -> Result<usize, StoreError> {
        let p = self;
        let taken = p.start.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some((rx, left)) = taken else {
            return Ok(0);
        };
        let count = left.len();
        // Batches logged before the crash are not logged twice (the log's lines are written
        // as each batch is decided, so a kill keeps them; the groups may have lost theirs).
        let mut logged = std::collections::HashSet::new();
        if let Some((first, last)) = left.span() {
            self.decisions.store.for_each_alert(
                first,
                last + chrono::Duration::seconds(1),
                |r| {
                    logged.extend(r.batch);
                },
            )?;
        }
        // One entry in memory at a time.
        for entry in left {
            let entry = entry?;
            let Some(batch) =
                source_of(entry.kind).and_then(|source| parse_webhook(source, &entry.body).ok())
            else {
                tracing::warn!(
                    seq = entry.seq,
                    "an inbox entry that does not parse as a webhook is skipped"
                );
                p.inbox.finished(entry.seq);
                continue;
            };
            self.add_backlog(1);
            self.process_contained(
                Job {
                    seq: entry.seq,
                    at: entry.at,
                    batch,
                    reply: None,
                    _room: None,
                    log: !logged.contains(&entry.seq),
                    settle: Settle::default(),
                },
                tasks,
            )
            .await;
        }
        if count > 0 {
            tracing::info!(
                batches = count,
                "alert batches accepted before a restart were decided"
            );
        }
        self.checkpoint().await?;
        // The processor restarts after a panic outside a batch (one inside a batch gives up
        // that batch only, `process_contained`); the queue outlives each run.
        let rx = Arc::new(tokio::sync::Mutex::new(rx));
        let (this, tracker) = (self.clone(), tasks.clone());
        tasks.spawn(restarting(
            Task::AlertIntake,
            self.metrics.clone(),
            token.clone(),
            move || this.clone().run(rx.clone(), tracker.clone(), token.clone()),
        ));
        Ok(count)
    }

    /// Decides one batch once it is on disk, logs its alerts and spawns its effects. A
    /// batch whose write or sync failed is given up (its sender was answered 503). On a
    /// failure to decide, the batch stays in the inbox (no later checkpoint covers it), to
    /// be decided at the next start.
    pub(super) async fn process(&self, job: Job, tasks: &TaskTracker) {
        let p = self;
        if let Err(e) = p.inbox.sync(job.seq).await {
            p.inbox.finished(job.seq);
            job.settle.tell(false);
            self.add_backlog(-1);
            if let Some(reply) = job.reply {
                let _ = reply.send(Err(e));
            }
            return;
        }
        job.settle.tell(true);
        #[cfg(test)]
        tests_hook::panic_if_asked(&job.batch);
        let decided = self
            .decisions
            .decide_batch(job.batch, job.at, Some(job.seq))
            .await;
        let result = match decided {
            Ok((summary, effects, log)) => match job.log {
                true => self.decisions.store.log_alerts(job.at, &log),
                false => Ok(()),
            }
            .map(|()| {
                if !effects.is_empty() {
                    tasks.spawn(self.submissions.clone().run_all(effects));
                }
                summary
            }),
            Err(e) => Err(e),
        };
        match &result {
            Ok(_) => {
                p.inbox.finished(job.seq);
            }
            Err(e) => tracing::error!(
                seq = job.seq,
                error = %e,
                "cannot decide an accepted alert batch; it stays in the inbox and is decided at the next start"
            ),
        }
        if let Some(reply) = job.reply {
            // A 200 means decided and durable, as it always did: the webhook waiting for
            // it had no batch ahead of it, so this flush delays no other.
            let result = match result {
                Ok(summary) => self.decisions.store.flush().await.map(|()| summary),
                Err(e) => Err(e),
            };
            self.add_backlog(-1);
            let _ = reply.send(result);
        } else {
            self.add_backlog(-1);
        }
    }

    /// Adds `n` to the backlog (and its gauge); returns the backlog before.
    pub(super) fn add_backlog(&self, n: isize) -> usize {
        let mut before = 0;
        self.backlog.send_modify(|count| {
            before = *count;
            *count = before.saturating_add_signed(n);
        });
        let after = before.saturating_add_signed(n);
        self.metrics.alert_backlog.set(after as i64);
        before
    }

    /// Makes the decisions so far durable, then lets the inbox drop the batches they cover.
    async fn checkpoint(&self) -> Result<(), StoreError> {
        let p = self;
        let done = p.inbox.done();
        self.decisions.store.flush().await?;
        let inbox = p.inbox.clone();
        tokio::task::spawn_blocking(move || inbox.checkpoint(done))
            .await
            .map_err(|e| StoreError::Io(format!("inbox: checkpoint task failed: {e}")))?
    }

    pub(super) async fn log_checkpoint(&self) {
        if let Err(e) = self.checkpoint().await {
            tracing::error!(error = %e, "cannot checkpoint the alert inbox; its batches are decided again at the next start");
        }
    }
}

/// A test's way to make deciding a batch panic: an alert named [`tests_hook::PANIC`].
#[cfg(test)]
pub(super) mod tests_hook {
    pub const PANIC: &str = "PanicInTheIntake";

    pub fn panic_if_asked(batch: &crate::alerts::WebhookBatch) {
        if batch.alerts.iter().any(|a| a.name == PANIC) {
            panic!("an alert batch the intake cannot decide");
        }
    }
}
