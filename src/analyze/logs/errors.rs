//! Error bursts in logs (Loki): per service, the lines matching a generic error pattern
//! counted per step over the window with one metric query, and a service whose error
//! rate rose sharply reported with when the rise began (the split of its counts that
//! best separates a quiet before from a loud after), the rate before and after, and its
//! most frequent error line as a pattern (numbers and ids as placeholders; a stack trace
//! as its exception). A service
//! that is always this noisy is not a burst.
//!
//! Words decide only which lines this analyzer counts; whether a service's logs changed at
//! all is [`super::changes`]'s, which reads every line.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::json;

use super::traces::fold_entries;
use super::{over_window, per_step, service_label, split};
use crate::analyze::prom::escape;
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source, Unit,
    line_pattern,
};
use crate::integrations::LokiClient;
use crate::integrations::prometheus::Series;
use crate::text::truncate;

/// A line that reports an error, in any of the usual spellings (`level=error`,
/// `"level":"error"`, `ERROR`, `panic:`, `connection refused`, `permission denied`).
const ERROR_PATTERN: &str = "(?i)(error|err=|fatal|panic|exception|fail|refused|timeout|denied)";
/// The lines of a stack trace that [`ERROR_PATTERN`] may miss (frames, a traceback's
/// first line, a goroutine's header), read with the error lines so a trace is quoted by
/// its exception ([`fold_entries`]) rather than by whatever frame names an error.
const TRACE_PATTERN: &str = r#"(?-i:^\s+at\s|^\s+File "|^Traceback \(most recent|^Caused by: |^goroutine \d+ \[| panicked at )"#;
/// Least error rate after the rise worth a look, in lines per minute.
const MIN_RATE_PER_MIN: f64 = 1.0;
/// How many times the rate before the rise the rate after must be.
const RISE_FACTOR: f64 = 3.0;
/// Error rate (lines per minute) from which a burst is critical.
const CRIT_RATE_PER_MIN: f64 = 60.0;
/// Points the counts are read in over the window (steps at least a minute).
const POINTS: i64 = 240;
/// Most services whose error lines are read for their pattern.
const MAX_PATTERN_LOOKUPS: usize = 5;
/// Lines read per service for its most frequent pattern.
const PATTERN_LINES: u32 = 500;

pub struct LogErrorBursts(pub Arc<LokiClient>);

/// One service's rise in errors.
struct Burst {
    service: String,
    start: DateTime<Utc>,
    before_per_min: f64,
    after_per_min: f64,
}

#[async_trait]
impl Analyzer for LogErrorBursts {
    fn name(&self) -> &'static str {
        "log_error_bursts"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let Some((label, _)) = service_label(&self.0, scope).await? else {
            return Ok(Vec::new());
        };
        let step = (scope.window().num_seconds() / POINTS).max(60);
        let counts = format!(
            "sum by ({label}) (count_over_time({{{label}=~\".+\"}} |~ `{ERROR_PATTERN}` [{step}s]))"
        );
        let series = over_window(&self.0, &counts, scope, step).await?;
        let mut bursts: Vec<Burst> = series
            .iter()
            .filter_map(|s| burst(s, label, scope, step))
            .collect();
        bursts.sort_by(|a, b| b.after_per_min.total_cmp(&a.after_per_min));
        let lookups = bursts.iter().take(MAX_PATTERN_LOOKUPS).map(|b| {
            let query = format!(
                "{{{label}=\"{}\"}} |~ `{ERROR_PATTERN}|{TRACE_PATTERN}`",
                escape(&b.service)
            );
            async move {
                self.0
                    .query_logs(&query, b.start, scope.now, PATTERN_LINES)
                    .await
            }
        });
        let patterns = futures::future::join_all(lookups).await;
        let since = format!("{}m", (scope.window().num_minutes()).max(1));
        let mut facts = Vec::new();
        for (i, b) in bursts.iter().enumerate() {
            let top = match patterns.get(i) {
                Some(Ok(streams)) => top_pattern(
                    streams
                        .iter()
                        .flat_map(|s| fold_entries(&s.entries))
                        .map(|(_, l, _)| l),
                ),
                _ => None,
            };
            let mut detail = format!(
                "error lines {} per minute before → {} per minute since",
                crate::analyze::round_sig(b.before_per_min),
                crate::analyze::round_sig(b.after_per_min),
            );
            let pattern: Vec<String> = top.iter().map(|(_, p)| p.clone()).collect();
            if let Some((n, p)) = top {
                detail.push_str(&format!(
                    "; most frequent ({n}×): {}",
                    truncate(&crate::analyze::readable_line(&p), 160)
                ));
            }
            let severity = match b.after_per_min >= CRIT_RATE_PER_MIN {
                true => Severity::Critical,
                false => Severity::Warning,
            };
            facts.push(
                Fact::new(
                    FactClass::Logs,
                    self.name(),
                    Entity::new("service", b.service.clone()).with_labels(
                        [(label.to_string(), b.service.clone())]
                            .into_iter()
                            .collect(),
                    ),
                    "error log lines rose to",
                    severity,
                    Source::new(
                        "loki_query",
                        json!({"query": lines_query(label, &b.service), "since": since}),
                    ),
                )
                .value(Quantity::new(b.after_per_min / 60.0, Unit::PerSecond))
                .since(Some(b.start))
                .detail(detail)
                .patterns(pattern),
            );
        }
        Ok(facts)
    }
}

/// The error lines of one service.
fn lines_query(label: &str, service: &str) -> String {
    format!("{{{label}=\"{}\"}} |~ `{ERROR_PATTERN}`", escape(service))
}

/// The rise in `s`'s counts (one per `step` seconds over the window; missing points are
/// zero), when there is one worth a look.
fn burst(s: &Series, label: &str, scope: &Scope, step: i64) -> Option<Burst> {
    let service = s.metric.get(label)?.clone();
    let start = scope.window_start.timestamp();
    let counts = per_step(s, scope, step);
    let (split, before, after) = split(&counts)?;
    let per_min = 60.0 / step as f64;
    let (before, after) = (before * per_min, after * per_min);
    if after < MIN_RATE_PER_MIN || after < RISE_FACTOR * before {
        return None;
    }
    Some(Burst {
        service,
        // Point `split` counts the step before it: the rise began in that step.
        start: DateTime::from_timestamp(start.checked_add((split as i64 - 1) * step)?, 0)?,
        before_per_min: before,
        after_per_min: after,
    })
}

/// The most frequent pattern among `lines` and how many lines have it.
fn top_pattern<S: AsRef<str>>(lines: impl Iterator<Item = S>) -> Option<(usize, String)> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for l in lines {
        *counts.entry(line_pattern(l.as_ref())).or_default() += 1;
    }
    counts
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
        .map(|(p, n)| (n, p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_frequent_error_groups_lines_that_differ_in_numbers_and_ids() {
        let lines = [
            "level=error msg=\"upstream timeout\" req=ab12cd34ef took=5003ms",
            "level=error msg=\"upstream timeout\" req=99ffee0011 took=5001ms",
            "level=error msg=\"disk full\"",
        ];
        let (n, p) = top_pattern(lines.into_iter()).unwrap();
        assert_eq!(n, 2);
        assert_eq!(
            p,
            "level=error msg=\"upstream timeout\" req=<hex> took=<n>ms"
        );
        assert_eq!(top_pattern(std::iter::empty::<&str>()), None);
    }
}
