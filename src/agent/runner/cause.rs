//! A finding that only restates its trigger. A small model given the facts often writes
//! back the alert ("the SQL thread is not running", "the probe failed") as the probable
//! cause, although the facts hold problems or changes that began before the alert or with
//! it: a log error on the same host, a full storage under a paused guest, a target down.
//! The sweep's facts about the trigger's own entity are its symptom, not candidates.
//! When the finding cites none of those facts and its words name none of them, the model
//! is asked once which of them caused the alert, and its short answer replaces the probable
//! cause. What counts as "naming" a fact is computed: the words of the fact's entity (or,
//! for a fact about the trigger's own entity, of its upstream detail) that neither the
//! trigger nor the facts the finding cites contain. No list of words decides it.

use std::collections::BTreeSet;

use chrono::{DateTime, TimeDelta, Utc};
use serde::Deserialize;

use crate::agent::call_log::CallRecord;
use crate::agent::prompt::fence;
use crate::agent::{Evidence, Finding};
use crate::analyze::{Fact, FactClass, Severity};

/// Most candidate facts quoted to the model.
const MAX_CANDIDATES: usize = 3;
/// Shortest word that can tell a fact apart (shorter ones match by chance: `dev`, `on`).
pub(super) const MIN_MARK_CHARS: usize = 4;
/// Shortest word of an upstream detail (a log line) that can tell a fact apart: longer,
/// since details are prose.
const MIN_DETAIL_MARK_CHARS: usize = 5;
/// How long before the trigger's start a state may have begun and still be a cause of it.
const CAUSE_LEAD: TimeDelta = TimeDelta::hours(6);
/// How long after the trigger's start a state may have begun and still be one of its
/// causes rather than an effect (reads are minutes apart).
const CAUSE_LAG: TimeDelta = TimeDelta::minutes(15);

/// A fact that may explain the trigger, with its id and the words that name it.
struct Candidate<'a> {
    id: &'a str,
    fact: &'a Fact,
    marks: Vec<String>,
}

/// The request to choose a cause among the facts, when `finding` restates its trigger.
/// `trigger` is the question and the alert's text; `start` when the alert began.
/// `symptoms` are the ids of the sweep's facts about what the trigger is about: the alert
/// itself seen in the data, never its cause.
pub(super) fn request(
    finding: &Finding,
    records: &[CallRecord],
    symptoms: &[String],
    trigger: &str,
    start: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Option<String> {
    let cited = cited(finding);
    let trigger_words = words(trigger, MIN_MARK_CHARS);
    let eligible: Vec<(&str, &Fact)> = records
        .iter()
        .filter(|r| r.ok && !symptoms.contains(&r.id))
        .flat_map(|r| r.facts.iter().map(move |f| (r.id.as_str(), f)))
        .filter(|(_, f)| may_cause(f, start))
        .collect();
    // A finding citing a fact that says more than the trigger already rests on a cause.
    if eligible
        .iter()
        .any(|(id, f)| cited.contains(*id) && !marks(f, &trigger_words).is_empty())
    {
        return None;
    }
    let mut known = trigger_words;
    for r in records.iter().filter(|r| cited.contains(r.id.as_str())) {
        for f in &r.facts {
            known.extend(words(&f.line(now), MIN_MARK_CHARS));
        }
    }
    let mut candidates: Vec<Candidate> = Vec::new();
    for (id, fact) in eligible {
        let marks = marks(fact, &known);
        let line = fact.line(now);
        if marks.is_empty() || candidates.iter().any(|c| c.fact.line(now) == line) {
            continue;
        }
        candidates.push(Candidate { id, fact, marks });
        if candidates.len() == MAX_CANDIDATES {
            break;
        }
    }
    let text = model_text(finding).to_lowercase();
    let named = candidates
        .iter()
        .any(|c| c.marks.iter().any(|m| text.contains(m.as_str())));
    if candidates.is_empty() || named {
        return None;
    }
    let lines: Vec<String> = candidates
        .iter()
        .map(|c| format!("{}: {}", c.id, c.fact.line_beside(now, start)))
        .collect();
    let (trigger, began) = match start {
        Some(_) => ("the alert", " began before it or with it and"),
        None => ("the question", ""),
    };
    Some(format!(
        "Your probable cause repeats what {trigger} says. These facts{began} may be its \
         cause:\n{}\nIf one of them caused it, reply with only \
         {{\"probable_cause\":\"<what caused it, with its name and numbers>\",\
         \"tool_call_ids\":[\"<its id>\"]}}. If none did, reply {{\"probable_cause\":\"\"}}.",
        fence("facts", &lines.join("\n"))
    ))
}

/// The model's answer to [`request`] applied to the finding it was asked about: a cause
/// citing facts that ran replaces the probable cause and becomes the first claim; an
/// empty, uncited or unreadable answer leaves the finding as it was. A whole finding as the
/// answer is read for its probable cause and citations too.
pub(super) fn apply(mut finding: Finding, answer: &str, records: &[CallRecord]) -> (Finding, bool) {
    let Some(reply) = read_reply(answer) else {
        return (finding, false);
    };
    let cause = reply.probable_cause.trim();
    let ids: Vec<String> = reply
        .tool_call_ids
        .into_iter()
        .filter(|id| records.iter().any(|r| r.ok && &r.id == id))
        .collect();
    if cause.is_empty() || ids.is_empty() {
        return (finding, false);
    }
    finding.probable_cause = cause.to_string();
    finding.evidence.insert(
        0,
        Evidence {
            claim: cause.to_string(),
            tool_call_ids: ids,
        },
    );
    (finding, true)
}

/// The short answer, or the cause of a whole finding given instead.
#[derive(Deserialize)]
struct Reply {
    #[serde(default)]
    probable_cause: String,
    #[serde(default)]
    tool_call_ids: Vec<String>,
}

fn read_reply(answer: &str) -> Option<Reply> {
    let short = answer
        .find('{')
        .zip(answer.rfind('}'))
        .and_then(|(start, end)| answer.get(start..=end))
        .and_then(|json| serde_json::from_str::<Reply>(json).ok())
        .filter(|r| !r.tool_call_ids.is_empty() || r.probable_cause.trim().is_empty());
    if short.is_some() {
        return short;
    }
    let f = Finding::from_answer(answer)?;
    let ids = f
        .evidence
        .iter()
        .flat_map(|e| e.tool_call_ids.iter().cloned())
        .collect();
    Some(Reply {
        probable_cause: f.probable_cause,
        tool_call_ids: ids,
    })
}

/// The model's own words: summary, cause and claims.
pub(super) fn model_text(f: &Finding) -> String {
    let mut parts = vec![f.summary.as_str(), f.probable_cause.as_str()];
    parts.extend(f.evidence.iter().map(|e| e.claim.as_str()));
    parts.join("\n")
}

/// Ids the finding's claims cite.
fn cited(finding: &Finding) -> BTreeSet<&str> {
    finding
        .evidence
        .iter()
        .flat_map(|e| e.tool_call_ids.iter().map(String::as_str))
        .collect()
}

/// A fact that says something is wrong or changed (not context).
pub(super) fn is_problem(f: &Fact) -> bool {
    f.class == FactClass::Change
        || (f.class != FactClass::Context && f.severity >= Severity::Warning)
}

/// Whether `fact` can be a cause: a change, or a problem that is not context, whose state
/// began in the hours before the trigger's start or with it (a state known to begin well
/// after is an effect). Of a fact without a start only a critical one read from an API
/// without history counts (a full storage, a held guest): a series without a start has been
/// so for all the history read, long before the trigger. A question has no start, so any
/// start counts.
fn may_cause(fact: &Fact, start: Option<DateTime<Utc>>) -> bool {
    if !is_problem(fact) {
        return false;
    }
    match (fact.since, start) {
        (Some(since), Some(start)) => since >= start - CAUSE_LEAD && since <= start + CAUSE_LAG,
        (Some(_), None) => true,
        (None, _) => {
            fact.severity >= Severity::Critical && !fact.source.tool.starts_with("prometheus")
        }
    }
}

/// The words that name `fact` and are not in `known`: of its entity's name and host, else
/// (a fact about something the trigger names) of its upstream detail.
pub(super) fn marks(fact: &Fact, known: &BTreeSet<String>) -> Vec<String> {
    let e = &fact.entity;
    let own = format!("{} {}", e.name, e.host.as_deref().unwrap_or_default());
    let fresh = |text: &str, min: usize| -> Vec<String> {
        words(text, min)
            .into_iter()
            .filter(|w| !known.contains(w))
            .collect()
    };
    let by_name = fresh(&own, MIN_MARK_CHARS);
    if !by_name.is_empty() {
        return by_name;
    }
    fact.detail
        .as_deref()
        .map(|d| fresh(d, MIN_DETAIL_MARK_CHARS))
        .unwrap_or_default()
}

/// Lowercased words of `text` of at least `min` characters with a letter in them; a word
/// keeps `-`, `_` and inner dots (`pve-lark`, `io-error`, `es-3.lan`).
pub(super) fn words(text: &str, min: usize) -> BTreeSet<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .map(|w| w.trim_matches(|c: char| matches!(c, '.' | '-' | '_')))
        .filter(|w| w.chars().count() >= min && w.chars().any(char::is_alphabetic))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
#[path = "cause/tests.rs"]
mod tests;
