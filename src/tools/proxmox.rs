//! Proxmox VE tools: nodes, guests (QEMU VMs and LXC containers), storage, tasks, storage
//! replication jobs, scheduled backup jobs and the guests none covers.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::args::{ArgError, arg_bool, arg_i64, arg_str};
use super::format::{human_age, human_bytes, percent};
use super::{Tool, ToolError};
use crate::integrations::UpstreamError;
use crate::integrations::proxmox::{ProxmoxClient, PveNode};

const AUDIT: &str = "the PVEAuditor role (Sys.Audit, VM.Audit, Datastore.Audit) on path \"/\"";

#[derive(Clone, Copy, Debug)]
pub enum PveKind {
    Nodes,
    Guests,
    Storage,
    Tasks,
    Replication,
    BackupJobs,
}

impl PveKind {
    pub const ALL: [PveKind; 6] = [
        Self::Nodes,
        Self::Guests,
        Self::Storage,
        Self::Tasks,
        Self::Replication,
        Self::BackupJobs,
    ];

    /// The name the tool registers under.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Nodes => "proxmox_nodes",
            Self::Guests => "proxmox_guests",
            Self::Storage => "proxmox_storage",
            Self::Tasks => "proxmox_tasks",
            Self::Replication => "proxmox_replication",
            Self::BackupJobs => "proxmox_backup_jobs",
        }
    }
}

/// One Proxmox VE tool.
pub struct PveTool {
    pub kind: PveKind,
    pub client: Arc<ProxmoxClient>,
}

#[async_trait]
impl Tool for PveTool {
    fn name(&self) -> &'static str {
        self.kind.name()
    }

    fn description(&self) -> &'static str {
        match self.kind {
            PveKind::Nodes => "Proxmox VE nodes: online status, CPU and memory use, uptime.",
            PveKind::Guests => {
                "Proxmox VE guests (QEMU VMs and LXC containers) with status and uptime; optional node."
            }
            PveKind::Storage => "Proxmox VE storage usage per node and storage.",
            PveKind::Tasks => {
                "Recent Proxmox VE tasks (backups, migrations…); errors_only=true for failed ones; since = Unix seconds."
            }
            PveKind::Replication => {
                "Proxmox VE storage replication jobs: guest, target node, schedule, last successful sync, failures in a row and the last error; optional node."
            }
            PveKind::BackupJobs => {
                "Proxmox VE scheduled backup jobs (schedule, which guests, storage, enabled), the guests no enabled job covers, and covered guests whose newest backup is overdue."
            }
        }
    }

    fn parameters(&self) -> Value {
        match self.kind {
            PveKind::Guests | PveKind::Replication => {
                json!({"type": "object", "properties": {"node": {"type": "string"}}})
            }
            PveKind::Tasks => json!({"type": "object", "properties": {
                "errors_only": {"type": "boolean"},
                "since": {"type": "integer", "description": "Unix seconds"}}}),
            _ => json!({"type": "object", "properties": {}}),
        }
    }

    async fn call(&self, args: Value) -> Result<String, ToolError> {
        let c = &self.client;
        let nodes = c.nodes().await.map_err(|e| ToolError::upstream(e, AUDIT))?;
        let mut out = Vec::new();
        match self.kind {
            PveKind::Nodes => {
                for n in &nodes {
                    out.push(format!(
                        "{} status={} cpu={} of {} cores memory={}/{} ({}) uptime={}",
                        n.node,
                        n.status,
                        n.cpu
                            .map(|c| format!("{:.1}%", c * 100.0))
                            .unwrap_or("?".into()),
                        n.maxcpu.map(|c| c.to_string()).unwrap_or("?".into()),
                        human_bytes(n.mem.unwrap_or(0)),
                        human_bytes(n.maxmem.unwrap_or(0)),
                        percent(n.mem, n.maxmem),
                        n.uptime.map(|u| human_age(u as i64)).unwrap_or("-".into()),
                    ));
                }
            }
            PveKind::Replication => {
                replication(c, &nodes, arg_str(&args, "node"), &mut out).await?
            }
            PveKind::BackupJobs => backup_jobs(c, &mut out).await?,
            PveKind::Guests => {
                let want = arg_str(&args, "node");
                if let Some(w) = &want
                    && !nodes.iter().any(|n| &n.node == w)
                {
                    let known: Vec<_> = nodes.iter().map(|n| n.node.as_str()).collect();
                    return Err(ArgError::Invalid(format!(
                        "no node {w:?}; nodes: {}",
                        known.join(", ")
                    ))
                    .into());
                }
                for n in nodes.iter().filter(|n| n.status == "online") {
                    if want.as_ref().is_some_and(|w| w != &n.node) {
                        continue;
                    }
                    let guests = c
                        .guests(&n.node)
                        .await
                        .map_err(|e| ToolError::upstream(e, AUDIT))?;
                    for (kind, g) in guests {
                        if g.template.as_ref().is_some_and(|t| t == 1 || t == "1") {
                            continue;
                        }
                        out.push(format!(
                            "{}/{kind}/{} {} status={} uptime={} memory={}/{}",
                            n.node,
                            match &g.vmid {
                                Value::String(s) => s.clone(),
                                other => other.to_string(),
                            },
                            g.name.as_deref().unwrap_or("-"),
                            // A VM up but held by QEMU: `running (io-error)`.
                            match g.qmpstatus.as_deref() {
                                Some(q) if q != g.status => format!("{} ({q})", g.status),
                                _ => g.status.clone(),
                            },
                            g.uptime
                                .filter(|u| *u > 0)
                                .map(|u| human_age(u as i64))
                                .unwrap_or("-".into()),
                            human_bytes(g.mem.unwrap_or(0)),
                            human_bytes(g.maxmem.unwrap_or(0)),
                        ));
                        // A VM the balloon holds below its configured memory.
                        if let (Some(b), Some(m), Some(line)) =
                            (g.balloon, g.maxmem, out.last_mut())
                            && b < m
                        {
                            line.push_str(&format!(" balloon={}", human_bytes(b)));
                        }
                    }
                }
                for n in nodes.iter().filter(|n| n.status != "online") {
                    out.push(format!(
                        "node {} is {}: its guests are unknown",
                        n.node, n.status
                    ));
                }
            }
            PveKind::Storage => {
                for n in nodes.iter().filter(|n| n.status == "online") {
                    for s in c
                        .storage(&n.node)
                        .await
                        .map_err(|e| ToolError::upstream(e, AUDIT))?
                    {
                        out.push(format!(
                            "{}/{} type={} active={} used={}/{} ({}){}",
                            n.node,
                            s.storage,
                            s.kind.as_deref().unwrap_or("?"),
                            s.active.unwrap_or(0) == 1,
                            human_bytes(s.used.unwrap_or(0)),
                            human_bytes(s.total.unwrap_or(0)),
                            percent(s.used, s.total),
                            if s.shared == Some(1) { " shared" } else { "" },
                        ));
                    }
                }
            }
            PveKind::Tasks => {
                let errors_only = arg_bool(&args, "errors_only");
                let since = arg_i64(&args, "since");
                let now = chrono::Utc::now().timestamp();
                for n in nodes.iter().filter(|n| n.status == "online") {
                    let tasks = c
                        .tasks(&n.node, errors_only, since)
                        .await
                        .map_err(|e| ToolError::upstream(e, AUDIT))?;
                    for t in tasks {
                        let status = t.status.as_deref().unwrap_or("running");
                        if errors_only && status == "OK" {
                            continue;
                        }
                        out.push(format!(
                            "{} {} {}{} by {} started {} ago, status: {}",
                            t.node,
                            t.kind,
                            t.id.as_deref().unwrap_or(""),
                            t.endtime
                                .zip(t.starttime)
                                .map(|(e, s)| format!(" ({})", human_age(e - s)))
                                .unwrap_or_default(),
                            t.user.as_deref().unwrap_or("?"),
                            human_age(now - t.starttime.unwrap_or(now)),
                            status,
                        ));
                    }
                }
            }
        }
        if out.is_empty() {
            out.push("nothing found".into());
        }
        Ok(out.join("\n"))
    }
}

/// The backup jobs, one line each, then the guests no enabled job covers.
async fn backup_jobs(c: &ProxmoxClient, out: &mut Vec<String>) -> Result<(), ToolError> {
    use crate::analyze::proxmox_coverage::{Gap, job_text, read};
    let Some(coverage) = read(c).await.map_err(|e| ToolError::upstream(e, AUDIT))? else {
        out.push("this Proxmox VE lists no backup jobs (404)".into());
        return Ok(());
    };
    for j in &coverage.jobs {
        out.push(format!("job {}", job_text(j)));
    }
    if coverage.jobs.is_empty() && coverage.gaps.iter().all(|(_, g)| *g != Gap::PveSays) {
        out.push("no backup jobs configured".into());
    }
    for p in &coverage.unread_pools {
        out.push(format!(
            "pool {p}: members not readable, its guests taken as covered"
        ));
    }
    for (g, gap) in &coverage.gaps {
        let why = match gap {
            Gap::NoJob => "in no enabled job".to_string(),
            Gap::PveSays => "in no job (PVE's not-backed-up list)".to_string(),
            Gap::Excluded(ids) => format!("excluded by {}", ids.join(", ")),
            Gap::OnlyDisabled(ids) => format!("only in disabled {}", ids.join(", ")),
        };
        out.push(format!(
            "not backed up: {}/{}/{} {} status={}{}: {why}",
            if g.node.is_empty() { "?" } else { &g.node },
            g.kind,
            g.vmid,
            g.name.as_deref().unwrap_or("-"),
            if g.status.is_empty() { "?" } else { &g.status },
            if g.template { " template" } else { "" },
        ));
    }
    let now = chrono::Utc::now().timestamp();
    for o in crate::analyze::proxmox_backup_age::overdue(c, &coverage, now).await {
        let g = &o.guest;
        let newest = match o.age {
            Some(a) => format!("newest backup on {} {} ago", o.storage, human_age(a as i64)),
            None => format!("no backup on {}", o.storage),
        };
        out.push(format!(
            "backup overdue: {}/{}/{} {}: {newest} (job {}, schedule {})",
            g.node,
            g.kind,
            g.vmid,
            g.name.as_deref().unwrap_or("-"),
            o.job,
            o.schedule
        ));
    }
    if coverage.gaps.is_empty() {
        out.push(format!(
            "every one of the {} guests is in an enabled backup job",
            coverage.guests
        ));
    }
    Ok(())
}

/// The replication jobs of the online nodes (or of node `want`), one line each.
async fn replication(
    c: &ProxmoxClient,
    nodes: &[PveNode],
    want: Option<String>,
    out: &mut Vec<String>,
) -> Result<(), ToolError> {
    if let Some(w) = &want
        && !nodes.iter().any(|n| &n.node == w)
    {
        let known: Vec<_> = nodes.iter().map(|n| n.node.as_str()).collect();
        return Err(
            ArgError::Invalid(format!("no node {w:?}; nodes: {}", known.join(", "))).into(),
        );
    }
    let now = chrono::Utc::now().timestamp();
    let ago = |t: Option<i64>| match t.filter(|t| *t > 0) {
        Some(t) => format!("{} ago", human_age(now.saturating_sub(t))),
        None => "never".to_string(),
    };
    for n in nodes.iter().filter(|n| n.status == "online") {
        if want.as_ref().is_some_and(|w| w != &n.node) {
            continue;
        }
        let jobs = match c.replication(&n.node).await {
            Ok(jobs) => jobs,
            // An older PVE or a token without VM.Audit: say so for this node.
            Err(UpstreamError::Status { status, .. }) if [403, 404, 501].contains(&status) => {
                out.push(format!(
                    "{}: replication status not available ({status})",
                    n.node
                ));
                continue;
            }
            Err(e) => return Err(ToolError::upstream(e, AUDIT)),
        };
        for j in jobs {
            let disabled = j
                .disable
                .as_ref()
                .is_some_and(|d| d == 1 || d == "1" || d == true);
            out.push(format!(
                "{} job {} guest {} -> {} schedule={}{} last_sync={} last_try={} fail_count={}{}",
                n.node,
                j.id,
                j.guest_id(),
                j.target.as_deref().unwrap_or("?"),
                j.schedule.as_deref().unwrap_or("*/15"),
                if disabled { " disabled" } else { "" },
                ago(j.last_sync),
                ago(j.last_try),
                j.fail_count.unwrap_or(0),
                j.error
                    .as_deref()
                    .map(|e| format!(
                        " error: {}",
                        e.split_whitespace().collect::<Vec<_>>().join(" ")
                    ))
                    .unwrap_or_default(),
            ));
        }
    }
    Ok(())
}
