//! Empty answers that teach. When a PromQL query matches nothing, [`PromNoData`] says why
//! in a few lines: a metric name that does not exist (with the closest that do), a label
//! the metric does not have, a label value no series has (with the values that exist,
//! closest first: `instance="pve1"` → `pve1:9100`), matchers that never meet in one series,
//! or series whose newest sample is older than the queried time. [`loki_no_lines`] lists
//! the stream labels and values a LogQL query could have used.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use super::closest::{closest_names, rank_values};
use super::compact::format_labels;
use super::format::human_age;
use super::promql::{MatchOp, Selector, selectors};
use crate::integrations::prometheus::{Labels, QueryResult};
use crate::integrations::{LokiClient, PrometheusClient, UpstreamError};

/// How long the list of metric names is reused.
const NAMES_TTL: Duration = Duration::from_secs(60);
/// How far back before the queried time existing series are looked for.
const LOOKBACK_DAYS: i64 = 7;
/// Most selectors of one query explained.
const MAX_SELECTORS: usize = 3;
/// Most names or values listed in one hint.
const MAX_LISTED: usize = 8;

/// Explains empty PromQL answers; shared by the query tools of one Prometheus.
pub struct PromNoData {
    client: Arc<PrometheusClient>,
    names: Mutex<Option<(Instant, Arc<Vec<String>>)>>,
}

/// `a, b, c (+4 more)`.
fn listing<'a>(items: impl IntoIterator<Item = &'a str>, total: usize) -> String {
    let shown: Vec<&str> = items.into_iter().take(MAX_LISTED).collect();
    let mut s = shown.join(", ");
    if total > shown.len() {
        s.push_str(&format!(" (+{} more)", total - shown.len()));
    }
    s
}

fn when(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M UTC").to_string()
}

impl PromNoData {
    pub fn new(client: Arc<PrometheusClient>) -> Self {
        Self {
            client,
            names: Mutex::new(None),
        }
    }

    /// Every metric name, fetched at most once per [`NAMES_TTL`].
    async fn metric_names(&self) -> Result<Arc<Vec<String>>, UpstreamError> {
        if let Some((at, names)) = self.names.lock().expect("not poisoned").as_ref()
            && at.elapsed() < NAMES_TTL
        {
            return Ok(names.clone());
        }
        let names = Arc::new(self.client.label_values("__name__", &[]).await?);
        *self.names.lock().expect("not poisoned") = Some((Instant::now(), names.clone()));
        Ok(names)
    }

    /// Why `query` found nothing between `start` and `end` (equal for an instant query):
    /// a header line and one hint per selector that explains it, a few lines in all.
    pub async fn explain(&self, query: &str, start: DateTime<Utc>, end: DateTime<Utc>) -> String {
        let instant = start == end;
        let mut out = if instant {
            format!("no data: the query returned no series at {}", when(end))
        } else {
            "no data: the query returned no series in this range".to_string()
        };
        let sels = selectors(query);
        if sels.is_empty() {
            return out;
        }
        // Prometheus looks back 5 minutes for the newest sample of an instant query.
        // Checked: `start` is the model's choice and may be the calendar's first minute.
        let from = start
            .checked_sub_signed(chrono::Duration::minutes(5))
            .unwrap_or(start);
        let mut healthy = Vec::new();
        for sel in sels.iter().take(MAX_SELECTORS) {
            match self.check(sel, from, end).await {
                Ok(hints) if hints.is_empty() => healthy.push(sel.to_string()),
                Ok(hints) => {
                    for h in hints {
                        out.push('\n');
                        out.push_str(&h);
                    }
                }
                Err(e) => {
                    tracing::debug!(error = %e, "no hint for an empty Prometheus answer");
                }
            }
        }
        if !healthy.is_empty() && healthy.len() == sels.len().min(MAX_SELECTORS) {
            out.push_str(&format!(
                "\n{} {} data here; the query's operators or functions removed every series \
                 (a comparison that is false, or two sides of an operator whose labels differ: \
                 use on(...) or ignoring(...))",
                healthy.join(" and "),
                if healthy.len() == 1 { "has" } else { "have" }
            ));
        }
        out
    }

    /// Hints for one selector; none when it has data between `from` and `end`.
    async fn check(
        &self,
        sel: &Selector,
        from: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<Vec<String>, UpstreamError> {
        let mut hints = Vec::new();
        let mut scope = sel.name_only();
        if let Some(name) = &sel.name {
            let names = self.metric_names().await?;
            if !names.contains(name) {
                let close = closest_names(name, &names, 5);
                hints.push(if close.is_empty() {
                    format!(
                        "metric {name} does not exist and no name is close; \
                         prometheus_metric_names lists them"
                    )
                } else {
                    format!(
                        "metric {name} does not exist; closest: {}",
                        close.join(", ")
                    )
                });
                // Its labels can still be checked against every series.
                scope = None;
            }
        }
        let since = end
            .checked_sub_signed(chrono::Duration::days(LOOKBACK_DAYS))
            .unwrap_or(DateTime::<Utc>::MIN_UTC);
        let of_what = match (&sel.name, &scope) {
            (Some(name), Some(_)) => format!("{name} series"),
            _ => "series".to_string(),
        };
        let scope_refs: Vec<&str> = scope.iter().map(String::as_str).collect();
        for m in &sel.matchers {
            if m.label == "__name__" || !matches!(m.op, MatchOp::Eq | MatchOp::Re) {
                continue;
            }
            let values = self
                .client
                .label_values_between(&m.label, &scope_refs, since, end)
                .await?;
            if values.is_empty() {
                let labels = self.client.label_names(&scope_refs, since, end).await?;
                if labels.is_empty() {
                    hints.push(format!(
                        "no {of_what} in the {LOOKBACK_DAYS} days before {}",
                        when(end)
                    ));
                    return Ok(hints);
                }
                let labels: Vec<&str> = labels
                    .iter()
                    .map(String::as_str)
                    .filter(|l| *l != "__name__")
                    .collect();
                hints.push(format!(
                    "no {of_what} has a label {:?}; labels: {}",
                    m.label,
                    listing(labels.iter().copied(), labels.len())
                ));
                continue;
            }
            if values.iter().any(|v| m.accepts(v)) {
                continue;
            }
            let (ranked, likely) = rank_values(&m.value, &values);
            let mut hint = format!(
                "{m} matches no {of_what}; {} values: {}",
                m.label,
                listing(ranked.iter().copied(), ranked.len())
            );
            if likely {
                hint.push_str(&format!(" (did you mean {}=\"{}\"?)", m.label, ranked[0]));
            }
            hints.push(hint);
        }
        if !hints.is_empty() {
            return Ok(hints);
        }
        let text = sel.to_string();
        let series = self.client.series(&text, since, end, 3).await?;
        if series.is_empty() {
            let sample = match sel.name_only() {
                Some(only) => self.client.series(&only, since, end, 3).await?,
                None => Vec::new(),
            };
            let mut hint =
                format!("every matcher of {text} matches some series, but no series matches all");
            if !sample.is_empty() {
                let shown: Vec<String> = sample
                    .iter()
                    .map(|l| format_labels(l, &Labels::new()))
                    .collect();
                hint.push_str(&format!("; for example: {}", shown.join(" ")));
            }
            return Ok(vec![hint]);
        }
        // Series exist: do they have samples in the queried window (cheap), and if not,
        // when is their newest (a subquery over the lookback, only for stale series)?
        let window = (end - from).num_seconds().max(1);
        let fresh = format!("count(last_over_time({text}[{window}s]))");
        if let QueryResult::Vector(v) = self.client.query(&fresh, Some(end)).await?
            && !v.is_empty()
        {
            return Ok(Vec::new());
        }
        let newest = format!("max(max_over_time(timestamp({text})[{LOOKBACK_DAYS}d:5m]))");
        if let QueryResult::Vector(v) = self.client.query(&newest, Some(end)).await?
            && let Some(ts) = v.first().map(|s| s.value)
            && let Some(at) = DateTime::from_timestamp(ts as i64, 0)
            && at < from
        {
            return Ok(vec![format!(
                "{text} exists but its newest sample is at {} ({} before {}): ask for that time \
                 (time=\"{}\") or a range that includes it",
                when(at),
                human_age((end - at).num_seconds()),
                when(end),
                at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            )]);
        }
        Ok(Vec::new())
    }
}

/// What a LogQL query with no lines could have selected: the stream labels with entries
/// between `start` and `end` and a few values of each.
pub async fn loki_no_lines(
    client: &LokiClient,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> String {
    let mut out = "no log lines matched in this range".to_string();
    let labels = match client.labels(start, end).await {
        Ok(l) => l,
        Err(e) => {
            tracing::debug!(error = %e, "no hint for an empty Loki answer");
            return out;
        }
    };
    if labels.is_empty() {
        out.push_str("\nLoki holds no streams at all in this range");
        return out;
    }
    out.push_str("\nstream labels in this range (use them in the selector):");
    let shown: Vec<&String> = labels
        .iter()
        .filter(|l| !l.starts_with("__"))
        .take(10)
        .collect();
    let lookups = shown.iter().map(|l| client.label_values(l, start, end));
    let values = futures::future::join_all(lookups).await;
    for (label, vals) in shown.iter().zip(values) {
        let vals = vals.unwrap_or_default();
        let quoted: Vec<String> = vals
            .iter()
            .take(MAX_LISTED)
            .map(|v| format!("{v:?}"))
            .collect();
        let more = vals.len().saturating_sub(quoted.len());
        out.push_str(&format!("\n{label}: {}", quoted.join(", ")));
        if more > 0 {
            out.push_str(&format!(" (+{more} more)"));
        }
    }
    out
}
