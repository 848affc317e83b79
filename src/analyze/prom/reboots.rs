//! `host_reboots`: hosts that booted in the window, read from the boot time the exporters
//! publish: node_exporter's `node_boot_time_seconds`, windows_exporter's
//! `windows_system_boot_time_timestamp_seconds` (`windows_system_boot_time_timestamp` in
//! 0.31, `windows_system_system_up_time` before: each a Unix time despite the name), and
//! the SNMP host uptimes `hrSystemUptime` and `sysUpTime` (hundredths of a second since
//! boot, so the boot time is the sample's time less the uptime; their 32-bit wrap after
//! about 497 days is not a boot).
//!
//! One range query per family present reads every host's boot time over the window; a
//! host whose boot time moved forward (by more than [`JITTER_SECS`]: the kernel's boot
//! time wobbles by a second) rebooted at its new value, as often as it moved. A target
//! that was down across the reboot has a gap in its series, and the values either side of
//! it are one reboot. A host whose series begins in the window with a boot time inside it
//! is a reboot only when its boot time a day before the window's start (one
//! `last_over_time` per family) was an older one: a host scraped for the first time is
//! not a reboot. The fact itself ([`reboot_fact`]) is shared with the Proxmox nodes,
//! whose uptime tells the same.

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::history::time_of;
use super::{Prom, host, identity, labels_map, pick, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source,
};
use crate::integrations::prometheus::Labels;

/// A boot time that moves by less than this is the same boot.
pub(super) const JITTER_SECS: f64 = 60.0;
/// Reboots in one window from which a host is critical (it keeps going down).
const CRIT_REBOOTS: usize = 3;
/// Points of the boot-time range over the window.
const POINTS: u32 = 240;
/// How far before the window's start the boot time of a host first seen in the window is
/// looked for.
const EARLIER: &str = "1d";

/// A published boot time: its metric, and the divisor of an uptime (`None`: the value is
/// the boot time itself).
pub(super) struct Family {
    pub metric: &'static str,
    pub uptime_divisor: Option<f64>,
}

/// The families read, in the order a host's fact is taken from (one fact per host).
pub(super) const FAMILIES: [Family; 6] = [
    Family {
        metric: "node_boot_time_seconds",
        uptime_divisor: None,
    },
    Family {
        metric: "windows_system_boot_time_timestamp_seconds",
        uptime_divisor: None,
    },
    Family {
        metric: "windows_system_boot_time_timestamp",
        uptime_divisor: None,
    },
    Family {
        metric: "windows_system_system_up_time",
        uptime_divisor: None,
    },
    Family {
        metric: "hrSystemUptime",
        uptime_divisor: Some(100.0),
    },
    Family {
        metric: "sysUpTime",
        uptime_divisor: Some(100.0),
    },
];

impl Family {
    /// The boot time as PromQL over `sel` (`{}` for every series).
    pub fn expr(&self, sel: &str) -> String {
        match self.uptime_divisor {
            None => format!("{}{sel}", self.metric),
            Some(d) => format!("timestamp({m}{sel}) - {m}{sel} / {d}", m = self.metric),
        }
    }
}

pub struct HostReboots(pub Prom);

#[async_trait]
impl Analyzer for HostReboots {
    fn name(&self) -> &'static str {
        "host_reboots"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let names = self.0.metric_names(scope).await?;
        let mut facts = Vec::new();
        let mut hosts: HashSet<String> = HashSet::new();
        for family in FAMILIES
            .iter()
            .filter(|f| names.iter().any(|n| n == f.metric))
        {
            for fact in self.family(family, scope).await? {
                let host = fact.entity.name.clone();
                if hosts.insert(host) {
                    facts.push(fact);
                }
            }
        }
        facts.sort_by_key(|f| std::cmp::Reverse(f.since));
        Ok(facts)
    }
}

impl HostReboots {
    /// The reboots one family shows.
    async fn family(&self, family: &Family, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let start = scope.window_start.timestamp() as f64;
        let series = self.0.range(&family.expr(""), scope, POINTS).await?;
        let mut found = Vec::new();
        let mut first_seen = Vec::new();
        for s in series {
            let Some(&(_, boot)) = s.values.last() else {
                continue;
            };
            if !boot.is_finite() || boot <= start {
                continue;
            }
            let jumps = boots(&s.values, family.uptime_divisor.is_some());
            if jumps == 0 {
                first_seen.push((identity(&s.metric), boot));
            } else {
                found.push((identity(&s.metric), boot, jumps));
            }
        }
        // A series that began in the window: a reboot only when it had an older boot.
        if !first_seen.is_empty() && family.uptime_divisor.is_none() {
            let earlier = format!("last_over_time({}[{EARLIER}])", family.metric);
            let before: HashMap<Labels, f64> = self
                .0
                .vector_at(&earlier, scope.window_start)
                .await?
                .into_iter()
                .map(|s| (identity(&s.metric), s.value))
                .collect();
            for (labels, boot) in first_seen {
                if before
                    .get(&labels)
                    .is_some_and(|b| b.is_finite() && boot - b > JITTER_SECS)
                {
                    found.push((labels, boot, 1));
                }
            }
        }
        let mut facts = Vec::new();
        for (labels, boot, count) in found {
            let Some(at) = time_of(boot).filter(|t| *t <= scope.now) else {
                continue;
            };
            let Some(name) = host(&labels) else {
                continue;
            };
            let sel = selector(pick(&labels, &["instance", "job"]));
            let entity = Entity::new("host", name.clone())
                .on_host(Some(name))
                .with_labels(labels_map(&labels));
            facts.push(reboot_fact(
                "host_reboots",
                entity,
                at,
                count,
                scope.now,
                Source::promql(&family.expr(&sel)),
            ));
        }
        Ok(facts)
    }
}

/// How far an SNMP uptime's wrap moves its boot time forward: TimeTicks are 32 bits of
/// hundredths of a second (about 497 days).
pub(super) const TIMETICKS_WRAP_SECS: f64 = 4_294_967_296.0 / 100.0;

/// How many times the boot time in `values` moved forward by more than [`JITTER_SECS`]
/// (for an uptime in TimeTicks, `wraps`: a move by one wrap is the counter, not a boot).
fn boots(values: &[(f64, f64)], wraps: bool) -> usize {
    values
        .windows(2)
        .map(|w| w[1].1 - w[0].1)
        .filter(|d| *d > JITTER_SECS)
        .filter(|d| !(wraps && (d - TIMETICKS_WRAP_SECS).abs() <= JITTER_SECS))
        .count()
}

/// The fact of a host that booted at `at`, `count` times in the window: "rebooted at 14:02
/// UTC (up 20 min)" since the boot; a warning, critical from [`CRIT_REBOOTS`] on.
pub(crate) fn reboot_fact(
    analyzer: &str,
    entity: Entity,
    at: DateTime<Utc>,
    count: usize,
    now: DateTime<Utc>,
    source: Source,
) -> Fact {
    let up = crate::analyze::human_seconds((now - at).num_seconds().max(0) as f64);
    let when = at.format("%H:%M UTC");
    let what = match count {
        0 | 1 => format!("rebooted at {when} (up {up})"),
        n => format!("rebooted {n} times, last at {when} (up {up})"),
    };
    let severity = if count >= CRIT_REBOOTS {
        Severity::Critical
    } else {
        Severity::Warning
    };
    let mut fact =
        Fact::new(FactClass::Change, analyzer, entity, what, severity, source).since(Some(at));
    if count > 1 {
        fact = fact.value(Quantity::count(count as f64));
    }
    fact
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_boot_time_counts_its_forward_moves_beyond_the_kernels_wobble() {
        let v = [
            (0.0, 1000.0),
            (60.0, 1001.0),
            (120.0, 5000.0),
            (180.0, 4999.0),
            (240.0, 9000.0),
        ];
        assert_eq!(boots(&v, false), 2);
        assert_eq!(boots(&v[..2], false), 0);
        assert_eq!(boots(&[], false), 0);
        let wrapped = [(0.0, 1000.0), (60.0, 1000.0 + TIMETICKS_WRAP_SECS + 0.5)];
        assert_eq!(boots(&wrapped, true), 0, "an SNMP uptime that wrapped");
        assert_eq!(boots(&wrapped, false), 1);
    }

    #[test]
    fn an_uptime_family_reads_as_the_samples_time_less_the_uptime() {
        assert_eq!(
            FAMILIES[4].expr("{instance=\"sw\"}"),
            "timestamp(hrSystemUptime{instance=\"sw\"}) - hrSystemUptime{instance=\"sw\"} / 100"
        );
        assert_eq!(FAMILIES[0].expr("{}"), "node_boot_time_seconds{}");
    }

    #[test]
    fn repeated_reboots_are_critical_and_counted() {
        let now = Utc::now();
        let at = now - chrono::TimeDelta::minutes(20);
        let f = reboot_fact(
            "t",
            Entity::new("host", "h"),
            at,
            1,
            now,
            Source::promql("x"),
        );
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.what.ends_with("(up 20 min)"), "{}", f.what);
        assert_eq!(f.value, None);
        let f = reboot_fact(
            "t",
            Entity::new("host", "h"),
            at,
            3,
            now,
            Source::promql("x"),
        );
        assert_eq!(f.severity, Severity::Critical);
        assert!(f.what.starts_with("rebooted 3 times"), "{}", f.what);
    }
}
