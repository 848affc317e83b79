//! Analyzers over Proxmox Backup Server (`PbsClient`). `pbs_tasks`: backup, verify, GC,
//! prune and sync tasks that failed in the window, with the task's status text.
//! `pbs_datastores`: datastores in error, nearly full (the filesystem analyzer's
//! thresholds) with the fill rate from the usage history PBS keeps and the time until full
//! (PBS's own estimate, else the history's trend), and bad chunks left by GC.
//! `pbs_backups`: backup groups whose newest snapshot is older than their datastore's
//! rhythm allows: more than `pbs.backup_interval` (26 h by default: a daily backup that
//! missed one run) and more than [`STALE_FACTOR`] times the median age of the store's
//! groups (so a store backed up weekly is not flagged every day), with what the group's
//! backup tasks since its last snapshot did (`pbs_attempts.rs`: how many, the last one's
//! status, one still running and for how long), from one task list for all of them.
//! `pbs_verify` (`pbs_verify.rs`): groups with snapshots that failed verification.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::DateTime;
use serde_json::json;

use super::pbs_attempts::{BACKUP_TASK, attempts_text};
use super::prom::{slope, space_severity};
use super::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Rate, Scope, Severity, Source, Unit,
    keep_most_severe,
};
use crate::integrations::pbs::{PbsBackupGroup, PbsClient, PbsDatastoreUsage};

/// A group is stale past this many times the median age of its datastore's groups.
pub const STALE_FACTOR: f64 = 2.5;
/// Most datastores whose groups are listed.
const MAX_STORES: usize = 10;
/// Most facts per analyzer.
const MAX_FACTS: usize = 40;
/// Most backup tasks read for the attempts of overdue groups (a list this long may be cut).
const MAX_ATTEMPT_TASKS: usize = 500;

/// The Proxmox Backup Server analyzers.
/// `backup_interval`: the age past which a group is overdue at the least.
pub fn analyzers(client: Arc<PbsClient>, backup_interval: Duration) -> Vec<Arc<dyn Analyzer>> {
    vec![
        Arc::new(PbsTasks(client.clone())),
        Arc::new(PbsDatastores(client.clone())),
        Arc::new(PbsBackups {
            client,
            min_stale: backup_interval,
        }),
    ]
}

pub(super) fn store_entity(store: &str) -> Entity {
    Entity::new("datastore", store)
        .with_labels(BTreeMap::from([("store".to_string(), store.to_string())]))
}

pub(super) fn group_entity(store: &str, kind: &str, id: &str, comment: Option<&str>) -> Entity {
    let mut labels = BTreeMap::from([
        ("store".to_string(), store.to_string()),
        ("backup_type".to_string(), kind.to_string()),
        ("backup_id".to_string(), id.to_string()),
    ]);
    if let Some(c) = comment.filter(|c| !c.is_empty()) {
        labels.insert("comment".into(), c.to_string());
    }
    Entity::new("backup", format!("{kind}/{id}")).with_labels(labels)
}

pub struct PbsTasks(pub Arc<PbsClient>);

#[async_trait]
impl Analyzer for PbsTasks {
    fn name(&self) -> &'static str {
        "pbs_tasks"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let since = scope.window_start.timestamp();
        let mut facts = Vec::new();
        for t in self.0.tasks(true, Some(since)).await? {
            let Some(status) = t.status.as_deref().filter(|s| *s != "OK") else {
                continue;
            };
            let ended = t.endtime.or(t.starttime);
            if ended.is_none_or(|e| e < since) {
                continue;
            }
            // The task id (PBS: `worker_id`) is `store` or `store:what` (`backup:vm/100`, `backup:v-3b7f`).
            let id = t.id.as_deref().unwrap_or_default();
            let (store, rest) = id.split_once(':').unwrap_or((id, ""));
            let entity = match rest.split_once('/') {
                Some((kind, gid)) if !store.is_empty() => group_entity(store, kind, gid, None),
                _ if !store.is_empty() => store_entity(store),
                _ => Entity::new("task", t.kind.clone()),
            };
            let (what, severity) = match status.starts_with("WARNINGS") {
                true => (format!("{} with warnings", t.kind), Severity::Info),
                false => (format!("{} failed", t.kind), Severity::Warning),
            };
            facts.push(
                Fact::new(
                    FactClass::Appliance,
                    self.name(),
                    entity,
                    what,
                    severity,
                    Source::new("pbs_tasks", json!({ "errors_only": true })),
                )
                .since(ended.and_then(|e| DateTime::from_timestamp(e, 0)))
                .detail(format!(
                    "{status} (by {})",
                    t.user.as_deref().unwrap_or("?")
                )),
            );
        }
        keep_most_severe(&mut facts, MAX_FACTS);
        Ok(facts)
    }
}

pub struct PbsDatastores(pub Arc<PbsClient>);

/// The least-squares slope of the used bytes in `d`'s history, per second.
fn history_slope(d: &PbsDatastoreUsage, total: f64) -> Option<f64> {
    let (start, delta) = (d.history_start?, d.history_delta.filter(|d| *d > 0)?);
    let points: Vec<(f64, f64)> = d
        .history
        .as_ref()?
        .iter()
        .enumerate()
        .filter_map(|(i, v)| {
            let v = (*v)?;
            let t = (i as i64).checked_mul(delta)?.checked_add(start)?;
            v.is_finite().then_some((t as f64, v * total))
        })
        .collect();
    slope(&points)
}

#[async_trait]
impl Analyzer for PbsDatastores {
    fn name(&self) -> &'static str {
        "pbs_datastores"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let now = scope.now.timestamp();
        let source = Source::new("pbs_datastores", json!({}));
        let mut facts = Vec::new();
        for d in self.0.datastores().await? {
            if let Some(err) = d.error.as_deref().filter(|e| !e.is_empty()) {
                facts.push(
                    Fact::new(
                        FactClass::Appliance,
                        self.name(),
                        store_entity(&d.store),
                        "datastore error",
                        Severity::Critical,
                        source.clone(),
                    )
                    .detail(err),
                );
                continue;
            }
            if let Some(bad) = d
                .gc_status
                .as_ref()
                .and_then(|g| g.still_bad)
                .filter(|b| *b > 0)
            {
                facts.push(
                    Fact::new(
                        FactClass::Appliance,
                        self.name(),
                        store_entity(&d.store),
                        "bad chunks after garbage collection",
                        Severity::Warning,
                        source.clone(),
                    )
                    .value(Quantity::count(bad as f64)),
                );
            }
            let (Some(used), Some(total)) = (d.used, d.total.filter(|t| *t > 0)) else {
                continue;
            };
            let (used, total) = (used.max(0) as f64, total as f64);
            let percent = 100.0 * used / total;
            let slope = history_slope(&d, total);
            // PBS's own estimate first; the history's trend when it gives none.
            let eta = d
                .estimated_full_date
                .filter(|f| *f > now)
                .map(|f| (f - now) as f64)
                .or_else(|| slope.filter(|s| *s > 0.0).map(|s| (total - used) / s));
            let Some(severity) = space_severity(percent, eta) else {
                continue;
            };
            let mut fact = Fact::new(
                FactClass::Exhaustion,
                self.name(),
                store_entity(&d.store),
                "space used",
                severity,
                source.clone(),
            )
            .value(Quantity::percent(percent))
            .limit(Quantity::bytes(total))
            .detail(format!("{} free", Quantity::bytes(total - used)));
            if let Some(s) = slope.filter(|s| *s > 0.0) {
                fact = fact.rate(Rate::from_per_second(s, Unit::Bytes));
            }
            if let Some(e) = eta {
                fact = fact.eta(e, "full");
            }
            facts.push(fact);
        }
        facts.sort_by_key(|f| std::cmp::Reverse(f.severity));
        facts.truncate(MAX_FACTS);
        Ok(facts)
    }
}

pub struct PbsBackups {
    pub client: Arc<PbsClient>,
    /// The age past which a group is overdue at the least.
    pub min_stale: Duration,
}

#[async_trait]
impl Analyzer for PbsBackups {
    fn name(&self) -> &'static str {
        "pbs_backups"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let now = scope.now.timestamp();
        let mut facts = Vec::new();
        let stores = self.client.datastores().await?;
        // A datastore in error has no groups to list (`pbs_datastores` reports it).
        let readable = stores
            .iter()
            .filter(|d| d.error.as_deref().is_none_or(str::is_empty));
        // (store, group, age, limit) of each overdue group.
        let mut overdue: Vec<(&str, PbsBackupGroup, f64, f64)> = Vec::new();
        for d in readable.take(MAX_STORES) {
            let groups = self.client.groups(&d.store).await?;
            let mut ages: Vec<f64> = groups
                .iter()
                .map(|g| now.saturating_sub(g.last_backup).max(0) as f64)
                .collect();
            if ages.is_empty() {
                continue;
            }
            ages.sort_by(f64::total_cmp);
            let median = ages[ages.len() / 2];
            let limit = self.min_stale.as_secs_f64().max(STALE_FACTOR * median);
            for g in groups {
                let age = now.saturating_sub(g.last_backup).max(0) as f64;
                if age > limit {
                    overdue.push((&d.store, g, age, limit));
                }
            }
        }
        // The backup tasks since the oldest overdue snapshot, in one call: what each
        // group's attempts did. Without them the facts stand on the snapshots alone.
        let tasks = match overdue.iter().map(|o| o.1.last_backup).min() {
            Some(since) => self
                .client
                .tasks_of_type(BACKUP_TASK, since, MAX_ATTEMPT_TASKS)
                .await
                .ok(),
            None => None,
        };
        let complete = tasks.as_ref().is_some_and(|t| t.len() < MAX_ATTEMPT_TASKS);
        for (store, g, age, limit) in overdue {
            let mut detail = format!("{} snapshots", g.backup_count.unwrap_or(0));
            if let Some(c) = g.comment.as_deref().filter(|c| !c.is_empty()) {
                detail = format!("{c}: {detail}");
            }
            let group = (store, g.backup_type.as_str(), g.backup_id.as_str());
            if let Some(a) = tasks
                .as_deref()
                .and_then(|t| attempts_text(t, group, g.last_backup, now, complete))
            {
                detail = format!("{detail}; {a}");
            }
            facts.push(
                Fact::new(
                    FactClass::Appliance,
                    self.name(),
                    group_entity(store, &g.backup_type, &g.backup_id, g.comment.as_deref()),
                    "last backup age",
                    Severity::Warning,
                    Source::new("pbs_backups", json!({})),
                )
                .value(Quantity::seconds(age))
                .limit(Quantity::seconds(limit))
                .since(DateTime::from_timestamp(g.last_backup, 0))
                .detail(detail),
            );
        }
        facts.sort_by(|a, b| {
            let age = |f: &Fact| f.value.map_or(0.0, |v| v.value);
            age(b).total_cmp(&age(a))
        });
        facts.truncate(MAX_FACTS);
        Ok(facts)
    }
}
