//! `logs_elsewhere`: what the other hosts logged in the minutes around an alert's start, in
//! a small fleet. A cause is often on a device the alert does not name: the switch that cut
//! a port's power, the router that handed a server a new address, the tunnel that lost its
//! origin, the NAS that went away under a mount. [`super::at_start`] reads the trigger's
//! own hosts; this reads every other host Loki has (when there are at most
//! [`MAX_HOSTS`]) from [`BEFORE`] the start (an alert fires after its rule's pending
//! period) to [`AFTER`] it, keeps the lines
//! whose pattern that host did not log in the hours before, and tells each host's, nearest
//! the start first: those that look bad, or on a host that logged only a few new lines, all
//! of them (a switch's or a router's notices carry no level). Whether a line is new is
//! decided by its pattern, not its words. Queries are built from label values found in
//! Loki, escaped.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};

use super::around::{Said, tally};
use super::at_start::{Read, any_of, group_fact};
use super::signal::Signal;
use super::traces::fold_entries;
use super::{HOST_LABELS, service_label};
use crate::analyze::{AnalyzeError, Analyzer, Fact, Scope, Severity, host_of, line_pattern};
use crate::integrations::LokiClient;
use crate::integrations::loki::LogStream;

pub struct LogsElsewhere(pub Arc<LokiClient>);

/// How far before and after the alert's start the other hosts' lines are read: an alert
/// fires after its rule's pending period (`for: 15m`), so the cause comes well before it.
const BEFORE: TimeDelta = TimeDelta::minutes(30);
const AFTER: TimeDelta = TimeDelta::minutes(5);
/// The fleet is read only when Loki has at most this many other hosts in that range.
const MAX_HOSTS: usize = 12;
/// How far back the lines that make a host's pattern routine are read.
const ROUTINE_LOOKBACK: TimeDelta = TimeDelta::hours(3);
/// Lines read per query.
const LINES: u32 = 1000;
/// Hosts told, nearest the start first.
const MAX_FACTS: usize = 2;
/// A host whose new lines near the start are this few has them all told when none looks
/// bad; among more, only those that look bad tell.
const FEW_NEW: usize = 8;

#[async_trait]
impl Analyzer for LogsElsewhere {
    fn name(&self) -> &'static str {
        "logs_elsewhere"
    }

    fn reads_around_start(&self) -> bool {
        true
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let Some(focus) = &scope.focus else {
            return Ok(Vec::new());
        };
        // A question has no minute to look around.
        if focus.is_question() || scope.started >= scope.now {
            return Ok(Vec::new());
        }
        let Some((label, labels)) = service_label(&self.0, scope).await? else {
            return Ok(Vec::new());
        };
        let Some(host_label) = HOST_LABELS
            .into_iter()
            .find(|h| *h != label && labels.iter().any(|x| x == h))
        else {
            return Ok(Vec::new());
        };
        let start = scope
            .started
            .checked_sub_signed(BEFORE)
            .unwrap_or(scope.started)
            .max(scope.window_start);
        let end = scope
            .started
            .checked_add_signed(AFTER)
            .unwrap_or(scope.now)
            .min(scope.now);
        if start >= end {
            return Ok(Vec::new());
        }
        let hosts: Vec<String> = self
            .0
            .label_values(host_label, start, end)
            .await?
            .into_iter()
            .filter(|v| !focus.names_host(&host_of(v)))
            .collect();
        if hosts.is_empty() || hosts.len() > MAX_HOSTS {
            return Ok(Vec::new());
        }
        let streams = self
            .0
            .query_logs(&any_of(host_label, &hosts), start, end, LINES)
            .await?;
        let near = by_host(&streams, host_label);
        let routine_start = start.checked_sub_signed(ROUTINE_LOOKBACK).unwrap_or(start);
        let reads = near.keys().map(|h| async move {
            let sel = any_of(host_label, std::slice::from_ref(h));
            let before = self
                .0
                .query_logs(&sel, routine_start, start, LINES)
                .await
                .unwrap_or_default();
            let patterns: BTreeSet<String> = before
                .iter()
                .flat_map(|s| fold_entries(&s.entries))
                .map(|(_, l, _)| line_pattern(&l))
                .collect();
            (h.clone(), patterns)
        });
        let routine: HashMap<String, BTreeSet<String>> =
            futures::future::join_all(reads).await.into_iter().collect();
        let since = format!("{}m", (scope.now - start).num_minutes().max(1));
        let mut told: Vec<(TimeDelta, Fact)> = Vec::new();
        for (host, host_streams) in &near {
            let empty = BTreeSet::new();
            let new = new_lines(
                host_streams,
                routine.get(host).unwrap_or(&empty),
                host_label,
            );
            let Some((patterns, severity)) = tellable(new) else {
                continue;
            };
            let Some(first) = patterns.iter().map(|p| p.first).min() else {
                continue;
            };
            let total: usize = patterns.iter().map(|p| p.count).sum();
            let what = format!(
                "{total} new log lines as the alert began ({} patterns not seen there in the hours before)",
                patterns.len()
            );
            let selector = any_of(host_label, std::slice::from_ref(host));
            let read = Read {
                analyzer: "logs_elsewhere",
                label,
                host_label: Some(host_label),
                selector: &selector,
                since: since.clone(),
                named: true,
            };
            told.push((
                (first - scope.started).abs(),
                group_fact("host", host, patterns, what, severity, &read),
            ));
        }
        told.sort_by_key(|(gap, _)| *gap);
        Ok(told.into_iter().take(MAX_FACTS).map(|(_, f)| f).collect())
    }
}

/// The streams read, by the host they come from.
fn by_host<'a>(streams: &'a [LogStream], host_label: &str) -> HashMap<String, Vec<&'a LogStream>> {
    let mut out: HashMap<String, Vec<&LogStream>> = HashMap::new();
    for s in streams {
        if let Some(h) = s.labels.get(host_label) {
            out.entry(h.clone()).or_default().push(s);
        }
    }
    out
}

/// The lines of `streams` whose pattern is not in `routine`, by pattern.
fn new_lines(
    streams: &[&LogStream],
    routine: &BTreeSet<String>,
    host_label: &str,
) -> HashMap<String, Said> {
    let mut said = HashMap::new();
    for s in streams {
        let stream = format!(
            "{:?}",
            s.labels
                .iter()
                .filter(|(k, _)| k.as_str() != host_label)
                .collect::<Vec<_>>()
        );
        for (ns, line, grade) in fold_entries(&s.entries) {
            let pattern = line_pattern(&line);
            if routine.contains(&pattern) {
                continue;
            }
            let at = DateTime::<Utc>::from_timestamp_nanos(ns);
            tally(&mut said, pattern, (grade, at), &stream, line);
        }
    }
    said
}

/// What of a host's new lines to tell, and how severe: those that look bad (a warning when
/// one says error); else, when they are few, all of them, as information.
fn tellable(new: HashMap<String, Said>) -> Option<(Vec<Said>, Severity)> {
    let all: Vec<Said> = new.into_values().collect();
    let worst = all.iter().map(|p| p.grade).max()?;
    let total: usize = all.iter().map(|p| p.count).sum();
    if worst == Signal::None {
        return (total <= FEW_NEW).then_some((all, Severity::Info));
    }
    let severity = match worst {
        Signal::Error => Severity::Warning,
        _ => Severity::Info,
    };
    // The bad ones, and when the host said little else, the rest beside them.
    let patterns = match total <= FEW_NEW {
        true => all,
        false => all
            .into_iter()
            .filter(|p| p.grade != Signal::None)
            .collect(),
    };
    Some((patterns, severity))
}

#[cfg(test)]
mod tests;
