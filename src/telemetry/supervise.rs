//! Panic containment for background work: a task runs under [`contained`] (one piece of
//! work: a panic is logged, counted in `sre_agent_panics_total{task}` and ends only that
//! piece) or [`restarting`] (a loop: after a panic it starts again, a second later, until
//! it returns or the daemon stops). Release builds unwind (`panic = "unwind"`), so a panic
//! never takes the daemon down with it.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tokio_util::sync::CancellationToken;

use super::{Metrics, Task};

/// The pause before a loop that panicked starts again, so a panic on every pass does not
/// spin.
pub const RESTART_DELAY: Duration = Duration::from_secs(1);

/// The message of a caught panic (`panic!("…")` gives a `&str` or a `String`).
pub fn panic_message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Logs and counts a panic caught in `task`.
pub fn record_panic(metrics: &Metrics, task: Task, panic: &(dyn Any + Send)) -> String {
    let what = panic_message(panic);
    metrics.panics.with_label_values(&[task.label()]).inc();
    tracing::error!(task = task.label(), panic = %what, "a task panicked; the daemon keeps serving");
    what
}

/// Runs `work`; a panic in it is logged and counted, and `None` is returned instead.
pub async fn contained<T>(
    task: Task,
    metrics: &Metrics,
    work: impl Future<Output = T>,
) -> Option<T> {
    match AssertUnwindSafe(work).catch_unwind().await {
        Ok(out) => Some(out),
        Err(panic) => {
            record_panic(metrics, task, panic.as_ref());
            None
        }
    }
}

/// Runs the loop `make()` builds until it returns or `token` is cancelled; after a panic it
/// is logged, counted and built again after [`RESTART_DELAY`].
pub async fn restarting<F, Fut>(
    task: Task,
    metrics: Arc<Metrics>,
    token: CancellationToken,
    mut make: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    loop {
        if contained(task, &metrics, make()).await.is_some() || token.is_cancelled() {
            return;
        }
        tokio::select! {
            _ = token.cancelled() => return,
            _ = tokio::time::sleep(RESTART_DELAY) => {}
        }
        tracing::info!(task = task.label(), "restarting the task after its panic");
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    fn panics_of(metrics: &Metrics, task: &str) -> u64 {
        metrics.panics.with_label_values(&[task]).get()
    }

    #[tokio::test]
    async fn a_contained_panic_is_counted_and_the_caller_goes_on() {
        let metrics = Metrics::new("m");
        let out = contained(Task::Schedule, &metrics, async {
            panic!("bad input {}", 7)
        })
        .await;
        assert_eq!(out, None::<()>);
        assert_eq!(panics_of(&metrics, "schedule"), 1);
        assert_eq!(
            contained(Task::Schedule, &metrics, async { 5 }).await,
            Some(5)
        );
        assert_eq!(panics_of(&metrics, "schedule"), 1);
        assert!(
            metrics
                .encode()
                .contains("sre_agent_panics_total{task=\"schedule\"} 1")
        );
    }

    // The clock is paused: the restart delays pass at once, and exactly.
    #[tokio::test(start_paused = true)]
    async fn a_loop_that_panics_is_restarted_after_the_delay_until_it_returns() {
        let metrics = Arc::new(Metrics::new("m"));
        let runs = Arc::new(AtomicU32::new(0));
        let counted = runs.clone();
        let start = tokio::time::Instant::now();
        restarting(
            Task::Retention,
            metrics.clone(),
            CancellationToken::new(),
            || {
                let n = counted.fetch_add(1, Ordering::SeqCst);
                async move {
                    if n < 2 {
                        panic!("pass {n}");
                    }
                }
            },
        )
        .await;
        assert_eq!(runs.load(Ordering::SeqCst), 3);
        assert_eq!(panics_of(&metrics, "retention"), 2);
        assert_eq!(
            start.elapsed(),
            2 * RESTART_DELAY,
            "one delay before each restart"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_panicking_loop_stops_restarting_when_the_daemon_stops() {
        let metrics = Arc::new(Metrics::new("m"));
        let token = CancellationToken::new();
        let stop = token.clone();
        let runs = Arc::new(AtomicU32::new(0));
        let counted = runs.clone();
        restarting(Task::Notifier, metrics.clone(), token, move || {
            if counted.fetch_add(1, Ordering::SeqCst) == 1 {
                stop.cancel();
            }
            async { panic!("always") }
        })
        .await;
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        assert_eq!(panics_of(&metrics, "notifier"), 2);
    }

    #[test]
    fn panic_messages_are_read_from_str_and_string_payloads() {
        assert_eq!(panic_message(&"static"), "static");
        assert_eq!(panic_message(&String::from("owned")), "owned");
        assert_eq!(panic_message(&5u8), "a panic without a message");
    }
}
