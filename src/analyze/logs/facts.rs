//! The facts of what changed in a service's logs (a rise, a fall to silence, a new
//! pattern) and of its logs as context, each with the Loki query that shows it.

use std::collections::BTreeMap;

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::json;

use super::novelty::{Census, Emergence, PatternCount, pattern_regex};
use super::selector;
use super::signal::{Signal, signal};
use super::volume::VolumeChange;
use crate::analyze::prom::escape;
use crate::analyze::{
    Entity, Fact, FactClass, Quantity, Severity, Source, Unit, human_seconds, line_pattern,
    readable_line, round_sig,
};
use crate::text::truncate;

/// A pattern's rate (lines per minute) from which its error lines are critical.
const CRIT_PER_MIN: f64 = 60.0;
/// Share of the recent lines that makes a new pattern worth a warning whatever it says.
const DOMINANT_SHARE: f64 = 0.2;

/// What was read of one service: its samples' patterns, or its last line when silent.
pub(super) enum Reading {
    Census(Census),
    Last(Option<(i64, String)>),
}

/// One service (on one host) and its line counts over the window.
pub(super) struct Service {
    pub label: &'static str,
    pub name: String,
    pub host: Option<(&'static str, String)>,
    pub counts: Vec<f64>,
    pub change: Option<VolumeChange>,
}

impl Service {
    pub fn selector(&self) -> String {
        let mut pairs = vec![(self.label, self.name.as_str())];
        if let Some((k, v)) = &self.host {
            pairs.push((k, v.as_str()));
        }
        selector(&pairs)
    }

    pub fn entity(&self) -> Entity {
        let mut labels = BTreeMap::new();
        labels.insert(self.label.to_string(), self.name.clone());
        if let Some((k, v)) = &self.host {
            labels.insert(k.to_string(), v.clone());
        }
        Entity::new("service", self.name.clone())
            .on_host(self.host.as_ref().map(|(_, h)| h.clone()))
            .with_labels(labels)
    }

    pub fn total(&self) -> f64 {
        self.counts.iter().sum()
    }
}

/// The window's clock: points of `step` seconds from the window's start.
#[derive(Clone, Copy)]
pub(super) struct Clock {
    pub start: DateTime<Utc>,
    pub now: DateTime<Utc>,
    pub step: i64,
}

impl Clock {
    /// When point `i`'s step began (the point counts the step before it).
    pub fn at(&self, i: usize) -> DateTime<Utc> {
        let secs = (i as i64 - 1).max(0).saturating_mul(self.step);
        self.start
            .checked_add_signed(TimeDelta::seconds(secs))
            .unwrap_or(self.now)
            .min(self.now)
    }

    pub fn per_min(&self, per_step: f64) -> f64 {
        per_step * 60.0 / self.step as f64
    }

    /// The `since` of a tool call that covers the window.
    pub fn since(&self) -> String {
        format!("{}m", (self.now - self.start).num_minutes().max(1))
    }
}

pub(super) fn from_nanos(t: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_nanos(t)
}

fn source(query: String, clock: Clock) -> Source {
    Source::new(
        "loki_query",
        json!({"query": query, "since": clock.since()}),
    )
}

pub(super) fn rise_fact(
    s: &Service,
    clock: Clock,
    at: usize,
    before: f64,
    after: f64,
    reading: Option<&Reading>,
) -> Fact {
    let mut pattern = Vec::new();
    let mut detail = format!(
        "all lines {} per minute before → {} per minute since",
        round_sig(clock.per_min(before)),
        round_sig(clock.per_min(after))
    );
    if let Some(Reading::Census(c)) = reading
        && let Some((p, share)) = c.top(1).first()
    {
        pattern.push(p.pattern.clone());
        detail.push_str(&format!(
            "; most frequent since ({:.0} %), e.g.: {}",
            share * 100.0,
            ends(&readable_line(&p.example), 45, 120)
        ));
    }
    let query = format!("sum(count_over_time({}[{}s]))", s.selector(), clock.step);
    Fact::new(
        FactClass::Logs,
        "log_changes",
        s.entity(),
        "log lines rose to",
        Severity::Warning,
        source(query, clock),
    )
    .value(Quantity::new(after / clock.step as f64, Unit::PerSecond))
    .since(Some(clock.at(at)))
    .detail(detail)
    .patterns(pattern)
}

pub(super) fn silence_fact(
    s: &Service,
    clock: Clock,
    at: usize,
    before: f64,
    last: Option<&(i64, String)>,
) -> Fact {
    let mut detail = format!(
        "{} lines per minute until then, none since",
        round_sig(clock.per_min(before))
    );
    if let Some((_, line)) = last {
        detail.push_str(&format!(
            "; last line: {}",
            truncate(&readable_line(line), 160)
        ));
    }
    let since = last.map_or(clock.at(at), |(t, _)| from_nanos(*t));
    Fact::new(
        FactClass::Logs,
        "log_changes",
        s.entity(),
        "stopped logging; it wrote",
        Severity::Warning,
        source(s.selector(), clock),
    )
    .value(Quantity::new(before / clock.step as f64, Unit::PerSecond))
    .since(Some(since))
    .detail(detail)
    .patterns(last.map(|(_, l)| line_pattern(l)).into_iter().collect())
}

/// A new pattern: from its counts over the window when read back (`Some`), else from the
/// samples.
pub(super) fn pattern_fact(
    s: &Service,
    clock: Clock,
    p: &PatternCount,
    counted: Option<Emergence>,
    recent_lines: usize,
) -> Fact {
    let sig = signal(&p.example);
    let (since, lines, told) = match counted {
        Some(e) => {
            let from = clock.at(e.first);
            let to = clock.at(e.first + 1);
            let sampled = from_nanos(p.first);
            // The sampled first line is exact when it falls in the step that counted it.
            let since = if sampled >= from && sampled <= to {
                sampled
            } else {
                from
            };
            let before = match e.before {
                0.0 => "none before in the window".to_string(),
                b => format!("{} in the window before", round_sig(b)),
            };
            (
                since,
                e.after,
                format!("{} lines since ({before})", e.after),
            )
        }
        None => (
            from_nanos(p.first),
            p.recent as f64,
            format!(
                "{} of {recent_lines} recent lines sampled, {} of the earlier ones",
                p.recent, p.before
            ),
        ),
    };
    let minutes = ((clock.now - since).num_seconds().max(60)) as f64 / 60.0;
    let share = p.recent as f64 / recent_lines.max(1) as f64;
    let severity = match sig {
        Signal::Error if lines / minutes >= CRIT_PER_MIN => Severity::Critical,
        Signal::Error | Signal::Warning => Severity::Warning,
        Signal::None if share >= DOMINANT_SHARE => Severity::Warning,
        Signal::None => Severity::Info,
    };
    let query = match pattern_regex(&p.pattern) {
        Some(re) => format!("{} |~ \"{}\"", s.selector(), escape(&re)),
        None => s.selector(),
    };
    let ago = human_seconds((clock.now - since).num_seconds().max(0) as f64);
    Fact::new(
        FactClass::Logs,
        "log_changes",
        s.entity(),
        "new log pattern",
        severity,
        source(query, clock),
    )
    .value(Quantity::count(lines))
    .since(Some(since))
    .detail(format!(
        "{told}, first {ago} ago, e.g.: {}",
        ends(&readable_line(&p.example), 45, 120)
    ))
    .patterns(vec![p.pattern.clone()])
}

/// `s` whole when short, else its first `head` and last `tail` characters: what tells a
/// line apart is often at its end (a status, a reason).
fn ends(s: &str, head: usize, tail: usize) -> String {
    let n = s.chars().count();
    if n <= head + tail + 3 {
        return s.to_string();
    }
    let start: String = s.chars().take(head).collect();
    let end: String = s.chars().skip(n - tail).collect();
    format!("{start} … {end}")
}

/// `s`'s recent rate and most frequent patterns; `None` without recent lines.
pub(super) fn context_fact(s: &Service, clock: Clock, c: &Census) -> Option<Fact> {
    let top = c.top(2);
    if top.is_empty() {
        return None;
    }
    let recent_points = (clock.now - clock.start).num_seconds() / clock.step / 4;
    let tail = &s.counts[s.counts.len().saturating_sub(recent_points.max(1) as usize)..];
    let per_step = tail.iter().sum::<f64>() / tail.len().max(1) as f64;
    let patterns: Vec<String> = top
        .iter()
        .map(|(p, share)| {
            format!(
                "({:.0} %) {}",
                share * 100.0,
                truncate(&readable_line(&p.pattern), 120)
            )
        })
        .collect();
    let detail = format!(
        "{} lines per minute lately, as before; most frequent: {}",
        round_sig(clock.per_min(per_step)),
        patterns.join("; ")
    );
    Some(
        Fact::new(
            FactClass::Context,
            "log_changes",
            s.entity(),
            "logs lately",
            Severity::Info,
            source(s.selector(), clock),
        )
        .value(Quantity::new(per_step / clock.step as f64, Unit::PerSecond))
        .detail(detail),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_line_keeps_its_start_and_its_end() {
        assert_eq!(ends("short", 2, 2), "short");
        assert_eq!(ends("aaaaaaaaaa…ünï-end", 3, 7), "aaa … ünï-end");
    }
}
