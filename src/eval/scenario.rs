//! A scenario as written on disk: a directory holding `scenario.toml` (trigger, world,
//! expectation) and the files it names. Loading checks every regex and every file, and
//! fills the `{{now…}}` placeholders of the files it reads so alerts and answers are
//! current whenever the scenario runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Deserialize;

use super::EvalError;
pub use super::background::BackgroundSpec;

/// One scenario, loaded and checked.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: String,
    pub dir: PathBuf,
    pub spec: ScenarioSpec,
}

/// `scenario.toml`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    #[serde(default)]
    pub description: String,
    /// Names `--rename` renames besides those it finds in the world (see `eval::rename`).
    #[serde(default)]
    pub rename: Vec<String>,
    pub trigger: TriggerSpec,
    #[serde(default)]
    pub world: WorldSpec,
    pub expect: Expectation,
}

/// What starts the investigation.
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum TriggerSpec {
    /// A Grafana unified-alerting webhook payload (file in the scenario dir).
    Grafana { payload: PathBuf },
    /// An Alertmanager v4 webhook payload (file in the scenario dir).
    Alertmanager { payload: PathBuf },
    /// A question, as `sre-agent ask` or `POST /api/v1/ask` sends it.
    Ask { question: String },
}

/// The systems the agent can look at. Everything absent is not configured.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorldSpec {
    /// How far back series start (default 6h).
    #[serde(default, with = "opt_duration")]
    pub duration: Option<Duration>,
    /// Sample spacing (default 1m).
    #[serde(default, with = "opt_duration")]
    pub step: Option<Duration>,
    /// Prometheus series, backfilled into a real Prometheus.
    #[serde(default)]
    pub series: Vec<SeriesSpec>,
    /// Every series of a captured real exporter for each of some instances.
    #[serde(default)]
    pub background: Vec<BackgroundSpec>,
    /// Prometheus rule files (in the scenario dir) the real Prometheus loads.
    #[serde(default)]
    pub rules: Vec<PathBuf>,
    /// Loki log streams.
    #[serde(default)]
    pub loki: Vec<StreamSpec>,
    /// Kubernetes objects and pod logs.
    pub kubernetes: Option<KubernetesSpec>,
    /// Directories of answers by path for Proxmox VE, PBS, TrueNAS and Grafana.
    #[serde(default)]
    pub answers: AnswersSpec,
}

/// One Prometheus series: a name, labels and a shape over the world's window. (Unknown
/// keys cannot be refused here: serde's `flatten` does not allow it.)
#[derive(Clone, Debug, Deserialize)]
pub struct SeriesSpec {
    pub name: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(flatten)]
    pub shape: Shape,
    /// A counter: the shape gives its rate per second and the samples are its running sum.
    #[serde(default)]
    pub counter: bool,
    /// No samples in the last this-long (a target that went down, a series that vanished).
    #[serde(default, with = "opt_duration")]
    pub absent_for: Option<Duration>,
    /// Overrides the world's `duration` for this series.
    #[serde(default, with = "opt_duration")]
    pub duration: Option<Duration>,
}

/// How a series' value moves over time (`shape = "…"` in TOML).
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "shape", rename_all = "lowercase", deny_unknown_fields)]
pub enum Shape {
    Constant {
        value: f64,
    },
    /// From `from` at the start of the window to `to` at its end (now).
    Linear {
        from: f64,
        to: f64,
    },
    /// `before` until `ago` before now, then `after`.
    Step {
        before: f64,
        after: f64,
        #[serde(with = "duration")]
        ago: Duration,
    },
    /// Alternates between `low` and `high` every `period`.
    Flapping {
        low: f64,
        high: f64,
        #[serde(with = "duration")]
        period: Duration,
    },
}

/// A Loki stream: labels and lines from a file (`<age> <line>`, age like `5m` or `1h2m`)
/// and/or lines repeated at a fixed interval.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamSpec {
    pub labels: BTreeMap<String, String>,
    pub file: Option<PathBuf>,
    #[serde(default)]
    pub repeat: Vec<RepeatSpec>,
}

/// `text` every `every` during the last `over`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepeatSpec {
    pub text: String,
    #[serde(with = "duration")]
    pub every: Duration,
    #[serde(with = "duration")]
    pub over: Duration,
}

/// Kubernetes objects (a JSON list of any of Pod, Event, Node, Deployment, StatefulSet,
/// DaemonSet, ReplicaSet) and pod logs keyed `namespace/pod`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubernetesSpec {
    pub objects: PathBuf,
    #[serde(default)]
    pub logs: BTreeMap<String, PathBuf>,
}

/// Answer directories: the file `<dir>/<api path>.json` answers `GET <api base>/<api path>`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswersSpec {
    /// Under `/api2/json/`.
    pub proxmox: Option<PathBuf>,
    /// Under `/api2/json/`.
    pub pbs: Option<PathBuf>,
    /// Under `/api/v2.0/`.
    pub truenas: Option<PathBuf>,
    /// Under `/`.
    pub grafana: Option<PathBuf>,
}

/// What a good investigation of this scenario concludes.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expectation {
    /// Accepted final statuses (default: finished).
    #[serde(default = "finished")]
    pub status: Vec<String>,
    /// Regexes the finding's text must match (case-insensitive).
    #[serde(default)]
    pub facts: Vec<String>,
    /// Numbers the finding must state.
    #[serde(default)]
    pub numbers: Vec<NumberFact>,
    /// Regexes tool names: each must match a tool the investigation called.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Regexes the finding must not match (case-insensitive).
    #[serde(default)]
    pub forbidden: Vec<String>,
}

/// A number the finding must state, within `tolerance` of `value`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NumberFact {
    /// What it is, for the failure reason.
    pub what: String,
    pub value: f64,
    #[serde(default)]
    pub tolerance: f64,
    /// A regex that must follow the number (e.g. `%|percent`, `h|hours?`).
    pub unit: Option<String>,
}

fn finished() -> Vec<String> {
    vec!["finished".into()]
}

impl Scenario {
    /// Loads `dir/scenario.toml` and checks its files and regexes.
    pub fn load(dir: &Path) -> Result<Self, EvalError> {
        let file = dir.join("scenario.toml");
        let text = std::fs::read_to_string(&file).map_err(|e| EvalError::io(&file, e))?;
        // Placeholders in scenario.toml itself (a series value such as a certificate's
        // expiry time) are filled at load; `cli::eval` loads again before each run.
        let text = fill_placeholders(&text, Utc::now()).map_err(|reason| EvalError::Scenario {
            path: file.clone(),
            reason,
        })?;
        let spec: ScenarioSpec = toml::from_str(&text).map_err(|e| EvalError::Scenario {
            path: file.clone(),
            reason: e.to_string(),
        })?;
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| dir.display().to_string());
        let scenario = Self {
            name,
            dir: dir.to_path_buf(),
            spec,
        };
        scenario.check()?;
        Ok(scenario)
    }

    /// Every scenario directory under `root` (those holding a scenario.toml), by name.
    pub fn load_all(root: &Path) -> Result<Vec<Self>, EvalError> {
        let entries = std::fs::read_dir(root).map_err(|e| EvalError::io(root, e))?;
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.join("scenario.toml").is_file())
            .collect();
        dirs.sort();
        dirs.iter().map(|d| Self::load(d)).collect()
    }

    /// A file of the scenario with its placeholders filled for `now`.
    pub fn read(&self, rel: &Path, now: DateTime<Utc>) -> Result<String, EvalError> {
        let path = self.dir.join(rel);
        let text = std::fs::read_to_string(&path).map_err(|e| EvalError::io(&path, e))?;
        fill_placeholders(&text, now).map_err(|reason| EvalError::Scenario { path, reason })
    }

    fn invalid(&self, reason: String) -> EvalError {
        EvalError::Scenario {
            path: self.dir.join("scenario.toml"),
            reason,
        }
    }

    fn check(&self) -> Result<(), EvalError> {
        let spec = &self.spec;
        let mut files: Vec<&PathBuf> = spec.world.rules.iter().collect();
        match &spec.trigger {
            TriggerSpec::Grafana { payload } | TriggerSpec::Alertmanager { payload } => {
                files.push(payload)
            }
            TriggerSpec::Ask { question } if question.trim().is_empty() => {
                return Err(self.invalid("trigger.question is empty".into()));
            }
            TriggerSpec::Ask { .. } => {}
        }
        files.extend(spec.world.loki.iter().filter_map(|s| s.file.as_ref()));
        if let Some(k) = &spec.world.kubernetes {
            files.push(&k.objects);
            files.extend(k.logs.values());
        }
        let a = &spec.world.answers;
        files.extend(
            [&a.proxmox, &a.pbs, &a.truenas, &a.grafana]
                .into_iter()
                .flatten(),
        );
        for f in files {
            if !self.dir.join(f).exists() {
                return Err(self.invalid(format!("{} does not exist", f.display())));
            }
        }
        let e = &spec.expect;
        let regexes = e.facts.iter().chain(&e.forbidden).chain(&e.tools);
        for r in regexes.chain(e.numbers.iter().filter_map(|n| n.unit.as_ref())) {
            regex_lite::Regex::new(r).map_err(|err| self.invalid(format!("regex {r:?}: {err}")))?;
        }
        for b in &spec.world.background {
            super::background::check(b).map_err(|e| self.invalid(e))?;
        }
        for s in &spec.world.series {
            if s.name.is_empty()
                || !s
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
            {
                return Err(self.invalid(format!("series name {:?} is not a metric name", s.name)));
            }
        }
        Ok(())
    }
}

/// Replaces `{{now}}`, `{{now-9d}}`, `{{now+1h30m}}` with unix seconds, or another form
/// with a suffix: `{{now-5m:rfc3339}}`, `{{now:ms}}`, `{{now:ns}}`. Other `{{…}}` (Grafana
/// or Prometheus templates such as `{{ $labels.instance }}`) stay as they are.
pub fn fill_placeholders(text: &str, now: DateTime<Utc>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find("}}")
            .ok_or_else(|| format!("unclosed placeholder near {:?}", &rest[start..]))?;
        let expr = after[..end].trim();
        if expr.starts_with("now") {
            out.push_str(&placeholder(expr, now)?);
        } else {
            out.push_str(&rest[start..start + end + 4]);
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

fn placeholder(expr: &str, now: DateTime<Utc>) -> Result<String, String> {
    let (time, format) = expr.split_once(':').unwrap_or((expr, "s"));
    let offset = time
        .strip_prefix("now")
        .ok_or_else(|| format!("placeholder {{{{{expr}}}}} must start with now"))?;
    let at = match offset.chars().next() {
        None => now,
        Some(sign @ ('+' | '-')) => {
            let d = humantime::parse_duration(offset[1..].trim())
                .map_err(|e| format!("placeholder {{{{{expr}}}}}: {e}"))?;
            let d = chrono::Duration::from_std(d).map_err(|e| e.to_string())?;
            if sign == '+' { now + d } else { now - d }
        }
        Some(_) => return Err(format!("placeholder {{{{{expr}}}}}: expected now±DURATION")),
    };
    Ok(match format {
        "s" => at.timestamp().to_string(),
        "ms" => at.timestamp_millis().to_string(),
        "ns" => at.timestamp_nanos_opt().unwrap_or_default().to_string(),
        "rfc3339" => at.to_rfc3339_opts(SecondsFormat::Secs, true),
        other => {
            return Err(format!(
                "placeholder {{{{{expr}}}}}: unknown format {other:?} (s, ms, ns, rfc3339)"
            ));
        }
    })
}

mod duration {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let s = String::deserialize(d)?;
        humantime::parse_duration(&s).map_err(serde::de::Error::custom)
    }
}

mod opt_duration {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|s| humantime::parse_duration(&s).map_err(serde::de::Error::custom))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_become_times_relative_to_now() {
        let now = DateTime::parse_from_rfc3339("2026-01-10T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let text = r#"{"a": {{now}}, "b": "{{now-1h:rfc3339}}", "c": {{ now+1d:ms }}}"#;
        assert_eq!(
            fill_placeholders(text, now).unwrap(),
            r#"{"a": 1768046400, "b": "2026-01-10T11:00:00Z", "c": 1768132800000}"#
        );
        let template = "{{ $labels.instance }} is {{ $value }}";
        assert_eq!(fill_placeholders(template, now).unwrap(), template);
        assert!(fill_placeholders("{{now~1h}}", now).is_err());
        assert!(fill_placeholders("{{now", now).is_err());
        assert!(fill_placeholders("{{now:weeks}}", now).is_err());
    }

    #[test]
    fn a_scenario_toml_with_every_part_parses() {
        let spec: ScenarioSpec = toml::from_str(
            r#"
            [trigger]
            kind = "ask"
            question = "is pve1 fine?"
            [world]
            duration = "2h"
            [[world.series]]
            name = "up"
            labels = { instance = "pve1:9100" }
            shape = "step"
            before = 1
            after = 0
            ago = "20m"
            [[world.series]]
            name = "cpu_seconds_total"
            shape = "constant"
            value = 0.9
            counter = true
            [[world.loki]]
            labels = { job = "nginx" }
            repeat = [{ text = "502", every = "1m", over = "10m" }]
            [expect]
            facts = ["pve1"]
            numbers = [{ what = "down for", value = 20, tolerance = 2, unit = "m" }]
            "#,
        )
        .unwrap();
        assert!(matches!(spec.world.series[0].shape, Shape::Step { .. }));
        assert!(spec.world.series[1].counter);
        assert_eq!(spec.expect.status, vec!["finished"]);
    }
}
