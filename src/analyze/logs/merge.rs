//! Log facts that say the same thing, as one. Each analyzer over Loki reads one
//! service's lines its own way, and a burst of one line is at once "error log lines rose
//! to", "log lines rose to", "new log pattern" and "log lines that look bad, not seen
//! before", each quoting that line. Facts of the logs class that quote the same patterns
//! ([`Fact::patterns`], numbers and ids as placeholders) about one service or host are
//! one fact: the most informative (a rate over a count over none; then one with a start;
//! then the most severe), with the others' figures added in a few words and the worst
//! severity of them all. Facts quoting other patterns besides stay apart: they say more.
//!
//! It runs in the sweep, where the facts of all analyzers meet, so that the report (the
//! prompt, the eval, the API) holds each message once.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};

use crate::analyze::{Fact, FactClass, Unit};
use crate::text::truncate;

/// Characters of each merged fact's figures added to the kept one.
const ALSO_CHARS: usize = 60;
/// A fact's longest detail (as [`Fact::detail`] keeps it).
const DETAIL_CHARS: usize = 360;
/// Most merged facts whose figures are added.
const MAX_ALSO: usize = 3;

/// `facts` with the log facts that quote the same patterns about one service or host
/// merged, in the place of the first of them.
pub fn merge_same(facts: Vec<Fact>) -> Vec<Fact> {
    let mut groups: Vec<Vec<Fact>> = facts.into_iter().map(|f| vec![f]).collect();
    // Two groups join when a fact of each says the same; a service's fact without a host
    // does not bridge two hosts. Until none joins (a few dozen facts at most).
    let joins = |g: &[Fact], h: &[Fact]| {
        g.iter().any(|a| h.iter().any(|b| same(a, b)))
            && g.iter().all(|a| h.iter().all(|b| hosts_agree(a, b)))
    };
    'again: loop {
        for i in 0..groups.len() {
            for j in i + 1..groups.len() {
                if joins(&groups[i], &groups[j]) {
                    let h = groups.remove(j);
                    groups[i].extend(h);
                    continue 'again;
                }
            }
        }
        break;
    }
    groups.into_iter().map(one).collect()
}

/// Whether `a` and `b` are log facts quoting the same patterns about one thing: the same
/// service (hosts equal when both known) or, for a host's lines, the same host.
fn same(a: &Fact, b: &Fact) -> bool {
    if a.class != FactClass::Logs || b.class != FactClass::Logs || a.patterns.is_empty() {
        return false;
    }
    let set = |f: &Fact| f.patterns.iter().cloned().collect::<BTreeSet<String>>();
    if set(a) != set(b) {
        return false;
    }
    let (ea, eb) = (&a.entity, &b.entity);
    let same_service = ea.kind == eb.kind && ea.name == eb.name;
    let host_level = (ea.kind != eb.kind) && ea.host.is_some() && eb.host.is_some();
    hosts_agree(a, b) && (same_service || host_level)
}

/// Whether `a` and `b` are on one host, or one of them on no known host.
fn hosts_agree(a: &Fact, b: &Fact) -> bool {
    match (&a.entity.host, &b.entity.host) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    }
}

/// How informative a fact is, best highest.
fn informative(f: &Fact) -> (u8, bool, crate::analyze::Severity) {
    let figure = match f.value.as_ref().map(|v| v.unit) {
        Some(Unit::PerSecond) => 2,
        Some(_) => 1,
        None => 0,
    };
    (figure, f.since.is_some(), f.severity)
}

/// The group's most informative fact, with the others' figures added.
fn one(mut group: Vec<Fact>) -> Fact {
    if group.len() == 1 {
        return group.remove(0);
    }
    let best = (0..group.len())
        .rev()
        .max_by_key(|i| informative(&group[*i]))
        .unwrap_or(0);
    let kept = group.remove(best);
    let severity = group
        .iter()
        .map(|f| f.severity)
        .fold(kept.severity, Ord::max);
    let mut also: Vec<String> = Vec::new();
    for f in &group {
        let mut s = f.what.clone();
        if let Some(v) = &f.value {
            s.push_str(&format!(" {v}"));
        }
        let minute = |t: DateTime<Utc>| t.format("%H:%M UTC").to_string();
        if let Some(t) = f.since
            && kept.since.map(minute) != Some(minute(t))
        {
            s.push_str(&format!(" since {}", minute(t)));
        }
        let s = truncate(&s, ALSO_CHARS);
        if !also.contains(&s) {
            also.push(s);
        }
    }
    also.truncate(MAX_ALSO);
    let also = format!("also {}", also.join("; "));
    // The kept fact's own text gives way at its end, so the figures added fit the fact.
    let room = DETAIL_CHARS.saturating_sub(also.chars().count() + 2);
    let detail = match kept.detail.as_deref() {
        Some(d) => format!("{}; {also}", truncate(d, room)),
        None => also,
    };
    let host = group.iter().find_map(|f| f.entity.host.clone());
    let mut kept = kept.detail(detail);
    kept.severity = severity;
    // A service's fact read without its host takes the host the others found it on.
    if kept.entity.host.is_none() {
        kept.entity.host = host;
    }
    kept
}

#[cfg(test)]
mod tests;
