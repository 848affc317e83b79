//! `proxmox_balloon`: Proxmox VE VMs whose memory the balloon holds below what they were
//! configured with, and that run near that smaller size. PVE's auto-ballooning (pvestatd)
//! takes memory back from every running VM that has a balloon minimum (`balloon:` below
//! `memory:` in its config) while the host's memory use is above the node's
//! `ballooning-target` (80 % unless set), down to that minimum, weighted by `shares:`; a
//! `balloon` monitor command sets a target by hand. The guest then sees less RAM: its page
//! cache goes first, then it swaps or its OOM killer runs, while the host's own graphs look
//! merely busy.
//!
//! Read from the `full=1` guest list every Proxmox analyzer reads (the same fields as
//! `GET /nodes/{node}/qemu/{vmid}/status/current`: `balloon` is QEMU's balloon target,
//! `maxmem` the configured memory, `ballooninfo` QEMU's `query-balloon` whose `total_mem -
//! free_mem` is what the guest uses, `balloon_min`/`shares` from the config), with
//! `status/current` only for a VM the list gave without its run state, the VM's config only
//! when the list lacks its minimum, the node's `ballooning-target` and its memory history
//! (since when it is above the target) only for a node with a VM held down. Each read is
//! capped per sweep and a failed one is left out.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::DateTime;
use serde_json::{Value, json};

use super::proxmox::{guest_entity_of, node_entity};
use super::{
    AnalyzeError, Analyzer, Fact, FactClass, Quantity, Scope, Severity, Source, human_bytes,
    keep_most_severe, round_sig,
};
use crate::integrations::proxmox::{ProxmoxClient, PveGuest, PveNode};

/// A balloon target at most this share of the configured memory is held down (a few
/// percent is the balloon driver's own slack, not the host taking memory back)…
const HELD_SHARE: f64 = 0.9;
/// …and at least this far below it.
const MIN_SHRINK_BYTES: u64 = 256 << 20;
/// Share of its balloon target a guest uses from which it is short of memory, and
/// critical: the thresholds of a container near its memory limit (a balloon target is the
/// guest's limit).
const WARN_PERCENT: f64 = 85.0;
const CRIT_PERCENT: f64 = 95.0;
/// PVE's auto-ballooning target when the node's config sets none (`ballooning-target`).
const DEFAULT_TARGET_PERCENT: f64 = 80.0;
/// A target within this of the minimum is at the minimum (the balloon moves in steps).
const AT_MINIMUM_BYTES: u64 = 64 << 20;
/// Most `status/current`, config and node reads per sweep.
const MAX_STATUS_LOOKUPS: usize = 8;
const MAX_CONFIG_LOOKUPS: usize = 8;
const MAX_NODE_LOOKUPS: usize = 4;
/// Most VMs of one node looked at (a huge list is cut).
const MAX_GUESTS_PER_NODE: usize = 1000;
const MAX_FACTS: usize = 12;

pub struct ProxmoxBalloon(pub Arc<ProxmoxClient>);

/// A running VM's memory as its balloon sees it.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Held {
    /// Configured memory (`maxmem`, QEMU's `max_mem`).
    pub maxmem: u64,
    /// The balloon target (`balloon`, QEMU's `actual`).
    pub target: u64,
    /// What the guest uses (`total_mem - free_mem` of its balloon driver's statistics).
    pub used: Option<u64>,
    /// The configured balloon minimum and auto-ballooning weight.
    pub minimum: Option<u64>,
    pub shares: Option<u64>,
}

/// The node a VM runs on, as far as ballooning goes.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct HostMemory {
    pub used_percent: Option<f64>,
    pub target_percent: f64,
    /// Since when its memory use has been above the target (epoch seconds).
    pub above_since: Option<i64>,
}

/// A number of `v`'s `key`, a JSON number or a numeric string.
fn number(v: &Value, key: &str) -> Option<f64> {
    match v.get(key)? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
    .filter(|n: &f64| n.is_finite() && *n >= 0.0)
}

/// The VM's memory when its balloon holds it down (a running VM whose target is at most
/// [`HELD_SHARE`] of its configured memory and [`MIN_SHRINK_BYTES`] below it).
pub(super) fn held(g: &PveGuest) -> Option<Held> {
    if g.status != "running" {
        return None;
    }
    let info = g.ballooninfo.as_ref();
    let target = g
        .balloon
        .or_else(|| info.and_then(|i| number(i, "actual")).map(|n| n as u64))?;
    let maxmem = info
        .and_then(|i| number(i, "max_mem"))
        .map(|n| n as u64)
        .or(g.maxmem)
        .filter(|m| *m > 0)?;
    let shrink = maxmem.checked_sub(target)?;
    if (target as f64) > HELD_SHARE * maxmem as f64 || shrink < MIN_SHRINK_BYTES {
        return None;
    }
    let reported = info.and_then(|i| {
        let total = number(i, "total_mem")?;
        let free = number(i, "free_mem")?;
        (total >= free).then_some((total - free) as u64)
    });
    // Without the driver's statistics PVE's `mem` is QEMU's resident share of `maxmem`, a
    // host-side estimate that reads a shrunken guest as full: left out.
    Some(Held {
        maxmem,
        target,
        used: reported,
        minimum: g.balloon_min,
        shares: g.shares,
    })
}

fn percent(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| 100.0 * part as f64 / whole as f64)
}

/// How bad `h` is, and what the fact says of it: the target against the configured memory,
/// what the guest uses of it, and why it is held (the host above its auto-ballooning
/// target, the configured minimum, a target set by hand).
pub(super) fn judge(h: &Held, node: &str, host: &HostMemory) -> (Severity, String) {
    let use_percent = h.used.and_then(|u| percent(u, h.target));
    let severity = match use_percent {
        Some(p) if p >= CRIT_PERCENT => Severity::Critical,
        Some(p) if p >= WARN_PERCENT => Severity::Warning,
        _ => Severity::Info,
    };
    let share = percent(h.target, h.maxmem).unwrap_or(0.0);
    let mut parts = vec![format!(
        "balloon target {} of {} configured ({} %)",
        human_bytes(h.target as f64),
        human_bytes(h.maxmem as f64),
        round_sig(share)
    )];
    match (h.used, use_percent) {
        (Some(u), Some(p)) => parts.push(format!(
            "the guest uses {} of it ({} %)",
            human_bytes(u as f64),
            round_sig(p)
        )),
        _ => parts.push("its balloon driver reports no memory statistics".to_string()),
    }
    let target = round_sig(host.target_percent);
    let above = host.used_percent.is_some_and(|p| p >= host.target_percent);
    let host_text = host.used_percent.map(|p| {
        let since = host
            .above_since
            .and_then(|s| DateTime::from_timestamp(s, 0))
            .filter(|_| above)
            .map(|t| format!(" since {}", t.format("%Y-%m-%d %H:%M UTC")))
            .unwrap_or_default();
        let side = if above { "above" } else { "below" };
        format!(
            "host {node} {} % memory used, {side} its auto-ballooning target {target} %{since}",
            round_sig(p)
        )
    });
    let at_minimum = h
        .minimum
        .is_some_and(|m| h.target <= m.saturating_add(AT_MINIMUM_BYTES));
    let why = match (h.minimum, h.shares) {
        (None, _) => "no balloon minimum is configured, so not auto-ballooning: a target set \
                      by hand (monitor `balloon`)"
            .to_string(),
        (Some(m), Some(0)) => format!(
            "shares 0 keeps auto-ballooning from giving it memory back (balloon minimum {})",
            human_bytes(m as f64)
        ),
        (Some(m), _) if at_minimum => format!(
            "at its configured balloon minimum {} (balloon: below memory:)",
            human_bytes(m as f64)
        ),
        (Some(m), _) => format!(
            "auto-ballooning took it down toward its minimum {}",
            human_bytes(m as f64)
        ),
    };
    parts.push(why);
    parts.extend(host_text);
    (severity, parts.join("; "))
}

/// When the memory use of a node's history (`GET /nodes/{node}/rrddata`: `time`,
/// `memused`, `memtotal`) last rose to `target_percent` and stayed there: the first point
/// of its last run at or above it (`None` when the last point is below or the run fills
/// the whole history).
pub(super) fn above_since(points: &[Value], target_percent: f64) -> Option<i64> {
    let mut since = None;
    let mut below_seen = false;
    let mut samples: Vec<(i64, f64)> = points
        .iter()
        .filter_map(|p| {
            let t = p.get("time")?.as_i64()?;
            let used = number(p, "memused")?;
            let total = number(p, "memtotal").filter(|t| *t > 0.0)?;
            Some((t, 100.0 * used / total))
        })
        .collect();
    samples.sort_by_key(|(t, _)| *t);
    for (t, p) in samples {
        match p >= target_percent {
            true if since.is_none() => since = Some(t),
            true => {}
            false => {
                below_seen = true;
                since = None;
            }
        }
    }
    since.filter(|_| below_seen)
}

/// Reads left in one run.
struct Budget {
    status: usize,
    config: usize,
    node: usize,
}

impl ProxmoxBalloon {
    /// The VMs of `node` (the list, each VM listed without its run state read again).
    async fn vms(&self, node: &str, budget: &mut Budget) -> Result<Vec<PveGuest>, AnalyzeError> {
        let mut out = Vec::new();
        let guests = self.0.guests(node).await?;
        for (kind, g) in guests.into_iter().take(MAX_GUESTS_PER_NODE) {
            if kind != "qemu" || g.status != "running" {
                continue;
            }
            let id = g.id();
            let plain = g.qmpstatus.is_none() && g.balloon.is_none();
            if plain && budget.status > 0 && id.chars().all(|c| c.is_ascii_digit()) {
                budget.status -= 1;
                if let Ok(mut full) = self.0.qemu_status(node, &id).await {
                    full.vmid = g.vmid.clone();
                    full.name = full.name.or(g.name);
                    out.push(full);
                    continue;
                }
            }
            out.push(g);
        }
        Ok(out)
    }

    /// The minimum and shares of a VM whose listing lacks them, from its config.
    async fn config(&self, node: &str, id: &str, h: &mut Held) {
        let path = format!("nodes/{node}/qemu/{id}/config");
        let Ok(cfg) = self.0.api().get::<Value>(&path, &[]).await else {
            return;
        };
        // `balloon: 0` is no balloon device; a value is the minimum in MiB.
        h.minimum = number(&cfg, "balloon")
            .filter(|m| *m > 0.0)
            .map(|m| (m as u64).saturating_mul(1 << 20));
        h.shares = number(&cfg, "shares").map(|s| s as u64).or(h.shares);
    }

    /// The node's memory use, its auto-ballooning target and since when it is above it.
    async fn host(&self, n: &PveNode, budget: &mut Budget) -> HostMemory {
        let used_percent = match (n.mem, n.maxmem) {
            (Some(u), Some(t)) => percent(u, t),
            _ => None,
        };
        let mut host = HostMemory {
            used_percent,
            target_percent: DEFAULT_TARGET_PERCENT,
            above_since: None,
        };
        if budget.node == 0 {
            return host;
        }
        budget.node -= 1;
        let config = format!("nodes/{}/config", n.node);
        if let Ok(cfg) = self.0.api().get::<Value>(&config, &[]).await
            && let Some(t) = number(&cfg, "ballooning-target").filter(|t| *t <= 100.0)
        {
            host.target_percent = t;
        }
        if used_percent.is_some_and(|p| p >= host.target_percent) {
            let path = format!("nodes/{}/rrddata", n.node);
            let q = [("timeframe", "day".to_string()), ("cf", "AVERAGE".into())];
            if let Ok(points) = self.0.api().get::<Vec<Value>>(&path, &q).await {
                host.above_since = above_since(&points, host.target_percent);
            }
        }
        host
    }
}

#[async_trait]
impl Analyzer for ProxmoxBalloon {
    fn name(&self) -> &'static str {
        "proxmox_balloon"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let mut budget = Budget {
            status: MAX_STATUS_LOOKUPS,
            config: MAX_CONFIG_LOOKUPS,
            node: MAX_NODE_LOOKUPS,
        };
        let mut facts = Vec::new();
        let mut failed = None;
        let nodes = self.0.nodes().await?;
        for n in nodes.iter().filter(|n| n.status == "online") {
            let vms = match self.vms(&n.node, &mut budget).await {
                Ok(v) => v,
                Err(e) => {
                    failed.get_or_insert(format!("guests of {}: {e}", n.node));
                    continue;
                }
            };
            let mut found = Vec::new();
            for g in &vms {
                let Some(mut h) = held(g) else { continue };
                let id = g.id();
                if h.minimum.is_none()
                    && budget.config > 0
                    && id.chars().all(|c| c.is_ascii_digit())
                {
                    budget.config -= 1;
                    self.config(&n.node, &id, &mut h).await;
                }
                found.push((g, h));
            }
            if found.is_empty() {
                continue;
            }
            let host = self.host(n, &mut budget).await;
            for (g, h) in found {
                let id = g.id();
                let entity = guest_entity_of(&n.node, "qemu", &id, g.name.as_deref());
                let (severity, detail) = judge(&h, &n.node, &host);
                if severity == Severity::Info && !scope.is_about(&entity) {
                    continue;
                }
                let class = match severity {
                    Severity::Info => FactClass::Context,
                    _ => FactClass::Exhaustion,
                };
                let mut fact = Fact::new(
                    class,
                    self.name(),
                    entity,
                    "memory held down by the balloon",
                    severity,
                    Source::new("proxmox_guests", json!({ "node": n.node })),
                )
                .related(node_entity(&n.node))
                .limit(Quantity::bytes(h.target as f64))
                .since(
                    host.above_since
                        .and_then(|s| DateTime::from_timestamp(s, 0)),
                )
                .detail(format!(
                    "{detail}; GET /nodes/{}/qemu/{id}/status/current",
                    n.node
                ));
                if let Some(p) = h.used.and_then(|u| percent(u, h.target)) {
                    fact = fact.value(Quantity::percent(p));
                }
                facts.push(fact);
            }
        }
        if let (true, Some(why)) = (facts.is_empty(), failed) {
            return Err(AnalyzeError::Other(why));
        }
        keep_most_severe(&mut facts, MAX_FACTS);
        Ok(facts)
    }
}

#[cfg(test)]
mod tests;
