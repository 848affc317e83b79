//! Version changes in the window, from every `*_build_info` series' `version` label: the
//! versions each target (job and instance) ran at the window's start against those it
//! runs now. A target that kept its address and changed version is one fact; targets
//! that came with a new version under new addresses (pods replaced by a rollout) are one
//! fact for their job. When: the first point of the new version's series.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;

use super::history::first_seen;
use super::{Prom, selector};
use crate::analyze::{AnalyzeError, Analyzer, Entity, Fact, FactClass, Scope, Severity, Source};
use crate::integrations::prometheus::Sample;

/// The versions of every build-info series, per metric, job and instance.
const VERSIONS: &str =
    r#"group by (__name__, job, instance, version) ({__name__=~".+_build_info", version!=""})"#;

/// `(metric, job, instance)` → versions.
type Versions = BTreeMap<(String, String, String), BTreeSet<String>>;

/// One version change found.
struct Change {
    metric: String,
    job: String,
    /// `None`: new instances of the job.
    instance: Option<String>,
    before: BTreeSet<String>,
    after: BTreeSet<String>,
}

pub struct VersionChanges(pub Prom);

#[async_trait]
impl Analyzer for VersionChanges {
    fn name(&self) -> &'static str {
        "version_changes"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let (now, then) = tokio::join!(
            self.0.vector(VERSIONS),
            self.0.vector_at(VERSIONS, scope.window_start)
        );
        let changes = compare(&versions(now?), &versions(then?));
        if changes.is_empty() {
            return Ok(Vec::new());
        }
        let queries: Vec<String> = changes.iter().map(query).collect();
        let histories = self.0.histories(&queries, scope).await?;
        let mut facts = Vec::new();
        for (i, c) in changes.iter().enumerate() {
            let since = histories.get(i).and_then(|h| first_seen(h));
            let mut labels = BTreeMap::from([("job".to_string(), c.job.clone())]);
            let host = c.instance.as_ref().map(|i| {
                labels.insert("instance".into(), i.clone());
                super::super::host_of(i)
            });
            let name = c.metric.strip_suffix("_build_info").unwrap_or(&c.metric);
            let what = match c.instance {
                Some(_) => "version changed",
                None => "new instances with a new version",
            };
            let join = |s: &BTreeSet<String>| s.iter().cloned().collect::<Vec<_>>().join(", ");
            facts.push(
                Fact::new(
                    FactClass::Change,
                    self.name(),
                    Entity::new("service", name)
                        .on_host(host)
                        .with_labels(labels),
                    what,
                    Severity::Info,
                    Source::promql(&queries[i]),
                )
                .since(since)
                .detail(format!(
                    "version {} → {} (job {})",
                    join(&c.before),
                    join(&c.after),
                    c.job
                )),
            );
        }
        Ok(facts)
    }
}

fn versions(samples: Vec<Sample>) -> Versions {
    let mut out = Versions::new();
    for s in samples {
        let get = |k: &str| s.metric.get(k).cloned().unwrap_or_default();
        out.entry((get("__name__"), get("job"), get("instance")))
            .or_default()
            .insert(get("version"));
    }
    out
}

/// The changes from `then` to `now`: per target that was there at both times, and per
/// job for targets that are new.
fn compare(now: &Versions, then: &Versions) -> Vec<Change> {
    let mut out = Vec::new();
    let mut new_by_job: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for ((metric, job, instance), after) in now {
        match then.get(&(metric.clone(), job.clone(), instance.clone())) {
            Some(before) if !after.is_subset(before) => out.push(Change {
                metric: metric.clone(),
                job: job.clone(),
                instance: Some(instance.clone()),
                before: before.clone(),
                after: after.difference(before).cloned().collect(),
            }),
            Some(_) => {}
            None => new_by_job
                .entry((metric.clone(), job.clone()))
                .or_default()
                .extend(after.iter().cloned()),
        }
    }
    for ((metric, job), after) in new_by_job {
        let before: BTreeSet<String> = then
            .iter()
            .filter(|((m, j, _), _)| *m == metric && *j == job)
            .flat_map(|(_, v)| v.iter().cloned())
            .collect();
        let fresh: BTreeSet<String> = after.difference(&before).cloned().collect();
        // A job seen for the first time is not a version change.
        if !before.is_empty() && !fresh.is_empty() {
            out.push(Change {
                metric,
                job,
                instance: None,
                before,
                after: fresh,
            });
        }
    }
    out
}

/// The series of the new version (its first point is when it appeared).
fn query(c: &Change) -> String {
    let mut ids = vec![("job", c.job.as_str())];
    if let Some(i) = &c.instance {
        ids.push(("instance", i.as_str()));
    }
    let sel = selector(ids);
    let version = c
        .after
        .iter()
        .next()
        .map(String::as_str)
        .unwrap_or_default();
    let inner = sel.trim_end_matches('}');
    format!(
        "group by (instance, version) ({}{inner},version=\"{}\"}})",
        c.metric,
        super::escape(version)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(rows: &[(&str, &str, &str, &str)]) -> Versions {
        let mut out = Versions::new();
        for (m, j, i, ver) in rows {
            out.entry((m.to_string(), j.to_string(), i.to_string()))
                .or_default()
                .insert(ver.to_string());
        }
        out
    }

    #[test]
    fn a_target_or_a_job_with_a_version_not_there_before_is_a_change() {
        let then = v(&[
            ("prometheus_build_info", "prometheus", "p1:9090", "2.41.0"),
            ("app_build_info", "api", "10.0.0.1:8080", "1.4.0"),
            ("node_exporter_build_info", "node", "h1:9100", "1.5.0"),
        ]);
        let now = v(&[
            ("prometheus_build_info", "prometheus", "p1:9090", "2.42.0"),
            ("app_build_info", "api", "10.0.0.9:8080", "1.5.0"),
            ("node_exporter_build_info", "node", "h1:9100", "1.5.0"),
            ("node_exporter_build_info", "node", "h2:9100", "1.5.0"),
            ("grafana_build_info", "grafana", "g:3000", "10.0.0"),
        ]);
        let c = compare(&now, &then);
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].metric, "prometheus_build_info");
        assert_eq!(c[0].instance.as_deref(), Some("p1:9090"));
        assert_eq!(c[1].job, "api");
        assert_eq!(c[1].instance, None);
        assert_eq!(
            query(&c[0]),
            "group by (instance, version) (prometheus_build_info{job=\"prometheus\",instance=\"p1:9090\",version=\"2.42.0\"})"
        );
    }
}
