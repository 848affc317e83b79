//! Alert hygiene: which alert rules flapped, fired for days, never resolved or have no
//! `severity` label, each with a concrete change to make.
//!
//! The firing history is the alerts collector's Prometheus `ALERTS` series (shared, not
//! queried twice) plus, for alerts Prometheus does not know (Grafana-managed ones), the
//! alerts sre-agent received over webhooks (`AlertStore::for_each_alert`). The rules'
//! `for:`, labels and expressions come from Prometheus' rules API.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::CollectContext;
use super::history::{Episode, Received, Timeline, from_alerts_series};
use crate::integrations::prometheus::{RuleGroup, Series};
use crate::report::model::{HygieneData, HygieneFinding, HygieneIssue, Section};

/// An episode shorter than this counts as short (a flap).
pub const FLAP_SHORT: Duration = Duration::from_secs(10 * 60);
/// Short episodes of one series in the period that make its rule "flapping".
pub const FLAP_MIN_SHORT_EPISODES: usize = 5;
/// An episode at least this long that then resolved: the rule "fired for days" unattended.
pub const FIRED_FOR_DAYS: Duration = Duration::from_secs(2 * 86_400);
/// Still firing at the end of the period after at least this long: "never resolved".
pub const NEVER_RESOLVED: Duration = Duration::from_secs(86_400);
/// The `for:` values proposed for flapping rules, in seconds (2m … 2h).
const FOR_CHOICES: [u64; 8] = [120, 300, 600, 900, 1800, 3600, 5400, 7200];
/// Findings shown at most; the rest are counted.
pub const MAX_FINDINGS: usize = 25;
/// Longest rule expression quoted in a suggestion.
const MAX_EXPR_CHARS: usize = 80;

/// What the rules API says about one alerting rule.
#[derive(Clone, Debug, Default)]
pub struct RuleInfo {
    pub name: String,
    pub file: String,
    pub query: String,
    pub for_secs: f64,
    pub has_severity: bool,
}

/// The alerts collector's `ALERTS` series and the step they were queried at.
pub type PromHistory = (Vec<Series>, Duration);

pub async fn collect(ctx: &CollectContext, prom: Option<PromHistory>) -> Section<HygieneData> {
    let mut notes = Vec::new();
    let rules = match &ctx.upstreams.prometheus {
        Some(p) => match p.rules().await {
            Ok(groups) => rule_infos(&groups),
            Err(e) => {
                notes.push(format!("rules for alert hygiene: {e}"));
                Vec::new()
            }
        },
        None => Vec::new(),
    };
    let end = ctx.window.end.timestamp() as f64;
    let mut timelines = match prom {
        Some((series, step)) => from_alerts_series(&series, step, end),
        None => Vec::new(),
    };
    if let Some(log) = ctx.alert_log.clone() {
        let (from, to) = (ctx.window.start, ctx.window.end);
        // A week of received alerts (a storm logs thousands) is file reading: off the
        // runtime, one record at a time.
        let read = tokio::task::spawn_blocking(move || {
            let mut received = Received::default();
            log.for_each_alert(from, to, |r| received.add(&r))
                .map(|()| received.finish(end))
        })
        .await;
        match read {
            Ok(Ok(received)) => {
                let known: BTreeSet<String> =
                    timelines.iter().map(|t| t.alertname.clone()).collect();
                timelines.extend(
                    received
                        .into_iter()
                        .filter(|t| !known.contains(&t.alertname)),
                );
            }
            Ok(Err(e)) => notes.push(format!("received alerts for alert hygiene: {e}")),
            Err(e) => notes.push(format!("received alerts for alert hygiene: {e}")),
        }
    }
    Section {
        data: analyse(&timelines, &rules, end),
        notes,
    }
}

/// The alerting rules of `groups`.
pub fn rule_infos(groups: &[RuleGroup]) -> Vec<RuleInfo> {
    groups
        .iter()
        .flat_map(|g| g.rules.iter().map(move |r| (g, r)))
        .filter(|(_, r)| r.kind == "alerting")
        .map(|(g, r)| RuleInfo {
            name: r.name.clone(),
            file: g.file.clone(),
            query: r.query.clone(),
            for_secs: r.duration.unwrap_or(0.0),
            has_severity: r.labels.get("severity").is_some_and(|s| !s.is_empty()),
        })
        .collect()
}

/// "45s", "7m", "2h", "1.5h"; whole days as "3 days".
pub fn human(secs: f64) -> String {
    let s = secs.max(0.0);
    if s < 90.0 {
        format!("{}s", s.round())
    } else if s < 5400.0 {
        format!("{}m", (s / 60.0).round())
    } else if s < 2.0 * 86_400.0 {
        let h = s / 3600.0;
        let h = (h * 2.0).round() / 2.0;
        format!("{h}h")
    } else {
        let days = (s / 86_400.0 * 10.0).round() / 10.0;
        format!("{days} days")
    }
}

/// The `for:` duration as a rule file writes it.
fn for_value(secs: u64) -> String {
    if secs.is_multiple_of(3600) {
        format!("{}h", secs / 3600)
    } else {
        format!("{}m", secs / 60)
    }
}

fn quoted_expr(rule: Option<&RuleInfo>) -> String {
    match rule.filter(|r| !r.query.is_empty()) {
        Some(r) => format!(" ({})", crate::text::truncate(&r.query, MAX_EXPR_CHARS)),
        None => String::new(),
    }
}

/// The findings for `timelines` (grouped by alert name) and `rules`.
pub fn analyse(timelines: &[Timeline], rules: &[RuleInfo], end: f64) -> HygieneData {
    let rule_of: BTreeMap<&str, &RuleInfo> = rules.iter().map(|r| (r.name.as_str(), r)).collect();
    let mut by_name: BTreeMap<&str, Vec<&Timeline>> = BTreeMap::new();
    for t in timelines.iter().filter(|t| !t.episodes.is_empty()) {
        by_name.entry(&t.alertname).or_default().push(t);
    }
    let mut findings = Vec::new();
    for (name, series) in &by_name {
        let rule = rule_of.get(name).copied();
        findings.extend(flapping(name, series, rule));
        findings.extend(long_firing(name, series, rule, end));
        let unlabelled = series.iter().any(|t| !t.labels.contains_key("severity"));
        if rule.is_none() && unlabelled {
            findings.push(no_severity(name, None));
        }
    }
    findings.extend(
        rules
            .iter()
            .filter(|r| !r.has_severity)
            .map(|r| no_severity(&r.name, Some(r))),
    );
    findings.sort_by(|a, b| a.issue.cmp(&b.issue).then(a.alertname.cmp(&b.alertname)));
    findings.dedup_by(|a, b| a.issue == b.issue && a.alertname == b.alertname);
    let omitted = findings.len().saturating_sub(MAX_FINDINGS);
    findings.truncate(MAX_FINDINGS);
    HygieneData {
        rules_checked: rules.len(),
        rules_fired: by_name.len(),
        findings,
        omitted,
    }
}

fn flapping(name: &str, series: &[&Timeline], rule: Option<&RuleInfo>) -> Option<HygieneFinding> {
    let short_of = |t: &Timeline| -> Vec<f64> {
        let mut v: Vec<f64> = t
            .episodes
            .iter()
            .filter(|e| !e.open && e.secs() < FLAP_SHORT.as_secs_f64())
            .map(Episode::secs)
            .collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let flapping: Vec<(&Timeline, Vec<f64>)> = series
        .iter()
        .map(|t| (*t, short_of(t)))
        .filter(|(_, short)| short.len() >= FLAP_MIN_SHORT_EPISODES)
        .collect();
    let (worst, short) = flapping.iter().max_by_key(|(_, s)| s.len())?;
    let all: Vec<f64> = flapping
        .iter()
        .flat_map(|(_, s)| s.iter().copied())
        .collect();
    let mut sorted = all.clone();
    sorted.sort_by(f64::total_cmp);
    let p90 = sorted[(sorted.len() * 9 / 10).min(sorted.len() - 1)];
    let current = rule.map_or(0.0, |r| r.for_secs);
    // With `for: F` an episode that fired for `d` under `for: current` would not have fired
    // when current + d < F: the proposal holds back nine in ten of the short episodes.
    let proposed = FOR_CHOICES
        .into_iter()
        .find(|f| *f as f64 > current + p90)
        .unwrap_or(FOR_CHOICES[FOR_CHOICES.len() - 1]);
    let held_back = all
        .iter()
        .filter(|d| current + **d < proposed as f64)
        .count();
    let others = match flapping.len() {
        1 => String::new(),
        n => format!(" (and {} more series)", n - 1),
    };
    let from = match rule {
        Some(r) if r.for_secs > 0.0 => format!("from {} ", for_value(r.for_secs as u64)),
        Some(_) => "from 0s ".to_string(),
        None => String::new(),
    };
    Some(HygieneFinding {
        alertname: name.to_string(),
        issue: HygieneIssue::Flapping,
        evidence: format!(
            "{} of {} episodes on {} were shorter than {} (median {}){others}",
            short.len(),
            worst.episodes.len(),
            worst.series,
            human(FLAP_SHORT.as_secs_f64()),
            human(short[short.len() / 2]),
        ),
        suggestion: format!(
            "Raise for: {from}to {}: it would have held back {held_back} of these {} short episodes.",
            for_value(proposed),
            all.len()
        ),
    })
}

fn long_firing(
    name: &str,
    series: &[&Timeline],
    rule: Option<&RuleInfo>,
    end: f64,
) -> Vec<HygieneFinding> {
    let longest = |open: bool, min: Duration| {
        let mut hits: Vec<(&Timeline, Episode)> = series
            .iter()
            .flat_map(|t| t.episodes.iter().map(move |e| (*t, *e)))
            .filter(|(_, e)| e.open == open && e.secs() >= min.as_secs_f64())
            .collect();
        hits.sort_by(|a, b| b.1.secs().total_cmp(&a.1.secs()));
        hits
    };
    let expr = quoted_expr(rule);
    let mut out = Vec::new();
    let resolved = longest(false, FIRED_FOR_DAYS);
    if let Some((t, e)) = resolved.first() {
        out.push(HygieneFinding {
            alertname: name.to_string(),
            issue: HygieneIssue::FiredForDays,
            evidence: format!(
                "fired for {} on {} before it resolved{}",
                human(e.secs()),
                t.series,
                more(resolved.len())
            ),
            suggestion: format!(
                "Nobody acted on it for days, so it is not worth a page: change the threshold{expr} \
                 so it fires only when action is needed, or make it severity: info."
            ),
        });
    }
    let open = longest(true, NEVER_RESOLVED);
    if let Some((t, e)) = open.first() {
        out.push(HygieneFinding {
            alertname: name.to_string(),
            issue: HygieneIssue::NeverResolved,
            evidence: format!(
                "still firing at the end of the period on {}, for {}{}",
                t.series,
                human(end - e.start),
                more(open.len())
            ),
            suggestion: format!(
                "Fix the cause or silence it with an end date; if this state is normal here, \
                 change the threshold{expr}."
            ),
        });
    }
    out
}

fn more(n: usize) -> String {
    match n {
        0 | 1 => String::new(),
        n => format!(" ({} series in all)", n),
    }
}

fn no_severity(name: &str, rule: Option<&RuleInfo>) -> HygieneFinding {
    let evidence = match rule {
        Some(r) if !r.file.is_empty() => format!("the rule in {} has no severity label", r.file),
        Some(_) => "the rule has no severity label".to_string(),
        None => "its alerts carry no severity label".to_string(),
    };
    HygieneFinding {
        alertname: name.to_string(),
        issue: HygieneIssue::NoSeverity,
        evidence,
        suggestion: "Add severity: warning under labels: (critical if it must wake someone), \
                     so routing and this report can rank it."
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const END: f64 = 7.0 * 86_400.0;

    fn timeline(name: &str, series: &str, severity: bool, eps: &[(f64, f64, bool)]) -> Timeline {
        let mut labels = BTreeMap::from([("alertname".to_string(), name.to_string())]);
        if severity {
            labels.insert("severity".into(), "warning".into());
        }
        Timeline {
            alertname: name.into(),
            series: series.into(),
            labels,
            episodes: eps
                .iter()
                .map(|(start, len, open)| Episode {
                    start: *start,
                    end: start + len,
                    open: *open,
                })
                .collect(),
        }
    }

    fn rule(name: &str, for_secs: f64, severity: bool) -> RuleInfo {
        RuleInfo {
            name: name.into(),
            file: "/etc/prometheus/rules.yml".into(),
            query: "node_load1 > 4".into(),
            for_secs,
            has_severity: severity,
        }
    }

    /// `n` closed episodes an hour apart, each `len` seconds long.
    fn short(n: usize, len: f64) -> Vec<(f64, f64, bool)> {
        (0..n)
            .map(|i| (i as f64 * 3600.0, len + i as f64, false))
            .collect()
    }

    #[test]
    fn a_series_with_many_short_episodes_is_flapping_with_a_longer_for_proposed() {
        let t = [timeline("CpuHigh", "a:9100", true, &short(8, 120.0))];
        let h = analyse(&t, &[rule("CpuHigh", 60.0, true)], END);
        assert_eq!(h.findings.len(), 1, "{h:?}");
        let f = &h.findings[0];
        assert_eq!(f.issue, HygieneIssue::Flapping);
        assert_eq!(
            f.evidence,
            "8 of 8 episodes on a:9100 were shorter than 10m (median 2m)"
        );
        // Up to 127 s firing on top of for: 1m: 5m holds every one back.
        assert_eq!(
            f.suggestion,
            "Raise for: from 1m to 5m: it would have held back 8 of these 8 short episodes."
        );
        assert_eq!((h.rules_checked, h.rules_fired), (1, 1));
    }

    #[test]
    fn few_short_episodes_or_one_each_on_many_instances_is_not_flapping() {
        let few = timeline("A", "x", true, &short(FLAP_MIN_SHORT_EPISODES - 1, 60.0));
        let many: Vec<Timeline> = (0..200)
            .map(|i| timeline("Storm", &format!("host{i}"), true, &short(1, 60.0)))
            .collect();
        let long = timeline("B", "y", true, &short(10, FLAP_SHORT.as_secs_f64() + 1.0));
        let mut all = many;
        all.extend([few, long]);
        let h = analyse(&all, &[], END);
        assert!(h.findings.is_empty(), "{h:?}");
        assert_eq!(h.rules_fired, 3);
    }

    #[test]
    fn days_long_and_unresolved_episodes_are_listed_with_the_rule_expression() {
        let t = [
            timeline("DiskFull", "nas", true, &[(0.0, 3.0 * 86_400.0, false)]),
            timeline(
                "NodeDown",
                "pve2",
                true,
                &[(END - 30.0 * 3600.0, 30.0 * 3600.0, true)],
            ),
            timeline("Blip", "z", true, &[(END - 3600.0, 3600.0, true)]),
        ];
        let h = analyse(&t, &[rule("DiskFull", 300.0, true)], END);
        let got: Vec<(&str, HygieneIssue)> = h
            .findings
            .iter()
            .map(|f| (f.alertname.as_str(), f.issue))
            .collect();
        assert_eq!(
            got,
            [
                ("DiskFull", HygieneIssue::FiredForDays),
                ("NodeDown", HygieneIssue::NeverResolved)
            ]
        );
        assert_eq!(
            h.findings[0].evidence,
            "fired for 3 days on nas before it resolved"
        );
        assert!(
            h.findings[0]
                .suggestion
                .contains("change the threshold (node_load1 > 4)")
        );
        assert_eq!(
            h.findings[1].evidence,
            "still firing at the end of the period on pve2, for 30h"
        );
    }

    #[test]
    fn rules_and_received_alerts_without_severity_get_one_finding_each() {
        let t = [
            timeline("Unlabelled", "a", false, &short(1, 600.0)),
            timeline("Known", "b", false, &short(1, 600.0)),
        ];
        let rules = [
            rule("Known", 0.0, false),
            rule("NeverFired", 0.0, false),
            rule("Ok", 0.0, true),
        ];
        let h = analyse(&t, &rules, END);
        let names: Vec<&str> = h.findings.iter().map(|f| f.alertname.as_str()).collect();
        assert_eq!(names, ["Known", "NeverFired", "Unlabelled"]);
        assert!(
            h.findings
                .iter()
                .all(|f| f.issue == HygieneIssue::NoSeverity)
        );
        assert_eq!(
            h.findings[0].evidence,
            "the rule in /etc/prometheus/rules.yml has no severity label"
        );
        assert_eq!(h.findings[2].evidence, "its alerts carry no severity label");
        assert!(
            h.findings[0]
                .suggestion
                .starts_with("Add severity: warning under labels:")
        );
    }

    #[test]
    fn findings_are_capped_and_the_rest_counted() {
        let rules: Vec<RuleInfo> = (0..MAX_FINDINGS + 7)
            .map(|i| rule(&format!("R{i:02}"), 0.0, false))
            .collect();
        let h = analyse(&[], &rules, END);
        assert_eq!((h.findings.len(), h.omitted), (MAX_FINDINGS, 7));
    }

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(human(45.0), "45s");
        assert_eq!(human(600.0), "10m");
        assert_eq!(human(30.0 * 3600.0), "30h");
        assert_eq!(human(5.25 * 3600.0), "5.5h");
        assert_eq!(human(3.0 * 86_400.0), "3 days");
        assert_eq!(human(2.75 * 86_400.0), "2.8 days");
        assert_eq!(for_value(5400), "90m");
        assert_eq!(for_value(7200), "2h");
    }
}
