//! `proxmox_unprotected`: Proxmox VE guests (VMs and containers, on every node) that no
//! enabled scheduled backup job covers (`proxmox_coverage.rs` computes which): a guest
//! added after the jobs were set up with a fixed `vmid` list, one left out by an `exclude`
//! list, one whose only job was disabled. One fact per guest, with its id, type and
//! state, why it is not covered and the jobs that exist with their schedules. A running
//! guest without a backup is a warning; a stopped one, a template or one excluded on
//! purpose is told only when the trigger is about it. A running guest a job covers whose
//! newest backup on the job's storage is several of the job's periods old, or missing
//! though it has run through several runs, is overdue (`proxmox_backup_age.rs`). A PVE
//! without the job list and without PVE's own not-backed-up list (404 on both) says
//! nothing; one that refuses both skips with a note.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::DateTime;
use serde_json::json;

use super::proxmox::guest_entity_of;
use super::proxmox_backup_age::{Overdue, overdue};
use super::proxmox_coverage::{Coverage, Gap, Guest, job_text, read};
use super::{
    AnalyzeError, Analyzer, Fact, FactClass, Quantity, Scope, Severity, Source, human_seconds,
    keep_most_severe,
};

/// Most facts.
const MAX_FACTS: usize = 40;
/// Most jobs named in a fact.
const MAX_JOBS_NAMED: usize = 4;

pub struct ProxmoxUnprotected(pub Arc<crate::integrations::proxmox::ProxmoxClient>);

/// What a gap says of guest `g`: what, how bad, and the detail.
pub(super) fn judge(g: &Guest, gap: &Gap, c: &Coverage) -> (String, Severity, String) {
    let what = match gap {
        Gap::NoJob | Gap::PveSays => "not in any backup job",
        Gap::Excluded(_) => "excluded from backup",
        Gap::OnlyDisabled(_) => "only in a disabled backup job",
    };
    let deliberate = matches!(gap, Gap::Excluded(_));
    let severity = match g.template || deliberate {
        true => Severity::Info,
        false if g.status == "running" || g.status.is_empty() => Severity::Warning,
        false => Severity::Info,
    };
    let kind = match g.kind.as_str() {
        "lxc" => "container",
        "qemu" => "VM",
        _ => "guest",
    };
    let mut parts = vec![match (g.status.as_str(), g.template) {
        (_, true) => format!("{kind} {}, a template", g.vmid),
        ("", false) => format!("{kind} {}", g.vmid),
        (s, false) => format!("{kind} {}, {s}", g.vmid),
    }];
    let enabled = c.jobs.iter().filter(|j| j.is_enabled()).count();
    parts.push(match gap {
        Gap::PveSays => "PVE lists it among the guests no backup job selects".to_string(),
        Gap::Excluded(ids) => format!("excluded by job {}", ids.join(", ")),
        Gap::OnlyDisabled(ids) => format!("selected only by disabled job {}", ids.join(", ")),
        Gap::NoJob if c.jobs.is_empty() => "no backup job is configured".to_string(),
        Gap::NoJob if enabled == 0 => "every backup job is disabled".to_string(),
        Gap::NoJob => "no enabled backup job selects it".to_string(),
    });
    if !c.jobs.is_empty() {
        let named: Vec<String> = c.jobs.iter().take(MAX_JOBS_NAMED).map(job_text).collect();
        let more = c.jobs.len().saturating_sub(MAX_JOBS_NAMED);
        let tail = match more {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        parts.push(format!("backup jobs: {}{tail}", named.join("; ")));
    }
    (what.to_string(), severity, parts.join("; "))
}

#[async_trait]
impl Analyzer for ProxmoxUnprotected {
    fn name(&self) -> &'static str {
        "proxmox_unprotected"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let coverage = match read(&self.0).await {
            Ok(Some(c)) => c,
            Ok(None) => return Ok(Vec::new()),
            Err(e) => {
                return Err(AnalyzeError::Other(format!(
                    "backup jobs not readable: {e}"
                )));
            }
        };
        let mut facts = Vec::new();
        for (g, gap) in &coverage.gaps {
            let node = g.node.as_str();
            let entity = guest_entity_of(node, &g.kind, &g.vmid, g.name.as_deref());
            let (what, severity, detail) = judge(g, gap, &coverage);
            if severity == Severity::Info && !scope.is_about(&entity) {
                continue;
            }
            let class = match severity {
                Severity::Info => FactClass::Context,
                _ => FactClass::Appliance,
            };
            facts.push(
                Fact::new(
                    class,
                    self.name(),
                    entity,
                    what,
                    severity,
                    Source::new("proxmox_backup_jobs", json!({})),
                )
                .detail(detail),
            );
        }
        let now = scope.now.timestamp();
        for o in overdue(&self.0, &coverage, now).await {
            facts.push(overdue_fact(self.name(), &o));
        }
        keep_most_severe(&mut facts, MAX_FACTS);
        Ok(facts)
    }
}

/// The fact of a covered guest whose newest backup is overdue or missing.
pub(super) fn overdue_fact(analyzer: &str, o: &Overdue) -> Fact {
    let g = &o.guest;
    let entity = guest_entity_of(&g.node, &g.kind, &g.vmid, g.name.as_deref());
    let expected = format!(
        "job {} (schedule {}, expected every {})",
        o.job,
        o.schedule,
        human_seconds(o.period as f64)
    );
    let (what, detail) = match (o.newest, o.age) {
        (Some(t), Some(a)) => (
            "backup overdue, last backup",
            format!(
                "newest backup on {} {} ago, {}; {expected}",
                o.storage,
                human_seconds(a as f64),
                when(t)
            ),
        ),
        _ => (
            "in a backup job but no backup on record",
            format!(
                "{} holds no backup of it though it has run {}; {expected}",
                o.storage,
                human_seconds(g.uptime.unwrap_or(0) as f64)
            ),
        ),
    };
    let severity = match o.critical {
        true => Severity::Critical,
        false => Severity::Warning,
    };
    let mut fact = Fact::new(
        FactClass::Appliance,
        analyzer,
        entity,
        what,
        severity,
        Source::new("proxmox_backup_jobs", json!({})),
    )
    .since(o.newest.and_then(|t| DateTime::from_timestamp(t, 0)))
    .detail(detail);
    if let Some(a) = o.age {
        fact = fact
            .value(Quantity::seconds(a as f64))
            .limit(Quantity::seconds(o.stale_after as f64));
    }
    fact
}

/// "2026-11-26 09:00 UTC".
fn when(secs: i64) -> String {
    DateTime::from_timestamp(secs, 0)
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_else(|| "?".into())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn guest(status: &str, template: bool) -> Guest {
        Guest {
            vmid: "105".into(),
            name: Some("wiki".into()),
            node: "pve1".into(),
            kind: "lxc".into(),
            status: status.into(),
            template,
            uptime: None,
        }
    }

    fn coverage(jobs: serde_json::Value) -> Coverage {
        Coverage {
            jobs: serde_json::from_value(jobs).unwrap(),
            ..Default::default()
        }
    }

    #[test]
    fn a_running_guest_no_job_selects_is_a_warning_naming_the_jobs_that_exist() {
        let c = coverage(json!([
            {"id": "backup-nightly", "schedule": "02:00", "vmid": "100,101", "storage": "pbs1",
             "enabled": 1, "type": "vzdump"},
            {"id": "backup-old", "schedule": "sun 01:00", "all": 1, "enabled": 0}
        ]));
        let (what, severity, detail) = judge(&guest("running", false), &Gap::NoJob, &c);
        assert_eq!(what, "not in any backup job");
        assert_eq!(severity, Severity::Warning);
        assert_eq!(
            detail,
            "container 105, running; no enabled backup job selects it; backup jobs: \
             backup-nightly (schedule 02:00, vmid 100,101, to pbs1); backup-old (schedule \
             sun 01:00, all, disabled)"
        );
        let (_, severity, _) = judge(&guest("stopped", false), &Gap::NoJob, &c);
        assert_eq!(severity, Severity::Info);
        let (_, severity, detail) = judge(&guest("stopped", true), &Gap::NoJob, &c);
        assert_eq!(severity, Severity::Info);
        assert!(detail.starts_with("container 105, a template;"), "{detail}");
    }

    #[test]
    fn an_excluded_guest_is_deliberate_and_one_only_a_disabled_job_selects_is_not() {
        let c = coverage(json!([{"id": "j1", "all": 1, "exclude": "105", "schedule": "21:00"}]));
        let excluded = Gap::Excluded(vec!["j1".into()]);
        let (what, severity, detail) = judge(&guest("running", false), &excluded, &c);
        assert_eq!(
            (what.as_str(), severity),
            ("excluded from backup", Severity::Info)
        );
        assert!(
            detail.contains("excluded by job j1; backup jobs: j1 (schedule 21:00, all except 105)"),
            "{detail}"
        );
        let off = Gap::OnlyDisabled(vec!["j2".into()]);
        let (what, severity, _) = judge(&guest("running", false), &off, &c);
        assert_eq!(
            (what.as_str(), severity),
            ("only in a disabled backup job", Severity::Warning)
        );
        let none = coverage(json!([]));
        let (_, _, detail) = judge(&guest("running", false), &Gap::NoJob, &none);
        assert_eq!(
            detail,
            "container 105, running; no backup job is configured"
        );
        let (_, severity, detail) = judge(&guest("", false), &Gap::PveSays, &none);
        assert_eq!(severity, Severity::Warning);
        assert_eq!(
            detail,
            "container 105; PVE lists it among the guests no backup job selects"
        );
    }
}
