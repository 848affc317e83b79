//! Analyzers over TrueNAS (`TruenasClient`). `truenas_pools`: ZFS pools not ONLINE or not
//! healthy, or being scrubbed or resilvered, with the scan's progress, the devices that
//! are not ONLINE and their read/write/checksum errors (one fact per device too), and the
//! member disks with their models (`truenas_scan.rs`); scrubs that found errors, and
//! pools nearly full (the filesystem analyzer's thresholds). `truenas_alerts`: the active (not dismissed) alerts of level
//! WARNING and above, with their formatted text. `truenas_disks`: disks whose newest SMART
//! self-test did not succeed, and disks hotter than their kind should run. An endpoint a
//! TrueNAS version does not have (404) is skipped. `truenas_tasks` (`truenas_tasks.rs`):
//! cloud sync, replication and rsync tasks failing or overdue.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::DateTime;
use serde_json::{Value, json};

use super::prom::space_severity;
use super::truenas_scan;
use super::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source, Unit,
    keep_most_severe,
};
use crate::integrations::UpstreamError;
use crate::integrations::truenas::{TruenasClient, TruenasDisk, TruenasPool};

/// Temperatures (°C) at which a spinning disk is a warning, and critical.
pub const HDD_WARN_C: f64 = 50.0;
pub const HDD_CRIT_C: f64 = 60.0;
/// The same for solid-state disks, which run hotter by design.
pub const SSD_WARN_C: f64 = 70.0;
pub const SSD_CRIT_C: f64 = 80.0;
/// Vdev states where the device is lost, not just impaired.
const LOST: [&str; 3] = ["FAULTED", "UNAVAIL", "REMOVED"];
/// Most facts per analyzer.
const MAX_FACTS: usize = 40;

/// The TrueNAS analyzers.
pub fn analyzers(client: Arc<TruenasClient>) -> Vec<Arc<dyn Analyzer>> {
    vec![
        Arc::new(TruenasPools(client.clone())),
        Arc::new(TruenasAlerts(client.clone())),
        Arc::new(TruenasDisks(client)),
    ]
}

fn pool_entity(pool: &str) -> Entity {
    Entity::new("pool", pool).with_labels(BTreeMap::from([("pool".to_string(), pool.to_string())]))
}

fn disk_entity(disk: &str, info: Option<&TruenasDisk>, pool: Option<&str>) -> Entity {
    let mut labels = BTreeMap::from([("disk".to_string(), disk.to_string())]);
    let pool = pool.or_else(|| info.and_then(|d| d.pool.as_deref()));
    if let Some(p) = pool {
        labels.insert("pool".into(), p.to_string());
    }
    if let Some(s) = info.and_then(|d| d.serial.as_deref()) {
        labels.insert("serial".into(), s.to_string());
    }
    if let Some(m) = info.and_then(|d| d.model.as_deref()) {
        labels.insert("model".into(), m.to_string());
    }
    Entity::new("disk", disk).with_labels(labels)
}

/// "86 checksum errors" or "23 read and 11 checksum errors": the kinds a disk counted.
fn counted(read: u64, write: u64, checksum: u64) -> String {
    let kinds: Vec<String> = [(read, "read"), (write, "write"), (checksum, "checksum")]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, k)| format!("{n} {k}"))
        .collect();
    match kinds.is_empty() {
        true => "no errors counted".to_string(),
        false => format!("{} errors", kinds.join(" and ")),
    }
}

fn sorted(mut facts: Vec<Fact>) -> Vec<Fact> {
    keep_most_severe(&mut facts, MAX_FACTS);
    facts
}

pub struct TruenasPools(pub Arc<TruenasClient>);

#[async_trait]
impl Analyzer for TruenasPools {
    fn name(&self) -> &'static str {
        "truenas_pools"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let source = Source::new("truenas_pools", json!({}));
        let mut facts = Vec::new();
        let pools = self.0.pools().await?;
        let told = |p: &TruenasPool| {
            p.status != "ONLINE"
                || p.healthy == Some(false)
                || p.scan.as_ref().is_some_and(|s| s.running())
                || !p.unhealthy_devices().is_empty()
        };
        // The disks' models; without them (a failed call) the pools are told all the same.
        let disks = match pools.iter().any(told) {
            true => self.0.disks().await.unwrap_or_default(),
            false => Vec::new(),
        };
        let info = |name: &str| disks.iter().find(|d| d.name == name);
        for p in pools {
            let devices = p.unhealthy_devices();
            let errors = |(d, s, r, w, c): &(String, String, u64, u64, u64)| {
                format!("{d} {s} (read {r}, write {w}, checksum {c} errors)")
            };
            let unhealthy = p.status != "ONLINE" || p.healthy == Some(false);
            let progress = p
                .scan
                .as_ref()
                .and_then(|s| truenas_scan::progress(s, scope.now));
            if unhealthy || progress.is_some() {
                let mut detail: Vec<String> = progress.iter().map(|g| g.text.clone()).collect();
                if !devices.is_empty() {
                    let list: Vec<String> = devices.iter().map(errors).collect();
                    detail.push(format!("devices: {}", list.join(", ")));
                }
                detail.extend(truenas_scan::members(&p, &disks));
                detail.extend(p.status_detail.iter().cloned());
                let resilver = progress.as_ref().is_some_and(|g| g.function == "resilver");
                let severity = match (p.status.as_str(), unhealthy || resilver) {
                    ("ONLINE", true) => Severity::Warning,
                    ("ONLINE", false) => Severity::Info,
                    _ => Severity::Critical,
                };
                // "pool DEGRADED, resilver at 42.5 %", "scrub at 12.0 %", "pool FAULTED".
                let mut what: Vec<String> = Vec::new();
                if unhealthy {
                    what.push(format!("pool {}", p.status));
                }
                if let Some(g) = &progress {
                    let how = if g.percent.is_some() { "at" } else { "running" };
                    what.push(format!("{} {how}", g.function));
                }
                let mut fact = Fact::new(
                    FactClass::Appliance,
                    self.name(),
                    pool_entity(&p.name),
                    what.join(", "),
                    severity,
                    source.clone(),
                )
                .detail(detail.join("; "));
                if let Some(g) = &progress {
                    // A healthy pool's fact is about its scan: since the scan began.
                    if !unhealthy {
                        fact = fact.since(g.started);
                    }
                    if let Some(pc) = g.percent {
                        fact = fact.value(Quantity::percent(pc));
                    }
                    if let Some(eta) = g.eta {
                        fact = fact.eta(eta, &format!("{} done", g.function));
                    }
                }
                facts.push(fact);
            }
            for d in &devices {
                let (disk, status, r, w, c) = d;
                let severity = match LOST.contains(&status.as_str()) {
                    true => Severity::Critical,
                    false => Severity::Warning,
                };
                facts.push(
                    Fact::new(
                        FactClass::Appliance,
                        self.name(),
                        disk_entity(disk, info(disk), Some(&p.name)),
                        format!("{status} in pool {}, errors", p.name),
                        severity,
                        source.clone(),
                    )
                    .value(Quantity::count((r + w + c) as f64))
                    .detail(counted(*r, *w, *c)),
                );
            }
            if let Some(scan) = &p.scan
                && let Some(n) = scan.errors.filter(|n| *n > 0)
            {
                facts.push(
                    Fact::new(
                        FactClass::Appliance,
                        self.name(),
                        pool_entity(&p.name),
                        format!(
                            "{} found errors",
                            scan.function.as_deref().unwrap_or("scan").to_lowercase()
                        ),
                        Severity::Warning,
                        source.clone(),
                    )
                    .value(Quantity::count(n as f64))
                    .detail(scan.state.clone().unwrap_or_default()),
                );
            }
            if let (Some(size), Some(alloc)) = (p.size.filter(|s| *s > 0), p.allocated) {
                let percent = 100.0 * alloc as f64 / size as f64;
                if let Some(severity) = space_severity(percent, None) {
                    facts.push(
                        Fact::new(
                            FactClass::Exhaustion,
                            self.name(),
                            pool_entity(&p.name),
                            "space used",
                            severity,
                            source.clone(),
                        )
                        .value(Quantity::percent(percent))
                        .limit(Quantity::bytes(size as f64))
                        .detail(format!(
                            "{} free",
                            Quantity::bytes(size.saturating_sub(alloc) as f64)
                        )),
                    );
                }
            }
        }
        Ok(sorted(facts))
    }
}

pub struct TruenasAlerts(pub Arc<TruenasClient>);

#[async_trait]
impl Analyzer for TruenasAlerts {
    fn name(&self) -> &'static str {
        "truenas_alerts"
    }

    async fn run(&self, _: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let mut facts = Vec::new();
        for a in self.0.alerts().await?.into_iter().filter(|a| !a.dismissed) {
            let severity = match a.level.as_str() {
                "CRITICAL" | "ALERT" | "EMERGENCY" => Severity::Critical,
                "WARNING" | "ERROR" => Severity::Warning,
                _ => continue,
            };
            let mut labels = BTreeMap::from([
                ("klass".to_string(), a.klass.clone()),
                ("level".to_string(), a.level.clone()),
            ]);
            // What the alert is about (`volume`, `disk`, …), when the args say it plainly.
            if let Some(Value::Object(args)) = &a.args {
                for (k, v) in args.iter().take(8) {
                    let v = match v {
                        Value::String(s) => s.clone(),
                        Value::Number(n) => n.to_string(),
                        _ => continue,
                    };
                    labels.entry(k.clone()).or_insert(v);
                }
            }
            let text = a.formatted.clone().or(a.text.clone()).unwrap_or_default();
            facts.push(
                Fact::new(
                    FactClass::Appliance,
                    self.name(),
                    Entity::new("alert", a.klass.clone()).with_labels(labels),
                    format!("{} alert", a.level),
                    severity,
                    Source::new("truenas_alerts", json!({})),
                )
                .since(
                    a.datetime
                        .and_then(|d| DateTime::from_timestamp_millis(d.millis)),
                )
                .detail(text),
            );
        }
        Ok(sorted(facts))
    }
}

pub struct TruenasDisks(pub Arc<TruenasClient>);

/// `Ok(None)` for an endpoint this TrueNAS does not have.
pub(crate) fn optional<T>(r: Result<T, UpstreamError>) -> Result<Option<T>, UpstreamError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(UpstreamError::Status {
            status: 404 | 405, ..
        }) => Ok(None),
        Err(e) => Err(e),
    }
}

#[async_trait]
impl Analyzer for TruenasDisks {
    fn name(&self) -> &'static str {
        "truenas_disks"
    }

    async fn run(&self, _: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let disks = self.0.disks().await?;
        let info = |name: &str| disks.iter().find(|d| d.name == name);
        let source = Source::new("truenas_disks", json!({}));
        let mut facts = Vec::new();
        for r in optional(self.0.smart_results().await)?.unwrap_or_default() {
            // smartctl lists the newest self-test first.
            let Some(t) = r.tests.first() else {
                continue;
            };
            if matches!(t.status.as_str(), "SUCCESS" | "RUNNING" | "ABORTED" | "") {
                continue;
            }
            let mut detail = format!(
                "{}: {}",
                t.description,
                t.status_verbose.as_deref().unwrap_or(&t.status)
            );
            if let Some(h) = t.lifetime {
                detail.push_str(&format!(" at {h} power-on hours"));
            }
            facts.push(
                Fact::new(
                    FactClass::Appliance,
                    self.name(),
                    disk_entity(&r.disk, info(&r.disk), None),
                    format!("SMART test {}", t.status),
                    Severity::Critical,
                    source.clone(),
                )
                .detail(detail),
            );
        }
        for (name, temp) in optional(self.0.temperatures().await)?.unwrap_or_default() {
            let Some(temp) = temp.filter(|t| t.is_finite()) else {
                continue;
            };
            let d = info(&name);
            let solid = d
                .and_then(|d| d.kind.as_deref())
                .is_some_and(|k| k != "HDD");
            let (warn, crit) = match solid {
                true => (SSD_WARN_C, SSD_CRIT_C),
                false => (HDD_WARN_C, HDD_CRIT_C),
            };
            let severity = match temp {
                t if t >= crit => Severity::Critical,
                t if t >= warn => Severity::Warning,
                _ => continue,
            };
            facts.push(
                Fact::new(
                    FactClass::Appliance,
                    self.name(),
                    disk_entity(&name, d, None),
                    "temperature °C",
                    severity,
                    source.clone(),
                )
                .value(Quantity::new(temp, Unit::Plain))
                .limit(Quantity::new(warn, Unit::Plain)),
            );
        }
        Ok(sorted(facts))
    }
}
