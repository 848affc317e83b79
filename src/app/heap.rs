//! The daemon's heap: what it gives back to the system.
//!
//! Measured with the scale bench (single-alert webhooks from 16 clients, 130,000 stored
//! alerts): glibc's default of up to eight arenas per core let each runtime thread keep
//! its own partly free heap, and the daemon held 84 MiB resident while ingesting, most of
//! it freed memory (heaptrack saw about 24 MiB live). Two arenas took it to 60 MiB at the
//! same intake rate. Trimming every second gives back what start-up and bursts free (on a
//! 1.1M-alert store: 50 MiB just after start, 34 MiB a few seconds later); trimming every
//! 250 ms lowered the fill rate by a fifth and did not lower the peak.
//! Other allocators were measured and not taken: mimalloc idled at 60 MiB and jemalloc at
//! 39 MiB where glibc idles at 20. sled's writes leave replaced nodes and log
//! buffers for epoch-based reclamation, which frees them only as later operations run, so
//! the trimmer frees them first (`store::collect_garbage`).

use std::time::Duration;

/// How often freed heap pages are given back while the daemon runs.
const TRIM_EVERY: Duration = Duration::from_secs(1);

/// Limits glibc to two arenas. Call first in `main`, before any thread starts (an arena
/// is created when a thread first allocates under contention).
pub fn limit_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; called before other threads run.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Gives freed memory back every `TRIM_EVERY`, on its own thread, for as long as the
/// process runs: sled's deferred garbage is freed (`store::collect_garbage`), then glibc's
/// free pages are returned (other allocators return memory themselves).
pub fn trim_in_background() {
    let spawned = std::thread::Builder::new()
        .name("heap-trim".into())
        .spawn(|| {
            loop {
                std::thread::sleep(TRIM_EVERY);
                crate::store::collect_garbage();
                trim();
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot start the heap trimmer; freed memory stays resident");
    }
}

/// Returns glibc's free heap pages to the system.
fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes the arena locks itself; no pointers change.
    unsafe {
        libc::malloc_trim(0);
    }
}
