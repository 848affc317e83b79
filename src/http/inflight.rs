//! The bytes of webhook bodies being read and parsed at once, bounded by
//! `webhook.max_inflight_bytes`: a webhook reserves its declared `Content-Length` (or
//! `webhook.max_body_bytes` when it declares none) before its body is read and holds the
//! reservation until it is answered, so the memory many large bodies take together follows
//! the configuration, not the senders. A webhook that finds no room waits up to
//! `ROOM_WAIT` for it, then gets 503 with `Retry-After` (senders retry a 5xx), and its
//! body is never read.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::ApiError;

/// How long a webhook waits for room before it is answered 503: long enough to ride out
/// a burst of large bodies, far below a sender's own timeout (Alertmanager: 10 s).
pub const ROOM_WAIT: Duration = Duration::from_secs(2);
/// The `Retry-After` of that 503, in seconds.
pub const RETRY_AFTER_SECS: u64 = 1;

/// The shared reservation of body bytes.
#[derive(Clone, Debug)]
pub struct InflightBodies {
    room: Arc<Semaphore>,
    total: usize,
}

impl InflightBodies {
    /// Room for `total` bytes of bodies (at least one).
    pub fn new(total: usize) -> Self {
        // One reservation takes at most u32::MAX permits.
        let total = total.clamp(1, u32::MAX as usize);
        Self {
            room: Arc::new(Semaphore::new(total)),
            total,
        }
    }

    /// Reserves `bytes` (a body larger than the whole room reserves all of it, so it is
    /// read alone), waiting up to `wait`; `ApiError::Busy` when no room was made by then.
    pub async fn reserve(&self, bytes: usize, wait: Duration) -> Result<Reservation, ApiError> {
        let n = u32::try_from(bytes.clamp(1, self.total)).unwrap_or(u32::MAX);
        match tokio::time::timeout(wait, self.room.clone().acquire_many_owned(n)).await {
            Ok(Ok(permit)) => Ok(Reservation(permit)),
            // Timed out (or closed, which this room never is).
            _ => Err(ApiError::Busy {
                retry_after: RETRY_AFTER_SECS,
                message: format!(
                    "too many webhook bodies are being read at once (webhook.max_inflight_bytes = \
                     {} bytes); retry shortly",
                    self.total
                ),
            }),
        }
    }

    /// Bytes not reserved now.
    #[cfg(test)]
    pub fn available(&self) -> usize {
        self.room.available_permits()
    }
}

/// Room held for one body until it is dropped (the webhook answered or cancelled).
#[derive(Debug)]
pub struct Reservation(#[allow(dead_code)] OwnedSemaphorePermit);

#[cfg(test)]
mod tests {
    use tokio::time::Instant;

    use super::*;

    // The clock is paused: the waits for room pass at once, and exactly.
    #[tokio::test(start_paused = true)]
    async fn a_body_that_finds_no_room_is_refused_busy_after_the_wait_and_goes_on_once_one_is_answered()
     {
        let room = InflightBodies::new(1000);
        let first = room.reserve(600, ROOM_WAIT).await.unwrap();
        let started = Instant::now();
        let refused = room.reserve(600, ROOM_WAIT).await;
        assert!(
            matches!(refused, Err(ApiError::Busy { retry_after: 1, .. })),
            "{refused:?}"
        );
        assert_eq!(started.elapsed(), ROOM_WAIT, "it waited for room first");
        assert_eq!(room.available(), 400);
        // The first body answered a second into the next one's wait: it goes on then.
        let started = Instant::now();
        let answered = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            drop(first);
        });
        let second = room.reserve(600, ROOM_WAIT).await;
        assert!(second.is_ok());
        assert_eq!(started.elapsed(), Duration::from_secs(1));
        answered.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_larger_than_the_whole_room_waits_to_be_read_alone() {
        let room = InflightBodies::new(1000);
        let small = room.reserve(10, ROOM_WAIT).await.unwrap();
        let started = Instant::now();
        assert!(room.reserve(5_000, ROOM_WAIT).await.is_err());
        assert_eq!(started.elapsed(), ROOM_WAIT);
        drop(small);
        let alone = room.reserve(5_000, ROOM_WAIT).await.unwrap();
        assert_eq!(room.available(), 0);
        drop(alone);
        assert_eq!(room.available(), 1000);
    }
}
