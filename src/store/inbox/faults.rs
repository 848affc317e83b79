//! Test-only storage faults for the inbox's writer: the ones a real full disk gives that a
//! test cannot cause portably (a sync that fails, a truncate that fails, a file that
//! cannot be created), and a write that stops part-way.

use super::Inbox;

/// Faults armed for the next operations (each is used once).
#[derive(Default)]
pub struct Faults {
    /// The next write stops after this many bytes with ENOSPC.
    pub write_stops_after: Option<usize>,
    pub sync_fails: bool,
    /// Every sync first waits this long (a slow disk).
    pub sync_stalls: Option<std::time::Duration>,
    pub truncate_fails: bool,
    pub create_fails: bool,
}

fn enospc() -> std::io::Error {
    std::io::Error::from_raw_os_error(28)
}

impl Inbox {
    /// Arms faults for the next operations.
    pub fn arm(&self, f: impl FnOnce(&mut Faults)) {
        f(&mut self.inner.faults.lock().unwrap());
    }

    pub(super) fn write_fault(&self, len: usize) -> Option<(usize, std::io::Error)> {
        let at = self.inner.faults.lock().unwrap().write_stops_after.take()?;
        Some((at.min(len), enospc()))
    }

    pub(super) fn sync_fault(&self) -> Option<std::io::Error> {
        std::mem::take(&mut self.inner.faults.lock().unwrap().sync_fails).then(enospc)
    }

    pub(super) fn sync_stall(&self) -> Option<std::time::Duration> {
        self.inner.faults.lock().unwrap().sync_stalls
    }

    pub(super) fn truncate_fault(&self) -> Option<std::io::Error> {
        std::mem::take(&mut self.inner.faults.lock().unwrap().truncate_fails).then(enospc)
    }

    pub(super) fn create_fault(&self) -> Option<std::io::Error> {
        std::mem::take(&mut self.inner.faults.lock().unwrap().create_fails).then(enospc)
    }
}
