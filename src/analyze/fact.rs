//! The typed result of every analyzer (and of tools that compute figures): a [`Fact`] says
//! which entity is affected, what is wrong, its value and unit, since when, how fast it
//! moves and when it reaches its limit, how bad it is, and the tool call that shows it, so
//! a person (or the model) can check it. Facts render to one line for the prompt and the
//! finding's key figures; nothing downstream parses that line back.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::quantity::{Quantity, human_seconds};

/// The failure classes the sweep covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FactClass {
    /// A resource running out (disk, inodes, memory, swap), with when.
    Exhaustion,
    /// A resource busy beyond its capacity (CPU, disk I/O, network errors).
    Saturation,
    /// Something not answering (targets down, probes failing, certificates expiring).
    Availability,
    /// Kubernetes objects in a bad state (pods, nodes, rollouts).
    Kubernetes,
    /// Appliances: Proxmox guests, backups, ZFS pools, NAS alerts.
    Appliance,
    /// Clocks out of sync.
    Time,
    /// Error bursts in logs.
    Logs,
    /// What changed in the window (versions, rollouts, restarts, reloads, tasks).
    Change,
    /// Context: not a problem, but what a comparison or a question needs.
    Context,
}

/// How bad a fact is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Info => "info",
            Self::Warning => "warning",
            Self::Critical => "critical",
        }
    }
}

/// What a fact is about: a filesystem of a host, a process, a pod, a probed URL, a guest.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Entity {
    /// What kind of thing: `filesystem`, `host`, `process`, `container`, `pod`, `target`,
    /// `probe`, `certificate`, `node`, `guest`, `backup`, `pool`, `service`, `deployment`.
    pub kind: String,
    /// Its name as the data spells it (`/var/lib/vz`, `ffmpeg`, `shop/api-7f9`).
    pub name: String,
    /// The host it lives on, when known (the host part of `instance`, a node name).
    pub host: Option<String>,
    /// The labels that identify it in the data (`instance`, `mountpoint`, `namespace`, …).
    pub labels: BTreeMap<String, String>,
}

impl Entity {
    pub fn new(kind: &str, name: impl Into<String>) -> Self {
        Self {
            kind: kind.to_string(),
            name: name.into(),
            ..Default::default()
        }
    }

    pub fn on_host(mut self, host: Option<String>) -> Self {
        self.host = host.filter(|h| !h.is_empty());
        self
    }

    pub fn with_labels(mut self, labels: BTreeMap<String, String>) -> Self {
        self.labels = labels;
        self
    }

    /// "filesystem /var/lib/vz on pve1".
    pub fn describe(&self) -> String {
        let mut s = format!("{} {}", self.kind, self.name);
        if let Some(h) = self.host.as_deref().filter(|h| *h != self.name) {
            let _ = write!(s, " on {h}");
        }
        s
    }
}

/// The tool call that shows a fact (a person or the model can make it again).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Source {
    pub tool: String,
    pub arguments: Value,
}

impl Source {
    pub fn new(tool: &str, arguments: Value) -> Self {
        Self {
            tool: tool.to_string(),
            arguments,
        }
    }

    /// The instant query `query` (`prometheus_query`).
    pub fn promql(query: &str) -> Self {
        Self::new("prometheus_query", serde_json::json!({ "query": query }))
    }
}

/// A rate of change: `value` per `per` seconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    /// The change over `per_seconds` (negative: falling).
    pub change: Quantity,
    pub per_seconds: f64,
}

impl Rate {
    /// A change per second, expressed per hour or per day, whichever reads better.
    pub fn from_per_second(per_second: f64, unit: super::Unit) -> Self {
        let per_seconds = match (per_second * 3600.0).abs() < 1.0 {
            true => 86400.0,
            false => 3600.0,
        };
        Self {
            change: Quantity::new(per_second * per_seconds, unit),
            per_seconds,
        }
    }

    /// "rising 2.0 GiB per hour".
    pub fn describe(&self) -> String {
        let word = if self.change.value < 0.0 {
            "falling"
        } else {
            "rising"
        };
        let per = if self.per_seconds >= 86400.0 {
            "day"
        } else {
            "hour"
        };
        let abs = Quantity::new(self.change.value.abs(), self.change.unit);
        format!("{word} {abs} per {per}")
    }
}

/// One finding of an analyzer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fact {
    pub class: FactClass,
    /// The analyzer (or tool) that found it.
    pub analyzer: String,
    pub entity: Entity,
    /// What is wrong, in a few words: "used", "resident memory", "down", "status code".
    pub what: String,
    pub value: Option<Quantity>,
    /// The limit the value is measured against (size, memory limit, threshold).
    pub limit: Option<Quantity>,
    pub rate: Option<Rate>,
    /// Seconds until the limit is reached at the current rate.
    pub eta_seconds: Option<f64>,
    /// What happens at the ETA: "full", "out of memory", "expires".
    pub eta_what: Option<String>,
    /// When the state began, when known.
    pub since: Option<DateTime<Utc>>,
    /// Text from upstream that explains it (a reason, an event message, a log pattern):
    /// untrusted, rendered only inside a fence.
    pub detail: Option<String>,
    pub severity: Severity,
    pub source: Source,
    /// The log line patterns (numbers and ids as placeholders) a log fact quotes: what
    /// tells two facts that quote the same lines apart from two that do not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<String>,
    /// Other entities the fact names as part of what it says (the pod that holds the
    /// volume a waiting pod needs): the ranking matches them as it matches `entity`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub related: Vec<Entity>,
    /// Figures the fact computed besides its value and limit, by name (`zfs_arc_size`,
    /// `runs_missed`): typed, so what reads facts never parses them back from the detail.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub figures: BTreeMap<String, Quantity>,
}

/// Longest detail kept in a fact's line.
const MAX_DETAIL_CHARS: usize = 360;

impl Fact {
    /// A fact with the required parts; the builders below add the rest.
    pub fn new(
        class: FactClass,
        analyzer: &str,
        entity: Entity,
        what: impl Into<String>,
        severity: Severity,
        source: Source,
    ) -> Self {
        Self {
            class,
            analyzer: analyzer.to_string(),
            entity,
            what: what.into(),
            value: None,
            limit: None,
            rate: None,
            eta_seconds: None,
            eta_what: None,
            since: None,
            detail: None,
            severity,
            source,
            patterns: Vec::new(),
            related: Vec::new(),
            figures: BTreeMap::new(),
        }
    }

    /// Records figure `name` (a finite value only).
    pub fn figure(mut self, name: &str, q: Quantity) -> Self {
        if q.value.is_finite() {
            self.figures.insert(name.to_string(), q);
        }
        self
    }

    /// Adds `entity` to the entities the fact names besides its own.
    pub fn related(mut self, entity: Entity) -> Self {
        if self.related.iter().all(|e| *e != entity) {
            self.related.push(entity);
        }
        self
    }

    pub fn patterns(mut self, patterns: Vec<String>) -> Self {
        self.patterns = patterns;
        self
    }

    pub fn value(mut self, q: Quantity) -> Self {
        self.value = Some(q);
        self
    }

    pub fn limit(mut self, q: Quantity) -> Self {
        self.limit = Some(q);
        self
    }

    pub fn rate(mut self, r: Rate) -> Self {
        self.rate = Some(r);
        self
    }

    pub fn eta(mut self, seconds: f64, what: &str) -> Self {
        if seconds.is_finite() && seconds >= 0.0 {
            self.eta_seconds = Some(seconds);
            self.eta_what = Some(what.to_string());
        }
        self
    }

    pub fn since(mut self, t: Option<DateTime<Utc>>) -> Self {
        self.since = t;
        self
    }

    pub fn detail(mut self, d: impl Into<String>) -> Self {
        let d: String = d.into();
        let d = d.trim();
        if !d.is_empty() {
            self.detail = Some(crate::text::truncate(d, MAX_DETAIL_CHARS));
        }
        self
    }

    /// What is wrong with its figures, without the entity, the start or the detail:
    /// "resident memory 3.4 GiB of 7.6 GiB, rising 357.0 MiB per hour, out of memory in 3.2 h".
    pub fn headline(&self) -> String {
        let mut s = self.what.clone();
        if let Some(v) = &self.value {
            let _ = write!(s, " {v}");
        }
        if let Some(l) = &self.limit {
            let _ = write!(s, " of {l}");
        }
        if let Some(r) = &self.rate {
            let _ = write!(s, ", {}", r.describe());
        }
        if let (Some(eta), Some(what)) = (self.eta_seconds, &self.eta_what) {
            let _ = write!(s, ", {what} in {}", human_seconds(eta));
        }
        s
    }

    /// One line: "filesystem /var/lib/vz on pve1: used 94.1 % of 1.0 TiB, rising 48.6 GiB
    /// per day, full in 30.1 h (since 2026-11-26 10:02 UTC): <detail>".
    pub fn line(&self, now: DateTime<Utc>) -> String {
        self.line_beside(now, None)
    }

    /// [`Fact::line`], with when its state began told against `alert_start` ("6 min
    /// before the alert", "as the alert began", "20 min after the alert began"): a cause
    /// precedes its alert, a consequence follows it, and a small model does not subtract
    /// times reliably.
    pub fn line_beside(&self, now: DateTime<Utc>, alert_start: Option<DateTime<Utc>>) -> String {
        let mut s = format!("{}: {}", self.entity.describe(), self.headline());
        if let Some(t) = self.since {
            let ago = (now - t).num_seconds().max(0) as f64;
            let _ = write!(
                s,
                " (since {}, {} ago{})",
                t.format("%Y-%m-%d %H:%M UTC"),
                human_seconds(ago),
                alert_start
                    .map(|a| relative_to_alert(t, a))
                    .unwrap_or_default()
            );
        }
        if let Some(d) = &self.detail {
            let _ = write!(s, ": {d}");
        }
        s
    }

    /// The integration the fact came from, by its source tool's prefix (`prometheus`,
    /// `k8s`, `proxmox`, …): which tools are worth offering next to it.
    pub fn integration(&self) -> &str {
        tool_integration(&self.source.tool)
    }
}

/// How far apart two starts may be and still be told as one ("as the alert began").
const WITH_ALERT_SECS: i64 = 120;

/// ", 6 min before the alert" / ", as the alert began" / ", 20 min after the alert began".
fn relative_to_alert(since: DateTime<Utc>, alert: DateTime<Utc>) -> String {
    let apart = (alert - since).num_seconds();
    match apart {
        a if a.abs() <= WITH_ALERT_SECS => ", as the alert began".into(),
        a if a > 0 => format!(", {} before the alert", human_seconds(a as f64)),
        a => format!(
            ", {} after the alert began",
            human_seconds(a.unsigned_abs() as f64)
        ),
    }
}

/// The integration a tool belongs to: its name's prefix (`k8s_list_pods` → `k8s`).
pub fn tool_integration(tool: &str) -> &str {
    tool.split_once('_').map_or(tool, |(p, _)| p)
}

/// Keeps the `max` most severe of `facts`: most severe first and, within a severity, the
/// one that began latest first (an analyzer's facts as the sweep shows them).
pub fn keep_most_severe(facts: &mut Vec<Fact>, max: usize) {
    facts.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| b.since.cmp(&a.since))
    });
    facts.truncate(max);
}

/// The host part of a Prometheus `instance` (`pve1:9100` → `pve1`, `[::1]:9100` → `::1`,
/// `https://nas.lan/health` → `nas.lan`).
pub fn host_of(instance: &str) -> String {
    let s = instance
        .split_once("://")
        .map_or(instance, |(_, rest)| rest);
    let s = s.split(['/', '?', '#']).next().unwrap_or(s);
    let s = s.rsplit_once('@').map_or(s, |(_, h)| h);
    if let Some(rest) = s.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest).to_string();
    }
    match s.rsplit_once(':') {
        Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h.to_string(),
        _ => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::analyze::Unit;

    #[test]
    fn a_fact_renders_entity_value_rate_eta_and_since_on_one_line() {
        let now = Utc.with_ymd_and_hms(2026, 11, 26, 12, 0, 0).unwrap();
        let f = Fact::new(
            FactClass::Exhaustion,
            "filesystem_space",
            Entity::new("filesystem", "/var/lib/vz").on_host(Some("pve1".into())),
            "used",
            Severity::Warning,
            Source::promql("x"),
        )
        .value(Quantity::percent(94.14))
        .limit(Quantity::bytes(1099511627776.0))
        .rate(Rate::from_per_second(600_000.0, Unit::Bytes))
        .eta(30.0 * 3600.0, "full")
        .since(Some(now - chrono::TimeDelta::minutes(47)));
        assert_eq!(
            f.line(now),
            "filesystem /var/lib/vz on pve1: used 94.1 % of 1.0 TiB, rising 2.0 GiB per \
             hour, full in 30.0 h (since 2026-11-26 11:13 UTC, 47 min ago)"
        );
        assert_eq!(f.integration(), "prometheus");
    }

    #[test]
    fn beside_an_alert_a_fact_says_whether_it_began_before_with_or_after_it() {
        let now = Utc.with_ymd_and_hms(2026, 11, 26, 12, 0, 0).unwrap();
        let at = |minutes_ago: i64| {
            Fact::new(
                FactClass::Availability,
                "t",
                Entity::new("service", "mq"),
                "refusing logins",
                Severity::Warning,
                Source::promql("x"),
            )
            .since(Some(now - chrono::TimeDelta::minutes(minutes_ago)))
        };
        let alert = Some(now - chrono::TimeDelta::minutes(40));
        let told = |f: Fact| f.line_beside(now, alert);
        assert!(told(at(47)).ends_with("47 min ago, 7 min before the alert)"));
        assert!(told(at(41)).ends_with("41 min ago, as the alert began)"));
        assert!(told(at(10)).ends_with("10 min ago, 30 min after the alert began)"));
        assert!(told(at(60 * 24 * 19)).contains("19.0 days before the alert"));
        assert_eq!(at(47).line_beside(now, None), at(47).line(now));
    }

    #[test]
    fn the_host_of_an_instance_drops_scheme_port_path_and_brackets() {
        assert_eq!(host_of("pve1:9100"), "pve1");
        assert_eq!(host_of("[::1]:9100"), "::1");
        assert_eq!(host_of("https://nas.lan:8443/health?x=1"), "nas.lan");
        assert_eq!(host_of("printer"), "printer");
        assert_eq!(host_of("ünïcode-host:80"), "ünïcode-host");
    }
}
