//! When a recurring log line began, looked for beyond the sweep's window, and what its host
//! logged just before. A service that has failed the same way every minute for three days
//! looks, in a window of hours, as if it always did; the cause is then days back, in what
//! changed just before the first such line (a folder added, an upgrade, an edited config).
//!
//! For the most severe log facts of one line (at most [`MAX_FACTS`]): the longest literal
//! part of the pattern they quote is counted per hour over a week in its stream; when its first hour is
//! well before the fact's start, that hour's lines give the first one's minute, and the
//! lines of the host in the hours before it are read for what looks bad or is rare there.
//! Queries are built from label values found in Loki and the quoted text, escaped.

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};

use super::around::{Catalog, Pick, quote, read_near};
use super::selector;
use crate::analyze::prom::escape;
use crate::analyze::{Fact, FactClass, Scope, line_pattern};
use crate::integrations::LokiClient;

/// How far back a line's first appearance is looked for, and in what steps.
const LOOKBACK: TimeDelta = TimeDelta::days(7);
const STEP: Duration = Duration::from_secs(3600);
const STEP_DELTA: TimeDelta = TimeDelta::hours(1);
/// Most log facts whose first line is looked for.
const MAX_FACTS: usize = 2;
/// Shortest literal worth filtering on (shorter ones match unrelated lines).
const MIN_LITERAL: usize = 16;
/// How much earlier than the fact's start the first line must be to be told.
const EARLIER: TimeDelta = TimeDelta::hours(1);
/// How long before the first line the host's lines are read, and how many are quoted.
const BEFORE: TimeDelta = TimeDelta::hours(2);
const QUOTED: usize = 3;
const LINE_CHARS: usize = 110;

/// Adds to the most severe log facts when the line they quote first appeared, when that
/// was well before their start, and what their host logged just before.
pub(crate) async fn first_seen(
    loki: &LokiClient,
    catalog: &Catalog,
    facts: &mut [Fact],
    scope: &Scope,
) {
    let mut picked: Vec<usize> = (0..facts.len())
        .filter(|i| {
            let f = &facts[*i];
            // One line's fact (a burst's most frequent line, a new pattern); the lines new at
            // the trigger's start are new by their reading, and one of several (a link
            // coming up) may have been logged at the last boot.
            f.class == FactClass::Logs
                && f.since.is_some()
                && f.patterns.len() == 1
                && f.analyzer != "logs_at_start"
        })
        .collect();
    picked.sort_by_key(|i| (std::cmp::Reverse(facts[*i].severity), facts[*i].since));
    let mut reads = Vec::new();
    for i in picked {
        if reads.len() == MAX_FACTS {
            break;
        }
        let Some(read) = Read::of(&facts[i], catalog) else {
            continue;
        };
        if reads
            .iter()
            .any(|(_, r): &(usize, Read)| r.filtered == read.filtered)
        {
            continue;
        }
        reads.push((i, read));
    }
    let found = futures::future::join_all(
        reads
            .iter()
            .map(|(i, r)| r.run(loki, facts[*i].since, scope)),
    )
    .await;
    for ((i, _), told) in reads.into_iter().zip(found) {
        let Some(told) = told else { continue };
        let f = &mut facts[i];
        let rest = f.detail.take().map_or(String::new(), |d| format!("; {d}"));
        f.detail = Some(format!("{told}{rest}"));
    }
}

/// What is read for one fact.
struct Read {
    /// Its streams with its line filter.
    filtered: String,
    /// Its host's streams (its own when it has no host).
    host: String,
    host_name: String,
    /// The patterns it quotes (not news before its own first line).
    patterns: Vec<String>,
}

impl Read {
    fn of(f: &Fact, catalog: &Catalog) -> Option<Self> {
        let literal = f.patterns.iter().filter_map(|p| literal(p)).next()?;
        let host_label = catalog.host.as_ref().map(|(l, _)| *l);
        let known =
            |k: &str| Some(k) == host_label || catalog.services.iter().any(|(l, _)| *l == k);
        let pairs: Vec<(&str, &str)> = f
            .entity
            .labels
            .iter()
            .filter(|(k, _)| known(k))
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        if pairs.is_empty() {
            return None;
        }
        let own = selector(&pairs);
        let host = host_label
            .and_then(|l| f.entity.labels.get(l).map(|v| (l, v.as_str())))
            .map_or(own.clone(), |pair| selector(&[pair]));
        Some(Self {
            filtered: format!("{own} |= \"{}\"", escape(&literal)),
            host,
            host_name: f
                .entity
                .host
                .clone()
                .unwrap_or_else(|| f.entity.name.clone()),
            patterns: f.patterns.clone(),
        })
    }

    /// "first seen …" and what came before, when the first line is well before `since`.
    async fn run(
        &self,
        loki: &LokiClient,
        since: Option<DateTime<Utc>>,
        scope: &Scope,
    ) -> Option<String> {
        let since = since?;
        let from = scope.now.checked_sub_signed(LOOKBACK)?;
        let counts = format!("count_over_time({} [1h])", self.filtered);
        let series = loki
            .query_range_matrix(&counts, from, scope.now, STEP)
            .await
            .ok()?;
        let hour = series
            .iter()
            .flat_map(|s| s.values.iter())
            .filter(|(_, v)| *v > 0.0)
            .map(|(t, _)| *t)
            .fold(f64::INFINITY, f64::min);
        let hour = DateTime::from_timestamp(hour as i64, 0)?;
        let earliest = since.checked_sub_signed(EARLIER)?;
        if hour >= earliest {
            return None;
        }
        // The range `(hour - 1h, hour]` holds the first line.
        let lines = loki
            .query_logs(
                &self.filtered,
                hour.checked_sub_signed(STEP_DELTA)?,
                hour,
                1000,
            )
            .await
            .ok()?;
        let first = lines
            .iter()
            .flat_map(|s| s.entries.iter().map(|(ns, _)| *ns))
            .min()
            .map(DateTime::from_timestamp_nanos)?;
        if first >= earliest {
            return None;
        }
        let ago = human_ago(scope.now - first);
        let mut told = format!(
            "first seen {} UTC ({ago} ago, before the lines above)",
            first.format("%Y-%m-%d %H:%M")
        );
        let before = (
            first.checked_sub_signed(BEFORE)?,
            first.checked_sub_signed(TimeDelta::seconds(1))?,
        );
        let pick = Pick {
            max: QUOTED,
            rare_too: true,
        };
        if let Ok(near) = read_near(loki, &self.host, before, first, pick).await {
            let news: Vec<_> = near
                .picked
                .into_iter()
                .filter(|s| !self.patterns.contains(&line_pattern(&s.example)))
                .collect();
            if !news.is_empty() {
                told.push_str(&format!(
                    "; just before it {} logged: {}",
                    self.host_name,
                    quote(&news, LINE_CHARS)
                ));
            }
        }
        Some(told)
    }
}

/// The longest part of `pattern` between its placeholders ([`line_pattern`]'s `<n>`,
/// `<hex>`, …), trimmed, when it is long enough to find the lines by.
fn literal(pattern: &str) -> Option<String> {
    let mut s = pattern.to_string();
    for p in ["<uuid>", "<hex>", "<ts>", "<ip>", "<n>"] {
        s = s.replace(p, "\u{0}");
    }
    s.split('\u{0}')
        .map(str::trim)
        .max_by_key(|p| p.chars().count())
        .filter(|p| p.chars().count() >= MIN_LITERAL)
        .map(str::to_string)
}

/// "3 d 2 h", "5 h 10 min", "40 min".
fn human_ago(d: TimeDelta) -> String {
    let mins = d.num_minutes().max(0);
    let (days, hours, m) = (mins / 1440, mins / 60 % 24, mins % 60);
    match (days, hours) {
        (0, 0) => format!("{m} min"),
        (0, h) => format!("{h} h {m} min"),
        (d, h) => format!("{d} d {h} h"),
    }
}

#[cfg(test)]
mod tests;
