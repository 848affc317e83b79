//! Group commit: one thread flushes sled for every caller waiting at the time.
//!
//! A caller takes a ticket (the number of the next flush to start), wakes the flusher and
//! waits until a flush with that number or a later one has finished. A flush that starts
//! after the caller's writes covers them, so every caller waiting while a flush runs is
//! answered by the single flush that follows it. Under load this turns N flushes into
//! about two, which is what lets the webhook answer only after its alerts are on disk
//! without paying one fsync per request.
//!
//! The flusher is a plain thread, not a task: sled 0.34's `flush_async` can hang when many
//! tasks call it at once, and `Store::open` may run outside a runtime.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::watch;

use super::StoreError;
use super::journal::Inner as JournalInner;

/// The journals synced after sled by every flush (see `journal.rs`).
pub(super) type Journals = Arc<Mutex<Vec<Arc<JournalInner>>>>;

/// How often the flusher writes on its own when no caller asks.
const PERIODIC_FLUSH: Duration = Duration::from_millis(500);

/// The result of the newest finished flush: its number and its error, if any.
type Done = (u64, Result<(), String>);

/// Owns the flusher thread; stops and joins it when the last `Store` clone is dropped.
pub(super) struct GroupFlusher {
    shared: Arc<Shared>,
    done: watch::Receiver<Done>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    /// The number of the newest flush started.
    started: AtomicU64,
    /// (flush wanted, stop) under the lock the flusher waits on.
    wake: Mutex<(bool, bool)>,
    cond: Condvar,
}

impl GroupFlusher {
    pub(super) fn start(db: sled::Db, journals: Journals) -> Result<Self, StoreError> {
        let shared = Arc::new(Shared {
            started: AtomicU64::new(0),
            wake: Mutex::new((false, false)),
            cond: Condvar::new(),
        });
        let (tx, done) = watch::channel((0, Ok(())));
        let thread = std::thread::Builder::new()
            .name("sled-flush".into())
            .spawn({
                let shared = shared.clone();
                move || run(db, &journals, &shared, &tx)
            })
            .map_err(|e| StoreError::Io(format!("cannot start the flush thread: {e}")))?;
        Ok(Self {
            shared,
            done,
            thread: Some(thread),
        })
    }

    /// Returns once a flush that started after this call has finished.
    pub(super) async fn flush(&self) -> Result<(), StoreError> {
        let ticket = self.shared.started.load(Ordering::SeqCst) + 1;
        {
            let mut wake = self.shared.wake.lock().expect("flush lock poisoned");
            wake.0 = true;
        }
        self.shared.cond.notify_one();
        let mut done = self.done.clone();
        let finished = done
            .wait_for(|(n, _)| *n >= ticket)
            .await
            .map_err(|_| StoreError::Io("the flush thread has stopped".into()))?;
        finished.1.clone().map_err(StoreError::Io)
    }
}

fn run(db: sled::Db, journals: &Journals, shared: &Shared, done: &watch::Sender<Done>) {
    loop {
        {
            // Also flushes every PERIODIC_FLUSH on its own, for writes nobody waits on
            // (sled's own periodic flush is off: it competed with these for sled's locks).
            let wake = shared.wake.lock().expect("flush lock poisoned");
            let (mut wake, _) = shared
                .cond
                .wait_timeout_while(wake, PERIODIC_FLUSH, |w| !w.0 && !w.1)
                .expect("flush lock poisoned");
            if wake.1 {
                return;
            }
            wake.0 = false;
        }
        // Number the flush before it starts: a caller that saw the previous number wrote
        // before this point, so this flush covers it.
        let n = shared.started.fetch_add(1, Ordering::SeqCst) + 1;
        let result = db
            .flush()
            .map(|_| ())
            .map_err(|e| e.to_string())
            .and_then(|()| {
                let journals = journals.lock().map(|j| j.clone()).unwrap_or_default();
                journals.iter().try_for_each(|j| j.sync())
            });
        let _previous = done.send_replace((n, result));
        // A flush seals sled's log buffer and leaves the old one (64 KiB) to be freed by
        // epoch-based reclamation from this thread's own list, which keeps up to 64 of
        // them (heaptrack: 3.4 MB live when idle after a burst) until the next flush.
        super::hand_over_garbage();
    }
}

impl Drop for GroupFlusher {
    fn drop(&mut self) {
        if let Ok(mut wake) = self.shared.wake.lock() {
            wake.1 = true;
        }
        self.shared.cond.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
