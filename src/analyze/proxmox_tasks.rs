//! A Proxmox task in words: what it did to what, by whom, with its status, and for a
//! failed one why, in its log's own words (read for a few failed tasks per sweep).

use crate::analyze::logs::{Signal, signal};
use crate::integrations::proxmox::ProxmoxTask;

/// Failed tasks whose log is read in one sweep, and the lines read of each.
pub(super) const MAX_TASK_LOGS: usize = 3;
pub(super) const TASK_LOG_LINES: u32 = 500;
/// Lines of a task's log quoted.
const TASK_LOG_QUOTED: usize = 2;

/// Why a failed task failed, in its log's words: the last lines that look worst before the
/// closing `TASK ERROR: …` (which repeats the status), else the last line before it
/// (`kvm: … vfio 0000:01:00.0: failed to open /dev/vfio/1: Device or resource busy`
/// under `TASK ERROR: start failed: QEMU exited with code 1`).
pub(super) fn task_log_why(log: &[String]) -> Option<String> {
    let body: Vec<&str> = log
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty() && !l.starts_with("TASK "))
        .collect();
    let worst = body.iter().map(|l| signal(l)).max().unwrap_or(Signal::None);
    let bad: Vec<&str> = body
        .iter()
        .copied()
        .filter(|l| worst > Signal::None && signal(l) == worst)
        .collect();
    let from = if bad.is_empty() { &body } else { &bad };
    let quoted = &from[from.len().saturating_sub(TASK_LOG_QUOTED)..];
    (!quoted.is_empty()).then(|| quoted.join(" | "))
}

pub(super) fn task_text(t: &ProxmoxTask) -> String {
    format!(
        "{}{} by {}: {}",
        t.kind,
        t.id.as_deref()
            .filter(|i| !i.is_empty())
            .map(|i| format!(" {i}"))
            .unwrap_or_default(),
        t.user.as_deref().unwrap_or("?"),
        t.status.as_deref().unwrap_or("running")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_tasks_log_says_why_in_its_last_bad_lines_not_its_status_again() {
        let log = |ls: &[&str]| ls.iter().map(|l| l.to_string()).collect::<Vec<_>>();
        let busy = "kvm: -device vfio-pci,host=0000:01:00.0,id=hostpci0: vfio 0000:01:00.0: \
                    failed to open /dev/vfio/1: Device or resource busy";
        let start = log(&[busy, "TASK ERROR: start failed: QEMU exited with code 1"]);
        assert_eq!(task_log_why(&start).as_deref(), Some(busy));
        let backup = log(&[
            "INFO: starting new backup job: vzdump 100 --storage pbs1 --mode snapshot",
            "INFO: Starting Backup of VM 100 (qemu)",
            "ERROR: Backup of VM 100 failed - backup write data failed: command error: no space left",
            "INFO: Failed at 2026-11-27 02:00:09",
            "INFO: Backup job finished with errors",
            "TASK ERROR: job errors",
        ]);
        let why = task_log_why(&backup).expect("a reason");
        assert!(why.contains("no space left"), "{why}");
        assert!(!why.contains("TASK ERROR"), "{why}");
        assert_eq!(task_log_why(&log(&["TASK ERROR: x"])), None);
        assert_eq!(task_log_why(&[]), None);
    }
}
