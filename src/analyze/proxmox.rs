//! Analyzers over Proxmox VE (`ProxmoxClient`). `proxmox_guests`: nodes offline, nodes
//! whose CPUs are busy with their busiest guests (`proxmox_load.rs`); guests
//! stopped by a task in the window (since the task's end, with its type, user and status)
//! or stopped against an expectation the API states (an HA resource that should be
//! started, `onboot=1`); tasks that failed in the window; and what changed: the other
//! tasks that acted on a guest (start, migrate, restore, …), and a node whose uptime is
//! shorter than the window (it booted within it). `proxmox_storage`: storage
//! nearly full or filling (the filesystem analyzer's thresholds; the fill rate and time
//! until full from the storage's usage history over the last hour and day) or inactive.
//! Each lists the nodes once and each online node's guests, tasks and storage once.
//! `proxmox_replication` (`proxmox_replication.rs`): storage replication jobs failing or
//! stalled. `proxmox_unprotected` (`proxmox_unprotected.rs`): guests no enabled backup job
//! selects.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};
use serde::Deserialize;
use serde_json::{Value, json};

use super::prom::{reboot_fact, slope, space_severity};
use super::proxmox_load::busy_node;
use super::proxmox_tasks::{MAX_TASK_LOGS, TASK_LOG_LINES, task_log_why, task_text};
use super::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Rate, Scope, Severity, Source, Unit,
    keep_most_severe,
};
use crate::integrations::proxmox::{ProxmoxClient, PveGuest};

/// Task types that stop a guest (`qm stop|shutdown`, `pct stop|shutdown`).
const STOPPING: [&str; 4] = ["qmstop", "qmshutdown", "vzstop", "vzshutdown"];
/// Task types that are routine and not a change of the guest (backups).
const ROUTINE: [&str; 1] = ["vzdump"];
/// Most stopped guests whose configuration is read for `onboot`.
const MAX_CONFIG_LOOKUPS: usize = 8;
/// Most facts per analyzer.
const MAX_FACTS: usize = 40;
/// Storage at least this full has its usage history read for a fill rate.
const TREND_FROM_PERCENT: f64 = 50.0;
/// Most storages whose usage history is read (two requests each).
const MAX_TREND_LOOKUPS: usize = 8;
/// Share of the size a rise over the last hour must reach to count as a fill (a burst a
/// healthy storage absorbs is not one).
const MATERIAL_SHARE: f64 = 0.02;

/// The Proxmox VE analyzers.
pub fn analyzers(client: Arc<ProxmoxClient>) -> Vec<Arc<dyn Analyzer>> {
    vec![
        Arc::new(ProxmoxGuests(client.clone())),
        Arc::new(ProxmoxStorage(client)),
    ]
}

pub struct ProxmoxGuests(pub Arc<ProxmoxClient>);

/// `GET /cluster/ha/resources` item.
#[derive(Deserialize)]
struct HaResource {
    sid: String,
    #[serde(default)]
    state: Option<String>,
}

/// `GET /nodes/{node}/{qemu|lxc}/{vmid}/config`, the part read here.
#[derive(Deserialize)]
struct GuestConfig {
    #[serde(default)]
    onboot: Option<Value>,
}

fn vmid(g: &PveGuest) -> String {
    g.id()
}

fn at(secs: Option<i64>) -> Option<DateTime<Utc>> {
    secs.and_then(|s| DateTime::from_timestamp(s, 0))
}

pub(super) fn guest_entity(node: &str, kind: &str, g: &PveGuest) -> Entity {
    guest_entity_of(node, kind, &vmid(g), g.name.as_deref())
}

/// The guest `id` (a `qemu` or `lxc`) of `node` named `name` (its id when it has none).
pub(super) fn guest_entity_of(node: &str, kind: &str, id: &str, name: Option<&str>) -> Entity {
    let id = id.to_string();
    let name = name
        .filter(|n| !n.is_empty())
        .map_or_else(|| id.clone(), str::to_string);
    let labels = BTreeMap::from([
        ("node".to_string(), node.to_string()),
        ("vmid".to_string(), id.clone()),
        ("name".to_string(), name.clone()),
        ("id".to_string(), format!("{kind}/{id}")),
    ]);
    Entity::new("guest", name)
        .on_host(Some(node.to_string()))
        .with_labels(labels)
}

pub(super) fn node_entity(node: &str) -> Entity {
    Entity::new("node", node)
        .on_host(Some(node.to_string()))
        .with_labels(BTreeMap::from([("node".to_string(), node.to_string())]))
}

/// "qmshutdown by root@pam: OK".
/// QEMU run states of a VM that is up but not running its guest: stopped on an error (the
/// guest waits, frozen, until the fault is cleared and it is resumed) and paused or
/// suspended. Migration and start-up states pass by themselves.
const HELD_ON_ERROR: [&str; 4] = ["io-error", "internal-error", "guest-panicked", "watchdog"];
const HELD: [&str; 2] = ["paused", "suspended"];
/// A storage this full is the likely reason of an I/O error on the node.
const FULL_STORAGE_PERCENT: f64 = 95.0;

impl ProxmoxGuests {
    /// The VMs on `node` that are up but held (paused, stopped on an I/O error); for an
    /// I/O error, the node's storages that are full beside it (a thin pool that ran out
    /// pauses every VM writing to it).
    async fn held(&self, node: &str, guests: &[(&'static str, PveGuest)]) -> Vec<Fact> {
        let held: Vec<(&str, &PveGuest, &str)> = guests
            .iter()
            .filter(|(_, g)| g.status == "running")
            .filter_map(|(k, g)| {
                let q = g.qmpstatus.as_deref()?;
                (HELD_ON_ERROR.contains(&q) || HELD.contains(&q)).then_some((*k, g, q))
            })
            .collect();
        if held.is_empty() {
            return Vec::new();
        }
        let full: Vec<String> = match held.iter().any(|(_, _, q)| HELD_ON_ERROR.contains(q)) {
            true => self
                .0
                .storage(node)
                .await
                .unwrap_or_default()
                .into_iter()
                .filter_map(|st| {
                    let (used, total) = (st.used? as f64, st.total? as f64);
                    let percent = 100.0 * used / total;
                    (total > 0.0 && percent >= FULL_STORAGE_PERCENT)
                        .then(|| format!("{} {} % used", st.storage, percent.round()))
                })
                .collect(),
            false => Vec::new(),
        };
        held.into_iter()
            .map(|(kind, g, q)| {
                let on_error = HELD_ON_ERROR.contains(&q);
                let detail = match (on_error, full.is_empty()) {
                    (true, false) => format!(
                        "QEMU stopped it on an error ({q}); full storage on {node}: {}",
                        full.join(", ")
                    ),
                    (true, true) => format!("QEMU stopped it on an error ({q})"),
                    (false, _) => format!("its run state is {q}"),
                };
                Fact::new(
                    FactClass::Availability,
                    self.name(),
                    guest_entity(node, kind, g),
                    format!("running but {q}"),
                    match on_error {
                        true => Severity::Critical,
                        false => Severity::Warning,
                    },
                    Source::new("proxmox_guests", json!({ "node": node })),
                )
                .detail(detail)
            })
            .collect()
    }
}

#[async_trait]
impl Analyzer for ProxmoxGuests {
    fn name(&self) -> &'static str {
        "proxmox_guests"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let c = &self.0;
        let since = scope.window_start.timestamp();
        let mut facts = Vec::new();
        // HA is optional: a cluster without it (or a token that may not read it) has no
        // HA expectations.
        let ha: HashMap<String, String> = c
            .api()
            .get::<Vec<HaResource>>("cluster/ha/resources", &[])
            .await
            .unwrap_or_default()
            .into_iter()
            .filter_map(|r| Some((r.sid, r.state?)))
            .collect();
        let mut lookups = 0;
        let mut failed_logs = 0;
        for n in c.nodes().await? {
            if n.status != "online" {
                facts.push(
                    Fact::new(
                        FactClass::Appliance,
                        self.name(),
                        node_entity(&n.node),
                        format!("node {}", n.status),
                        Severity::Critical,
                        Source::new("proxmox_nodes", json!({})),
                    )
                    .detail("its guests cannot be listed"),
                );
                continue;
            }
            let guests = c.guests(&n.node).await?;
            let window = scope.window().num_seconds();
            facts.extend(busy_node(
                self.name(),
                node_entity(&n.node),
                &n,
                &guests,
                window,
            ));
            // An uptime shorter than the window: the node booted within it.
            if let Some(up) = n
                .uptime
                .filter(|u| i64::try_from(*u).is_ok_and(|u| u < window))
                && let Some(at) = scope.now.checked_sub_signed(TimeDelta::seconds(up as i64))
            {
                let entity = Entity::new("host", n.node.clone()).on_host(Some(n.node.clone()));
                let source = Source::new("proxmox_nodes", json!({}));
                let entity = entity.with_labels(node_entity(&n.node).labels);
                facts.push(reboot_fact(self.name(), entity, at, 1, scope.now, source));
            }
            let tasks = c.tasks(&n.node, false, Some(since)).await?;
            let tasks_source = Source::new("proxmox_tasks", json!({ "since": since }));
            let by_id: HashMap<String, (&str, &PveGuest)> =
                guests.iter().map(|(k, g)| (vmid(g), (*k, g))).collect();
            let mut reported: HashSet<&str> = HashSet::new();
            facts.extend(self.held(&n.node, &guests).await);
            for (kind, g) in &guests {
                if g.status != "stopped" || g.template.as_ref().is_some_and(|t| t == 1 || t == "1")
                {
                    continue;
                }
                let id = vmid(g);
                let stop = tasks
                    .iter()
                    .filter(|t| STOPPING.contains(&t.kind.as_str()))
                    .filter(|t| t.id.as_deref() == Some(id.as_str()))
                    .filter(|t| t.endtime.is_some_and(|e| e >= since))
                    .max_by_key(|t| t.endtime);
                let entity = guest_entity(&n.node, kind, g);
                let guests_source = Source::new("proxmox_guests", json!({ "node": n.node }));
                let sid = format!("{}:{id}", if *kind == "lxc" { "ct" } else { "vm" });
                let ha_state = ha.get(&sid).filter(|s| s.as_str() == "started");
                if let Some(t) = stop {
                    reported.insert(t.upid.as_str());
                    let severity = match ha_state {
                        Some(_) => Severity::Critical,
                        None => Severity::Warning,
                    };
                    facts.push(
                        Fact::new(
                            FactClass::Appliance,
                            self.name(),
                            entity,
                            "stopped by a task",
                            severity,
                            tasks_source.clone(),
                        )
                        .since(at(t.endtime))
                        .detail(task_text(t)),
                    );
                } else if ha_state.is_some() {
                    facts.push(
                        Fact::new(
                            FactClass::Appliance,
                            self.name(),
                            entity,
                            "stopped, HA state started",
                            Severity::Critical,
                            guests_source,
                        )
                        .detail(format!("HA resource {sid} wants it started")),
                    );
                } else if lookups < MAX_CONFIG_LOOKUPS && id.chars().all(|c| c.is_ascii_digit()) {
                    lookups += 1;
                    let path = format!("nodes/{}/{kind}/{id}/config", n.node);
                    let onboot = c
                        .api()
                        .get::<GuestConfig>(&path, &[])
                        .await
                        .ok()
                        .and_then(|cfg| cfg.onboot)
                        .is_some_and(|v| v == 1 || v == "1");
                    if onboot {
                        facts.push(
                            Fact::new(
                                FactClass::Appliance,
                                self.name(),
                                entity,
                                "stopped, starts on boot",
                                Severity::Warning,
                                guests_source,
                            )
                            .detail("onboot=1 but not running"),
                        );
                    }
                }
            }
            for t in &tasks {
                if reported.contains(t.upid.as_str()) {
                    continue;
                }
                let ended = at(t.endtime.or(t.starttime));
                if ended.is_none_or(|e| e < scope.window_start) {
                    continue;
                }
                let entity = match t.id.as_deref().and_then(|i| by_id.get(i)) {
                    Some((kind, g)) => guest_entity(&n.node, kind, g),
                    None => node_entity(&n.node),
                };
                let status = t.status.as_deref();
                let (class, what, severity) = match status {
                    None => continue,
                    Some("OK") if ROUTINE.contains(&t.kind.as_str()) => continue,
                    Some("OK") if entity.kind == "guest" => (
                        FactClass::Change,
                        format!("task {}", t.kind),
                        Severity::Info,
                    ),
                    Some("OK") => continue,
                    Some(s) if s.starts_with("WARNINGS") => (
                        FactClass::Appliance,
                        format!("task {} with warnings", t.kind),
                        Severity::Info,
                    ),
                    Some(_) => (
                        FactClass::Appliance,
                        format!("task {} failed", t.kind),
                        Severity::Warning,
                    ),
                };
                let source = match class {
                    FactClass::Change => tasks_source.clone(),
                    _ => Source::new(
                        "proxmox_tasks",
                        json!({ "since": since, "errors_only": true }),
                    ),
                };
                let mut detail = task_text(t);
                if class == FactClass::Appliance && failed_logs < MAX_TASK_LOGS {
                    failed_logs += 1;
                    if let Ok(log) = c.task_log(&n.node, &t.upid, TASK_LOG_LINES).await
                        && let Some(why) = task_log_why(&log)
                    {
                        detail = format!("{detail}; its log: {why}");
                    }
                }
                facts.push(
                    Fact::new(class, self.name(), entity, what, severity, source)
                        .since(ended)
                        .detail(detail),
                );
            }
        }
        keep_most_severe(&mut facts, MAX_FACTS);
        Ok(facts)
    }
}

pub struct ProxmoxStorage(pub Arc<ProxmoxClient>);

#[async_trait]
impl Analyzer for ProxmoxStorage {
    fn name(&self) -> &'static str {
        "proxmox_storage"
    }

    async fn run(&self, _: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let c = &self.0;
        let mut facts = Vec::new();
        let mut shared_seen = HashSet::new();
        let mut lookups = 0;
        for n in c.nodes().await?.iter().filter(|n| n.status == "online") {
            for s in c.storage(&n.node).await? {
                let shared = s.shared == Some(1);
                if shared && !shared_seen.insert(s.storage.clone()) {
                    continue;
                }
                let labels = BTreeMap::from([
                    ("node".to_string(), n.node.clone()),
                    ("storage".to_string(), s.storage.clone()),
                    ("type".to_string(), s.kind.clone().unwrap_or_default()),
                ]);
                let entity = Entity::new("storage", s.storage.clone())
                    .on_host((!shared).then(|| n.node.clone()))
                    .with_labels(labels);
                let source = Source::new("proxmox_storage", json!({}));
                if s.enabled != Some(0) && s.active == Some(0) {
                    facts.push(Fact::new(
                        FactClass::Appliance,
                        self.name(),
                        entity,
                        "inactive",
                        Severity::Warning,
                        source,
                    ));
                    continue;
                }
                let (Some(used), Some(total)) = (s.used, s.total.filter(|t| *t > 0)) else {
                    continue;
                };
                let percent = 100.0 * used as f64 / total as f64;
                let free = s.avail.unwrap_or(total.saturating_sub(used));
                let rate = match percent >= TREND_FROM_PERCENT && lookups < MAX_TREND_LOOKUPS {
                    true => {
                        lookups += 1;
                        self.fill_rate(&n.node, &s.storage, total as f64).await
                    }
                    false => None,
                };
                let eta = rate.map(|r| free as f64 / r);
                let Some(severity) = space_severity(percent, eta) else {
                    continue;
                };
                let mut fact = Fact::new(
                    FactClass::Exhaustion,
                    self.name(),
                    entity,
                    "space used",
                    severity,
                    source,
                )
                .value(Quantity::percent(percent))
                .limit(Quantity::bytes(total as f64))
                .detail(format!("{} free", Quantity::bytes(free as f64)));
                if let (Some(r), Some(e)) = (rate, eta) {
                    fact = fact
                        .rate(Rate::from_per_second(r, Unit::Bytes))
                        .eta(e, "full");
                }
                facts.push(fact);
            }
        }
        facts.sort_by_key(|f| std::cmp::Reverse(f.severity));
        facts.truncate(MAX_FACTS);
        Ok(facts)
    }
}

/// `GET /nodes/{node}/storage/{storage}/rrddata` item, the part read here.
#[derive(Deserialize)]
struct RrdPoint {
    time: i64,
    #[serde(default)]
    used: Option<f64>,
}

impl ProxmoxStorage {
    /// How fast `storage` fills, in bytes per second (rising only): the steeper of the
    /// last hour's trend (when its rise is material) and the last day's; `None` when the
    /// history is missing or flat.
    async fn fill_rate(&self, node: &str, storage: &str, total: f64) -> Option<f64> {
        let safe = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        };
        if !safe(node) || !safe(storage) {
            return None;
        }
        let path = format!("nodes/{node}/storage/{storage}/rrddata");
        let mut best: Option<f64> = None;
        for (timeframe, span) in [("hour", 3600.0), ("day", 86400.0)] {
            let query = [
                ("timeframe", timeframe.to_string()),
                ("cf", "AVERAGE".to_string()),
            ];
            let Ok(points) = self.0.api().get::<Vec<RrdPoint>>(&path, &query).await else {
                continue;
            };
            let points: Vec<(f64, f64)> = points
                .iter()
                .filter_map(|p| Some((p.time as f64, p.used.filter(|u| u.is_finite())?)))
                .collect();
            let Some(s) = slope(&points).filter(|s| *s > 0.0) else {
                continue;
            };
            if span < 86400.0 && s * span < MATERIAL_SHARE * total {
                continue;
            }
            best = Some(best.map_or(s, |b: f64| b.max(s)));
        }
        best
    }
}
