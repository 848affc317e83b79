//! What changed in each service's logs (Loki), whatever words they use. One metric query
//! counts every line per service (and host) over the window; a service whose rate rose
//! sharply, or that logged steadily and fell silent, is a change ([`volume`]). Then, for
//! a bounded number of services (changed ones, those the trigger is about, the busiest),
//! lines are sampled in slices before and after the recent part of the window, and the
//! patterns frequent recently but absent or rare before are read back with their own
//! regex over the window: when each first appeared, how many lines, one example line.
//! For the services the trigger is about (or the busiest) where nothing changed, their
//! recent rate and most frequent patterns are context a question can cite.
//!
//! Bounded: the lines read per slice, the services examined, the patterns read back, and
//! a time limit under the sweep's, past which what was read is reported and the rest
//! dropped. How bad a line looks ([`signal`]) grades severity only.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};
use futures::StreamExt;
use tokio::time::Instant;

use super::facts::{Clock, Reading, Service, context_fact, pattern_fact, rise_fact, silence_fact};
use super::novelty::{PatternCount, Sample, census, emergence, pattern_regex};
use super::traces::fold_entries;
use super::volume::{VolumeChange, change};
use super::{HOST_LABELS, over_window, per_step, service_label};
use crate::analyze::prom::escape;
use crate::analyze::{AnalyzeError, Analyzer, Fact, Scope};
use crate::integrations::LokiClient;
use crate::text::truncate;

pub struct LogChanges {
    client: Arc<LokiClient>,
    reads_time_limit: Duration,
}

impl LogChanges {
    pub fn new(client: Arc<LokiClient>) -> Self {
        Self {
            client,
            reads_time_limit: READS_TIME_LIMIT,
        }
    }

    /// Sets the time for all the reads (default [`READS_TIME_LIMIT`]); keep it under the sweep's.
    pub fn with_reads_time_limit(mut self, limit: Duration) -> Self {
        self.reads_time_limit = limit;
        self
    }
}

/// Points the counts are read in over the window (steps at least a minute).
const POINTS: i64 = 240;
/// Most services whose lines are read.
const MAX_EXAMINED: usize = 10;
/// Slices read before and after the recent part's start, and lines read per slice.
const SLICES: i32 = 3;
const SLICE_LINES: u32 = 200;
/// Longest line kept from a sample.
const MAX_LINE_CHARS: usize = 1000;
/// New patterns read back per service.
const MAX_NEW_PER_SERVICE: usize = 2;
/// Most change facts, and most context facts.
const MAX_CHANGE_FACTS: usize = 9;
const MAX_CONTEXT: usize = 3;
/// Time for all the reads: under the sweep's time limit for one analyzer
/// ([`crate::analyze::ANALYZER_TIME_LIMIT`]), so what was read is reported rather than the
/// whole analyzer skipped.
const READS_TIME_LIMIT: Duration = Duration::from_millis(3500);
/// Services read at once (each reads its slices at once).
const PARALLEL_SERVICES: usize = 3;
/// The recent part begins this long before the incident, and is at least `MIN_RECENT`.
const RECENT_LEAD: TimeDelta = TimeDelta::minutes(10);
const MIN_RECENT: TimeDelta = TimeDelta::minutes(15);
#[async_trait]
impl Analyzer for LogChanges {
    fn name(&self) -> &'static str {
        "log_changes"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let deadline = Instant::now() + self.reads_time_limit;
        let Some((label, labels)) = service_label(&self.client, scope).await? else {
            return Ok(Vec::new());
        };
        let host_label = HOST_LABELS
            .into_iter()
            .find(|h| *h != label && labels.iter().any(|x| x == h));
        let step = (scope.window().num_seconds() / POINTS).max(60);
        let clock = Clock {
            start: scope.window_start,
            now: scope.now,
            step,
        };
        let by = host_label.map_or(label.to_string(), |h| format!("{label}, {h}"));
        let counts = format!("sum by ({by}) (count_over_time({{{label}=~\".+\"}}[{step}s]))");
        let series = over_window(&self.client, &counts, scope, step).await?;
        let mut services: Vec<Service> = series
            .iter()
            .filter_map(|s| {
                let counts = per_step(s, scope, step);
                Some(Service {
                    label,
                    name: s.metric.get(label)?.clone(),
                    host: host_label.and_then(|h| Some((h, s.metric.get(h)?.clone()))),
                    change: change(&counts, step as f64),
                    counts,
                })
            })
            .collect();
        // Changed services first, then those the trigger is about, then the busiest.
        services.sort_by(|a, b| {
            let key = |s: &Service| (s.change.is_none(), !scope.is_about(&s.entity()));
            key(a).cmp(&key(b)).then(b.total().total_cmp(&a.total()))
        });
        services.truncate(MAX_EXAMINED);
        // Collected first: a stream over a closure's futures is not `Send` in an async trait.
        let reads: Vec<_> = services
            .iter()
            .map(|s| {
                let read = self.read(s, scope, clock);
                async move { tokio::time::timeout_at(deadline, read).await.ok().flatten() }
            })
            .collect();
        let readings: Vec<Option<Reading>> = futures::stream::iter(reads)
            .buffered(PARALLEL_SERVICES)
            .collect()
            .await;
        let candidates: Vec<(usize, PatternCount)> = readings
            .iter()
            .enumerate()
            .filter_map(|(i, r)| match r {
                Some(Reading::Census(c)) => Some((i, c)),
                _ => None,
            })
            .flat_map(|(i, c)| {
                c.new_patterns()
                    .take(MAX_NEW_PER_SERVICE)
                    .map(move |p| (i, p.clone()))
            })
            .collect();
        let refines: Vec<_> = candidates
            .iter()
            .map(|(i, p)| {
                let refine = self.refine(&services[*i], p, scope, clock);
                async move {
                    tokio::time::timeout_at(deadline, refine)
                        .await
                        .ok()
                        .flatten()
                }
            })
            .collect();
        let refined: Vec<Option<Vec<f64>>> = futures::stream::iter(refines)
            .buffered(PARALLEL_SERVICES)
            .collect()
            .await;

        let mut changes = Vec::new();
        for (s, r) in services.iter().zip(&readings) {
            match (s.change, r) {
                (Some(VolumeChange::Rise { at, before, after }), r) => {
                    changes.push(rise_fact(s, clock, at, before, after, r.as_ref()));
                }
                (Some(VolumeChange::Silence { at, before }), Some(Reading::Last(last))) => {
                    changes.push(silence_fact(s, clock, at, before, last.as_ref()));
                }
                (Some(VolumeChange::Silence { at, before }), _) => {
                    changes.push(silence_fact(s, clock, at, before, None));
                }
                _ => {}
            }
        }
        let mut changed: Vec<bool> = services.iter().map(|s| s.change.is_some()).collect();
        for ((i, p), counts) in candidates.iter().zip(&refined) {
            let recent_lines = match &readings[*i] {
                Some(Reading::Census(c)) => c.recent_lines,
                _ => 0,
            };
            let found = match counts {
                // No emergence: its own counts show it throughout, it is not new.
                Some(c) if c.iter().any(|v| *v > 0.0) => emergence(c).map(Some),
                // Not read back (time limit, error, a regex that matches nothing): the samples
                // are all there is.
                _ => Some(None),
            };
            if let Some(e) = found {
                changes.push(pattern_fact(&services[*i], clock, p, e, recent_lines));
                changed[*i] = true;
            }
        }
        changes.sort_by_key(|f| std::cmp::Reverse(f.severity));
        changes.truncate(MAX_CHANGE_FACTS);
        // Context: unchanged services the trigger is about first, then the busiest.
        let mut context: Vec<(bool, Fact)> = services
            .iter()
            .zip(&readings)
            .zip(&changed)
            .filter(|(_, changed)| !**changed)
            .filter_map(|((s, r), _)| match r {
                Some(Reading::Census(c)) => {
                    Some((scope.is_about(&s.entity()), context_fact(s, clock, c)?))
                }
                _ => None,
            })
            .collect();
        context.sort_by_key(|(about, _)| !*about);
        changes.extend(context.into_iter().take(MAX_CONTEXT).map(|(_, f)| f));
        Ok(changes)
    }
}

impl LogChanges {
    /// Reads `s`'s lines: its last lines when it fell silent, else samples in slices before
    /// and after the recent part's start. `None` when Loki failed.
    async fn read(&self, s: &Service, scope: &Scope, clock: Clock) -> Option<Reading> {
        let sel = s.selector();
        if let Some(VolumeChange::Silence { .. }) = s.change {
            let streams = self
                .client
                .query_logs(&sel, scope.window_start, scope.now, 1)
                .await
                .ok()?;
            let last = streams
                .into_iter()
                .flat_map(|st| st.entries)
                .max_by_key(|(t, _)| *t);
            return Some(Reading::Last(last));
        }
        let recent = recent_start(s, scope, clock);
        let mut slices = Vec::new();
        for (from, to, is_recent) in [
            (scope.window_start, recent, false),
            (recent, scope.now, true),
        ] {
            let len = to - from;
            if len < TimeDelta::minutes(1) {
                continue;
            }
            for k in 0..SLICES {
                let a = from + len * k / SLICES;
                let b = from + len * (k + 1) / SLICES;
                slices.push((a, b, is_recent));
            }
        }
        let queries = slices.iter().map(|(a, b, is_recent)| {
            let sel = sel.as_str();
            async move {
                let streams = self.client.query_logs(sel, *a, *b, SLICE_LINES).await?;
                // A stack trace is one line, its exception: its frames are no patterns.
                let lines: Vec<(i64, String)> = streams
                    .iter()
                    .flat_map(|st| fold_entries(&st.entries))
                    .map(|(t, l, _)| (t, truncate(&l, MAX_LINE_CHARS)))
                    .collect();
                Ok::<_, crate::integrations::UpstreamError>(Sample {
                    from: nanos(*a),
                    to: nanos(*b),
                    recent: *is_recent,
                    full: lines.len() >= SLICE_LINES as usize,
                    lines,
                })
            }
        });
        let samples: Vec<Sample> = futures::future::join_all(queries)
            .await
            .into_iter()
            .collect::<Result<_, _>>()
            .ok()?;
        Some(Reading::Census(census(&samples)))
    }

    /// The counts per step over the window of `p`'s lines in `s` (by the pattern's regex);
    /// `None` when there is no regex or Loki failed.
    async fn refine(
        &self,
        s: &Service,
        p: &PatternCount,
        scope: &Scope,
        clock: Clock,
    ) -> Option<Vec<f64>> {
        let query = format!(
            "sum(count_over_time({} |~ \"{}\" [{}s]))",
            s.selector(),
            escape(&pattern_regex(&p.pattern)?),
            clock.step
        );
        let series = over_window(&self.client, &query, scope, clock.step)
            .await
            .ok()?;
        Some(match series.first() {
            Some(first) => per_step(first, scope, clock.step),
            None => Vec::new(),
        })
    }
}

/// When the recent part of `s`'s window begins: where its rate rose, else a little before
/// the incident began (at least the last few minutes; at most three quarters of the
/// window, so there is a before to compare with).
fn recent_start(s: &Service, scope: &Scope, clock: Clock) -> DateTime<Utc> {
    if let Some(VolumeChange::Rise { at, .. }) = s.change {
        return clock.at(at);
    }
    let earliest = scope.window_start + scope.window() / 4;
    let latest = scope.now - TimeDelta::minutes(1);
    let lead = scope
        .started
        .checked_sub_signed(RECENT_LEAD)
        .unwrap_or(scope.started);
    let wanted = lead.min(scope.now - MIN_RECENT);
    wanted.max(earliest).min(latest)
}

fn nanos(t: DateTime<Utc>) -> i64 {
    t.timestamp_nanos_opt()
        .unwrap_or_else(|| t.timestamp().saturating_mul(1_000_000_000))
}
