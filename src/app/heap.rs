//! The daemon's heap: glibc limited to two arenas (`limit_arenas`, called in `main` before
//! any thread starts), and freed memory given back every second on a thread of its own
//! (`trim_in_background`): sled's deferred garbage first (`store::collect_garbage`), then
//! glibc's free pages. Without this, each runtime thread keeps its own partly free arena
//! and freed pages stay resident. Why these settings and not another allocator:
//! `docs/decisions/0007-memory-allocator-and-build.md`.

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
