//! A real Prometheus for analyzer tests: series given as `(name, labels, samples)` are
//! backfilled with promtool and served; `Sweep::of` runs analyzers against it. Samples are
//! written from functions of the time before now, so a test says "free space falls 2 GiB
//! per hour for the last 20 minutes" rather than listing points.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use chrono::Utc;
use sre_agent::analyze::{Fact, Scope};
use sre_agent::config::UpstreamConfig;
use sre_agent::eval::prometheus::{PrometheusProcess, backfill, start};
use sre_agent::integrations::PrometheusClient;
use tempfile::TempDir;

use crate::support::external::require_tool;

/// One series: its name, labels, and value as a function of seconds before now
/// (`None`: no sample then).
pub struct SeriesDef {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: Box<dyn Fn(i64) -> Option<f64>>,
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
    }
}

/// A world: a real Prometheus with the series backfilled from `history_secs` ago until a
/// little after now, one sample every `step_secs`.
pub struct World {
    pub prometheus: PrometheusProcess,
    _dir: TempDir,
}

impl World {
    /// `None` when promtool/prometheus are missing (the test is skipped).
    pub async fn build(defs: &[SeriesDef], history_secs: i64, step_secs: i64) -> Option<Self> {
        sre_agent::install_crypto_provider();
        if !require_tool("promtool") || !require_tool("prometheus") {
            return None;
        }
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
                    .map(|(k, v)| {
                        format!("{k}=\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""))
                    })
                    .collect();
                let mut t = now - history_secs;
                while t <= now + 600 {
                    if let Some(v) = (d.value)(now - t) {
                        let _ = writeln!(text, "{name}{{{}}} {v} {t}", labels.join(","));
                    }
                    t += step_secs;
                }
            }
        }
        text.push_str("# EOF\n");
        let dir = tempfile::tempdir().unwrap();
        let data = backfill(dir.path(), &text).expect("backfill");
        let prometheus = start(dir.path(), &data, &[]).await.expect("prometheus");
        Some(Self {
            prometheus,
            _dir: dir,
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
