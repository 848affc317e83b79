//! Alert hygiene: which alert rules flapped, fired for days, never resolved or have no
//! `severity` label, each with a concrete change to make.
//!
//! The firing history is the alerts collector's Prometheus `ALERTS` series (shared, not
//! queried twice) plus, for alerts Prometheus does not know (Grafana-managed ones), the
//! alerts sre-agent received over webhooks (`AlertStore::alerts_between`). The rules'
//! `for:`, labels and expressions come from Prometheus' rules API.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::CollectContext;
use super::alerts::episodes;
use crate::alerts::model::AlertStatus;
use crate::alerts::store::AlertRecord;
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

/// One firing episode in unix seconds; `open` when still firing at the end of the period.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Episode {
    pub start: f64,
    pub end: f64,
    pub open: bool,
}

impl Episode {
    fn secs(&self) -> f64 {
        self.end - self.start
    }
}

/// The episodes of one alert series (one label set).
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    pub alertname: String,
    /// The series as a reader knows it: its `instance`, or its other labels.
    pub series: String,
    pub labels: BTreeMap<String, String>,
    pub episodes: Vec<Episode>,
}

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
    let rules = match &ctx.sources.prometheus {
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
    if let Some(log) = &ctx.alert_log {
        match log.alerts_between(ctx.window.start, ctx.window.end) {
            Ok(records) => {
                let known: BTreeSet<String> =
                    timelines.iter().map(|t| t.alertname.clone()).collect();
                timelines.extend(
                    from_received(&records, end)
                        .into_iter()
                        .filter(|t| !known.contains(&t.alertname)),
                );
            }
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

fn series_name(labels: &BTreeMap<String, String>) -> String {
    if let Some(i) = labels.get("instance") {
        return i.clone();
    }
    let other: Vec<String> = labels
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "alertname" | "alertstate" | "severity"))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    other.join(",")
}

/// Timelines from `timestamp(ALERTS{alertstate="firing"})` series.
pub fn from_alerts_series(series: &[Series], step: Duration, end: f64) -> Vec<Timeline> {
    let step_s = step.as_secs_f64();
    series
        .iter()
        .map(|s| Timeline {
            alertname: s.metric.get("alertname").cloned().unwrap_or_default(),
            series: series_name(&s.metric),
            labels: s.metric.clone().into_iter().collect(),
            episodes: episodes(s, step)
                .into_iter()
                .map(|(first, last)| Episode {
                    start: first,
                    end: (last + step_s).min(end),
                    open: last >= end - 2.0 * step_s,
                })
                .collect(),
        })
        .collect()
}

/// Timelines from received alerts: an episode per fingerprint and `startsAt`, ended by a
/// resolved notification (repeated firing notifications of one episode count once).
pub fn from_received(records: &[AlertRecord], end: f64) -> Vec<Timeline> {
    let mut by_fp: BTreeMap<&str, (Timeline, BTreeMap<i64, Option<f64>>)> = BTreeMap::new();
    for r in records {
        let a = &r.alert;
        let (_, eps) = by_fp.entry(&a.fingerprint).or_insert_with(|| {
            let labels: BTreeMap<String, String> = a.labels.clone().into_iter().collect();
            let t = Timeline {
                alertname: a.name.clone(),
                series: series_name(&labels),
                labels,
                episodes: Vec::new(),
            };
            (t, BTreeMap::new())
        });
        let start = a.starts_at.unwrap_or(r.received_at).timestamp();
        match a.status {
            AlertStatus::Firing => {
                eps.entry(start).or_insert(None);
            }
            AlertStatus::Resolved => {
                let ended = a.ends_at.unwrap_or(r.received_at).timestamp() as f64;
                eps.insert(start, Some(ended));
            }
        }
    }
    by_fp
        .into_values()
        .map(|(mut t, eps)| {
            t.episodes = eps
                .into_iter()
                .map(|(start, ended)| Episode {
                    start: start as f64,
                    end: ended.unwrap_or(end).min(end),
                    open: ended.is_none(),
                })
                .collect();
            t
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
        format!("{:.1} days", s / 86_400.0)
    }
}

/// The `for:` duration as a rule file writes it.
fn for_value(secs: u64) -> String {
    if secs % 3600 == 0 {
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
    let place = match rule {
        Some(r) if !r.file.is_empty() => format!("the rule in {}", r.file),
        Some(_) => "the rule".to_string(),
        None => "alerts received for it".to_string(),
    };
    HygieneFinding {
        alertname: name.to_string(),
        issue: HygieneIssue::NoSeverity,
        evidence: format!("{place} has no severity label"),
        suggestion: "Add severity: warning under labels: (critical if it must wake someone), \
                     so routing and this report can rank it."
            .to_string(),
    }
}
