//! A real Prometheus for analyzer tests: series given as `(name, labels, samples)` are
//! backfilled with promtool and served; `Sweep::of` runs analyzers against it. Samples are
//! written from functions of the time before now, so a test says "free space falls 2 GiB
//! per hour for the last 20 minutes" rather than listing points.
//!
//! [`Capture`] replays a real exporter's `/metrics` (tests/fixtures/exporters/) as the
//! history of any number of hosts: every series of the scrape, relabelled with the host's
//! `instance` and `job`; counters advance at the rate seen between two scrapes, clocks
//! (`node_time_seconds`) follow the sample's time, other gauges hold their value. [`set`]
//! then writes the incident into the few series it concerns.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use chrono::Utc;
use sre_agent::analyze::{Fact, Scope};
use sre_agent::config::UpstreamConfig;
use sre_agent::eval::prometheus::{PrometheusProcess, backfill, start_scraping};
use sre_agent::integrations::PrometheusClient;
use tempfile::TempDir;

use super::exposition_text::parse_exposition;
use crate::support::external::require_tool;

/// One series: its name, labels, and value as a function of seconds before now
/// (`None`: no sample then).
pub struct SeriesDef {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: Box<dyn Fn(i64) -> Option<f64>>,
    /// Seconds between samples when not the world's (a capture's background is coarser
    /// than an incident's series).
    pub every: Option<i64>,
}

/// A series from `name{k="v",…}` and a value function.
pub fn series(
    name: &str,
    labels: &[(&str, &str)],
    value: impl Fn(i64) -> Option<f64> + 'static,
) -> SeriesDef {
    SeriesDef {
        name: name.to_string(),
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        value: Box::new(value),
        every: None,
    }
}

/// A world: a real Prometheus with the series backfilled from `history_secs` ago until a
/// little after now, one sample every `step_secs`.
pub struct World {
    pub prometheus: PrometheusProcess,
    _dir: TempDir,
    _slot: tokio::sync::OwnedSemaphorePermit,
}

/// Worlds alive at once, whatever the test threads: each is a promtool backfill and a
/// Prometheus holding thousands of series, heavy in memory and CPU.
static WORLDS: std::sync::LazyLock<Arc<tokio::sync::Semaphore>> =
    std::sync::LazyLock::new(|| Arc::new(tokio::sync::Semaphore::new(2)));

impl World {
    /// `None` when promtool/prometheus are missing (the test is skipped).
    pub async fn build(defs: &[SeriesDef], history_secs: i64, step_secs: i64) -> Option<Self> {
        Self::build_scraping(defs, history_secs, step_secs, "").await
    }

    /// A world whose Prometheus also scrapes `scrape_configs` (YAML list items).
    pub async fn build_scraping(
        defs: &[SeriesDef],
        history_secs: i64,
        step_secs: i64,
        scrape_configs: &str,
    ) -> Option<Self> {
        sre_agent::install_crypto_provider();
        if !require_tool("promtool") || !require_tool("prometheus") {
            return None;
        }
        let slot = WORLDS
            .clone()
            .acquire_owned()
            .await
            .expect("open semaphore");
        let now = Utc::now().timestamp();
        let mut families: BTreeMap<&str, Vec<&SeriesDef>> = BTreeMap::new();
        for d in defs {
            families.entry(d.name.as_str()).or_default().push(d);
        }
        let mut text = String::new();
        for (name, defs) in families {
            let _ = writeln!(text, "# TYPE {name} gauge");
            for d in defs {
                let labels: Vec<String> = d
                    .labels
                    .iter()
                    .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
                    .collect();
                let step = d.every.unwrap_or(step_secs).max(1);
                let mut t = now - history_secs;
                while t <= now + 600 {
                    if let Some(v) = (d.value)(now - t) {
                        let _ = writeln!(text, "{name}{{{}}} {} {t}", labels.join(","), om(v));
                    }
                    t += step;
                }
            }
        }
        text.push_str("# EOF\n");
        let dir = tempfile::tempdir().unwrap();
        // promtool blocks for seconds: off the runtime, so other tests' tasks run.
        let path = dir.path().to_path_buf();
        let data = tokio::task::spawn_blocking(move || backfill(&path, &text))
            .await
            .expect("backfill task")
            .expect("backfill");
        let prometheus = start_scraping(dir.path(), &data, &[], scrape_configs)
            .await
            .expect("prometheus");
        Some(Self {
            prometheus,
            _dir: dir,
            _slot: slot,
        })
    }

    pub fn client(&self) -> Arc<PrometheusClient> {
        let config = UpstreamConfig {
            url: Some(self.prometheus.url.parse().unwrap()),
            ..Default::default()
        };
        Arc::new(PrometheusClient::new(&config).unwrap())
    }

    /// Runs the Prometheus analyzers over an incident that began `started_secs_ago`.
    pub async fn sweep(&self, started_secs_ago: Option<i64>) -> (Vec<Fact>, Vec<String>) {
        let now = Utc::now();
        let started = started_secs_ago.map(|s| now - chrono::TimeDelta::seconds(s));
        let sweep =
            sre_agent::analyze::Sweep::of(sre_agent::analyze::prom::analyzers(self.client()));
        let report = sweep.run(Scope::new(now, started)).await;
        (report.facts, report.notes)
    }
}

/// The lines of `facts`, for assertion messages.
pub fn lines(facts: &[Fact]) -> String {
    let now = Utc::now();
    facts
        .iter()
        .map(|f| format!("[{}] {}", f.analyzer, f.line(now)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A label value as OpenMetrics text spells it.
fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A sample value as OpenMetrics text spells it (`NaN`, `+Inf`, `-Inf`).
fn om(v: f64) -> String {
    match v {
        v if v.is_nan() => "NaN".into(),
        v if v == f64::INFINITY => "+Inf".into(),
        v if v == f64::NEG_INFINITY => "-Inf".into(),
        v => v.to_string(),
    }
}

/// Seconds between a capture's background samples: enough for `rate(…[5m])`, few enough
/// that thousands of series over hours backfill in seconds.
pub const CAPTURE_STEP: i64 = 60;
/// How far back a captured counter started counting (so it never reads below its scrape).
const COUNTING_FOR: f64 = 8.0 * 86400.0;

/// How a captured series moves over the history.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Motion {
    /// A gauge: its scraped value throughout.
    Hold,
    /// A counter: rising at the rate seen between the two scrapes.
    Count(f64),
    /// A gauge that is a Unix time advancing with the clock: the sample's time.
    Clock,
}

/// One series of a capture.
#[derive(Clone, Debug)]
struct Captured {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
    motion: Motion,
}

/// A real exporter's `/metrics`, replayable as the history of any host.
pub struct Capture {
    series: Vec<Captured>,
}

/// The path of a file in tests/fixtures/exporters.
fn fixture(file: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/exporters")
        .join(file)
}

impl Capture {
    /// One scrape: every series holds its value (counters too: no rate is known).
    pub fn load(file: &str) -> Self {
        let text = std::fs::read_to_string(fixture(file)).expect("capture");
        let series = parse_exposition(&text)
            .into_iter()
            .map(|(name, labels, value, _)| Captured {
                name,
                labels,
                value,
                motion: Motion::Hold,
            })
            .collect();
        Self { series }
    }

    /// Two scrapes `interval` seconds apart: counters advance at the rate between them and
    /// clocks with time.
    pub fn load_pair(file: &str, next: &str, interval: f64) -> Self {
        let first = std::fs::read_to_string(fixture(file)).expect("capture");
        let second = std::fs::read_to_string(fixture(next)).expect("second capture");
        let later: std::collections::HashMap<(String, BTreeMap<String, String>), f64> =
            parse_exposition(&second)
                .into_iter()
                .map(|(n, l, v, _)| ((n, l), v))
                .collect();
        let now = Utc::now().timestamp() as f64;
        let series = parse_exposition(&first)
            .into_iter()
            .map(|(name, labels, value, counter)| {
                let next = later.get(&(name.clone(), labels.clone())).copied();
                let per_second = next.map_or(0.0, |n| (n - value) / interval);
                let motion = match counter {
                    true => Motion::Count(per_second.max(0.0)),
                    // Moves a second per second and reads as a time within ten years of now.
                    false
                        if (0.9..1.1).contains(&per_second)
                            && (value - now).abs() < 10.0 * 365.0 * 86400.0 =>
                    {
                        Motion::Clock
                    }
                    false => Motion::Hold,
                };
                Captured {
                    name,
                    labels,
                    value,
                    motion,
                }
            })
            .collect();
        Self { series }
    }

    /// How many series the capture holds.
    pub fn len(&self) -> usize {
        self.series.len()
    }

    /// Every series as the exporter on `instance` scraped by `job` would have written it
    /// over the history, one sample every [`CAPTURE_STEP`].
    pub fn series(&self, instance: &str, job: &str) -> Vec<SeriesDef> {
        // With its fraction: the world's whole-second `now`, taken a moment later, then
        // differs from it by less than a second either way.
        let now = Utc::now().timestamp_millis() as f64 / 1000.0;
        self.series
            .iter()
            .map(|c| {
                let mut labels = c.labels.clone();
                labels.insert("instance".into(), instance.into());
                labels.insert("job".into(), job.into());
                let value = c.value;
                let f: Box<dyn Fn(i64) -> Option<f64>> = match c.motion {
                    Motion::Hold => Box::new(move |_| Some(value)),
                    Motion::Count(r) => {
                        Box::new(move |ago| Some(value + r * (COUNTING_FOR - ago as f64)))
                    }
                    Motion::Clock => Box::new(move |ago| Some(now - ago as f64)),
                };
                SeriesDef {
                    name: c.name.clone(),
                    labels,
                    value: f,
                    every: Some(CAPTURE_STEP),
                }
            })
            .collect()
    }
}

/// Replaces the values of the series of `defs` named `name` whose labels include every
/// pair of `matching` by `value(labels, seconds_ago)`, written at the world's step (an
/// incident is read at native resolution). Panics when none matches: an incident written
/// into no series is a broken test.
pub fn set(
    defs: &mut [SeriesDef],
    name: &str,
    matching: &[(&str, &str)],
    value: impl Fn(&BTreeMap<String, String>, i64) -> Option<f64> + Clone + 'static,
) -> usize {
    let mut n = 0;
    for d in defs.iter_mut().filter(|d| {
        d.name == name
            && matching
                .iter()
                .all(|(k, v)| d.labels.get(*k).map(String::as_str) == Some(*v))
    }) {
        let labels = d.labels.clone();
        let f = value.clone();
        d.value = Box::new(move |ago| f(&labels, ago));
        d.every = None;
        n += 1;
    }
    assert!(n > 0, "no series {name} with {matching:?}");
    n
}

/// A host as the captured node_exporter (`host:9100`, job `node`) and process-exporter
/// (`host:9256`, job `process`) saw it: every series of both, two scrapes 15 s apart.
pub fn node_host(host: &str) -> Vec<SeriesDef> {
    let node = Capture::load_pair("node_exporter.prom", "node_exporter.after15s.prom", 15.0);
    let process = Capture::load_pair(
        "process_exporter.prom",
        "process_exporter.after15s.prom",
        15.0,
    );
    let mut defs = node.series(&format!("{host}:9100"), "node");
    defs.extend(process.series(&format!("{host}:9256"), "process"));
    defs
}

/// Per-second rates of a calm host's CPU time by mode (idle most of the time).
fn calm_cpu_rate(mode: &str) -> f64 {
    match mode {
        "idle" => 0.93,
        "user" => 0.05,
        "system" => 0.02,
        _ => 0.0,
    }
}

/// Calm captured hosts named `names` (node_exporter and process-exporter each).
pub fn calm_hosts(names: &[&str]) -> Vec<SeriesDef> {
    let mut defs = Vec::new();
    for h in names {
        let mut host = node_host(h);
        calm(&mut host, h);
        defs.extend(host);
    }
    defs
}

/// The captured host made calm where the capture machine was not: it was compiling (both
/// CPUs busy, `rustc` the top process) and ran no NTP daemon (sync status 0, maximum error
/// 16 s). A calm host's CPUs are mostly idle and its clock is synchronised.
pub fn calm(defs: &mut [SeriesDef], host: &str) {
    let node = format!("{host}:9100");
    let process = format!("{host}:9256");
    set(
        defs,
        "node_cpu_seconds_total",
        &[("instance", &node)],
        |l, ago| {
            let r = calm_cpu_rate(l.get("mode").map_or("", String::as_str));
            Some(1000.0 + r * (COUNTING_FOR - ago as f64))
        },
    );
    set(
        defs,
        "namedprocess_namegroup_cpu_seconds_total",
        &[("instance", &process)],
        |_, ago| Some(10.0 + 0.001 * (COUNTING_FOR - ago as f64)),
    );
    set(
        defs,
        "node_timex_sync_status",
        &[("instance", &node)],
        |_, _| Some(1.0),
    );
    set(
        defs,
        "node_timex_maxerror_seconds",
        &[("instance", &node)],
        |_, _| Some(0.25),
    );
}

#[test]
fn an_exposition_line_parses_with_escaped_label_values_and_special_values() {
    let parsed = parse_exposition(
        "# TYPE x counter\n# TYPE h histogram\nx{a=\"q\\\"uo,te\",b=\"l\\nf\"} 1.5e+09\ny NaN\nh_bucket{le=\"+Inf\"} 3 1700000000\n",
    );
    assert_eq!(parsed.len(), 3);
    assert_eq!(parsed[0].0, "x");
    assert_eq!(parsed[0].1["a"], "q\"uo,te");
    assert_eq!(parsed[0].1["b"], "l\nf");
    assert_eq!(parsed[0].2, 1.5e9);
    assert!(parsed[0].3, "a counter");
    assert!(parsed[1].2.is_nan() && !parsed[1].3);
    assert_eq!(parsed[2].1["le"], "+Inf");
    assert!(parsed[2].3, "a histogram's bucket counts");
}

#[test]
fn every_captured_exporter_parses_and_the_node_capture_replays_counters_and_its_clock() {
    for f in [
        "node_exporter.prom",
        "process_exporter.prom",
        "blackbox_http_200.prom",
        "blackbox_https_selfsigned.prom",
        "kube_state_metrics.prom",
        "kubelet_metrics_resource.prom",
        "node_exporter_btrfs.before.prom",
        "node_exporter_btrfs.prom",
    ] {
        assert!(Capture::load(f).len() > 10, "{f}");
    }
    let node = Capture::load_pair("node_exporter.prom", "node_exporter.after15s.prom", 15.0);
    let defs = node.series("oak-1:9100", "node");
    let find = |name: &str, l: &[(&str, &str)]| {
        defs.iter()
            .find(|d| {
                d.name == name
                    && l.iter()
                        .all(|(k, v)| d.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .unwrap_or_else(|| panic!("{name}"))
    };
    let clock = find("node_time_seconds", &[("instance", "oak-1:9100")]);
    let now = Utc::now().timestamp() as f64;
    assert!(((clock.value)(60).unwrap() - (now - 60.0)).abs() < 5.0);
    let user = find(
        "node_cpu_seconds_total",
        &[("cpu", "0"), ("mode", "user"), ("job", "node")],
    );
    let (a, b) = ((user.value)(120).unwrap(), (user.value)(60).unwrap());
    assert!(b > a, "a busy CPU's user time rises: {a} → {b}");
    let total = find("node_memory_MemTotal_bytes", &[]);
    assert_eq!((total.value)(3600), (total.value)(0));
}

/// The facts `analyzer` found.
pub fn of(facts: &[Fact], analyzer: &str) -> Vec<Fact> {
    facts
        .iter()
        .filter(|f| f.analyzer == analyzer)
        .cloned()
        .collect()
}

/// Seconds between `f`'s since and `secs_ago` before now.
pub fn since_off(f: &Fact, secs_ago: i64) -> i64 {
    let expected = Utc::now() - chrono::TimeDelta::seconds(secs_ago);
    (f.since.expect("a since") - expected).num_seconds().abs()
}
