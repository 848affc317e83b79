//! The log lines that look bad around the trigger's start, on what the trigger is about:
//! the streams of its hosts and of the services it names (and of those services' hosts),
//! read from half an hour before the start to a quarter of an hour after it. Lines (a
//! stack trace as its exception, [`fold_entries`]) are graded by [`super::signal()`] (level fields, syslog priorities, failure words); those of the
//! worst grade are grouped by pattern, patterns already seen in the hours before are left
//! out (routine noise), and what remains is one fact per host (or service): when the first
//! such line came, how many, and the patterns with their stream's service. When one
//! pattern is all that looks bad, the new lines nearest it that do not (an admin's
//! command, a firewall's rule at info) are quoted beside it.
//!
//! This is the net for causes that are only in logs and are too few to be a burst: a
//! disk's I/O errors before a filesystem went read-only, a RAID member kicked out, the
//! process the OOM killer took, a link going down. A question that names nothing Loki has
//! reads every stream. Queries are built from label values found in Loki, escaped.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};
use serde_json::json;

use super::around::{Said, tally};
use super::signal::Signal;
use super::traces::fold_entries;
use super::{HOST_LABELS, SERVICE_LABELS, service_label};
use crate::analyze::prom::escape;
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Scope, Severity, Source, host_of,
    line_pattern, quote_line, readable_line,
};
use crate::integrations::LokiClient;
use crate::integrations::loki::LogStream;

pub struct LogsAtStart(pub Arc<LokiClient>);

/// How long before and after the trigger's start lines are read.
const BEFORE_START: TimeDelta = TimeDelta::minutes(30);
const AFTER_START: TimeDelta = TimeDelta::minutes(15);
/// How far back the lines that make a pattern routine are read.
const ROUTINE_LOOKBACK: TimeDelta = TimeDelta::hours(3);
/// Lines read per query.
const LINES: u32 = 1000;
/// Most facts (groups), and patterns quoted per fact.
const MAX_FACTS: usize = 3;
const MAX_PATTERNS: usize = 4;
/// Most patterns of lines that do not look bad quoted beside a single bad one.
const MAX_BESIDE: usize = 2;
/// Characters of quoted lines in one fact, shared among them: a single line is quoted
/// nearly whole (its cause is often in its middle: "…; server X said: 535 …"), four at
/// 75 each (never under [`MIN_LINE_CHARS`]).
const QUOTE_CHARS: usize = 300;
const MIN_LINE_CHARS: usize = 72;
/// How often a new line that does not look bad must occur on the trigger's hosts to be
/// told when nothing there looks bad, and from how many a warning.
const MIN_RECURRING: usize = 2;
/// How many new lines a host may log in the range for each of them to be told.
const FEW_NEW: usize = 3;
const RECURRING_WARNING: usize = 3;

/// The bad-looking lines of one host (or service).
#[derive(Default)]
struct Group {
    about: bool,
    grade: Option<Signal>,
    patterns: HashMap<String, Said>,
}

#[async_trait]
impl Analyzer for LogsAtStart {
    fn name(&self) -> &'static str {
        "logs_at_start"
    }

    fn reads_around_start(&self) -> bool {
        true
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let Some(focus) = &scope.focus else {
            return Ok(Vec::new());
        };
        let Some((label, labels)) = service_label(&self.0, scope).await? else {
            return Ok(Vec::new());
        };
        let host_label = HOST_LABELS
            .into_iter()
            .find(|h| *h != label && labels.iter().any(|x| x == h));
        let (start, end) = range(scope);
        // The services the trigger names, under any label that names services.
        let mut selectors = Vec::new();
        for l in SERVICE_LABELS
            .into_iter()
            .filter(|l| labels.iter().any(|x| x == l))
        {
            let named: Vec<String> = self
                .0
                .label_values(l, start, end)
                .await?
                .into_iter()
                .filter(|s| scope.is_about(&service_entity(l, s, None)))
                .collect();
            if !named.is_empty() {
                selectors.push(any_of(l, &named));
            }
        }
        let mut hosts: BTreeSet<String> = BTreeSet::new();
        if let Some(h) = host_label {
            hosts.extend(
                self.0
                    .label_values(h, start, end)
                    .await?
                    .into_iter()
                    .filter(|v| focus.names_host(&host_of(v))),
            );
        }
        // An alert about a remote target (a probe's address): the hosts that log about it.
        if hosts.is_empty()
            && selectors.is_empty()
            && !focus.is_question()
            && let Some(h) = host_label
        {
            hosts.extend(remote::hosts_logging_about(&self.0, focus, h, start, end).await);
        }
        let everything = hosts.is_empty() && selectors.is_empty();
        if everything && !focus.is_question() {
            return Ok(Vec::new());
        }
        // Every stream: by the host label when there is one (a stream may lack the service
        // label chosen).
        let all_streams = format!("{{{}=~\".+\"}}", host_label.unwrap_or(label));
        let mut streams = Vec::new();
        if everything {
            streams.extend(self.read(&all_streams, start, end).await?);
        } else {
            for s in &selectors {
                streams.extend(self.read(s, start, end).await?);
            }
            // The hosts the named services run on: their other streams (the kernel's) too.
            if let Some(h) = host_label {
                hosts.extend(streams.iter().filter_map(|s| s.labels.get(h).cloned()));
                if !hosts.is_empty() {
                    let hosts: Vec<String> = hosts.iter().cloned().collect();
                    streams.extend(self.read(&any_of(h, &hosts), start, end).await?);
                }
            }
        }
        let routine_start = start
            .checked_sub_signed(ROUTINE_LOOKBACK)
            .unwrap_or(start)
            .max(
                scope
                    .window_start
                    .checked_sub_signed(ROUTINE_LOOKBACK)
                    .unwrap_or(start),
            );
        // What was read, to learn what is routine and to cite.
        let read = match (host_label, hosts.is_empty(), everything) {
            (_, _, true) => vec![all_streams],
            (Some(h), false, _) => vec![any_of(h, &hosts.iter().cloned().collect::<Vec<_>>())],
            _ => selectors,
        };
        let mut routine: BTreeSet<String> = BTreeSet::new();
        for s in &read {
            let before = self.read(s, routine_start, start).await.unwrap_or_default();
            routine.extend(
                before
                    .iter()
                    .flat_map(|s| fold_entries(&s.entries))
                    .map(|(_, l, _)| line_pattern(&l)),
            );
        }
        let read = Read {
            analyzer: "logs_at_start",
            label,
            host_label,
            selector: &read[0],
            since: format!("{}m", (scope.now - start).num_minutes().max(1)),
            named: !everything,
        };
        Ok(facts(&streams, &routine, scope, &read))
    }
}

impl LogsAtStart {
    async fn read(
        &self,
        selector: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<Vec<LogStream>, AnalyzeError> {
        if start >= end {
            return Ok(Vec::new());
        }
        Ok(self.0.query_logs(selector, start, end, LINES).await?)
    }
}

/// The lines' range: around an alert's start; the whole window for a question (its start
/// is only how far back to look).
pub(super) fn range(scope: &Scope) -> (DateTime<Utc>, DateTime<Utc>) {
    let question = scope.focus.as_ref().is_none_or(|f| f.is_question());
    if question || scope.started >= scope.now {
        return (scope.window_start, scope.now);
    }
    let start = scope
        .started
        .checked_sub_signed(BEFORE_START)
        .unwrap_or(scope.started)
        .max(scope.window_start);
    let end = scope
        .started
        .checked_add_signed(AFTER_START)
        .unwrap_or(scope.now)
        .min(scope.now);
    (start, end)
}

/// `{label=~"a|b"}`, values escaped for both the string and the regex.
pub(super) fn any_of(label: &str, values: &[String]) -> String {
    let alternatives: Vec<String> = values.iter().map(|v| regex_lite::escape(v)).collect();
    format!("{{{label}=~\"{}\"}}", escape(&alternatives.join("|")))
}

fn service_entity(label: &str, service: &str, host: Option<String>) -> Entity {
    Entity::new("service", service)
        .on_host(host)
        .with_labels(BTreeMap::from([(label.to_string(), service.to_string())]))
}

/// Where the lines were read from and what for ([`facts`]).
pub(super) struct Read<'a> {
    pub analyzer: &'static str,
    pub label: &'a str,
    pub host_label: Option<&'a str>,
    pub selector: &'a str,
    /// How far back from now the lines were read, as the citation's `since` (`45m`).
    pub since: String,
    /// Whether the streams are those of the trigger's hosts and services (not every
    /// stream, read for a question that names nothing Loki has).
    pub named: bool,
}

/// One fact per host (or service) whose lines in range look bad in a way not seen before;
/// on the trigger's own hosts and services, when none looks bad, what is new there: the
/// lines that recur (a driver resetting a device, a daemon retrying: words a grader cannot
/// know), or all of a quiet host's few new lines (an admin's commands).
fn facts(
    streams: &[LogStream],
    routine: &BTreeSet<String>,
    scope: &Scope,
    read: &Read,
) -> Vec<Fact> {
    let (label, host_label) = (read.label, read.host_label);
    let mut groups: BTreeMap<(String, String), Group> = BTreeMap::new();
    // The new lines that do not look bad, per group: what an admin or a firewall said
    // beside a single daemon's error.
    let mut quiet: BTreeMap<(String, String), HashMap<String, Said>> = BTreeMap::new();
    let mut seen_entries = BTreeSet::new();
    for s in streams {
        let service = s.labels.get(label).cloned().unwrap_or_default();
        let host = host_label.and_then(|h| s.labels.get(h).cloned());
        let key = match &host {
            Some(h) => ("host".to_string(), h.clone()),
            None => ("service".to_string(), service.clone()),
        };
        let stream = format!(
            "{:?}",
            s.labels
                .iter()
                .filter(|(k, _)| Some(k.as_str()) != host_label)
                .collect::<Vec<_>>()
        );
        let mut entries = s.entries.clone();
        // A stream read by two selectors counts once.
        entries.retain(|(ns, line)| seen_entries.insert((s.labels.clone(), *ns, line.clone())));
        for (ns, line, grade) in fold_entries(&entries) {
            let pattern = line_pattern(&line);
            if routine.contains(&pattern) {
                continue;
            }
            let at = DateTime::from_timestamp_nanos(ns);
            if grade == Signal::None {
                let q = quiet.entry(key.clone()).or_default();
                tally(q, pattern, (grade, at), &stream, line);
                continue;
            }
            let g = groups.entry(key.clone()).or_default();
            g.about |= scope.is_about(&service_entity(label, &service, host.clone()));
            g.grade = g.grade.max(Some(grade));
            tally(&mut g.patterns, pattern, (grade, at), &stream, line);
        }
    }
    let mut ordered: Vec<((String, String), Group)> = groups.into_iter().collect();
    ordered.sort_by(|a, b| {
        (!a.1.about, std::cmp::Reverse(a.1.grade)).cmp(&(!b.1.about, std::cmp::Reverse(b.1.grade)))
    });
    let mut out: Vec<Fact> = Vec::new();
    for ((kind, name), g) in ordered.into_iter().take(MAX_FACTS) {
        let Some(grade) = g.grade else { continue };
        let mut patterns: Vec<Said> = g.patterns.into_values().collect();
        let Some(first) = patterns.iter().map(|p| p.first).min() else {
            continue;
        };
        let total: usize = patterns.iter().map(|p| p.count).sum();
        let count = patterns.len();
        let beside_lines = quiet.remove(&(kind.clone(), name.clone()));
        if count == 1
            && let Some(q) = beside_lines
        {
            patterns.extend(beside(q.into_values().collect(), first));
        }
        let severity = match grade {
            Signal::Error => Severity::Warning,
            _ => Severity::Info,
        };
        let what = format!(
            "{total} log lines that look bad, not seen in the hours before, in {count} patterns"
        );
        out.push(group_fact(&kind, &name, patterns, what, severity, read));
    }
    if !read.named {
        return out;
    }
    for ((kind, name), q) in quiet {
        if out.len() >= MAX_FACTS {
            break;
        }
        let mut patterns: Vec<Said> = q.into_values().collect();
        let most = patterns.iter().map(|p| p.count).max().unwrap_or(0);
        let total: usize = patterns.iter().map(|p| p.count).sum();
        // A quiet host's few new lines all tell (an admin's commands); among many, those
        // that recur.
        if total > FEW_NEW {
            if most < MIN_RECURRING {
                continue;
            }
            patterns.retain(|p| p.count >= MIN_RECURRING);
        }
        let total: usize = patterns.iter().map(|p| p.count).sum();
        let severity = match most >= RECURRING_WARNING {
            true => Severity::Warning,
            false => Severity::Info,
        };
        let what = format!(
            "{total} new log lines, not seen in the hours before, in {} patterns (none says error)",
            patterns.len()
        );
        out.push(group_fact(&kind, &name, patterns, what, severity, read));
    }
    out
}

/// The fact of one group's `patterns` (those quoted: [`quoted`]).
pub(super) fn group_fact(
    kind: &str,
    name: &str,
    patterns: Vec<Said>,
    what: String,
    severity: Severity,
    read: &Read,
) -> Fact {
    let first = patterns.iter().map(|p| p.first).min();
    let quoted = quoted(patterns);
    let keys: Vec<String> = quoted.iter().map(|p| line_pattern(&p.example)).collect();
    let line_chars = (QUOTE_CHARS / quoted.len().max(1)).max(MIN_LINE_CHARS);
    let quoted: Vec<String> = quoted
        .iter()
        .map(|p| {
            format!(
                "{} ({}×) {}",
                p.first.format("%H:%M"),
                p.count,
                quote_line(&p.example, line_chars)
            )
        })
        .collect();
    let entity = match kind {
        "host" => Entity::new("logs", name)
            .on_host(Some(name.to_string()))
            .with_labels(BTreeMap::from([(
                read.host_label.unwrap_or("host").to_string(),
                name.to_string(),
            )])),
        _ => service_entity(read.label, name, None),
    };
    Fact::new(
        FactClass::Logs,
        read.analyzer,
        entity,
        what,
        severity,
        Source::new(
            "loki_query",
            json!({"query": read.selector, "since": read.since}),
        ),
    )
    .since(first)
    .detail(quoted.join(" | "))
    .patterns(keys)
}

/// Of the new lines that do not look bad, the [`MAX_BESIDE`] patterns nearest in time to
/// `at` (the first bad line), one per stream first, those before it first at equal
/// distance: when one pattern is all that looks bad, what else was new beside it (an
/// admin's command, a firewall's rule, a unit stopped) is often the cause.
fn beside(mut quiet: Vec<Said>, at: DateTime<Utc>) -> Vec<Said> {
    quiet.sort_by_key(|p| ((p.first - at).abs(), p.first > at, p.order));
    let mut streams = BTreeSet::new();
    let (mut picked, rest): (Vec<Said>, Vec<Said>) = quiet
        .into_iter()
        .partition(|p| streams.insert(p.stream.clone()));
    picked.truncate(MAX_BESIDE);
    let room = MAX_BESIDE - picked.len();
    picked.extend(rest.into_iter().take(room));
    picked
}

/// The patterns to quote, at most [`MAX_PATTERNS`]: one per family of lines first (lines
/// of one stream that begin alike: the same device, subsystem or logger), the worst and
/// then the earliest of each; families taken by turns across streams (each stream's first
/// family, then each one's second), by time within a turn; then the next of each family.
/// A burst of one driver's lines leaves room for what the other parts and services logged.
fn quoted(mut patterns: Vec<Said>) -> Vec<Said> {
    patterns.sort_by_key(|p| (std::cmp::Reverse(p.grade), p.first, p.order));
    // ((stream, family), first line, patterns)
    type Family = ((String, String), DateTime<Utc>, Vec<Said>);
    let mut families: Vec<Family> = Vec::new();
    for p in patterns {
        let key = (p.stream.clone(), family(&p.example));
        match families.iter_mut().find(|f| f.0 == key) {
            Some(f) => {
                f.1 = f.1.min(p.first);
                f.2.push(p);
            }
            None => families.push((key, p.first, vec![p])),
        }
    }
    families.sort_by_key(|f| f.1);
    // A family's turn: how many families of its stream came before it.
    let mut seen_per_stream: HashMap<String, usize> = HashMap::new();
    let mut turns: Vec<(usize, DateTime<Utc>, Vec<Said>)> = families
        .into_iter()
        .map(|((stream, _), first, ps)| {
            let turn = seen_per_stream.entry(stream).or_default();
            *turn += 1;
            (*turn, first, ps)
        })
        .collect();
    turns.sort_by_key(|f| (f.0, f.1));
    let families = turns;
    let mut queues: Vec<std::collections::VecDeque<Said>> =
        families.into_iter().map(|f| f.2.into()).collect();
    let mut out = Vec::new();
    while out.len() < MAX_PATTERNS && queues.iter().any(|q| !q.is_empty()) {
        for q in &mut queues {
            if out.len() < MAX_PATTERNS
                && let Some(p) = q.pop_front()
            {
                out.push(p);
            }
        }
    }
    out.sort_by_key(|p| (p.first, p.order));
    out
}

/// The family of a line: its first word with digits left out (`ata3.00:` and `ata3.01:`
/// alike, `md/raid:md1:`, `systemd[1]:`), or for a logfmt or JSON line its message's
/// first word.
fn family(line: &str) -> String {
    let readable = readable_line(line);
    let first = readable
        .split_whitespace()
        .find(|w| !w.to_ascii_lowercase().starts_with("level="))
        .unwrap_or_default();
    let first = first.strip_prefix("msg=").unwrap_or(first);
    first
        .trim_start_matches('"')
        .chars()
        .filter(|c| !c.is_ascii_digit())
        .collect()
}

#[cfg(test)]
mod tests;

mod remote;
