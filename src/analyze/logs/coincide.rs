//! A state and the log lines that began with it, told together. A series that stepped, a
//! probe that started failing, a unit that failed: the sweep finds the state from one
//! integration and, separately, the lines a host logged as it began ([`super::at_start`]).
//! A small model restates the state it ranks first; when the cause is in those lines it
//! must travel with the state. A log fact joins the state whose start is nearest its own,
//! within [`COINCIDE`], on the same host or on a host the state's labels name (an NFS
//! mount's `device="filer:/export"`, a probe's target); another host's new lines at an
//! alert's start (`logs_elsewhere`) join the state that began within [`SAME_MOMENT`].
//!
//! Only facts already found are joined; nothing is read.

use chrono::TimeDelta;

use crate::analyze::{Fact, FactClass, Focus, Severity, host_of};
use crate::text::truncate;

/// How far apart a state's start and its host's first new lines may be to be one event.
const COINCIDE: TimeDelta = TimeDelta::minutes(10);
/// How far apart a state's start and another host's new lines may be to be told together
/// (`logs_elsewhere`: a switch that cut a port's power the minute a camera went dark).
const SAME_MOMENT: TimeDelta = TimeDelta::minutes(2);
/// The analyzer of other hosts' lines at an alert's start.
const ELSEWHERE: &str = "logs_elsewhere";
/// Characters of a log fact's quotes added to the state.
const QUOTE_CHARS: usize = 300;
/// Most log facts joined to one state.
const MAX_PER_STATE: usize = 2;

/// Adds to each state (a warning or worse, with a start and a host) the quotes of the log
/// facts that began with it (each log fact to the one state nearest in time; another
/// host's lines to a state `focus` is about first).
pub fn join_coinciding(facts: &mut [Fact], focus: Option<&Focus>) {
    let mut joins: Vec<(usize, usize, TimeDelta)> = Vec::new();
    for (l, log) in facts.iter().enumerate() {
        let (Some(log_host), Some(log_since)) = (log.entity.host.as_deref(), log.since) else {
            continue;
        };
        if log.class != FactClass::Logs || log.detail.is_none() {
            continue;
        }
        // Another host's lines join a state only when they came with it, to the minute.
        let elsewhere = log.analyzer == ELSEWHERE;
        let nearest = facts
            .iter()
            .enumerate()
            .filter(|(_, f)| {
                is_state(f, log.severity)
                    && (elsewhere
                        || names_host(f, log_host)
                        || quotes_host(log.detail.as_deref(), f))
            })
            .filter_map(|(i, f)| Some((i, (f.since? - log_since).abs())))
            .filter(|(_, gap)| *gap <= if elsewhere { SAME_MOMENT } else { COINCIDE })
            // Another host's lines explain the state the trigger is about before any other
            // that began that minute.
            .min_by_key(|(i, gap)| {
                let about = elsewhere && focus.is_some_and(|f| f.is_about(&facts[*i].entity));
                (!about, *gap, *i)
            });
        if let Some((i, gap)) = nearest {
            joins.push((i, l, gap));
        }
    }
    // Another host's lines first: the state's own host's are a fact of their own, ranked
    // with it; the other host's would rank far below and go unread.
    joins.sort_by_key(|(i, l, gap)| (*i, facts[*l].analyzer != ELSEWHERE, *gap));
    let mut per_state: std::collections::BTreeMap<usize, Vec<String>> = Default::default();
    let mut quoted: std::collections::BTreeMap<usize, Vec<&str>> = Default::default();
    for (i, l, _) in joins {
        let said = per_state.entry(i).or_default();
        let log = &facts[l];
        // A fact quoting only lines already joined (a pattern's burst found by two
        // analyzers) leaves its place to one that says more.
        let seen = quoted.entry(i).or_default();
        if !log.patterns.is_empty() && log.patterns.iter().all(|p| seen.contains(&p.as_str())) {
            continue;
        }
        seen.extend(log.patterns.iter().map(String::as_str));
        if said.len() < MAX_PER_STATE {
            let host = log.entity.host.clone().unwrap_or_default();
            let quote = truncate(log.detail.as_deref().unwrap_or_default(), QUOTE_CHARS);
            said.push(format!("{host} logged as it began: {quote}"));
        }
    }
    for (i, said) in per_state {
        let f = &mut facts[i];
        let rest = f.detail.take().map_or(String::new(), |d| format!("; {d}"));
        f.detail = Some(format!("{}{rest}", said.join("; ")));
    }
}

/// A state a log fact of `said` severity may explain: not read from the logs itself (a log
/// fact, a failing connection found in them), no summary, with a start and a host; a
/// warning or worse, or any state when the lines themselves are (a replica's link that
/// fell as it logged an authentication error: the lines say what the state does not).
fn is_state(f: &Fact, said: Severity) -> bool {
    f.class != FactClass::Logs
        && f.class != FactClass::Context
        && f.source.tool != "loki_query"
        && (f.severity >= Severity::Warning || said >= Severity::Warning)
        && f.since.is_some()
        && f.entity.host.is_some()
}

/// Fewest characters of a state's host for a log line naming it to join it.
const MIN_QUOTED_HOST: usize = 6;

/// Whether the lines `detail` quotes name `f`'s host (a router's lines about the address
/// its probe pings).
fn quotes_host(detail: Option<&str>, f: &Fact) -> bool {
    let (Some(d), Some(h)) = (detail, f.entity.host.as_deref()) else {
        return false;
    };
    h.chars().count() >= MIN_QUOTED_HOST && d.contains(h)
}

/// Whether `f` is on `host` or one of its label values names it.
fn names_host(f: &Fact, host: &str) -> bool {
    let same = |h: &str| h.eq_ignore_ascii_case(host);
    f.entity.host.as_deref().is_some_and(same)
        || f.entity.labels.values().any(|v| {
            same(&host_of(v))
                || v.split([':', '/', ',', ' '])
                    .filter(|p| !p.is_empty())
                    .any(same)
        })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use chrono::{DateTime, Utc};

    use super::*;
    use crate::analyze::{Entity, Source};

    fn at(m: i64) -> DateTime<Utc> {
        DateTime::<Utc>::UNIX_EPOCH + TimeDelta::minutes(1000 + m)
    }

    fn state(host: &str, since: i64, labels: &[(&str, &str)]) -> Fact {
        let labels: BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Fact::new(
            FactClass::Change,
            "series_steps",
            Entity::new("series", "x")
                .on_host(Some(host.into()))
                .with_labels(labels),
            "rose",
            Severity::Warning,
            Source::promql("x"),
        )
        .since(Some(at(since)))
        .detail("0 at 10:00")
    }

    fn logs(host: &str, since: i64, quote: &str) -> Fact {
        Fact::new(
            FactClass::Logs,
            "logs_at_start",
            Entity::new("logs", host).on_host(Some(host.into())),
            "new lines",
            Severity::Info,
            Source::new("loki_query", serde_json::json!({})),
        )
        .since(Some(at(since)))
        .detail(quote)
    }

    #[test]
    fn the_lines_a_host_logged_as_a_state_began_travel_with_it() {
        let mut facts = vec![
            state("cache2", 0, &[]),
            state("filer-b", 3, &[]),
            logs("cache2", 1, "01:01 (2×) fork: Cannot allocate memory"),
            logs("cache2", 40, "01:40 (1×) much later"),
        ];
        join_coinciding(&mut facts, None);
        let d = facts[0].detail.as_deref().unwrap();
        assert!(
            d.starts_with("cache2 logged as it began: 01:01 (2×) fork"),
            "{d}"
        );
        assert!(d.ends_with("; 0 at 10:00"), "{d}");
        assert!(!d.contains("much later"), "{d}");
        assert_eq!(facts[1].detail.as_deref(), Some("0 at 10:00"));
    }

    #[test]
    fn another_hosts_lines_at_an_alerts_start_join_only_a_state_of_the_same_minute() {
        let elsewhere = |host: &str, since: i64, quote: &str| {
            let mut f = logs(host, since, quote);
            f.analyzer = ELSEWHERE.into();
            f
        };
        let mut facts = vec![
            state("nvr-1", 0, &[]),
            state("db-4", 30, &[]),
            elsewhere("sw-core", 1, "00:01 (1×) port 7 power off"),
            elsewhere("gw-2", 26, "00:26 (1×) lease renewed"),
            // The same host's lines join as before, within ten minutes.
            logs("db-4", 24, "00:24 (1×) checkpoint stalled"),
        ];
        join_coinciding(&mut facts, None);
        let first = facts[0].detail.as_deref().unwrap();
        assert!(
            first.starts_with("sw-core logged as it began: 00:01"),
            "{first}"
        );
        let second = facts[1].detail.as_deref().unwrap();
        assert!(second.contains("checkpoint stalled"), "{second}");
        assert!(
            !second.contains("lease renewed"),
            "four minutes apart: {second}"
        );
    }

    #[test]
    fn another_hosts_lines_join_the_state_the_alert_is_about_before_a_nearer_one() {
        let mut lines = logs("sw-core", 1, "00:01 (1×) port 7 power off");
        lines.analyzer = ELSEWHERE.into();
        let mut facts = vec![
            state("nvr-1", 0, &[("instance", "nvr-1:5000")]),
            state("10.9.0.7", 1, &[("instance", "10.9.0.7")]),
            lines,
        ];
        let labels = BTreeMap::from([("instance".to_string(), "nvr-1:5000".to_string())]);
        let focus = Focus::alert(&labels, Some(at(0)));
        join_coinciding(&mut facts, Some(&focus));
        let first = facts[0].detail.as_deref().unwrap();
        assert!(first.starts_with("sw-core logged as it began"), "{first}");
        assert_eq!(facts[1].detail.as_deref(), Some("0 at 10:00"));
    }

    #[test]
    fn a_host_named_in_a_state_s_labels_joins_and_each_log_fact_joins_its_nearest_state() {
        let mut facts = vec![
            state("media9", 0, &[("device", "vault7:/export/tv")]),
            state("media9", 8, &[]),
            logs("vault7", -2, "00:58 (1×) exportfs -ra"),
            logs("media9", 7, "01:07 (1×) Stale file handle"),
        ];
        join_coinciding(&mut facts, None);
        let first = facts[0].detail.as_deref().unwrap();
        assert!(
            first.contains("vault7 logged as it began: 00:58"),
            "{first}"
        );
        assert!(!first.contains("Stale"), "{first}");
        let second = facts[1].detail.as_deref().unwrap();
        assert!(
            second.contains("media9 logged as it began: 01:07"),
            "{second}"
        );
    }

    #[test]
    fn a_state_read_from_the_logs_takes_no_more_of_them() {
        let mut from_logs = state("hub2", 0, &[]);
        from_logs.source = Source::new("loki_query", serde_json::json!({}));
        let mut facts = vec![from_logs, logs("hub2", 0, "x")];
        join_coinciding(&mut facts, None);
        assert_eq!(facts[0].detail.as_deref(), Some("0 at 10:00"));
    }

    #[test]
    fn an_info_state_takes_lines_that_look_bad_but_not_plain_ones() {
        let mut link = state("kv2", 0, &[]);
        link.severity = Severity::Info;
        let mut bad = logs("kv2", 1, "01:01 (37×) NOAUTH Authentication required");
        bad.severity = Severity::Warning;
        let mut facts = vec![link.clone(), bad];
        join_coinciding(&mut facts, None);
        let d = facts[0].detail.as_deref().unwrap();
        assert!(
            d.starts_with("kv2 logged as it began: 01:01 (37×) NOAUTH"),
            "{d}"
        );
        let mut facts = vec![link, logs("kv2", 1, "01:01 (1×) Connecting")];
        join_coinciding(&mut facts, None);
        assert_eq!(facts[0].detail.as_deref(), Some("0 at 10:00"));
    }

    #[test]
    fn lines_naming_a_state_s_host_join_it_from_another_host() {
        let mut facts = vec![
            state("9.9.9.9", 0, &[]),
            logs("gw-east", 1, "01:01 (5×) WAN_A 9.9.9.9: sendto error"),
            logs("gw-west", 1, "01:01 (2×) unrelated"),
        ];
        join_coinciding(&mut facts, None);
        let d = facts[0].detail.as_deref().unwrap();
        assert!(
            d.starts_with("gw-east logged as it began: 01:01 (5×) WAN_A"),
            "{d}"
        );
        assert!(!d.contains("gw-west"), "{d}");
    }

    #[test]
    fn infos_and_other_hosts_take_no_lines() {
        let mut quiet = state("box1", 0, &[]);
        quiet.severity = Severity::Info;
        let mut facts = vec![quiet, state("box2", 0, &[]), logs("box1", 0, "x")];
        join_coinciding(&mut facts, None);
        assert_eq!(facts[0].detail.as_deref(), Some("0 at 10:00"));
        assert_eq!(facts[1].detail.as_deref(), Some("0 at 10:00"));
    }
}
