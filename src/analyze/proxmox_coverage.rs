//! Which Proxmox VE guests the cluster's scheduled backup jobs (`GET /cluster/backup`)
//! cover, computed as `vzdump` picks a job's guests: by `pool` (its members, `GET
//! /pools/{poolid}`), else by the `vmid` list, else `all` less the `exclude` list, each
//! restricted to the guests of `node` when the job names one; a disabled job (`enabled`
//! 0) covers nothing. When the job list cannot be read, PVE's own answer (`GET
//! /cluster/backup-info/not-backed-up`) says which guests no job selects. Read by the
//! `proxmox_unprotected` analyzer and the `proxmox_backup_jobs` tool.

use std::collections::{HashMap, HashSet};

use crate::integrations::UpstreamError;
use crate::integrations::proxmox::ProxmoxClient;
use crate::integrations::proxmox_backup::{PveBackupJob, PveResource, flag, id_list};

/// Most resource pools whose members are read.
const MAX_POOL_LOOKUPS: usize = 8;

/// A guest of the cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct Guest {
    pub vmid: String,
    pub name: Option<String>,
    /// Empty when not known (PVE's not-backed-up list names no node).
    pub node: String,
    /// `qemu` or `lxc`.
    pub kind: String,
    /// `running`, `stopped`, … (empty when not known).
    pub status: String,
    pub template: bool,
    /// Seconds it has run (0 or `None` when stopped or not known).
    pub uptime: Option<u64>,
}

impl Guest {
    fn of(r: &PveResource) -> Option<Self> {
        Some(Self {
            vmid: r.vmid_text()?,
            name: r.name.clone().filter(|n| !n.is_empty()),
            node: r.node.clone().unwrap_or_default(),
            kind: r.kind.clone(),
            status: r.status.clone().unwrap_or_default(),
            template: flag(r.template.as_ref()),
            uptime: r.uptime,
        })
    }
}

/// Why a guest is not backed up.
#[derive(Clone, Debug, PartialEq)]
pub enum Gap {
    /// No job selects it.
    NoJob,
    /// Enabled jobs that take every guest leave it out by their `exclude` list.
    Excluded(Vec<String>),
    /// Only disabled jobs select it.
    OnlyDisabled(Vec<String>),
    /// PVE says no job selects it (the job list was not readable).
    PveSays,
}

/// What was read and found.
#[derive(Clone, Debug, Default)]
pub struct Coverage {
    /// The jobs (empty when only PVE's not-backed-up list could be read).
    pub jobs: Vec<PveBackupJob>,
    /// The guests no enabled job covers, with why.
    pub gaps: Vec<(Guest, Gap)>,
    /// The guests enabled jobs cover, with the indexes (in `jobs`) of those jobs.
    pub covered: Vec<(Guest, Vec<usize>)>,
    /// Pools whose members could not be read: the guests of a job by such a pool are
    /// taken as covered.
    pub unread_pools: Vec<String>,
    /// How many guests there are.
    pub guests: usize,
}

/// Whether `job` selects `g` (`pools`: each pool's member vmids; a pool not in it counts
/// as selecting every guest, so an unread pool never makes a false gap).
fn selects(job: &PveBackupJob, g: &Guest, pools: &HashMap<String, HashSet<String>>) -> bool {
    if let Some(n) = job.node.as_deref().filter(|n| !n.is_empty())
        && n != g.node
    {
        return false;
    }
    if let Some(pool) = job.pool.as_deref().filter(|p| !p.is_empty()) {
        return pools.get(pool).is_none_or(|m| m.contains(&g.vmid));
    }
    let listed = id_list(job.vmid.as_ref());
    if !listed.is_empty() {
        return listed.contains(&g.vmid);
    }
    flag(job.all.as_ref()) && !id_list(job.exclude.as_ref()).contains(&g.vmid)
}

/// The guests of `guests` no enabled job of `jobs` selects, with why.
pub fn gaps(
    jobs: &[PveBackupJob],
    guests: &[Guest],
    pools: &HashMap<String, HashSet<String>>,
) -> Vec<(Guest, Gap)> {
    assign(jobs, guests, pools).1
}

/// The guests enabled jobs select (with those jobs' indexes), and the others with why.
type Assigned = (Vec<(Guest, Vec<usize>)>, Vec<(Guest, Gap)>);

/// Sorts `guests` into those enabled `jobs` select and the others ([`Assigned`]).
fn assign(
    jobs: &[PveBackupJob],
    guests: &[Guest],
    pools: &HashMap<String, HashSet<String>>,
) -> Assigned {
    let mut out = Vec::new();
    let mut covered = Vec::new();
    for g in guests {
        let (on, off): (Vec<&PveBackupJob>, Vec<&PveBackupJob>) =
            jobs.iter().partition(|j| j.is_enabled());
        let by: Vec<usize> = jobs
            .iter()
            .enumerate()
            .filter(|(_, j)| j.is_enabled() && selects(j, g, pools))
            .map(|(i, _)| i)
            .collect();
        if !by.is_empty() {
            covered.push((g.clone(), by));
            continue;
        }
        let excluded: Vec<String> = on
            .iter()
            .filter(|j| j.pool.as_deref().is_none_or(str::is_empty))
            .filter(|j| id_list(j.vmid.as_ref()).is_empty() && flag(j.all.as_ref()))
            .filter(|j| {
                j.node
                    .as_deref()
                    .is_none_or(|n| n.is_empty() || n == g.node)
            })
            .filter(|j| id_list(j.exclude.as_ref()).contains(&g.vmid))
            .map(|j| j.id.clone())
            .collect();
        let disabled: Vec<String> = off
            .iter()
            .filter(|j| selects(j, g, pools))
            .map(|j| j.id.clone())
            .collect();
        let gap = match (excluded.is_empty(), disabled.is_empty()) {
            (false, _) => Gap::Excluded(excluded),
            (true, false) => Gap::OnlyDisabled(disabled),
            (true, true) => Gap::NoJob,
        };
        out.push((g.clone(), gap));
    }
    (covered, out)
}

/// Most ids of a job's list named.
const MAX_IDS_NAMED: usize = 8;

/// "100, 101 and 3 more".
fn ids_text(ids: &[String]) -> String {
    let shown = ids.iter().take(MAX_IDS_NAMED).cloned().collect::<Vec<_>>();
    match ids.len().saturating_sub(MAX_IDS_NAMED) {
        0 => shown.join(","),
        more => format!("{} and {more} more", shown.join(",")),
    }
}

/// A job in words: "backup-1a2b (schedule 02:00, all except 101, node pve1, to pbs1)".
pub fn job_text(j: &PveBackupJob) -> String {
    let mut parts = vec![format!(
        "schedule {}",
        j.schedule_text().unwrap_or_else(|| "?".into())
    )];
    let listed = id_list(j.vmid.as_ref());
    let excluded = id_list(j.exclude.as_ref());
    parts.push(match j.pool.as_deref().filter(|p| !p.is_empty()) {
        Some(p) => format!("pool {p}"),
        None if !listed.is_empty() => format!("vmid {}", ids_text(&listed)),
        None if flag(j.all.as_ref()) && !excluded.is_empty() => {
            format!("all except {}", ids_text(&excluded))
        }
        None if flag(j.all.as_ref()) => "all".into(),
        None => "no guests".into(),
    });
    if let Some(n) = j.node.as_deref().filter(|n| !n.is_empty()) {
        parts.push(format!("node {n}"));
    }
    if let Some(s) = j.storage.as_deref().filter(|s| !s.is_empty()) {
        parts.push(format!("to {s}"));
    }
    if !j.is_enabled() {
        parts.push("disabled".into());
    }
    format!("{} ({})", j.id, parts.join(", "))
}

/// Whether `e` says the endpoint is not there or not readable.
pub(super) fn unavailable(e: &UpstreamError) -> bool {
    matches!(
        e,
        UpstreamError::Status {
            status: 403 | 404 | 501,
            ..
        }
    )
}

/// Every guest: the cluster's resource list, else each online node's guests.
async fn all_guests(c: &ProxmoxClient) -> Result<Vec<Guest>, UpstreamError> {
    if let Ok(all) = c.cluster_guests().await {
        return Ok(all.iter().filter_map(Guest::of).collect());
    }
    let mut out = Vec::new();
    for n in c.nodes().await?.iter().filter(|n| n.status == "online") {
        for (kind, g) in c.guests(&n.node).await? {
            out.push(Guest {
                vmid: g.id(),
                name: g.name.clone().filter(|n| !n.is_empty()),
                node: n.node.clone(),
                kind: kind.to_string(),
                status: g.status.clone(),
                template: flag(g.template.as_ref()),
                uptime: g.uptime,
            });
        }
    }
    Ok(out)
}

/// Reads the jobs and guests and computes the gaps; `Ok(None)` when this PVE has
/// neither the job list nor the not-backed-up list (404 on both).
pub async fn read(c: &ProxmoxClient) -> Result<Option<Coverage>, UpstreamError> {
    let jobs = match c.backup_jobs().await {
        Ok(jobs) => jobs,
        Err(e) if unavailable(&e) => return pve_says(c, e).await,
        Err(e) => return Err(e),
    };
    let guests = all_guests(c).await?;
    let mut pools: HashMap<String, HashSet<String>> = HashMap::new();
    let mut unread_pools = Vec::new();
    let wanted: HashSet<&str> = jobs
        .iter()
        .filter_map(|j| j.pool.as_deref().filter(|p| !p.is_empty()))
        .collect();
    let mut wanted: Vec<&str> = wanted.into_iter().collect();
    wanted.sort_unstable();
    for (i, pool) in wanted.into_iter().enumerate() {
        let members = match i < MAX_POOL_LOOKUPS {
            true => c.pool_guests(pool).await.ok(),
            false => None,
        };
        match members {
            Some(m) => {
                let ids = m.iter().filter_map(PveResource::vmid_text).collect();
                pools.insert(pool.to_string(), ids);
            }
            None => unread_pools.push(pool.to_string()),
        }
    }
    let (covered, gaps) = assign(&jobs, &guests, &pools);
    Ok(Some(Coverage {
        gaps,
        covered,
        guests: guests.len(),
        jobs,
        unread_pools,
    }))
}

/// PVE's own list of guests no job selects, joined to the guest list for their node and
/// state; `Ok(None)` when it is missing too and the job list was missing (404), the error
/// of the job list otherwise.
async fn pve_says(
    c: &ProxmoxClient,
    jobs_error: UpstreamError,
) -> Result<Option<Coverage>, UpstreamError> {
    let listed = match c.not_backed_up().await {
        Ok(l) => l,
        Err(e) if unavailable(&e) => {
            let missing =
                |e: &UpstreamError| matches!(e, UpstreamError::Status { status: 404, .. });
            return match missing(&jobs_error) && missing(&e) {
                true => Ok(None),
                false => Err(jobs_error),
            };
        }
        Err(e) => return Err(e),
    };
    let guests = all_guests(c).await.unwrap_or_default();
    let gaps = listed
        .iter()
        .filter_map(|n| {
            let vmid = id_list(Some(&n.vmid)).into_iter().next()?;
            let known = guests.iter().find(|g| g.vmid == vmid);
            let g = known.cloned().unwrap_or_else(|| Guest {
                vmid,
                name: n.name.clone(),
                node: String::new(),
                kind: n.kind.clone().unwrap_or_default(),
                status: String::new(),
                template: false,
                uptime: None,
            });
            Some((g, Gap::PveSays))
        })
        .collect();
    Ok(Some(Coverage {
        jobs: Vec::new(),
        gaps,
        covered: Vec::new(),
        unread_pools: Vec::new(),
        guests: guests.len(),
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn job(v: serde_json::Value) -> PveBackupJob {
        serde_json::from_value(v).unwrap()
    }

    fn guest(vmid: &str, node: &str) -> Guest {
        Guest {
            vmid: vmid.into(),
            name: None,
            node: node.into(),
            kind: "qemu".into(),
            status: "running".into(),
            template: false,
            uptime: None,
        }
    }

    fn ids(found: &[(Guest, Gap)]) -> Vec<(&str, &Gap)> {
        found
            .iter()
            .map(|(g, why)| (g.vmid.as_str(), why))
            .collect()
    }

    #[test]
    fn a_job_selects_by_pool_else_vmids_else_all_less_excluded_within_its_node() {
        let guests: Vec<Guest> = [("100", "a"), ("101", "a"), ("102", "b"), ("103", "b")]
            .iter()
            .map(|(v, n)| guest(v, n))
            .collect();
        let pools = HashMap::from([("prod".to_string(), HashSet::from(["103".to_string()]))]);
        let jobs = [
            job(json!({"id": "j1", "all": 1, "exclude": "101", "node": "a", "schedule": "02:00"})),
            job(json!({"id": "j2", "pool": "prod", "vmid": "102", "schedule": "sun 01:00"})),
            job(json!({"id": "j3", "vmid": "102", "enabled": 0, "schedule": "21:00"})),
        ];
        assert_eq!(
            ids(&gaps(&jobs, &guests, &pools)),
            [
                ("101", &Gap::Excluded(vec!["j1".into()])),
                ("102", &Gap::OnlyDisabled(vec!["j3".into()]))
            ]
        );
        // A pool not read counts as covering; a number as the vmid list is one id.
        let one = [job(json!({"id": "j4", "vmid": 100})), jobs[1].clone()];
        assert_eq!(
            ids(&gaps(&one, &guests, &HashMap::new())),
            Vec::<(&str, &Gap)>::new()
        );
        assert_eq!(
            ids(&gaps(&[], &guests[..1], &pools)),
            [("100", &Gap::NoJob)]
        );
        // "1" and true are set flags; enabled absent is enabled.
        let all = [job(
            json!({"id": "j5", "all": "1", "exclude": "100, 102;103"}),
        )];
        let found = gaps(&all, &guests, &pools);
        assert_eq!(found.len(), 3);
        assert!(job(json!({"id": "x"})).is_enabled());
        assert!(!job(json!({"id": "x", "enabled": "0"})).is_enabled());
    }

    #[test]
    fn an_old_job_states_its_schedule_by_start_time_and_weekdays() {
        let old = job(json!({"id": "j", "starttime": "02:30", "dow": "mon,wed"}));
        assert_eq!(old.schedule_text().as_deref(), Some("mon,wed 02:30"));
        let new = job(json!({"id": "j", "schedule": " sat 03:00 ", "starttime": "02:30"}));
        assert_eq!(new.schedule_text().as_deref(), Some("sat 03:00"));
        assert_eq!(job(json!({"id": "j"})).schedule_text(), None);
    }
}
