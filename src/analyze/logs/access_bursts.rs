//! Bursts of one client-error status in HTTP access logs: uploads refused with 413 after a
//! body-size limit changed, a rate limit answering 429, a token that expired (401), a rule
//! that now forbids (403). Such answers are no server error (`signal.rs` grades only 5xx
//! as bad) and the service keeps logging as much as before, so no other analyzer sees
//! them. Per service (and host), the requests are counted before the trigger's start and
//! around it (from [`AROUND`] before it until now) with Loki metric queries over the lines
//! that look like access records (`access.rs`); the client-error lines of both spans are
//! read and parsed, counted per status, and a status that was rare before (at most
//! [`RARE_LINES`], or [`RARE_SHARE`] of the requests) and came [`RISE`] times as often
//! since, at least [`MIN_BURST`] times, is a fact: the status, how many before and since,
//! since when, the method and path most of them had, and one line. A status already
//! common before is routine (a public site's 404s), and so is a burst of many different
//! paths from one or two clients (a scanner).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};
use serde_json::json;

use super::access::{self, Access};
use super::{HOST_LABELS, selector, service_label};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source,
    readable_line, round_sig,
};
use crate::integrations::LokiClient;
use crate::integrations::prometheus::{Labels, Sample};
use crate::integrations::query_result::QueryResult;
use crate::text::truncate;

pub struct AccessStatusBursts(pub Arc<LokiClient>);

/// How long before the trigger's start "around it" begins.
const AROUND: TimeDelta = TimeDelta::minutes(10);
/// Least span before that, for "rare before" to mean anything.
const MIN_BEFORE: TimeDelta = TimeDelta::minutes(10);
/// Least answers of one status since for a burst: a homelab's few users send few
/// requests, and three refused uploads where there were none are the incident.
const MIN_BURST: f64 = 3.0;
/// Fewest lines read for a burst to be judged a scan.
const MIN_SCAN: usize = 10;
/// How many times as often (per minute) as before a status must come since.
const RISE: f64 = 5.0;
/// A status rare before: at most this many lines, or this share of the requests.
const RARE_LINES: f64 = 3.0;
const RARE_SHARE: f64 = 0.01;
/// Share of the requests since from which a burst is critical: most of them refused.
const MOST: f64 = 0.5;
/// Lines read per service and span.
const LINES: u32 = 2000;
/// Most services read, most facts.
const MAX_SERVICES: usize = 4;
const MAX_FACTS: usize = 3;
/// A scan: the burst's lines have at least this share of distinct paths, from at most
/// [`SCAN_CLIENTS`] clients.
const SCAN_PATHS: f64 = 0.5;
const SCAN_CLIENTS: usize = 2;
/// Characters of the quoted line.
const LINE_CHARS: usize = 200;

/// One service on one host: its stream labels and request counts.
struct Group {
    labels: Vec<(String, String)>,
    requests: (f64, f64),
    errors: (f64, f64),
}

/// What one status's answers of a service were.
#[derive(Default)]
struct Tally {
    before: f64,
    since: f64,
    first: Option<(i64, String)>,
    requests: HashMap<(String, String), usize>,
    paths: HashSet<String>,
    clients: HashSet<String>,
}

#[async_trait]
impl Analyzer for AccessStatusBursts {
    fn name(&self) -> &'static str {
        "access_status_bursts"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let Some((label, labels)) = service_label(&self.0, scope).await? else {
            return Ok(Vec::new());
        };
        let host = HOST_LABELS
            .into_iter()
            .find(|h| *h != label && labels.iter().any(|x| x == h));
        let Some(spans) = Spans::of(scope) else {
            return Ok(Vec::new());
        };
        let by = match host {
            Some(h) => format!("{label}, {h}"),
            None => label.to_string(),
        };
        let count = |filter: String, at: DateTime<Utc>, secs: i64| {
            let q = format!(
                "sum by ({by}) (count_over_time({{{label}=~\".+\"}} |~ `{filter}` [{secs}s]))"
            );
            async move { self.counts(&q, at).await }
        };
        let (b, a) = (spans.before_secs(), spans.around_secs());
        let (any_before, any_since, err_before, err_since) = futures::future::try_join4(
            count(access::any_status(), spans.around, b),
            count(access::any_status(), scope.now, a),
            count(access::client_errors(), spans.around, b),
            count(access::client_errors(), scope.now, a),
        )
        .await?;
        let mut groups: Vec<Group> = err_since
            .iter()
            .filter(|(_, n)| **n >= MIN_BURST)
            .map(|(key, n)| Group {
                labels: key.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                requests: (
                    any_before.get(key).copied().unwrap_or(0.0),
                    any_since.get(key).copied().unwrap_or(0.0),
                ),
                errors: (err_before.get(key).copied().unwrap_or(0.0), *n),
            })
            .collect();
        groups.sort_by(|x, y| y.errors.1.total_cmp(&x.errors.1));
        groups.truncate(MAX_SERVICES);
        let reads = groups.iter().map(|g| self.tallies(g, &spans));
        let tallies = futures::future::join_all(reads).await;
        let mut facts = Vec::new();
        for (g, tally) in groups.iter().zip(tallies) {
            if let Some(f) = burst(g, &tally?, &spans, label, host) {
                facts.push(f);
            }
        }
        facts.sort_by(|x, y| {
            let n = |f: &Fact| f.value.map_or(0.0, |q| q.value);
            y.severity.cmp(&x.severity).then(n(y).total_cmp(&n(x)))
        });
        facts.truncate(MAX_FACTS);
        Ok(facts)
    }
}

/// The spans compared: before (from the window's start) and around the trigger's start.
struct Spans {
    start: DateTime<Utc>,
    around: DateTime<Utc>,
    now: DateTime<Utc>,
}

impl Spans {
    fn of(scope: &Scope) -> Option<Self> {
        let around = scope.started.checked_sub_signed(AROUND)?.min(scope.now);
        (around - scope.window_start >= MIN_BEFORE).then_some(Self {
            start: scope.window_start,
            around,
            now: scope.now,
        })
    }
    fn before_secs(&self) -> i64 {
        (self.around - self.start).num_seconds().max(1)
    }
    fn around_secs(&self) -> i64 {
        (self.now - self.around).num_seconds().max(1)
    }
}

impl AccessStatusBursts {
    /// The values of the metric query `q` at `at`, by their labels.
    async fn counts(
        &self,
        q: &str,
        at: DateTime<Utc>,
    ) -> Result<HashMap<Labels, f64>, AnalyzeError> {
        let samples: Vec<Sample> = match self.0.query(q, Some(at)).await? {
            QueryResult::Vector(v) => v,
            _ => Vec::new(),
        };
        Ok(samples
            .into_iter()
            .filter(|s| s.value.is_finite())
            .map(|s| (s.metric, s.value))
            .collect())
    }

    /// The client-error lines of group `g` before and since, per status (counts scaled
    /// to Loki's when more lines matched than were read).
    async fn tallies(
        &self,
        g: &Group,
        spans: &Spans,
    ) -> Result<BTreeMap<u16, Tally>, AnalyzeError> {
        let pairs: Vec<(&str, &str)> = g
            .labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let query = format!("{} |~ `{}`", selector(&pairs), access::client_errors());
        let (before, since) = futures::future::try_join(
            self.0.query_logs(&query, spans.start, spans.around, LINES),
            self.0.query_logs(&query, spans.around, spans.now, LINES),
        )
        .await?;
        let mut tallies: BTreeMap<u16, Tally> = BTreeMap::new();
        for (streams, total, is_since) in [(before, g.errors.0, false), (since, g.errors.1, true)] {
            let parsed: Vec<(i64, &str, Access)> = streams
                .iter()
                .flat_map(|s| s.entries.iter())
                .filter_map(|(t, l)| Some((*t, l.as_str(), access::parse(l)?)))
                .filter(|(_, _, a)| (400..500).contains(&a.status))
                .collect();
            let read: usize = streams.iter().map(|s| s.entries.len()).sum();
            let scale = match read >= LINES as usize {
                true => (total / read as f64).max(1.0),
                false => 1.0,
            };
            for (t, line, a) in parsed {
                let tally = tallies.entry(a.status).or_default();
                if !is_since {
                    tally.before += scale;
                    continue;
                }
                tally.since += scale;
                if tally.first.as_ref().is_none_or(|(f, _)| t < *f) {
                    tally.first = Some((t, line.to_string()));
                }
                let request = (
                    a.method.clone().unwrap_or_default(),
                    a.path.clone().unwrap_or_default(),
                );
                *tally.requests.entry(request).or_default() += 1;
                tally.paths.extend(a.path);
                tally.clients.extend(a.client);
            }
        }
        Ok(tallies)
    }
}

/// The burst of group `g`, when one client-error status rose from rare: the one that rose
/// most.
fn burst(
    g: &Group,
    tallies: &BTreeMap<u16, Tally>,
    spans: &Spans,
    label: &str,
    host: Option<&str>,
) -> Option<Fact> {
    let minutes = |secs: i64| secs as f64 / 60.0;
    let (before_min, since_min) = (minutes(spans.before_secs()), minutes(spans.around_secs()));
    let (status, t) = tallies
        .iter()
        .filter(|(_, t)| is_burst(t, g.requests.0, before_min, since_min))
        .max_by(|a, b| a.1.since.total_cmp(&b.1.since))?;
    let value = |k: &str| {
        g.labels
            .iter()
            .find(|(l, _)| l == k)
            .map(|(_, v)| v.clone())
    };
    let service = value(label)?;
    let host_value = host.and_then(value);
    let (first_ns, line) = t.first.clone()?;
    let first = DateTime::from_timestamp_nanos(first_ns);
    let requests = g.requests.1.max(t.since);
    let share = t.since / requests.max(1.0);
    let severity = match share >= MOST {
        true => Severity::Critical,
        false => Severity::Warning,
    };
    let name = match access::reason(*status) {
        Some(r) => format!("HTTP {status} ({r})"),
        None => format!("HTTP {status}"),
    };
    let mut detail = format!(
        "{} in the {} min before {} → {} since ({} % of {} requests)",
        round_sig(t.before),
        round_sig(before_min.round()),
        spans.around.format("%H:%M UTC"),
        round_sig(t.since.round()),
        round_sig(100.0 * share),
        round_sig(requests.round()),
    );
    let top = t
        .requests
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)));
    if let Some(((method, path), n)) = top.filter(|((m, p), _)| !(m.is_empty() && p.is_empty())) {
        let of: usize = t.requests.values().sum();
        let request = format!("{method} {path}");
        detail.push_str(&format!("; {n} of {of} read were {}", request.trim()));
    }
    detail.push_str(&format!(
        "; first at {}: {}",
        first.format("%H:%M:%S UTC"),
        truncate(&readable_line(&line), LINE_CHARS)
    ));
    let mut pairs = vec![(label, service.as_str())];
    if let (Some(h), Some(v)) = (host, host_value.as_deref()) {
        pairs.push((h, v));
    }
    let query = format!(
        "{} |~ `{}`",
        selector(&pairs),
        access::status_filter(&status.to_string())
    );
    let since = format!("{}m", (spans.now - spans.start).num_minutes().max(1));
    let entity = Entity::new("service", service.clone())
        .on_host(host_value.clone())
        .with_labels(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
    Some(
        Fact::new(
            FactClass::Logs,
            "access_status_bursts",
            entity,
            format!("{name} answers rose from rare to"),
            severity,
            Source::new("loki_query", json!({"query": query, "since": since})),
        )
        .value(Quantity::count(t.since.round()))
        .since(Some(first))
        .detail(detail),
    )
}

/// Whether status tally `t` is a burst: rare before (given the requests before), at
/// least [`MIN_BURST`] since and [`RISE`] times as often, and not a scan.
fn is_burst(t: &Tally, requests_before: f64, before_min: f64, since_min: f64) -> bool {
    let rare = t.before <= RARE_LINES || t.before <= RARE_SHARE * requests_before;
    let rate = |n: f64, m: f64| n / m.max(1.0);
    let rose = rate(t.since, since_min) >= RISE * rate(t.before, before_min);
    let read: usize = t.requests.values().sum();
    // A scanner probes paths it reads; refused writes (uploads to distinct paths) are not a scan.
    let reads: usize = t
        .requests
        .iter()
        .filter(|((method, _), _)| matches!(method.as_str(), "GET" | "HEAD"))
        .map(|(_, n)| n)
        .sum();
    let scan = read >= MIN_SCAN
        && 2 * reads > read
        && t.paths.len() as f64 >= SCAN_PATHS * read as f64
        && !t.clients.is_empty()
        && t.clients.len() <= SCAN_CLIENTS;
    t.since >= MIN_BURST && rare && rose && !scan
}

#[cfg(test)]
mod tests;
