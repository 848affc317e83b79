//! A world's background: every series of a real exporter's captured `/metrics`
//! (tests/fixtures/exporters, compiled in) for each instance a scenario names, with the
//! `instance` and `job` labels replaced, so a world holds the thousands of series real hosts
//! expose and not only the few of the answer.
//!
//! Gauges stay at their captured value (optionally wandering by a deterministic `noise`
//! fraction, those that do vary: a gauge that changed between the exporter's two captured
//! scrapes, or, with one scrape, one that is not a whole number; a link's speed, a disk's
//! size, a node's pod capacity or a 0/1 state never wanders). Counters (and the `_sum`/`_count`/`_bucket` of summaries and histograms) grow
//! at the rate between the exporter's two captured scrapes, or, with one scrape, as if they
//! had started a day before it. Gauges holding unix times (`*_time_seconds`, `*_expiry`,
//! `*_created`, …) keep their distance to now that they had to the capture, and
//! `node_time_seconds` follows the sample time, so ages and certificate expiries look as
//! they did when captured.
//!
//! A background host is calm, whatever the machine the capture was taken on was doing (it
//! was busy building, every CPU near 100 %): CPU-time counters other than idle grow at
//! [`CALM_CPU`] of their captured rate and idle takes the rest of each CPU, and processes
//! and the host itself started at least a day before the window (the exporters were
//! captured seconds after they started), and its clock is synchronised (the capture
//! machine ran no NTP daemon: every background host would be an unsynchronised decoy).

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde::Deserialize;

/// The captured exporters: `exporters.toml` and the files it names.
const MANIFEST: &str = include_str!("../../tests/fixtures/exporters/exporters.toml");
const FILES: &[(&str, &str)] = &[
    (
        "node_exporter.prom",
        include_str!("../../tests/fixtures/exporters/node_exporter.prom"),
    ),
    (
        "node_exporter.after15s.prom",
        include_str!("../../tests/fixtures/exporters/node_exporter.after15s.prom"),
    ),
    (
        "process_exporter.prom",
        include_str!("../../tests/fixtures/exporters/process_exporter.prom"),
    ),
    (
        "process_exporter.after15s.prom",
        include_str!("../../tests/fixtures/exporters/process_exporter.after15s.prom"),
    ),
    (
        "blackbox_http_200.prom",
        include_str!("../../tests/fixtures/exporters/blackbox_http_200.prom"),
    ),
    (
        "blackbox_http_502.prom",
        include_str!("../../tests/fixtures/exporters/blackbox_http_502.prom"),
    ),
    (
        "blackbox_https_selfsigned.prom",
        include_str!("../../tests/fixtures/exporters/blackbox_https_selfsigned.prom"),
    ),
    (
        "kubelet_metrics_resource.prom",
        include_str!("../../tests/fixtures/exporters/kubelet_metrics_resource.prom"),
    ),
    (
        "kube_state_metrics.prom",
        include_str!("../../tests/fixtures/exporters/kube_state_metrics.prom"),
    ),
];

/// Counters seen in one scrape only grow as if they had started this long before it.
const ASSUMED_AGE_SECS: f64 = 86_400.0;

/// The share of its captured rate a busy CPU-time counter keeps in a calm background.
pub const CALM_CPU: f64 = 0.06;

/// How long before the window a background process or host started, at least.
const UP_BEFORE_WINDOW_SECS: i64 = 86_400;

/// A counter of CPU time (node, process-exporter, cAdvisor), whose captured rate reflects
/// the capture machine's load.
fn is_cpu_time(name: &str) -> bool {
    name.contains("cpu") && name.ends_with("_seconds_total")
}

/// A unix time at which something started (a process, the host's boot).
fn is_start_time(name: &str) -> bool {
    name.ends_with("start_time_seconds") || name.ends_with("boot_time_seconds")
}

/// A captured exporter's series (tests/fixtures/exporters/exporters.toml names them) for
/// each instance: `{ exporter = "node", instances = ["nas", "pve2:9100"] }`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackgroundSpec {
    pub exporter: String,
    /// `host` (the exporter's port is added), `host:port`, or a probe's target URL.
    pub instances: Vec<String>,
    /// The `job` label (default: the exporter's usual job name).
    #[serde(default)]
    pub job: Option<String>,
    /// Gauges wander by up to this fraction (deterministically); 0 keeps them constant.
    #[serde(default)]
    pub noise: f64,
}

/// One exporter of `exporters.toml`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Exporter {
    file: String,
    captured: Option<i64>,
    next: Option<String>,
    #[serde(default, with = "humantime_serde_opt")]
    interval: Option<Duration>,
    job: String,
    port: Option<u16>,
    #[serde(default)]
    probe: bool,
}

mod humantime_serde_opt {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|s| humantime::parse_duration(&s).map_err(serde::de::Error::custom))
            .transpose()
    }
}

fn manifest() -> BTreeMap<String, Exporter> {
    toml::from_str(MANIFEST).expect("exporters.toml is valid (checked by a test)")
}

fn file(name: &str) -> Option<&'static str> {
    FILES.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// The exporter names a scenario may use.
pub fn exporters() -> Vec<String> {
    manifest().into_keys().collect()
}

/// One sample line of an exposition: metric name, labels, value.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// Parses the Prometheus text exposition format: samples (non-finite values skipped) and
/// the `# TYPE` of each family.
pub fn parse(text: &str) -> (Vec<Sample>, HashMap<String, String>) {
    let mut samples = Vec::new();
    let mut types = HashMap::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split_whitespace();
            if let (Some(n), Some(t)) = (parts.next(), parts.next()) {
                types.insert(n.to_string(), t.to_string());
            }
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(s) = parse_sample(line) {
            samples.push(s);
        }
    }
    (samples, types)
}

fn parse_sample(line: &str) -> Option<Sample> {
    let name_end = line.find(['{', ' ', '\t']).unwrap_or(line.len());
    let name = &line[..name_end];
    let mut rest = &line[name_end..];
    let mut labels = BTreeMap::new();
    if let Some(body) = rest.strip_prefix('{') {
        let mut chars = body.char_indices().peekable();
        let mut key = String::new();
        let mut end = None;
        while let Some((i, c)) = chars.next() {
            match c {
                '}' => {
                    end = Some(i + 1);
                    break;
                }
                ',' | ' ' => {}
                '=' => {
                    if chars.next().map(|(_, q)| q) != Some('"') {
                        return None;
                    }
                    let mut value = String::new();
                    loop {
                        match chars.next()?.1 {
                            '\\' => match chars.next()?.1 {
                                'n' => value.push('\n'),
                                other => value.push(other),
                            },
                            '"' => break,
                            other => value.push(other),
                        }
                    }
                    labels.insert(std::mem::take(&mut key), value);
                }
                other => key.push(other),
            }
        }
        rest = &body[end?..];
    }
    let value = rest.split_whitespace().next()?;
    let value: f64 = match value {
        "+Inf" | "-Inf" | "NaN" => return None,
        v => v.parse().ok()?,
    };
    value.is_finite().then(|| Sample {
        name: name.to_string(),
        labels,
        value,
    })
}

/// Whether samples named `name` are cumulative, given the families' types.
fn is_counter(name: &str, types: &HashMap<String, String>) -> bool {
    if types.get(name).is_some_and(|t| t == "counter") {
        return true;
    }
    ["_sum", "_count", "_bucket"].iter().any(|suffix| {
        name.strip_suffix(suffix).is_some_and(|base| {
            types
                .get(base)
                .is_some_and(|t| t == "histogram" || t == "summary")
        })
    })
}

/// A gauge holding a unix time (seconds), shifted with the capture.
fn is_timestamp(name: &str, value: f64) -> bool {
    let named = ["_time_seconds", "_timestamp_seconds", "_expiry", "_created"]
        .iter()
        .any(|s| name.ends_with(s));
    named && (1.0e9..4.0e9).contains(&value)
}

/// How one background series moves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Motion {
    /// Constant, or wandering by `noise` (a fraction) around the value.
    Gauge { noise: f64, seed: u64 },
    /// Grows by `rate` per second from `value` at the window start.
    Counter { rate: f64 },
    /// A unix time: `value` is shifted by `now - captured`; a start time no later than a
    /// day before the window.
    Timestamp { captured: i64, start: bool },
    /// Follows the sample time (plus the captured offset).
    Clock { offset: f64 },
}

/// One series of the background.
#[derive(Clone, Debug, PartialEq)]
pub struct BackgroundSeries {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
    pub motion: Motion,
}

impl BackgroundSeries {
    /// The value at unix time `t`, for a window starting at `start` ending at `now`.
    pub fn value_at(&self, t: i64, start: i64, now: i64) -> f64 {
        match self.motion {
            Motion::Gauge { noise, seed } if noise > 0.0 && self.value != 0.0 => {
                // A smooth deterministic wander: two incommensurate sines with a per-series phase.
                let phase = (seed % 10_000) as f64 / 10_000.0 * std::f64::consts::TAU;
                let x = t as f64 / 1800.0 + phase;
                self.value * (1.0 + noise * (0.7 * x.sin() + 0.3 * (2.3 * x).sin()))
            }
            Motion::Gauge { .. } => self.value,
            Motion::Counter { rate } => self.value + rate * (t - start).max(0) as f64,
            Motion::Timestamp {
                captured,
                start: false,
            } => self.value + (now - captured) as f64,
            Motion::Timestamp {
                captured,
                start: true,
            } => (self.value + (now - captured) as f64)
                .min(start.saturating_sub(UP_BEFORE_WINDOW_SECS) as f64),
            Motion::Clock { offset } => t as f64 + offset,
        }
    }
}

fn seed_of(name: &str, labels: &BTreeMap<String, String>) -> u64 {
    // FNV-1a: stable across runs and platforms.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in std::iter::once(name).chain(labels.iter().flat_map(|(k, v)| [k.as_str(), v])) {
        for b in part.bytes().chain(std::iter::once(0)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x100_0000_01b3);
        }
    }
    h
}

/// The host part of an instance (`nas:9100` → `nas`, `https://photos.lan/x` → `photos.lan`).
fn host_of(instance: &str) -> &str {
    let s = instance.split_once("://").map_or(instance, |(_, r)| r);
    let s = s.split(['/', '?']).next().unwrap_or(s);
    s.rsplit_once(':').map_or(s, |(h, p)| {
        if p.chars().all(|c| c.is_ascii_digit()) {
            h
        } else {
            s
        }
    })
}

/// Checks a background entry against the manifest.
pub fn check(spec: &BackgroundSpec) -> Result<(), String> {
    if !manifest().contains_key(&spec.exporter) {
        return Err(format!(
            "background exporter {:?} is not one of {}",
            spec.exporter,
            exporters().join(", ")
        ));
    }
    if spec.instances.is_empty() {
        return Err(format!("background {:?} names no instances", spec.exporter));
    }
    if !(0.0..=0.5).contains(&spec.noise) {
        return Err(format!("background noise {} is not in 0..=0.5", spec.noise));
    }
    Ok(())
}

/// Every series `spec` adds, plus `up = 1` per instance.
pub fn series(spec: &BackgroundSpec) -> Result<Vec<BackgroundSeries>, String> {
    check(spec)?;
    let exporter = manifest()
        .remove(&spec.exporter)
        .ok_or_else(|| format!("no exporter {}", spec.exporter))?;
    let text = file(&exporter.file).ok_or_else(|| format!("no file {}", exporter.file))?;
    let (samples, types) = parse(text);
    let next: HashMap<(String, BTreeMap<String, String>), f64> = exporter
        .next
        .as_deref()
        .and_then(file)
        .map(|t| {
            parse(t)
                .0
                .into_iter()
                .map(|s| ((s.name, s.labels), s.value))
                .collect()
        })
        .unwrap_or_default();
    let interval = exporter.interval.map_or(0.0, |d| d.as_secs_f64());
    let job = spec.job.clone().unwrap_or_else(|| exporter.job.clone());
    let mut out = Vec::with_capacity((samples.len() + 1) * spec.instances.len());
    for given in &spec.instances {
        let instance = match exporter.port {
            Some(port) if !exporter.probe && !given.contains(':') => format!("{given}:{port}"),
            _ => given.clone(),
        };
        let host = host_of(&instance).to_string();
        let mut up = BTreeMap::new();
        up.insert("instance".to_string(), instance.clone());
        up.insert("job".to_string(), job.clone());
        out.push(BackgroundSeries {
            name: "up".into(),
            labels: up,
            value: 1.0,
            motion: Motion::Gauge {
                noise: 0.0,
                seed: 0,
            },
        });
        for s in &samples {
            let mut labels = s.labels.clone();
            labels.insert("instance".into(), instance.clone());
            labels.insert("job".into(), job.clone());
            if labels.contains_key("nodename") {
                labels.insert("nodename".into(), host.clone());
            }
            let motion = if is_counter(&s.name, &types) {
                let rate = next
                    .get(&(s.name.clone(), s.labels.clone()))
                    .filter(|_| interval > 0.0)
                    .map_or(s.value.abs() / ASSUMED_AGE_SECS, |v2| {
                        ((v2 - s.value) / interval).max(0.0)
                    });
                Motion::Counter { rate }
            } else if let (true, Some(captured)) =
                (s.name == "node_time_seconds", exporter.captured)
            {
                Motion::Clock {
                    offset: s.value - captured as f64,
                }
            } else if let (true, Some(captured)) =
                (is_timestamp(&s.name, s.value), exporter.captured)
            {
                Motion::Timestamp {
                    captured,
                    start: is_start_time(&s.name),
                }
            } else {
                let varies = match exporter.next {
                    Some(_) => next
                        .get(&(s.name.clone(), s.labels.clone()))
                        .is_some_and(|v2| *v2 != s.value),
                    None => s.value.fract() != 0.0,
                };
                Motion::Gauge {
                    noise: if varies { spec.noise } else { 0.0 },
                    seed: seed_of(&s.name, &labels),
                }
            };
            out.push(BackgroundSeries {
                name: s.name.clone(),
                labels,
                value: s.value,
                motion,
            });
        }
    }
    calm_cpus(&mut out);
    synced_clocks(&mut out);
    Ok(out)
}

/// The kernel's clock discipline as on a host whose NTP daemon keeps it synchronised:
/// sync status 1, errors of milliseconds (a scenario's own series still replace these).
fn synced_clocks(series: &mut [BackgroundSeries]) {
    for s in series.iter_mut() {
        s.value = match s.name.as_str() {
            "node_timex_sync_status" => 1.0,
            "node_timex_maxerror_seconds" => 0.0165,
            "node_timex_estimated_error_seconds" => 0.000_02,
            _ => continue,
        };
    }
}

/// Scales busy CPU-time counters down to [`CALM_CPU`] of their rate; each node CPU's idle
/// counter takes what the others leave of one second per second.
fn calm_cpus(series: &mut [BackgroundSeries]) {
    let mut busy: HashMap<(String, String), f64> = HashMap::new();
    for s in series.iter_mut() {
        let Motion::Counter { rate } = &mut s.motion else {
            continue;
        };
        if !is_cpu_time(&s.name) || s.labels.get("mode").is_some_and(|m| m == "idle") {
            continue;
        }
        *rate *= CALM_CPU;
        if s.name == "node_cpu_seconds_total" {
            let cpu = (
                s.labels.get("instance").cloned().unwrap_or_default(),
                s.labels.get("cpu").cloned().unwrap_or_default(),
            );
            *busy.entry(cpu).or_default() += *rate;
        }
    }
    for s in series.iter_mut() {
        if s.name != "node_cpu_seconds_total" || s.labels.get("mode").is_none_or(|m| m != "idle") {
            continue;
        }
        let cpu = (
            s.labels.get("instance").cloned().unwrap_or_default(),
            s.labels.get("cpu").cloned().unwrap_or_default(),
        );
        if let Motion::Counter { rate } = &mut s.motion {
            *rate = (1.0 - busy.get(&cpu).copied().unwrap_or(0.0)).max(0.0);
        }
    }
}

#[cfg(test)]
mod tests;
