//! The world of one scenario run: a real Prometheus holding its series, and fakes for
//! Loki, Kubernetes, Proxmox VE, PBS, TrueNAS and Grafana, all in a temporary directory.
//! [`World::configure`] points a daemon configuration at them and at nothing else.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;
use tempfile::TempDir;

use super::EvalError;
use super::fakes::{self, AnswerService, FakeServer, LogLine};
use super::prometheus::{self, PrometheusProcess};
use super::scenario::{Scenario, StreamSpec};
use super::series;
use crate::config::{Config, HttpUrl, Secret};

/// Default window of series.
const DURATION: Duration = Duration::from_secs(6 * 3600);
/// Default sample spacing.
const STEP: Duration = Duration::from_secs(60);

/// Everything a scenario run talks to; stopped when dropped.
pub struct World {
    pub dir: TempDir,
    pub prometheus: Option<PrometheusProcess>,
    loki: Option<FakeServer>,
    kubeconfig: Option<PathBuf>,
    answers: Vec<(AnswerService, FakeServer)>,
    /// Kept so the Kubernetes fake runs as long as the world.
    _kubernetes: Option<FakeServer>,
    runbooks: PathBuf,
}

impl World {
    /// Builds and starts the world of `scenario` as of `now`.
    pub async fn build(scenario: &Scenario, now: DateTime<Utc>) -> Result<Self, EvalError> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("sre-agent-eval-{}-", scenario.name))
            .tempdir()
            .map_err(|e| EvalError::io(&std::env::temp_dir(), e))?;
        let w = &scenario.spec.world;
        let prometheus = if w.series.is_empty() && w.rules.is_empty() && w.background.is_empty() {
            None
        } else {
            // Reading captures, writing the text and promtool's backfill take seconds of
            // CPU and block: off the runtime, so daemons and clients of other scenarios
            // running beside this one are not starved (a client stalled past the daemon's
            // header timeout has its connection closed).
            let (specs, backgrounds) = (w.series.clone(), w.background.clone());
            let (window, step) = (w.duration.unwrap_or(DURATION), w.step.unwrap_or(STEP));
            let (scenario_file, dir_path) =
                (scenario.dir.join("scenario.toml"), dir.path().to_path_buf());
            let data = tokio::task::spawn_blocking(move || {
                let mut background = Vec::new();
                for b in &backgrounds {
                    background.extend(super::background::series(b).map_err(|reason| {
                        EvalError::Scenario {
                            path: scenario_file.clone(),
                            reason,
                        }
                    })?);
                }
                let text = series::openmetrics(&specs, &background, now.timestamp(), window, step);
                prometheus::backfill(&dir_path, &text)
            })
            .await
            .map_err(|e| EvalError::Tool {
                tool: "promtool",
                reason: format!("the backfill task failed: {e}"),
            })??;
            let rules: Vec<PathBuf> = w
                .rules
                .iter()
                .map(|r| std::path::absolute(scenario.dir.join(r)).unwrap_or(scenario.dir.join(r)))
                .collect();
            Some(prometheus::start(dir.path(), &data, &rules).await?)
        };
        let loki = if w.loki.is_empty() {
            None
        } else {
            let mut streams = Vec::new();
            for s in &w.loki {
                streams.push((s.labels.clone(), stream_lines(scenario, s, now)?));
            }
            Some(FakeServer::start(fakes::loki_router(streams)).await?)
        };
        let (kubernetes, kubeconfig) = match &w.kubernetes {
            None => (None, None),
            Some(k) => {
                let text = scenario.read(&k.objects, now)?;
                let objects: Vec<Value> =
                    serde_json::from_str(&text).map_err(|e| EvalError::Scenario {
                        path: scenario.dir.join(&k.objects),
                        reason: e.to_string(),
                    })?;
                let mut logs = BTreeMap::new();
                for (key, file) in &k.logs {
                    logs.insert(key.clone(), scenario.read(file, now)?);
                }
                let server = FakeServer::start(fakes::kubernetes_router(objects, logs)).await?;
                let path = dir.path().join("kubeconfig.yaml");
                std::fs::write(&path, fakes::kubeconfig(&server.url))
                    .map_err(|e| EvalError::io(&path, e))?;
                (Some(server), Some(path))
            }
        };
        let a = &w.answers;
        let mut answers = Vec::new();
        for (service, rel) in [
            (AnswerService::Proxmox, &a.proxmox),
            (AnswerService::Pbs, &a.pbs),
            (AnswerService::Truenas, &a.truenas),
            (AnswerService::Grafana, &a.grafana),
        ] {
            if let Some(rel) = rel {
                let router = fakes::answers_router(service, &scenario.dir.join(rel), now)?;
                answers.push((service, FakeServer::start(router).await?));
            }
        }
        let runbooks = scenario.dir.join("runbooks");
        Ok(Self {
            runbooks: if runbooks.is_dir() {
                runbooks
            } else {
                dir.path().join("no-runbooks")
            },
            dir,
            prometheus,
            loki,
            kubeconfig,
            answers,
            _kubernetes: kubernetes,
        })
    }

    /// `base` (the user's configuration, for its `[llm]` section) pointed at this world:
    /// every integration is the world's or off, the store is fresh and the daemon listens
    /// on a free loopback port without auth.
    pub fn configure(&self, base: &Config) -> Config {
        let mut c = Config {
            llm: base.llm.clone(),
            ..Config::default()
        };
        c.server.listen = "127.0.0.1:0".into();
        c.server.data_dir = self.dir.path().join("store");
        c.runbooks.dir = self.runbooks.clone();
        let url = |u: &str| HttpUrl::from_str(u).ok();
        if let Some(p) = &self.prometheus {
            c.prometheus.url = url(&p.url);
        }
        if let Some(l) = &self.loki {
            c.loki.url = url(&l.url);
        }
        if let Some(k) = &self.kubeconfig {
            c.kubernetes.enabled = true;
            c.kubernetes.kubeconfig = Some(k.clone());
        }
        for (service, server) in &self.answers {
            match service {
                AnswerService::Proxmox => {
                    c.proxmox.url = url(&server.url);
                    c.proxmox.token_id = Some("eval@pve!eval".into());
                    c.proxmox.token_secret = Some(Secret::new("eval"));
                }
                AnswerService::Pbs => {
                    c.pbs.url = url(&server.url);
                    c.pbs.token_id = Some("eval@pbs!eval".into());
                    c.pbs.token_secret = Some(Secret::new("eval"));
                }
                AnswerService::Truenas => {
                    c.truenas.url = url(&server.url);
                    c.truenas.api_key = Some(Secret::new("eval"));
                }
                AnswerService::Grafana => {
                    c.grafana.url = url(&server.url);
                    c.grafana.token = Some(Secret::new("eval"));
                }
            }
        }
        c
    }
}

/// The lines of a stream: its file (`<age> <text>` per line) and its repeats.
fn stream_lines(
    scenario: &Scenario,
    spec: &StreamSpec,
    now: DateTime<Utc>,
) -> Result<Vec<LogLine>, EvalError> {
    let now_ns = now.timestamp_nanos_opt().unwrap_or_default();
    let mut lines = Vec::new();
    if let Some(file) = &spec.file {
        let text = scenario.read(file, now)?;
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let (age, rest) = line.split_once(' ').unwrap_or((line, ""));
            let age = humantime::parse_duration(age).map_err(|e| EvalError::Scenario {
                path: scenario.dir.join(file),
                reason: format!("line {}: {age:?} is not an age such as 5m ({e})", i + 1),
            })?;
            lines.push((now_ns - age.as_nanos() as i64, rest.to_string()));
        }
    }
    for r in &spec.repeat {
        let every = r.every.as_nanos().max(1) as i64;
        let mut t = now_ns - r.over.as_nanos() as i64;
        while t <= now_ns {
            lines.push((t, r.text.clone()));
            t += every;
        }
    }
    Ok(lines)
}
