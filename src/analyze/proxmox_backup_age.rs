//! For the running guests an enabled backup job covers: how old their newest backup on
//! that job's storage is (`GET /nodes/{node}/storage/{storage}/content?content=backup`,
//! as the guest's node sees it), judged against the job's schedule: overdue past
//! [`STALE_PERIODS`] periods, critical past [`CRITICAL_PERIODS`] (within bounds). A guest
//! with no backup at all is told only when it has run through several scheduled runs
//! (its uptime), so a guest added since the last run is not. A few storages are read per
//! sweep, within [`READ_TIME`]; what is not read is not judged.

use std::collections::HashMap;
use std::time::Duration;

use super::proxmox_coverage::{Coverage, Guest};
use super::proxmox_schedule::period_secs;
use crate::integrations::proxmox::ProxmoxClient;
use crate::integrations::proxmox_backup::id_list;

/// A newest backup older than this many periods is overdue.
pub const STALE_PERIODS: u64 = 3;
/// This many periods (within the bounds below) is critical.
pub const CRITICAL_PERIODS: u64 = 8;
const CRITICAL_MIN_SECS: u64 = 86400;
const CRITICAL_MAX_SECS: u64 = 7 * 86400;
/// Slack beyond the periods (a backup run takes its time).
const SLACK_SECS: u64 = 6 * 3600;
/// Most storage listings read, and the time they may take together.
const MAX_READS: usize = 6;
pub const READ_TIME: Duration = Duration::from_millis(2500);

/// A covered guest whose backups are old or missing.
#[derive(Debug, PartialEq)]
pub struct Overdue {
    pub guest: Guest,
    /// The job and storage judged (the one with the newest backup).
    pub job: String,
    pub schedule: String,
    pub storage: String,
    pub period: u64,
    /// Epoch seconds of the newest backup, `None` for none.
    pub newest: Option<i64>,
    /// Seconds since the newest backup.
    pub age: Option<u64>,
    pub stale_after: u64,
    pub critical: bool,
}

/// The limits of a job run every `period` seconds: overdue after, critical after.
pub fn limits(period: u64) -> (u64, u64) {
    let stale = period
        .saturating_mul(STALE_PERIODS)
        .saturating_add(SLACK_SECS);
    let critical = period
        .saturating_mul(CRITICAL_PERIODS)
        .clamp(CRITICAL_MIN_SECS, CRITICAL_MAX_SECS)
        .max(stale.saturating_add(period));
    (stale, critical)
}

/// Judges guest `g`: `found` holds, per job of it that was read, (job id, schedule,
/// storage, period, newest backup); `None` when it is fine or nothing was read.
pub fn judge(
    g: &Guest,
    found: &[(String, String, String, u64, Option<i64>)],
    now: i64,
) -> Option<Overdue> {
    // The job with the newest backup speaks for the guest; the shortest period is its
    // expectation.
    let (job, schedule, storage, _, newest) = found.iter().max_by_key(|f| f.4)?;
    let period = found.iter().map(|f| f.3).min()?;
    let (stale_after, critical_after) = limits(period);
    let age = newest.map(|n| u64::try_from(now.saturating_sub(n)).unwrap_or(0));
    let overdue = match age {
        Some(a) => a > stale_after,
        // No backup: only a guest that has run through several scheduled runs.
        None => g.uptime.is_some_and(|u| u > stale_after),
    };
    if !overdue {
        return None;
    }
    Some(Overdue {
        guest: g.clone(),
        job: job.clone(),
        schedule: schedule.clone(),
        storage: storage.clone(),
        period,
        newest: *newest,
        age,
        stale_after,
        critical: age.is_some_and(|a| a > critical_after),
    })
}

/// The covered running guests whose newest backup is overdue.
pub async fn overdue(c: &ProxmoxClient, coverage: &Coverage, now: i64) -> Vec<Overdue> {
    tokio::time::timeout(READ_TIME, read(c, coverage, now))
        .await
        .unwrap_or_default()
}

async fn read(c: &ProxmoxClient, coverage: &Coverage, now: i64) -> Vec<Overdue> {
    let running = coverage
        .covered
        .iter()
        .filter(|(g, _)| g.status == "running" && !g.template && !g.node.is_empty());
    // (node, storage) pairs to read, in the order first needed.
    let mut pairs: Vec<(String, String)> = Vec::new();
    for (g, jobs) in running.clone() {
        for j in jobs.iter().filter_map(|i| coverage.jobs.get(*i)) {
            if let Some(s) = j.storage.as_deref().filter(|s| safe(s)) {
                let pair = (g.node.clone(), s.to_string());
                if safe(&g.node) && !pairs.contains(&pair) && pairs.len() < MAX_READS {
                    pairs.push(pair);
                }
            }
        }
    }
    // The newest backup per (node, storage, vmid).
    let mut newest: HashMap<(String, String), HashMap<String, i64>> = HashMap::new();
    for (node, storage) in pairs {
        let Ok(volumes) = c.backups(&node, &storage).await else {
            continue;
        };
        let mut by_vmid: HashMap<String, i64> = HashMap::new();
        for v in volumes {
            let (Some(id), Some(t)) = (id_list(v.vmid.as_ref()).into_iter().next(), v.ctime) else {
                continue;
            };
            let e = by_vmid.entry(id).or_insert(t);
            *e = (*e).max(t);
        }
        newest.insert((node, storage), by_vmid);
    }
    let mut out = Vec::new();
    for (g, jobs) in running {
        let found: Vec<(String, String, String, u64, Option<i64>)> = jobs
            .iter()
            .filter_map(|i| coverage.jobs.get(*i))
            .filter_map(|j| {
                let storage = j.storage.clone()?;
                let listed = newest.get(&(g.node.clone(), storage.clone()))?;
                let schedule = j.schedule_text()?;
                let period = period_secs(&schedule)?;
                let at = listed.get(&g.vmid).copied();
                Some((j.id.clone(), schedule, storage, period, at))
            })
            .collect();
        out.extend(judge(g, &found, now));
    }
    out
}

/// A node or storage name safe in a path.
fn safe(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && !s.contains("..")
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_795_780_800;
    const H: i64 = 3600;

    fn guest(uptime: Option<u64>) -> Guest {
        Guest {
            vmid: "110".into(),
            name: Some("mailstore".into()),
            node: "hv-b".into(),
            kind: "qemu".into(),
            status: "running".into(),
            template: false,
            uptime,
        }
    }

    fn found(at: Option<i64>) -> Vec<(String, String, String, u64, Option<i64>)> {
        vec![("j1".into(), "02:00".into(), "pbs1".into(), 86400, at)]
    }

    #[test]
    fn a_nightly_backup_is_overdue_after_three_nights_and_critical_after_a_week() {
        assert_eq!(judge(&guest(None), &found(Some(NOW - 30 * H)), NOW), None);
        let late = judge(&guest(None), &found(Some(NOW - 80 * H)), NOW).unwrap();
        assert_eq!(late.age, Some(80 * 3600));
        assert_eq!(late.stale_after, 78 * 3600);
        assert!(!late.critical);
        let week = judge(&guest(None), &found(Some(NOW - 8 * 24 * H)), NOW).unwrap();
        assert!(week.critical);
        // The job with the newest backup speaks; a future time is no age.
        let mut two = found(Some(NOW - 100 * H));
        two.push((
            "j2".into(),
            "*/2:00".into(),
            "local".into(),
            7200,
            Some(NOW + H),
        ));
        assert_eq!(judge(&guest(None), &two, NOW), None);
    }

    #[test]
    fn no_backup_at_all_counts_only_for_a_guest_up_through_several_runs() {
        assert_eq!(judge(&guest(Some(3600)), &found(None), NOW), None);
        assert_eq!(judge(&guest(None), &found(None), NOW), None);
        let long = judge(&guest(Some(10 * 86400)), &found(None), NOW).unwrap();
        assert_eq!((long.newest, long.age, long.critical), (None, None, false));
        assert_eq!(judge(&guest(None), &[], NOW), None);
    }
}
