//! Analyzers over Prometheus, one file per failure class, and what they share: bounded
//! queries, the host of a series, label selectors built from label values as data, and
//! joins of two queries by their labels. Each analyzer reads the metric names real
//! exporters emit (node_exporter, process-exporter, cAdvisor, kube-state-metrics,
//! blackbox_exporter) and skips a variant it does not find.

mod filesystem;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::{AnalyzeError, Analyzer, Scope};
use crate::integrations::PrometheusClient;
use crate::integrations::prometheus::{Labels, Sample, Series};

/// Most series one analyzer query may return before it is skipped as too broad.
const MAX_SERIES: usize = 20_000;

/// The Prometheus analyzers, in the order their facts are listed.
pub fn analyzers(client: Arc<PrometheusClient>) -> Vec<Arc<dyn Analyzer>> {
    let p = Prom { client };
    vec![Arc::new(filesystem::FilesystemSpace(p.clone()))]
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

/// Escapes `v` for a double-quoted PromQL string.
pub fn escape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn the_last_change_is_the_first_point_of_the_last_run() {
        let v = [(60.0, 1.0), (120.0, 1.0), (180.0, 0.0), (240.0, 0.0)];
        assert_eq!(last_change(&v).unwrap().timestamp(), 180);
        assert_eq!(last_change(&[(60.0, 1.0), (120.0, 1.0)]), None);
        assert_eq!(last_change(&[]), None);
    }
}
