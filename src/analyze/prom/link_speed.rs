//! `link_speed`: a network link that came up slower than it ran (node_exporter's
//! `node_network_speed_bytes{device}`: a cable, a switch port or an autonegotiation that
//! settled on 100 Mbit/s where the link ran at 1 Gbit/s). A device whose speed now is below
//! the fastest it ran at over the past week is told in bits per second as people say them
//! ("link 100 Mbit/s, was 1 Gbit/s"), since when (the start of its slower run), with the
//! carrier changes (`node_network_carrier_changes_total`) around that time, and, when its
//! transmit or receive rate sits near the new speed, as saturated at that ceiling. A device
//! whose speed never changed but is below the speed every one of its peers (the same device
//! name on at least [`MIN_PEERS`] other hosts of the job) runs at is told too.
//!
//! node_exporter omits the speed when the kernel does not know it and older versions write
//! `-1` Mbit/s (`-125000`): only positive speeds are read, and virtual devices (loopback,
//! container veths, bridges, tunnels) are left out by name.

use std::collections::HashMap;

use async_trait::async_trait;
use chrono::TimeDelta;

use super::{Prom, by_identity, host, identity, label, labels_map, pick, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source,
};
use crate::integrations::prometheus::Labels;

const METRIC: &str = "node_network_speed_bytes";
/// How far back the speed a device ran at is looked for.
const LOOKBACK: &str = "7d";
/// A transmit or receive rate at this share of the speed is saturated at it.
const SATURATED_SHARE: f64 = 0.8;
/// Peers (the same device on other hosts of the job) needed before a speed below all of
/// theirs stands out.
const MIN_PEERS: usize = 3;
/// Device names that are virtual: no physical link to negotiate.
const VIRTUAL_PREFIXES: [&str; 12] = [
    "lo", "veth", "docker", "br-", "virbr", "cali", "flannel", "cni", "tun", "tap", "vxlan",
    "kube-",
];
/// Most devices reported per run.
const MAX_FACTS: usize = 10;

pub struct LinkSpeed(pub Prom);

#[async_trait]
impl Analyzer for LinkSpeed {
    fn name(&self) -> &'static str {
        "link_speed"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let names = self.0.metric_names(scope).await?;
        if !names.iter().any(|n| n == METRIC) {
            return Ok(Vec::new());
        }
        let now: Vec<_> = self
            .0
            .vector(&format!("{METRIC} > 0"))
            .await?
            .into_iter()
            .filter(|s| s.value.is_finite() && !is_virtual(&label(&s.metric, "device")))
            .collect();
        let was = by_identity(
            self.0
                .vector(&format!("max_over_time({METRIC}[{LOOKBACK}])"))
                .await?,
        );
        let left = super::Lookups::default();
        let mut facts = Vec::new();
        let mut slower: Vec<(Labels, f64, Option<f64>)> = Vec::new();
        for s in &now {
            let key = identity(&s.metric);
            match was.get(&key) {
                Some(w) if *w > s.value * 1.01 => slower.push((key, s.value, Some(*w))),
                _ => {}
            }
        }
        let peer_speeds = below_peers(&now);
        for (key, speed, _) in &peer_speeds {
            if slower.iter().all(|(k, _, _)| k != key) {
                slower.push((key.clone(), *speed, None));
            }
        }
        for (key, speed, before) in slower.into_iter().take(MAX_FACTS) {
            let fact = self
                .fact(&key, speed, before, &peer_speeds, scope, &left)
                .await?;
            facts.push(fact);
        }
        Ok(facts)
    }
}

impl LinkSpeed {
    /// The fact of the device `key` at `speed` (bytes/s), which ran at `before` (`None`:
    /// it never changed, its peers run faster).
    async fn fact(
        &self,
        key: &Labels,
        speed: f64,
        before: Option<f64>,
        peers: &[(Labels, f64, f64)],
        scope: &Scope,
        left: &super::Lookups,
    ) -> Result<Fact, AnalyzeError> {
        let device = label(key, "device");
        let sel = selector(pick(key, &["instance", "job", "device"]));
        let query = format!("{METRIC}{sel}");
        let mut what = format!("link {}", bits(speed));
        let mut detail = Vec::new();
        let mut since = None;
        match before {
            Some(b) => {
                what.push_str(&format!(", was {}", bits(b)));
                since = self.0.since(left, &query, scope, |v| v < b * 0.99).await;
                if let Some(t) = since {
                    let flaps = self.carrier_changes(&sel, t).await;
                    if let Some(n) = flaps.filter(|n| *n >= 1.0) {
                        detail.push(format!(
                            "{} carrier change{} (link down and up) around {}",
                            n.round(),
                            if n.round() == 1.0 { "" } else { "s" },
                            t.format("%H:%M UTC")
                        ));
                    }
                }
            }
            None => {
                if let Some((_, _, p)) = peers.iter().find(|(k, _, _)| k == key) {
                    what.push_str(&format!(", its peers {}", bits(*p)));
                }
            }
        }
        let mut severity = Severity::Warning;
        if let Some((dir, rate)) = self.busiest(&sel).await
            && rate >= SATURATED_SHARE * speed
        {
            severity = Severity::Critical;
            what.push_str(&format!(", saturated at that ceiling ({dir})"));
            detail.push(format!(
                "{dir} {} of the link's {} ({})",
                bits(rate),
                bits(speed),
                Quantity::percent(100.0 * rate / speed)
            ));
        }
        let mut fact = Fact::new(
            FactClass::Saturation,
            self.name(),
            Entity::new("interface", device)
                .on_host(host(key))
                .with_labels(labels_map(key)),
            what,
            severity,
            Source::promql(&query),
        )
        .since(since);
        if !detail.is_empty() {
            fact = fact.detail(detail.join("; "));
        }
        Ok(fact)
    }

    /// Carrier changes of the device in the ten minutes around `at`.
    async fn carrier_changes(&self, sel: &str, at: chrono::DateTime<chrono::Utc>) -> Option<f64> {
        let end = at.checked_add_signed(TimeDelta::minutes(5))?;
        let expr = format!("increase(node_network_carrier_changes_total{sel}[10m])");
        let v = self.0.vector_at(&expr, end).await.ok()?;
        v.first().map(|s| s.value).filter(|v| v.is_finite())
    }

    /// The busier direction of the device over the last 5 minutes and its rate (bytes/s).
    async fn busiest(&self, sel: &str) -> Option<(&'static str, f64)> {
        let mut best: Option<(&'static str, f64)> = None;
        for (dir, word) in [("transmit", "transmitting"), ("receive", "receiving")] {
            let expr = format!("rate(node_network_{dir}_bytes_total{sel}[5m])");
            let Ok(v) = self.0.vector(&expr).await else {
                continue;
            };
            if let Some(r) = v.first().map(|s| s.value).filter(|r| r.is_finite())
                && best.is_none_or(|(_, b)| r > b)
            {
                best = Some((word, r));
            }
        }
        best
    }
}

/// Whether `device` is a virtual interface (no link speed of its own to negotiate).
fn is_virtual(device: &str) -> bool {
    device == "?" || VIRTUAL_PREFIXES.iter().any(|p| device.starts_with(p))
}

/// The devices whose speed is below the speed of every peer (the same device name and job
/// on at least [`MIN_PEERS`] other hosts), with their speed and the slowest peer's.
fn below_peers(now: &[crate::integrations::prometheus::Sample]) -> Vec<(Labels, f64, f64)> {
    let mut groups: HashMap<(String, String), Vec<(Labels, f64)>> = HashMap::new();
    for s in now {
        let group = (label(&s.metric, "job"), label(&s.metric, "device"));
        groups
            .entry(group)
            .or_default()
            .push((identity(&s.metric), s.value));
    }
    let mut out = Vec::new();
    for members in groups.values() {
        if members.len() <= MIN_PEERS {
            continue;
        }
        for (key, speed) in members {
            let slowest_peer = members
                .iter()
                .filter(|(k, _)| k != key)
                .map(|(_, v)| *v)
                .fold(f64::INFINITY, f64::min);
            if slowest_peer.is_finite() && slowest_peer > speed * 1.01 {
                out.push((key.clone(), *speed, slowest_peer));
            }
        }
    }
    out
}

/// A link speed given in bytes per second, in bits per second as people say it:
/// `100 Mbit/s`, `1 Gbit/s`, `2.5 Gbit/s`, `10 kbit/s`.
pub fn bits(bytes_per_second: f64) -> String {
    let b = bytes_per_second * 8.0;
    let (v, unit) = match b.abs() {
        x if x >= 1e9 => (b / 1e9, "Gbit/s"),
        x if x >= 1e6 => (b / 1e6, "Mbit/s"),
        x if x >= 1e3 => (b / 1e3, "kbit/s"),
        _ => (b, "bit/s"),
    };
    let rounded = (v * 10.0).round() / 10.0;
    if rounded.fract() == 0.0 {
        format!("{rounded:.0} {unit}")
    } else {
        format!("{rounded:.1} {unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrations::prometheus::Sample;

    #[test]
    fn speeds_read_in_bits_as_people_say_them() {
        assert_eq!(bits(125_000_000.0), "1 Gbit/s");
        assert_eq!(bits(12_500_000.0), "100 Mbit/s");
        assert_eq!(bits(312_500_000.0), "2.5 Gbit/s");
        assert_eq!(bits(1_250_000_000.0), "10 Gbit/s");
        assert_eq!(bits(1_250_000.0), "10 Mbit/s");
        assert_eq!(bits(11_875_000.0), "95 Mbit/s");
    }

    #[test]
    fn virtual_devices_are_left_out_by_name() {
        for d in ["lo", "veth1a2b", "docker0", "br-5f3e", "cali12", "?"] {
            assert!(is_virtual(d), "{d}");
        }
        for d in ["eno1", "eth0", "enp3s0f1", "bond0", "wlan0"] {
            assert!(!is_virtual(d), "{d}");
        }
    }

    #[test]
    fn a_device_below_all_its_peers_stands_out_and_a_mixed_fleet_does_not() {
        let s = |host: &str, device: &str, v: f64| Sample {
            metric: crate::analyze::prom::labels(&[
                ("instance", &format!("{host}:9100")),
                ("job", "node"),
                ("device", device),
            ]),
            value: v,
            ts: 0.0,
        };
        let gig = 125_000_000.0;
        let now = vec![
            s("a", "eno1", gig),
            s("b", "eno1", gig),
            s("c", "eno1", gig),
            s("d", "eno1", gig / 10.0),
            // Two speeds in one fleet: nobody is below all of the others.
            s("a", "eno2", gig),
            s("b", "eno2", gig),
            s("c", "eno2", gig * 10.0),
            s("d", "eno2", gig * 10.0),
        ];
        let out = below_peers(&now);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].0["instance"], "d:9100");
        assert_eq!((out[0].1, out[0].2), (gig / 10.0, gig));
        // Three hosts are too few peers.
        assert!(below_peers(&now[1..4]).is_empty());
    }
}
