//! The webhook path: a batch is written to the alert inbox (`store::inbox`) and answered
//! once that write is on disk; one processor task then decides it, writes its groups and
//! logs its alerts, in the order the batches arrived.
//!
//! Why: deciding and writing a batch of 100 alerts costs some 3 ms of CPU, and batches
//! were decided one at a time under the decision lock, so in a storm (four webhooks of 100
//! alerts in flight) a webhook waited for the three ahead of it and p99 reached 14 ms on
//! two cores. The inbox write is one `write` and a shared `fdatasync`.
//!
//! A batch that finds no other one waiting is answered after its decisions, as before
//! (`queued`, `groups` and `storms` filled in, 200). One that finds others ahead of it is
//! answered once on disk (`deferred`, 202), and its decisions show in the API moments
//! later.
//!
//! Durability: a batch in the inbox is processed again after a crash unless a checkpoint
//! covers it. A checkpoint follows a store flush, so it never covers a batch whose group
//! writes or logged alerts could still be lost. A batch processed but not yet covered is
//! processed a second time after a crash: its alerts count twice in their groups and the
//! log, and its decisions are deduplicated as any repeated alert is.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::{Intake, IntakeSummary};
use crate::alerts::{AlertSource, WebhookBatch, parse_webhook};
use crate::store::StoreError;
use crate::store::inbox::{Entry, Inbox};

/// Body bytes of the batches waiting for the processor at most (their parsed alerts take
/// some 2–3 times as much memory); past it a webhook waits for room, after its batch is on
/// disk. A body larger than this on its own waits until the queue is empty.
const QUEUE_BYTES: usize = 16 << 20;
/// Longest time between checkpoints while batches keep coming.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// One batch for the processor.
pub(super) struct Job {
    seq: u64,
    at: DateTime<Utc>,
    batch: WebhookBatch,
    /// The webhook waiting for the decisions (only when no batch was ahead of it).
    reply: Option<oneshot::Sender<Result<IntakeSummary, StoreError>>>,
    /// Its place in `QUEUE_BYTES`, given back once it is decided.
    _room: Option<OwnedSemaphorePermit>,
}

/// The inbox and the processor's queue.
pub(super) struct Pipeline {
    inbox: Inbox,
    jobs: mpsc::UnboundedSender<Job>,
    /// Bounds the queue's memory (`QUEUE_BYTES`).
    room: Arc<Semaphore>,
    /// Taken by `Intake::start`: the queue's receiving end and the batches an earlier
    /// process left unprocessed.
    start: std::sync::Mutex<Option<(mpsc::UnboundedReceiver<Job>, Vec<Entry>)>>,
    /// Batches accepted and not yet processed.
    backlog: AtomicUsize,
}

impl Pipeline {
    pub(super) fn new(inbox: Inbox, left: Vec<Entry>) -> Self {
        let (jobs, rx) = mpsc::unbounded_channel();
        Self {
            inbox,
            jobs,
            room: Arc::new(Semaphore::new(QUEUE_BYTES)),
            start: std::sync::Mutex::new(Some((rx, left))),
            backlog: AtomicUsize::new(0),
        }
    }
}

/// How a webhook's batch was taken.
pub enum Accepted {
    /// Decided before the answer.
    Decided(IntakeSummary),
    /// On disk, to be decided after the batches ahead of it.
    Deferred(IntakeSummary),
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

impl Intake {
    /// Takes a parsed webhook (`body` is what was parsed, kept to process again after a
    /// crash): returns once it is on disk and, when no batch is ahead of it, decided.
    /// Follow-ups run on the processor's task tracker. Without an inbox (unit tests),
    /// decides and flushes in place.
    pub async fn accept(
        &self,
        source: AlertSource,
        body: &[u8],
        batch: WebhookBatch,
    ) -> Result<Accepted, StoreError> {
        let Some(p) = &self.inner.pipeline else {
            let (summary, _) = self.ingest(batch).await?;
            return Ok(Accepted::Decided(summary));
        };
        let at = Utc::now();
        let deferred = IntakeSummary {
            received: batch.alerts.len(),
            deferred: true,
            ..Default::default()
        };
        let seq = p.inbox.append(at, tag(source), body)?;
        p.inbox.sync(seq).await?;
        let want = body.len().clamp(1, QUEUE_BYTES) as u32;
        let room = p.room.clone().acquire_many_owned(want).await.ok();
        let alone = self.add_backlog(1) == 0;
        let (reply, answer) = if alone {
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
        };
        if p.jobs.send(job).is_err() {
            // Stopping: the next start processes it from the inbox.
            self.add_backlog(-1);
            return Ok(Accepted::Deferred(deferred));
        }
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
    pub fn backlog(&self) -> usize {
        self.inner
            .pipeline
            .as_ref()
            .map_or(0, |p| p.backlog.load(Ordering::Acquire))
    }

    /// Decides the batches an earlier process left in the inbox (in order), then starts
    /// the processor on `tasks`; it stops at `token`, deciding what is queued first.
    /// Returns how many batches were left.
    pub async fn start(
        &self,
        tasks: &TaskTracker,
        token: CancellationToken,
    ) -> Result<usize, StoreError> {
        let Some(p) = &self.inner.pipeline else {
            return Ok(0);
        };
        let taken = p.start.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some((mut rx, left)) = taken else {
            return Ok(0);
        };
        let count = left.len();
        for entry in left {
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
            self.process(
                Job {
                    seq: entry.seq,
                    at: entry.at,
                    batch,
                    reply: None,
                    _room: None,
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
        let this = self.clone();
        let tracker = tasks.clone();
        tasks.spawn(async move {
            let mut last = Instant::now();
            loop {
                let job = tokio::select! {
                    biased;
                    job = rx.recv() => job,
                    () = token.cancelled() => None,
                };
                let Some(job) = job else { break };
                this.process(job, &tracker).await;
                if rx.is_empty() || last.elapsed() >= CHECKPOINT_EVERY {
                    last = Instant::now();
                    this.log_checkpoint().await;
                }
            }
            rx.close();
            while let Ok(job) = rx.try_recv() {
                this.process(job, &tracker).await;
            }
            this.log_checkpoint().await;
        });
        Ok(count)
    }

    /// Decides one batch, logs its alerts and spawns its follow-ups. On a failure the batch
    /// stays in the inbox (no later checkpoint covers it), to be decided at the next start.
    async fn process(&self, job: Job, tasks: &TaskTracker) {
        let p = self
            .inner
            .pipeline
            .as_ref()
            .expect("processing needs the inbox");
        let result = match self.decide_batch(job.batch, job.at).await {
            Ok((summary, follow_ups, log)) => self.inner.store.log_alerts(job.at, &log).map(|()| {
                let intake = self.clone();
                if !follow_ups.is_empty() {
                    tasks.spawn(async move {
                        for f in follow_ups {
                            f.run(&intake).await;
                        }
                    });
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
        self.add_backlog(-1);
        if let Some(reply) = job.reply {
            let _ = reply.send(result);
        }
    }

    /// Adds `n` to the backlog (and its gauge); returns the backlog before.
    fn add_backlog(&self, n: isize) -> usize {
        let Some(p) = &self.inner.pipeline else {
            return 0;
        };
        let before = if n >= 0 {
            p.backlog.fetch_add(n.unsigned_abs(), Ordering::AcqRel)
        } else {
            p.backlog.fetch_sub(n.unsigned_abs(), Ordering::AcqRel)
        };
        let after = before.saturating_add_signed(n);
        self.inner.metrics.alert_backlog.set(after as i64);
        before
    }

    /// Makes the decisions so far durable, then lets the inbox drop the batches they cover.
    async fn checkpoint(&self) -> Result<(), StoreError> {
        let Some(p) = &self.inner.pipeline else {
            return Ok(());
        };
        let done = p.inbox.done();
        self.inner.store.flush().await?;
        let inbox = p.inbox.clone();
        tokio::task::spawn_blocking(move || inbox.checkpoint(done))
            .await
            .map_err(|e| StoreError::Io(format!("inbox: checkpoint task failed: {e}")))?
    }

    async fn log_checkpoint(&self) {
        if let Err(e) = self.checkpoint().await {
            tracing::error!(error = %e, "cannot checkpoint the alert inbox; its batches are decided again at the next start");
        }
    }
}
