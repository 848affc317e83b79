//! Prometheus tools: `prometheus_query`, `prometheus_query_range`, `prometheus_alerts`,
//! `prometheus_targets`, `prometheus_metric_names`; plus the step that keeps a range
//! query small, which Loki's range queries share.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::ToolOutput;
use super::args::{ArgError, ago, arg, parse_duration, parse_time, required};
use super::compact::{
    compact_matrix, compact_matrix_with, compact_vector_with, fit_lines, format_labels, value_note,
};
use super::format::{age, humanize, summary};
use super::no_data::PromNoData;
use super::promql::selectors;
use super::trend::{self, Measure, Sizes, join_key, size_metric};
use super::units::unit_of;
use crate::analyze::Source;

use super::{Tool, ToolError};
use crate::integrations::PrometheusClient;
use crate::integrations::prometheus::{Labels, QueryResult};
use crate::text::truncate;

/// Most facts one range query contributes (one per series moving toward its limit).
const MAX_FACTS: usize = 8;

/// Most points per series a range query asks for.
pub const MAX_POINTS: f64 = 250.0;

/// A step that keeps a range at ≤ [`MAX_POINTS`] points, rounded up to a familiar value.
pub fn auto_step(range: Duration) -> Duration {
    const NICE: &[u64] = &[
        1, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
    ];
    let min = (range.as_secs_f64() / MAX_POINTS).ceil() as u64;
    let secs = NICE
        .iter()
        .copied()
        .find(|n| *n >= min)
        .unwrap_or(min.div_ceil(86400) * 86400);
    Duration::from_secs(secs.max(1))
}

/// `instance` values as an anchored PromQL regex alternative (`a|b`), escaped.
pub(crate) fn alternatives<'a>(values: impl Iterator<Item = &'a str>) -> String {
    let mut set: Vec<String> = values
        .map(|v| {
            let mut e = String::new();
            for c in v.chars() {
                // A regex escape, itself escaped for the PromQL string.
                match c {
                    '\\' => e.push_str("\\\\\\\\"),
                    '"' => e.push_str("\\\""),
                    c if ".+*?()|[]{}^$".contains(c) => {
                        e.push_str("\\\\");
                        e.push(c);
                    }
                    c => e.push(c),
                }
            }
            e
        })
        .collect();
    set.sort();
    set.dedup();
    set.join("|")
}

/// The sizes that go with free-bytes series (`node_filesystem_size_bytes` for
/// `node_filesystem_avail_bytes`, `MemTotal` for `MemAvailable`), their last value in the
/// `lookback` before `at`, by [`join_key`]. Best effort: a failed lookup leaves them out.
pub(crate) async fn sizes_for<'a>(
    client: &PrometheusClient,
    query: &str,
    metrics: impl Iterator<Item = &'a Labels>,
    at: DateTime<Utc>,
    lookback: Duration,
) -> Sizes {
    let mut sizes = Sizes::new();
    let metrics: Vec<&Labels> = metrics.collect();
    let instances = alternatives(
        metrics
            .iter()
            .filter_map(|m| m.get("instance").map(String::as_str)),
    );
    let size_names: Vec<String> = selectors(query)
        .into_iter()
        .filter_map(|s| s.name.as_deref().and_then(size_metric))
        .take(2)
        .collect();
    for name in size_names {
        let q = format!(
            "last_over_time({name}{{instance=~\"{instances}\"}}[{}s])",
            lookback.as_secs().max(600)
        );
        match client.query_vector(&q, Some(at)).await {
            Ok(v) => sizes.extend(v.into_iter().map(|s| (join_key(&s.metric), s.value))),
            Err(e) => tracing::debug!(error = %e, "no sizes for free-bytes series"),
        }
    }
    sizes
}

/// `prometheus_query`: an instant PromQL query.
pub struct PrometheusQuery {
    pub client: Arc<PrometheusClient>,
    pub max_chars: usize,
    /// Explains an empty answer.
    pub hints: Arc<PromNoData>,
}

impl PrometheusQuery {
    /// The name the tool registers under.
    pub const NAME: &'static str = "prometheus_query";
}

#[async_trait]
impl Tool for PrometheusQuery {
    fn name(&self) -> &'static str {
        Self::NAME
    }
    fn description(&self) -> &'static str {
        "Instant PromQL query (default now). Returns top series by value."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {
            "query": {"type": "string"},
            "time": {"type": "string", "description": "RFC3339, unix, or relative like 2h"}
        }, "required": ["query"]})
    }
    async fn call(&self, args: Value) -> Result<String, ToolError> {
        let query = required(&args, "query")?;
        let time = arg(&args, "time")
            .map(|t| parse_time(t, Utc::now()))
            .transpose()?;
        let unit = unit_of(query);
        let result = self.client.query(query, time).await?;
        let at = time.unwrap_or_else(Utc::now);
        Ok(match result {
            QueryResult::Vector(v) if v.is_empty() => {
                let text = self.hints.explain(query, at, at).await;
                truncate(&text, self.max_chars)
            }
            QueryResult::Vector(v) => {
                let measure = Measure::of(query, v.iter().map(|s| s.value));
                let sizes = if measure == Measure::FreeBytes {
                    let lookback = Duration::from_secs(3600);
                    sizes_for(
                        &self.client,
                        query,
                        v.iter().map(|s| &s.metric),
                        at,
                        lookback,
                    )
                    .await
                } else {
                    Sizes::new()
                };
                let unit = measure.unit().unwrap_or(unit);
                let at = at.timestamp() as f64;
                compact_vector_with(&v, unit, self.max_chars, measure, &sizes, at)
            }
            QueryResult::Matrix(m) if m.is_empty() => {
                let text = self.hints.explain(query, at, at).await;
                truncate(&text, self.max_chars)
            }
            QueryResult::Matrix(m) => compact_matrix(&m, unit, self.max_chars),
            QueryResult::Scalar { value, .. } => format!(
                "scalar {}{}",
                super::compact::format_number(value, unit),
                value_note(value, unit, at.timestamp() as f64)
            ),
            QueryResult::String { value, .. } => truncate(&value, self.max_chars),
        })
    }
}

/// `prometheus_query_range`: a PromQL range query, summarised per series with computed
/// change, rate and time to full.
pub struct PrometheusQueryRange {
    pub client: Arc<PrometheusClient>,
    pub max_chars: usize,
    /// Explains an empty answer.
    pub hints: Arc<PromNoData>,
}

impl PrometheusQueryRange {
    /// The name the tool registers under.
    pub const NAME: &'static str = "prometheus_query_range";
}

#[async_trait]
impl Tool for PrometheusQueryRange {
    fn name(&self) -> &'static str {
        Self::NAME
    }
    fn description(&self) -> &'static str {
        "PromQL over a range (default last 1h); per series min/max/last, change per hour/day, time until full."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {
            "query": {"type": "string"},
            "start": {"type": "string", "description": "e.g. 6h (ago) or RFC3339"},
            "end": {"type": "string"},
            "step": {"type": "string", "description": "e.g. 1m; auto if omitted"}
        }, "required": ["query"]})
    }
    async fn call(&self, args: Value) -> Result<String, ToolError> {
        self.call_with_facts(args).await.map(|o| o.text)
    }

    async fn call_with_facts(&self, args: Value) -> Result<ToolOutput, ToolError> {
        let query = required(&args, "query")?;
        let now = Utc::now();
        let end = arg(&args, "end")
            .map(|t| parse_time(t, now))
            .transpose()?
            .unwrap_or(now);
        let start = match arg(&args, "start") {
            Some(t) => parse_time(t, now)?,
            None => ago(end, Duration::from_secs(3600))?,
        };
        if end <= start {
            return Err(
                ArgError::Invalid(format!("end ({end}) must be after start ({start})")).into(),
            );
        }
        let range = (end - start).to_std().unwrap_or_default();
        let min_step = auto_step(range);
        let step = match arg(&args, "step") {
            Some(s) => parse_duration(s)?.max(min_step),
            None => min_step,
        };
        let mut series = self.client.query_range(query, start, end, step).await?;
        let mut header = format!(
            "{} to {} step {}\n",
            start.format("%Y-%m-%d %H:%M"),
            end.format("%Y-%m-%d %H:%M UTC"),
            humanize(step)
        );
        if let Some((from, fine)) = super::resolution::reread_young(
            &self.client,
            query,
            &mut series,
            start,
            end,
            step,
            auto_step,
        )
        .await
        {
            header.push_str(&format!(
                "series starting inside the range re-read from {} at step {}\n",
                from.format("%Y-%m-%d %H:%M:%S UTC"),
                humanize(fine)
            ));
        }
        let room = self.max_chars.saturating_sub(header.chars().count());
        if series.is_empty() {
            let text = self.hints.explain(query, start, end).await;
            return Ok(ToolOutput::text(header + &truncate(&text, room)));
        }
        let measure = Measure::of(
            query,
            series.iter().flat_map(|s| s.values.iter().map(|p| p.1)),
        );
        let sizes = if measure == Measure::FreeBytes {
            sizes_for(
                &self.client,
                query,
                series.iter().map(|s| &s.metric),
                end,
                range,
            )
            .await
        } else {
            Sizes::new()
        };
        let unit = measure.unit().unwrap_or_else(|| unit_of(query));
        let window = Some((end.timestamp() as f64, step.as_secs_f64()));
        let facts = series
            .iter()
            .filter_map(|s| {
                let size = sizes.get(&join_key(&s.metric)).copied();
                let source = Source::new(Self::NAME, args.clone());
                trend::fact(&s.metric, &s.values, measure, size, source)
            })
            .take(MAX_FACTS)
            .collect();
        Ok(ToolOutput {
            text: header + &compact_matrix_with(&series, unit, room, measure, &sizes, window),
            facts,
        })
    }
}

/// `prometheus_alerts`: pending and firing alerts.
pub struct PrometheusAlerts {
    pub client: Arc<PrometheusClient>,
    pub max_chars: usize,
}

impl PrometheusAlerts {
    /// The name the tool registers under.
    pub const NAME: &'static str = "prometheus_alerts";
}

#[async_trait]
impl Tool for PrometheusAlerts {
    fn name(&self) -> &'static str {
        Self::NAME
    }
    fn description(&self) -> &'static str {
        "Pending and firing Prometheus alerts."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    async fn call(&self, _args: Value) -> Result<String, ToolError> {
        let mut alerts = self.client.alerts().await?;
        if alerts.is_empty() {
            return Ok("no pending or firing alerts".into());
        }
        alerts.sort_by(|a, b| a.state.cmp(&b.state).then(a.active_at.cmp(&b.active_at)));
        let lines: Vec<String> = alerts
            .iter()
            .map(|a| {
                format!(
                    "{} for {} {} value={} {}",
                    a.state,
                    age(a.active_at),
                    format_labels(&a.labels, &Labels::new()),
                    a.value.as_deref().unwrap_or("?"),
                    summary(&a.annotations)
                )
            })
            .collect();
        let firing = alerts.iter().filter(|a| a.state == "firing").count();
        let header = format!("{} alerts ({firing} firing):", alerts.len());
        Ok(fit_lines(&header, &lines, "alerts", self.max_chars))
    }
}

/// `prometheus_targets`: scrape targets, down ones first with their last error.
pub struct PrometheusTargets {
    pub client: Arc<PrometheusClient>,
    pub max_chars: usize,
}

impl PrometheusTargets {
    /// The name the tool registers under.
    pub const NAME: &'static str = "prometheus_targets";
}

#[async_trait]
impl Tool for PrometheusTargets {
    fn name(&self) -> &'static str {
        Self::NAME
    }
    fn description(&self) -> &'static str {
        "Scrape targets and health; down targets first with last error."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {
            "state": {"type": "string", "enum": ["active", "dropped", "any"]}
        }})
    }
    async fn call(&self, args: Value) -> Result<String, ToolError> {
        let state = arg(&args, "state").unwrap_or("active");
        let mut t = self.client.targets(Some(state)).await?;
        t.active_targets.sort_by_key(|t| {
            (
                t.health == "up",
                t.scrape_pool.clone(),
                t.scrape_url.clone(),
            )
        });
        let mut lines: Vec<String> = t
            .active_targets
            .iter()
            .map(|t| {
                let mut l = format!(
                    "{} {} {}",
                    t.health,
                    format_labels(&t.labels, &Labels::new()),
                    t.scrape_url
                );
                if !t.last_error.is_empty() {
                    l.push_str(&format!(" error: {}", truncate(&t.last_error, 200)));
                }
                l
            })
            .collect();
        lines.extend(t.dropped_targets.iter().map(|d| {
            let addr = d
                .discovered_labels
                .get("__address__")
                .cloned()
                .unwrap_or_default();
            let job = d.discovered_labels.get("job").cloned().unwrap_or_default();
            format!("dropped job={job} address={addr}")
        }));
        let down = t.active_targets.iter().filter(|t| t.health != "up").count();
        let header = format!(
            "{} active targets ({down} not up), {} dropped:",
            t.active_targets.len(),
            t.dropped_targets.len()
        );
        Ok(fit_lines(&header, &lines, "targets", self.max_chars))
    }
}

/// `prometheus_metric_names`: metric names, filtered by substring or regex.
pub struct PrometheusMetricNames {
    pub client: Arc<PrometheusClient>,
    pub max_chars: usize,
}

/// Most metric names listed.
const MAX_NAMES: usize = 200;

impl PrometheusMetricNames {
    /// The name the tool registers under.
    pub const NAME: &'static str = "prometheus_metric_names";
}

#[async_trait]
impl Tool for PrometheusMetricNames {
    fn name(&self) -> &'static str {
        Self::NAME
    }
    fn description(&self) -> &'static str {
        "List metric names; 'match' filters by substring or regex."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"match": {"type": "string"}}})
    }
    async fn call(&self, args: Value) -> Result<String, ToolError> {
        let filter = arg(&args, "match");
        let re = filter
            .map(|f| {
                regex_lite::Regex::new(&format!("(?i){f}"))
                    .map_err(|e| ArgError::Invalid(format!("invalid regex {f:?}: {e}")))
            })
            .transpose()?;
        let names = self.client.label_values("__name__", &[]).await?;
        let matched: Vec<String> = match re {
            None => names,
            Some(re) => names.into_iter().filter(|n| re.is_match(n)).collect(),
        };
        let shown: Vec<String> = matched.iter().take(MAX_NAMES).cloned().collect();
        let mut header = format!("{} metric names", matched.len());
        if let Some(f) = filter {
            header.push_str(&format!(" matching {f:?}"));
        }
        if matched.len() > MAX_NAMES {
            header.push_str(&format!(" (first {MAX_NAMES}; narrow with match)"));
        }
        // Names are short: pack them comma-separated in lines of ~100 characters.
        let mut lines = Vec::new();
        let mut current = String::new();
        for n in shown {
            if !current.is_empty() && current.len() + n.len() > 100 {
                lines.push(std::mem::take(&mut current));
            }
            if !current.is_empty() {
                current.push_str(", ");
            }
            current.push_str(&n);
        }
        if !current.is_empty() {
            lines.push(current);
        }
        Ok(fit_lines(&header, &lines, "lines of names", self.max_chars))
    }
}

#[cfg(test)]
mod tests;
