//! The processor of the webhook pipeline ([`Pipeline`], whose queue `pipeline.rs` fills):
//! it decides the queued batches in order, checkpoints the inbox when the batches pause or every
//! `CHECKPOINT_EVERY`, and contains a panic while deciding one batch, so one batch the code
//! cannot decide neither stops the intake nor stalls the inbox checkpoint.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::pipeline::{CHECKPOINT_EVERY, CHECKPOINT_QUIET, Job, Pipeline};
use crate::telemetry::Task;
use crate::telemetry::supervise::contained;

/// The processor's queue, kept across restarts of its loop.
pub(super) type Queue = Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<Job>>>;

async fn sleep_until(at: Option<Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(at.into()).await;
    }
}

impl Pipeline {
    /// The processor: decides the queued batches in order until `token`, then what is
    /// left in the queue.
    pub(super) async fn run(
        self: Arc<Self>,
        rx: Queue,
        tracker: TaskTracker,
        token: CancellationToken,
    ) {
        let mut rx = rx.lock().await;
        // Checkpoints wait for a quiet moment or `CHECKPOINT_EVERY`: each one flushes the
        // store and syncs two files, and that I/O delays the webhooks' own syncs.
        let mut due: Option<Instant> = None;
        loop {
            let quiet = due.map(|d| d.min(Instant::now() + CHECKPOINT_QUIET));
            let job = tokio::select! {
                biased;
                job = rx.recv() => job,
                () = token.cancelled() => None,
                () = sleep_until(quiet), if quiet.is_some() => {
                    due = None;
                    self.log_checkpoint().await;
                    continue;
                }
            };
            let Some(job) = job else { break };
            self.process_contained(job, &tracker).await;
            let now = Instant::now();
            match due {
                Some(d) if d <= now => {
                    due = None;
                    self.log_checkpoint().await;
                }
                Some(_) => {}
                None => due = Some(now + CHECKPOINT_EVERY),
            }
        }
        rx.close();
        while let Ok(job) = rx.try_recv() {
            self.process_contained(job, &tracker).await;
        }
        self.log_checkpoint().await;
    }

    /// [`Self::process`], with a panic contained: the batch that caused it is given up
    /// (logged, counted, and finished in the inbox, so the checkpoint moves past it and
    /// the next start does not decide it again into the same panic); its webhook, if
    /// still waiting, is answered as deferred.
    pub(super) async fn process_contained(&self, job: Job, tasks: &TaskTracker) {
        let seq = job.seq;
        if contained(Task::AlertIntake, &self.metrics, self.process(job, tasks))
            .await
            .is_none()
        {
            self.inbox.finished(seq);
            self.add_backlog(-1);
            tracing::error!(
                seq,
                "deciding an accepted alert batch panicked; the batch is given up"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use chrono::Utc;
    use serde_json::json;
    use tokio_util::sync::CancellationToken;
    use tokio_util::task::TaskTracker;

    use crate::alerts::intake::Accepted;
    use crate::alerts::intake::fake::{FakeInvestigator, config, intake_inbox};
    use crate::alerts::intake::pipeline::tests_hook::PANIC;
    use crate::alerts::{AlertSource, parse_webhook};
    use crate::store::Store;
    use crate::store::inbox::Inbox;

    fn body(name: &str, instance: &str) -> Vec<u8> {
        serde_json::to_vec(&json!({"version": "4", "status": "firing", "alerts": [
            {"status": "firing", "labels": {"alertname": name, "instance": instance}}]}))
        .unwrap()
    }

    fn panics(intake: &crate::alerts::intake::Intake) -> u64 {
        let pipeline = intake.inner.pipeline.as_ref().expect("an inbox");
        pipeline
            .metrics
            .panics
            .with_label_values(&["alert_intake"])
            .get()
    }

    async fn accept(intake: &crate::alerts::intake::Intake, b: &[u8]) -> Accepted {
        let parsed = parse_webhook(AlertSource::Alertmanager, b).unwrap();
        intake
            .accept(AlertSource::Alertmanager, b, parsed, Default::default())
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn a_batch_whose_decision_panics_is_counted_and_given_up_and_the_intake_keeps_deciding() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let fake = Arc::new(FakeInvestigator::default());
        let inbox = Inbox::open(dir.path(), "alerts").unwrap();
        let intake = intake_inbox(&store, &fake, config(50), Some(inbox));
        let (tasks, token) = (TaskTracker::new(), CancellationToken::new());
        intake.start(&tasks, token.clone()).await.unwrap();

        let answer = accept(&intake, &body(PANIC, "a")).await;
        assert!(matches!(answer, Accepted::Deferred(_)), "{answer:?}");
        assert_eq!(panics(&intake), 1);
        let Accepted::Decided(summary) = accept(&intake, &body("NodeDown", "b")).await else {
            panic!("the next batch is decided as before");
        };
        assert_eq!((summary.received, summary.queued), (1, 1));
        assert_eq!(intake.backlog(), 0);

        token.cancel();
        tasks.close();
        tasks.wait().await;
        assert_eq!(intake.store().alert_count(), 1);
        // The checkpoint moved past the batch given up: the next start does not meet it.
        drop(intake);
        let (_, left) = Inbox::open(dir.path(), "alerts").unwrap();
        assert!(left.is_empty(), "{} left", left.len());
    }

    #[tokio::test]
    async fn a_batch_left_in_the_inbox_that_panics_does_not_stop_the_next_start() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (inbox, _) = Inbox::open(dir.path(), "alerts").unwrap();
            let seq = inbox.append(Utc::now(), 2, &body(PANIC, "a")).unwrap();
            inbox.append(Utc::now(), 2, &body("NodeDown", "b")).unwrap();
            inbox.sync(seq + 1).await.unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        let fake = Arc::new(FakeInvestigator::default());
        let inbox = Inbox::open(dir.path(), "alerts").unwrap();
        let intake = intake_inbox(&store, &fake, config(50), Some(inbox));
        let (tasks, token) = (TaskTracker::new(), CancellationToken::new());
        assert_eq!(intake.start(&tasks, token.clone()).await.unwrap(), 2);
        assert_eq!(panics(&intake), 1);
        assert_eq!(intake.store().alert_count(), 1);
        assert_eq!(intake.backlog(), 0);
        let Accepted::Decided(_) = accept(&intake, &body("NodeDown", "c")).await else {
            panic!("the intake serves after the start");
        };
        token.cancel();
        tasks.close();
        tasks.wait().await;
    }
}
