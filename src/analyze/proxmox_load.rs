//! A Proxmox VE node whose CPUs are busy names what keeps them busy, for `proxmox_guests`:
//! its CPU count, the vCPUs its running guests were given (over-committed when they are
//! more than its CPUs) and its busiest running guests by CPUs used (a guest's `cpu`, the
//! share of its own vCPUs it keeps busy, times its `cpus`), each with how long it has run.
//! A slow guest or one whose CPU time is stolen is explained by another guest on the same
//! node: the fact names those guests, so a trigger about one of them finds it.

use serde_json::json;

use super::{Entity, Fact, FactClass, Quantity, Severity, Source, human_seconds, round_sig};
use crate::integrations::proxmox::{PveGuest, PveNode};

/// Share of a node's CPUs busy from which it is saturated (a warning)…
pub const BUSY: f64 = 0.9;
/// …and from which it is critical (guests wait for CPU time).
pub const VERY_BUSY: f64 = 0.98;
/// Most guests named.
const SHOWN: usize = 3;

/// The saturation fact of `node` (as `entity`) when its CPUs are at least [`BUSY`] busy; `guests` are its
/// guests as `ProxmoxClient::guests` lists them, `window_secs` the sweep's window (a guest
/// up for less than that started during it, and says so).
pub fn busy_node(
    analyzer: &str,
    entity: Entity,
    node: &PveNode,
    guests: &[(&str, PveGuest)],
    window_secs: i64,
) -> Option<Fact> {
    let busy = node.cpu.filter(|c| c.is_finite() && *c >= BUSY)?;
    let running: Vec<&(&str, PveGuest)> = guests
        .iter()
        .filter(|(_, g)| g.status == "running")
        .collect();
    let vcpus: f64 = running
        .iter()
        .filter_map(|(_, g)| g.cpus.filter(|c| c.is_finite() && *c > 0.0))
        .sum();
    let mut detail = match node.maxcpu.filter(|n| *n > 0) {
        Some(n) => {
            let over = match vcpus > n as f64 {
                true => " (over-committed)",
                false => "",
            };
            format!("{n} CPUs; guests' vCPUs {} of {n}{over}", round_sig(vcpus))
        }
        None => format!("guests' vCPUs {}", round_sig(vcpus)),
    };
    let mut used: Vec<(f64, &str, &PveGuest)> = running
        .iter()
        .filter_map(|(kind, g)| {
            let u = g.cpu? * g.cpus?;
            (u.is_finite() && u > 0.0).then_some((u, *kind, g))
        })
        .collect();
    used.sort_by(|a, b| b.0.total_cmp(&a.0));
    let named: Vec<String> = used
        .iter()
        .take(SHOWN)
        .map(|(_, kind, g)| guest_text(kind, g, window_secs))
        .collect();
    match named.is_empty() {
        true => detail.push_str("; no running guest reports CPU use"),
        false => {
            detail.push_str("; busiest running guests: ");
            detail.push_str(&named.join("; "));
        }
    }
    let severity = match busy >= VERY_BUSY {
        true => Severity::Critical,
        false => Severity::Warning,
    };
    Some(
        Fact::new(
            FactClass::Saturation,
            analyzer,
            entity,
            "CPU busy",
            severity,
            Source::new("proxmox_nodes", json!({})),
        )
        .value(Quantity::percent(100.0 * busy))
        .detail(detail),
    )
}

/// "build-runner (VM 118) 8 vCPUs at 97 %, started 52 min ago".
fn guest_text(kind: &str, g: &PveGuest, window_secs: i64) -> String {
    let id = g.id();
    let name = g.name.as_deref().filter(|n| !n.is_empty()).unwrap_or(&id);
    let kind = if kind == "lxc" { "CT" } else { "VM" };
    let cpus = g.cpus.map_or_else(|| "?".into(), round_sig);
    let at = Quantity::percent(100.0 * g.cpu.unwrap_or(0.0));
    let mut s = format!("{name} ({kind} {id}) {cpus} vCPUs at {at}");
    match g.uptime {
        Some(u) if i64::try_from(u).is_ok_and(|u| u < window_secs) => {
            s.push_str(&format!(", started {} ago", human_seconds(u as f64)));
        }
        Some(u) => s.push_str(&format!(", up {}", human_seconds(u as f64))),
        None => {}
    }
    s
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn node(cpu: f64, maxcpu: Option<u64>) -> PveNode {
        serde_json::from_value(json!({"node": "hv-east-2", "status": "online", "cpu": cpu,
            "maxcpu": maxcpu, "mem": 1, "maxmem": 2, "uptime": 4_000_000}))
        .unwrap()
    }

    fn entity() -> Entity {
        Entity::new("node", "hv-east-2")
    }

    fn guest(v: Value) -> PveGuest {
        serde_json::from_value(v).unwrap()
    }

    /// A 16-CPU node running a CI runner that started 52 minutes ago on 12 vCPUs, two steady
    /// services, an idle container and a stopped VM given 8 vCPUs.
    fn guests() -> Vec<(&'static str, PveGuest)> {
        vec![
            (
                "qemu",
                guest(
                    json!({"vmid": 131, "name": "ci-runner-3", "status": "running",
                "cpu": 0.96, "cpus": 12, "uptime": 52 * 60}),
                ),
            ),
            (
                "qemu",
                guest(
                    json!({"vmid": 120, "name": "orders-db", "status": "running",
                "cpu": 0.41, "cpus": 4, "uptime": 19 * 86400}),
                ),
            ),
            (
                "lxc",
                guest(
                    json!({"vmid": "305", "name": "metrics-relay", "status": "running",
                "cpu": 0.35, "cpus": 2, "uptime": 6 * 86400}),
                ),
            ),
            (
                "lxc",
                guest(
                    json!({"vmid": "306", "name": "dns-cache", "status": "running",
                "cpu": 0.01, "cpus": 1, "uptime": 6 * 86400}),
                ),
            ),
            (
                "qemu",
                guest(
                    json!({"vmid": 140, "name": "win-build", "status": "stopped",
                "cpu": 0, "cpus": 8, "uptime": 0}),
                ),
            ),
        ]
    }

    #[test]
    fn a_busy_node_names_its_busiest_running_guests_and_that_its_vcpus_are_over_committed() {
        let f = busy_node(
            "proxmox_guests",
            entity(),
            &node(0.953, Some(16)),
            &guests(),
            3900,
        )
        .unwrap();
        assert_eq!(
            (f.class, f.severity, f.what.as_str()),
            (FactClass::Saturation, Severity::Warning, "CPU busy")
        );
        assert!((f.value.unwrap().value - 95.3).abs() < 1e-9);
        assert_eq!(
            (f.entity.kind.as_str(), f.entity.name.as_str()),
            ("node", "hv-east-2")
        );
        assert_eq!(
            f.detail.as_deref(),
            Some(
                "16 CPUs; guests' vCPUs 19 of 16 (over-committed); busiest running guests: \
                 ci-runner-3 (VM 131) 12 vCPUs at 96 %, started 52 min ago; orders-db (VM \
                 120) 4 vCPUs at 41 %, up 19.0 days; metrics-relay (CT 305) 2 vCPUs at 35 %, up 6.0 days"
            )
        );
    }

    #[test]
    fn a_node_below_nine_tenths_busy_says_nothing_and_one_at_98_percent_is_critical() {
        assert!(busy_node("p", entity(), &node(0.89, Some(16)), &guests(), 3600).is_none());
        assert!(busy_node("p", entity(), &node(f64::NAN, Some(16)), &guests(), 3600).is_none());
        let f = busy_node("p", entity(), &node(0.985, Some(16)), &guests(), 3600).unwrap();
        assert_eq!(f.severity, Severity::Critical);
    }

    #[test]
    fn a_node_with_room_for_its_guests_vcpus_is_not_called_over_committed() {
        let f = busy_node("p", entity(), &node(0.92, Some(64)), &guests(), 3600).unwrap();
        let d = f.detail.unwrap();
        assert!(
            d.starts_with("64 CPUs; guests' vCPUs 19 of 64; busiest"),
            "{d}"
        );
    }

    #[test]
    fn a_busy_node_whose_guests_report_no_cpu_use_says_so_and_a_missing_cpu_count_is_left_out() {
        let idle = vec![
            (
                "qemu",
                guest(json!({"vmid": 1, "status": "running", "cpus": 2.5, "uptime": 9})),
            ),
            (
                "lxc",
                guest(json!({"vmid": 2, "name": "", "status": "running", "cpu": 0.0})),
            ),
        ];
        let f = busy_node("p", entity(), &node(0.97, None), &idle, 3600).unwrap();
        assert_eq!(
            f.detail.as_deref(),
            Some("guests' vCPUs 2.5; no running guest reports CPU use")
        );
        let unnamed = vec![(
            "lxc",
            guest(json!({"vmid": 7, "name": "", "status": "running", "cpu": 0.5, "cpus": 2})),
        )];
        let f = busy_node("p", entity(), &node(0.97, Some(4)), &unnamed, 3600).unwrap();
        assert!(
            f.detail
                .unwrap()
                .ends_with("busiest running guests: 7 (CT 7) 2 vCPUs at 50 %"),
        );
    }
}
