//! Analyzers over Prometheus, one file per failure class, and what they share: bounded
//! queries, the metric names read once per sweep, the host of a series, label selectors
//! built from label values as data, and joins of two queries by their labels. Each
//! analyzer reads the metric names real exporters emit (node_exporter, process-exporter,
//! cAdvisor, kube-state-metrics, blackbox_exporter) and skips a variant it does not find.

mod ages;
mod btrfs;
mod cardinality;
mod certs;
mod clock;
mod container_memory;
mod containers_back;
mod context;
mod cpu;
mod disk_io;
mod filesystem;
mod history;
mod inventory;
mod io_consumers;
mod kinds;
mod kube_state;
mod kube_state_cronjobs;
mod kube_state_services;
mod kube_state_suspended;
mod kube_state_workloads;
mod limit_names;
mod limits;
mod link_speed;
mod major_faults;
mod members;
mod memory;
mod network;
mod network_storm;
mod onset;
mod probe_dns;
mod probes;
mod process_counts;
mod process_memory;
mod rate_range;
mod reboot_schedule;
mod reboots;
mod reloads;
mod restarts;
mod rollouts;
mod scrape_twice;
mod settings;
mod since;
mod smart;
mod stale_jobs;
mod steps;
mod stopped_times;
mod systemd;
mod targets;
mod time_wait;
mod versions;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use tokio::sync::OnceCell;

use super::{AnalyzeError, Analyzer, Scope};
use crate::integrations::PrometheusClient;
use crate::integrations::prometheus::{Labels, Sample, Series};

/// Most series one analyzer query may return before it is skipped as too broad.
const MAX_SERIES: usize = 20_000;

/// The Prometheus analyzers, in the order their facts are listed.
pub fn analyzers(client: Arc<PrometheusClient>) -> Vec<Arc<dyn Analyzer>> {
    let p = Prom { client };
    vec![
        Arc::new(filesystem::FilesystemSpace(p.clone())),
        Arc::new(filesystem::FilesystemVanished(p.clone())),
        Arc::new(memory::HostMemory(p.clone())),
        Arc::new(memory::Swap(p.clone())),
        Arc::new(process_memory::ProcessMemory(p.clone())),
        Arc::new(container_memory::ContainerMemory(p.clone())),
        Arc::new(limits::NearLimit(p.clone())),
        Arc::new(cpu::CpuSaturation(p.clone())),
        Arc::new(disk_io::DiskIo(p.clone())),
        Arc::new(network::NetworkErrors(p.clone())),
        Arc::new(network_storm::NetworkStorm(p.clone())),
        Arc::new(link_speed::LinkSpeed(p.clone())),
        Arc::new(smart::SmartAttributes(p.clone())),
        Arc::new(btrfs::BtrfsAllocation(p.clone())),
        Arc::new(major_faults::MajorFaults(p.clone())),
        Arc::new(clock::Clock(p.clone())),
        Arc::new(time_wait::TimeWait(p.clone())),
        Arc::new(context::HostContext(p.clone())),
        Arc::new(inventory::Inventory(p.clone())),
        Arc::new(targets::TargetsDown(p.clone())),
        Arc::new(cardinality::ScrapeSeries(p.clone())),
        Arc::new(scrape_twice::ScrapedTwice(p.clone())),
        Arc::new(ages::Ages(p.clone())),
        Arc::new(process_counts::ProcessCounts(p.clone())),
        Arc::new(probes::ProbeFailures(p.clone())),
        Arc::new(probe_dns::ProbeDns(p.clone())),
        Arc::new(certs::CertExpiry(p.clone())),
        Arc::new(systemd::FailedUnits(p.clone())),
        Arc::new(stale_jobs::StaleJobs(p.clone())),
        Arc::new(stopped_times::StoppedTimes(p.clone())),
        Arc::new(versions::VersionChanges(p.clone())),
        Arc::new(restarts::ProcessRestarts(p.clone())),
        Arc::new(reboots::HostReboots(p.clone())),
        Arc::new(reboot_schedule::ScheduledReboots(p.clone())),
        Arc::new(containers_back::ContainersNotBack(p.clone())),
        Arc::new(reloads::ConfigReloads(p.clone())),
        Arc::new(settings::SettingChanges(p.clone())),
        Arc::new(rollouts::Rollouts(p.clone())),
        Arc::new(kube_state::KubeStatePods(p.clone())),
        Arc::new(kube_state_workloads::KubeStateNodes(p.clone())),
        Arc::new(kube_state_workloads::KubeStateRollouts(p.clone())),
        Arc::new(kube_state_services::KubeStateEndpoints(p.clone())),
        Arc::new(kube_state_cronjobs::KubeStateCronJobs(p.clone())),
        Arc::new(kube_state_suspended::KubeStateSuspended(p.clone())),
        Arc::new(onset::TriggerOnset(p.clone())),
        Arc::new(steps::Steps(p)),
    ]
}

/// The Prometheus client as analyzers use it.
#[derive(Clone)]
pub struct Prom {
    client: Arc<PrometheusClient>,
}

impl Prom {
    pub fn new(client: Arc<PrometheusClient>) -> Self {
        Self { client }
    }

    /// The instant vector of `expr` now (a scalar becomes one sample without labels).
    pub async fn vector(&self, expr: &str) -> Result<Vec<Sample>, AnalyzeError> {
        let v = self.client.query_vector(expr, None).await?;
        if v.len() > MAX_SERIES {
            return Err(AnalyzeError::Other(format!(
                "{} series for {expr}, more than {MAX_SERIES}",
                v.len()
            )));
        }
        Ok(v)
    }

    /// The metric names that had samples in the scope's window: read from Prometheus by
    /// the sweep's first caller, shared with the others (a failed read is tried again by
    /// the next caller).
    pub async fn metric_names(&self, scope: &Scope) -> Result<Arc<Vec<String>>, AnalyzeError> {
        let names = scope
            .metric_names
            .names
            .get_or_try_init(|| async {
                self.client
                    .label_values_between("__name__", &[], scope.window_start, scope.now)
                    .await
                    .map(Arc::new)
            })
            .await?;
        Ok(names.clone())
    }

    /// `expr` over the scope's window in about `points` steps (at least 15 s apart).
    pub async fn range(
        &self,
        expr: &str,
        scope: &Scope,
        points: u32,
    ) -> Result<Vec<Series>, AnalyzeError> {
        let secs = scope.window().num_seconds().max(60) as u64;
        let step = std::time::Duration::from_secs((secs / u64::from(points.max(1))).max(15));
        let v = self
            .client
            .query_range(expr, scope.window_start, scope.now, step)
            .await?;
        if v.len() > MAX_SERIES {
            return Err(AnalyzeError::Other(format!(
                "{} series for {expr}, more than {MAX_SERIES}",
                v.len()
            )));
        }
        Ok(v)
    }
}

/// Prometheus' metric names over a sweep's window and the types the scrapes declared for
/// them, each read once per sweep (a [`Scope`] and its clones share the cells; the next
/// sweep's scope has its own).
#[derive(Clone, Default)]
pub struct MetricNames {
    names: Arc<OnceCell<Arc<Vec<String>>>>,
    types: Arc<OnceCell<Arc<HashMap<String, String>>>>,
}

impl std::fmt::Debug for MetricNames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.names.get() {
            Some(names) => write!(f, "MetricNames({} read)", names.len()),
            None => f.write_str("MetricNames(not read)"),
        }
    }
}

/// The host a series is about: the host part of `instance`, else a node or host label.
pub fn host(labels: &Labels) -> Option<String> {
    if let Some(i) = labels.get("instance") {
        return Some(super::host_of(i));
    }
    ["node", "nodename", "hostname", "host"]
        .iter()
        .find_map(|k| labels.get(*k).cloned())
}

/// A series' labels without its name: the key that joins two queries of one thing.
pub fn identity(labels: &Labels) -> Labels {
    let mut l = labels.clone();
    l.remove("__name__");
    l
}

/// The samples of `v` by their labels (without the name).
pub fn by_identity(v: Vec<Sample>) -> HashMap<Labels, f64> {
    v.into_iter()
        .filter(|s| s.value.is_finite())
        .map(|s| (identity(&s.metric), s.value))
        .collect()
}

/// A selector matching exactly the label values given (`{instance="pve1:9100",…}`),
/// values escaped as PromQL strings.
pub fn selector<'a>(labels: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let inner: Vec<String> = labels
        .into_iter()
        .filter(|(k, _)| is_label_name(k))
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

/// `labels` restricted to `keys` (those present).
pub fn pick<'a>(labels: &'a Labels, keys: &[&'a str]) -> Vec<(&'a str, &'a str)> {
    keys.iter()
        .filter_map(|k| labels.get(*k).map(|v| (*k, v.as_str())))
        .collect()
}

/// A label value as the body of a PromQL double-quoted string literal (a raw line break
/// would end the literal for Prometheus); the one escape of the analyzers, the evidence
/// and the eval world.
pub fn escape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out
}

/// Whether `k` is a valid Prometheus label name (so a selector is never built from
/// anything else).
fn is_label_name(k: &str) -> bool {
    let mut chars = k.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// When a range series last changed to its current value: the time of the first point
/// of the last run of equal values (`None` when it never changed in the window).
pub fn last_change(values: &[(f64, f64)]) -> Option<DateTime<Utc>> {
    let (_, last) = *values.last()?;
    let i = values.iter().rposition(|(_, v)| *v != last)?;
    let (t, _) = values.get(i + 1)?;
    DateTime::from_timestamp_millis((t * 1000.0) as i64)
}

/// Labels as an ordered map (for facts' entities).
pub fn labels_map(labels: &Labels) -> BTreeMap<String, String> {
    identity(labels).into_iter().collect()
}

/// How full a filesystem (or a storage, a datastore, a pool) may get, and how soon it may
/// be full, before it is a warning or critical: one set of thresholds for every analyzer of
/// space.
pub(crate) use filesystem::{CRIT_ETA, CRIT_PERCENT, WARN_ETA, WARN_PERCENT};

/// The fact of a host that booted in the window (the Proxmox nodes' uptime tells it too).
pub(crate) use reboots::reboot_fact;

/// A word of an upstream message with a URL in it shown without credentials, query or
/// fragment.
pub(crate) use targets::redact_word;

/// The severity of a space `used_percent` full and `eta` seconds from full, by the
/// filesystem thresholds; `None` when it is fine.
pub(crate) fn space_severity(used_percent: f64, eta: Option<f64>) -> Option<super::Severity> {
    use super::Severity::{Critical, Warning};
    match (used_percent, eta) {
        (u, _) if u >= CRIT_PERCENT => Some(Critical),
        (_, Some(e)) if e < CRIT_ETA => Some(Critical),
        (u, _) if u >= WARN_PERCENT => Some(Warning),
        (_, Some(e)) if e < WARN_ETA => Some(Warning),
        _ => None,
    }
}

/// The least-squares slope of `points` (time in seconds, value), per second; `None` with
/// fewer than three points or no spread in time.
pub(crate) fn slope(points: &[(f64, f64)]) -> Option<f64> {
    if points.len() < 3 {
        return None;
    }
    let n = points.len() as f64;
    let (mt, mv) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), (t, v)| (a + t / n, b + v / n));
    let (num, den) = points.iter().fold((0.0, 0.0), |(num, den), (t, v)| {
        (num + (t - mt) * (v - mv), den + (t - mt) * (t - mt))
    });
    let s = num / den;
    (den > 0.0 && s.is_finite()).then_some(s)
}

/// How many `since` range queries one analyzer run may make, so a fleet in the same bad
/// state (fifty hosts without NTP) stays within the time limit; the rest are reported
/// without since.
const MAX_SINCE_LOOKUPS: usize = 12;

/// The `since` lookups left to one analyzer run.
#[derive(Debug)]
pub struct Lookups(std::sync::atomic::AtomicUsize);

impl Default for Lookups {
    fn default() -> Self {
        Self(std::sync::atomic::AtomicUsize::new(MAX_SINCE_LOOKUPS))
    }
}

impl Lookups {
    /// Takes one lookup; `false` when none is left.
    fn take(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        self.0
            .fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1))
            .is_ok()
    }
}

impl Prom {
    /// `deriv(metric[span])` for each span in seconds, by identity: how fast each series
    /// moves over the last ten minutes, the last hour, the window.
    pub async fn slopes(
        &self,
        metric: &str,
        spans: &[i64],
    ) -> Result<Vec<(f64, HashMap<Labels, f64>)>, AnalyzeError> {
        let mut out = Vec::with_capacity(spans.len());
        for span in spans {
            let d = self.vector(&format!("deriv({metric}[{span}s])")).await?;
            out.push((*span as f64, by_identity(d)));
        }
        Ok(out)
    }
}

/// The steepest slope of `key` among `slopes` in the direction asked (falling: the most
/// negative, rising: the most positive) whose change over its span is at least `material`
/// (a brief wobble is not a trend).
pub fn steepest(
    slopes: &[(f64, HashMap<Labels, f64>)],
    key: &Labels,
    material: f64,
    falling: bool,
) -> Option<f64> {
    let sign = if falling { -1.0 } else { 1.0 };
    slopes
        .iter()
        .filter_map(|(span, by)| by.get(key).map(|d| (*span, *d * sign)))
        .filter(|(span, d)| d.is_finite() && *d > 0.0 && d * span >= material)
        .map(|(_, d)| d)
        .fold(None, |acc: Option<f64>, d| {
            Some(acc.map_or(d, |a| a.max(d)))
        })
        .map(|d| d * sign)
}

/// The scope's window in seconds, at least an hour and at most a day: the longest span a
/// trend is read over.
pub fn long_span(scope: &Scope) -> i64 {
    scope.window().num_seconds().clamp(3600, 86400)
}

/// The value of label `key`, or `?` on a series without it.
pub fn label(labels: &Labels, key: &str) -> String {
    labels.get(key).cloned().unwrap_or_else(|| "?".into())
}

/// Per host, the value of the first series of `v` seen on it.
pub fn by_host(v: &[Sample]) -> HashMap<String, f64> {
    let mut out = HashMap::new();
    for s in v {
        if let Some(h) = host(&s.metric).filter(|_| s.value.is_finite()) {
            out.entry(h).or_insert(s.value);
        }
    }
    out
}

/// A label set of `pairs` (for tests).
#[cfg(test)]
pub(crate) use crate::config::matcher::labels;

/// Captured exporter output as samples (for tests).
#[cfg(test)]
mod captures;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn space_warns_at_the_published_horizons_not_days_ahead() {
        use crate::analyze::Severity::{Critical, Warning};
        let h = 3600.0;
        assert_eq!(space_severity(69.0, Some(56.0 * h)), None);
        assert_eq!(space_severity(3.0, Some(55.0 * h)), None);
        assert_eq!(space_severity(50.0, Some(20.0 * h)), Some(Warning));
        assert_eq!(space_severity(30.0, Some(3.0 * h)), Some(Critical));
        assert_eq!(space_severity(88.0, None), Some(Warning));
        assert_eq!(space_severity(96.0, Some(90.0 * h)), Some(Critical));
    }

    #[test]
    fn selectors_escape_values_and_drop_invalid_label_names() {
        assert_eq!(
            selector([
                ("instance", "a\"b\\c"),
                ("bad key", "x"),
                ("mountpoint", "/ü")
            ]),
            r#"{instance="a\"b\\c",mountpoint="/ü"}"#
        );
    }

    #[test]
    fn the_steepest_slope_ignores_immaterial_spans_and_the_wrong_direction() {
        let key = Labels::from([("instance".to_string(), "a:1".to_string())]);
        let at = |d: f64| HashMap::from([(key.clone(), d)]);
        let slopes = vec![(600.0, at(-10.0)), (3600.0, at(-2.0)), (86400.0, at(1.0))];
        // 10/s over 600 s is 6000: material at 5000, not at 7000 (then the hour's 7200 is).
        assert_eq!(steepest(&slopes, &key, 5000.0, true), Some(-10.0));
        assert_eq!(steepest(&slopes, &key, 7000.0, true), Some(-2.0));
        assert_eq!(steepest(&slopes, &key, 5000.0, false), Some(1.0));
        assert_eq!(steepest(&slopes, &key, 1e9, true), None);
    }

    #[test]
    fn a_run_has_a_bounded_number_of_since_lookups() {
        let left = Lookups::default();
        assert_eq!((0..20).filter(|_| left.take()).count(), MAX_SINCE_LOOKUPS);
    }

    #[test]
    fn the_last_change_is_the_first_point_of_the_last_run() {
        let v = [(60.0, 1.0), (120.0, 1.0), (180.0, 0.0), (240.0, 0.0)];
        assert_eq!(last_change(&v).unwrap().timestamp(), 180);
        assert_eq!(last_change(&[(60.0, 1.0), (120.0, 1.0)]), None);
        assert_eq!(last_change(&[]), None);
    }
}
