//! Settings that changed: gauges holding a configured value, found by the words exporters
//! name them with (postgres_exporter's `pg_settings_*`, mysqld_exporter's
//! `mysql_global_variables_*`, redis_exporter's `redis_config_*`, limits such as
//! `…_limit` or `…_max_…`), whose value now differs from the one at the window's start and
//! that changed at most [`MAX_CHANGES`] times in the window (a value that moves often is a
//! measurement, not a setting). One fact per target, each setting's old and new value and
//! when: a lowered limit or a new configuration is often the cause an alert shows later.
//!
//! The comparison runs in Prometheus (`now != window start`, with the metric name copied
//! into a label so that different settings of one target do not collide), so only the
//! changed series come back, then the history of each (at most `MAX_LOOKUPS`) dates it.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::history::last_transition;
use super::{Prom, host, identity, label, labels_map, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source,
};
use crate::integrations::prometheus::Labels;

/// Words of a metric name (between underscores) that say it holds a configured value.
const SETTING_WORDS: &str = "settings?|config|variables?|limits?|max|maximum";
/// Words that say the value is a time, a reload's outcome or a running tally, which other
/// analyzers read (`config_reloads`, `stale_jobs`).
const NOT_SETTINGS: [&str; 6] = ["timestamp", "last", "reload", "reloads", "total", "created"];
/// Prefixes of the client libraries' own series (a Go runtime's memory limit moves with
/// the heap).
const LIBRARY_PREFIXES: [&str; 3] = ["go_", "process_", "python_"];
/// Changes in the window beyond which a value is a measurement.
const MAX_CHANGES: usize = 2;
/// The label the metric name is copied into for the comparison.
const NAME_LABEL: &str = "sre_agent_metric";

pub struct SettingChanges(pub Prom);

#[async_trait]
impl Analyzer for SettingChanges {
    fn name(&self) -> &'static str {
        "setting_changes"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let secs = scope.window().num_seconds().max(60);
        let named = |offset: &str| {
            format!(
                "label_replace({{__name__=~\".+_({SETTING_WORDS})(_.*)?\"}}{offset}, \
                 \"{NAME_LABEL}\", \"$1\", \"__name__\", \"(.+)\")"
            )
        };
        let expr = format!("{} != {}", named(""), named(&format!(" offset {secs}s")));
        let changed: Vec<Labels> = self
            .0
            .vector(&expr)
            .await?
            .into_iter()
            .map(|s| s.metric)
            .filter(|m| is_setting(m.get(NAME_LABEL).map_or("", String::as_str)))
            .collect();
        let queries: Vec<String> = changed.iter().map(query).collect();
        let histories = self.0.histories(&queries, scope).await?;
        let mut by_target: BTreeMap<(String, String), Vec<Change>> = BTreeMap::new();
        for (labels, history) in changed.iter().zip(&histories) {
            let Some(values) = history.first().map(|s| &s.values) else {
                continue;
            };
            let changes = values.windows(2).filter(|w| w[0].1 != w[1].1).count();
            let (Some((when, before)), Some(&(_, after))) =
                (last_transition(values), values.last())
            else {
                continue;
            };
            if changes == 0 || changes > MAX_CHANGES {
                continue;
            }
            let target = (label(labels, "job"), label(labels, "instance"));
            by_target.entry(target).or_default().push(Change {
                labels: labels.clone(),
                before,
                after,
                when,
            });
        }
        Ok(by_target
            .into_values()
            .filter_map(|changes| fact(self.name(), changes))
            .collect())
    }
}

/// One setting's change.
struct Change {
    labels: Labels,
    before: f64,
    after: f64,
    when: DateTime<Utc>,
}

impl Change {
    fn metric(&self) -> &str {
        self.labels.get(NAME_LABEL).map_or("", String::as_str)
    }

    /// `pg_settings_max_connections 200 → 50 at 17:04 UTC`.
    fn describe(&self) -> String {
        let name = self.metric();
        let own: Vec<String> = identity(&self.labels)
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "instance" | "job" | NAME_LABEL))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let series = match own.is_empty() {
            true => name.to_string(),
            false => format!("{name}{{{}}}", own.join(",")),
        };
        format!(
            "{series} {} → {} at {}",
            Quantity::of_metric(name, self.before),
            Quantity::of_metric(name, self.after),
            self.when.format("%H:%M UTC")
        )
    }
}

/// Whether metric `name` holds a setting: a setting word, none of the words of a time or a
/// tally, not a client library's own series.
fn is_setting(name: &str) -> bool {
    let words: Vec<&str> = name.split('_').collect();
    !LIBRARY_PREFIXES.iter().any(|p| name.starts_with(p))
        && !words.iter().any(|w| NOT_SETTINGS.contains(w))
}

/// The query of one changed series (its metric and its own labels).
fn query(labels: &Labels) -> String {
    let name = labels.get(NAME_LABEL).map_or("", String::as_str);
    let own = identity(labels);
    let sel = selector(
        own.iter()
            .filter(|(k, _)| k.as_str() != NAME_LABEL)
            .map(|(k, v)| (k.as_str(), v.as_str())),
    );
    format!("{name}{sel}")
}

/// The fact of one target's changed settings, the latest change first.
fn fact(analyzer: &str, mut changes: Vec<Change>) -> Option<Fact> {
    changes.sort_by_key(|c| std::cmp::Reverse(c.when));
    let first = changes.first()?;
    let mut labels = first.labels.clone();
    labels.remove(NAME_LABEL);
    let service = labels
        .get("job")
        .cloned()
        .unwrap_or_else(|| first.metric().to_string());
    let detail: Vec<String> = changes.iter().map(Change::describe).collect();
    let what = match changes.len() {
        1 => "a setting changed".to_string(),
        n => format!("{n} settings changed"),
    };
    Some(
        Fact::new(
            FactClass::Change,
            analyzer,
            Entity::new("service", service)
                .on_host(host(&labels))
                .with_labels(labels_map(&labels)),
            what,
            Severity::Warning,
            Source::promql(&query(&first.labels)),
        )
        .since(Some(first.when))
        .detail(detail.join("; ")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_told_from_times_tallies_and_library_series_by_their_words() {
        for name in [
            "pg_settings_max_connections",
            "mysql_global_variables_max_connections",
            "redis_config_maxmemory",
            "node_nf_conntrack_entries_limit",
        ] {
            assert!(is_setting(name), "{name}");
        }
        for name in [
            "prometheus_config_last_reload_success_timestamp_seconds",
            "prometheus_config_last_reload_successful",
            "go_gc_gomemlimit_bytes",
            "process_max_fds",
            "haproxy_server_max_sessions_total",
        ] {
            assert!(!is_setting(name), "{name}");
        }
    }
}
