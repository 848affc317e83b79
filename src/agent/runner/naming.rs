//! A finding that names nothing. When the facts behind a finding (the results it cites and
//! the sweep's pinned facts) are problems or changes of named entities — a host, a process, a pod, a
//! mount — and the model's own text names none of them, or states no figure although the
//! facts have values, the model is asked once to say which one and how much. A small model
//! often writes "a process is leaking memory" with the process in its evidence; the person
//! reading the finding needs its name. What is checked comes from the typed facts (their
//! entities and values), never from words.

use chrono::{DateTime, Utc};

use crate::agent::Finding;
use crate::agent::call_log::CallRecord;
use crate::agent::prompt::fence;
use crate::analyze::{Fact, FactClass, Severity};

/// Most facts quoted back to the model.
const MAX_QUOTED: usize = 3;
/// Shortest entity name or label value taken as naming it (shorter ones match by chance).
const MIN_NAME_CHARS: usize = 3;

/// The request to name the affected entity and its figures, when `finding` needs one.
pub(super) fn request(
    finding: &Finding,
    records: &[CallRecord],
    pinned: &[String],
    now: DateTime<Utc>,
) -> Option<String> {
    let problems = problems(finding, records, pinned);
    if problems.is_empty() {
        return None;
    }
    let text = model_text(finding).to_lowercase();
    let named = problems
        .iter()
        .any(|(_, f)| names(f).iter().any(|n| text.contains(n)));
    let has_figure = text.chars().any(|c| c.is_ascii_digit());
    let want_figure = problems.iter().any(|(_, f)| f.value.is_some());
    if named && (has_figure || !want_figure) {
        return None;
    }
    let missing = match (named, has_figure || !want_figure) {
        (false, false) => "which one is affected, nor its figures",
        (false, true) => "which one is affected",
        _ => "the figures",
    };
    let lines: Vec<String> = problems
        .iter()
        .take(MAX_QUOTED)
        .map(|(id, f)| format!("{id}: {}", f.line(now)))
        .collect();
    Some(format!(
        "Your answer does not say {missing}. The facts it rests on:\n{}\nReply with the JSON \
         again: name the affected one in the summary, copy its numbers, and cite its id.",
        fence("facts", &lines.join("\n"))
    ))
}

/// The problem facts (not context, warning or worse) and the changes of the cited and
/// pinned results, with
/// the id of their result, in the order of the call log (the sweep's most relevant first).
fn problems<'a>(
    finding: &Finding,
    records: &'a [CallRecord],
    pinned: &[String],
) -> Vec<(&'a str, &'a Fact)> {
    let cited = |id: &str| {
        pinned.iter().any(|p| p == id)
            || finding
                .evidence
                .iter()
                .any(|e| e.tool_call_ids.iter().any(|c| c == id))
    };
    records
        .iter()
        .filter(|r| r.ok && cited(&r.id))
        .flat_map(|r| r.facts.iter().map(move |f| (r.id.as_str(), f)))
        .filter(|(_, f)| {
            f.class == FactClass::Change
                || (f.class != FactClass::Context && f.severity >= Severity::Warning)
        })
        .collect()
}

/// The model's own words: summary, cause and claims.
pub(super) fn model_text(f: &Finding) -> String {
    let mut parts = vec![f.summary.as_str(), f.probable_cause.as_str()];
    parts.extend(f.evidence.iter().map(|e| e.claim.as_str()));
    parts.join("\n")
}

/// What names a fact's entity, lowercased: its name (and the last part of a path-like
/// name: `shop/api-7f9` is also `api-7f9`), or its host when the name is too short to
/// tell (a filesystem `/`). The host alone does not name a process, a service or a pod on
/// it ("something on hass1 stopped"), and label values are not names (a `job="node"`
/// would match any text that says "node").
fn names(f: &Fact) -> Vec<String> {
    let e = &f.entity;
    let telling =
        |n: &&str| n.chars().count() >= MIN_NAME_CHARS && !n.chars().all(|c| c.is_ascii_digit());
    let last = e.name.rsplit('/').next().filter(|l| *l != e.name);
    let own: Vec<String> = std::iter::once(e.name.as_str())
        .chain(last)
        .filter(telling)
        .map(str::to_lowercase)
        .collect();
    if !own.is_empty() {
        return own;
    }
    e.host
        .as_deref()
        .filter(telling)
        .map(str::to_lowercase)
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::agent::finding::Evidence;
    use crate::analyze::{Entity, Quantity, Source};

    fn record(id: &str, fact: Fact) -> CallRecord {
        CallRecord {
            id: id.into(),
            name: "prometheus_query".into(),
            arguments: json!({}),
            ok: true,
            output: String::new(),
            repeat_of: None,
            facts: vec![fact],
        }
    }

    fn fact(kind: &str, name: &str, host: &str, severity: Severity, class: FactClass) -> Fact {
        Fact::new(
            class,
            "process_memory",
            Entity::new(kind, name).on_host(Some(host.into())),
            "resident memory",
            severity,
            Source::new("prometheus_query", json!({})),
        )
        .value(Quantity::percent(41.0))
    }

    fn finding(summary: &str, cites: &[&str]) -> Finding {
        Finding {
            summary: summary.into(),
            evidence: vec![Evidence {
                claim: "memory grows".into(),
                tool_call_ids: cites.iter().map(|s| s.to_string()).collect(),
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_finding_that_names_no_entity_of_its_problem_facts_is_asked_to_with_the_facts() {
        let records = vec![
            record(
                "fact_1",
                fact(
                    "process",
                    "imgworker",
                    "media7",
                    Severity::Warning,
                    FactClass::Exhaustion,
                ),
            ),
            record(
                "call_2",
                fact(
                    "host",
                    "media7",
                    "media7",
                    Severity::Info,
                    FactClass::Context,
                ),
            ),
        ];
        let now = Utc::now();
        let f = finding("A process is leaking memory at 41 %.", &["call_2"]);
        let ask = request(&f, &records, &["fact_1".into()], now).expect("a request");
        assert!(
            ask.starts_with("Your answer does not say which one is affected."),
            "{ask}"
        );
        assert!(ask.contains("fact_1: process imgworker on media7"), "{ask}");
        assert!(
            !ask.contains("call_2"),
            "context facts are not quoted: {ask}"
        );
        // Naming the process is enough; its host alone is not.
        let ok = finding("imgworker grows 41 %", &[]);
        assert_eq!(request(&ok, &records, &["fact_1".into()], now), None);
        let host_only = finding("a worker on media7 at 41 %", &[]);
        assert!(request(&host_only, &records, &["fact_1".into()], now).is_some());
        // A name too short to tell (a filesystem `/`) is named by its host.
        let root = vec![record(
            "fact_1",
            fact(
                "filesystem",
                "/",
                "media7",
                Severity::Critical,
                FactClass::Exhaustion,
            ),
        )];
        let on_host = finding("media7's root is 97 % full", &[]);
        assert_eq!(request(&on_host, &root, &["fact_1".into()], now), None);
        let ask = request(
            &finding("imgworker leaks", &[]),
            &records,
            &["fact_1".into()],
            now,
        )
        .expect("no figure");
        assert!(
            ask.starts_with("Your answer does not say the figures."),
            "{ask}"
        );
    }

    #[test]
    fn without_cited_or_pinned_problem_facts_nothing_is_asked() {
        let records = vec![record(
            "fact_1",
            fact(
                "host",
                "media7",
                "media7",
                Severity::Info,
                FactClass::Context,
            ),
        )];
        let now = Utc::now();
        assert_eq!(
            request(&finding("All is well.", &["fact_1"]), &records, &[], now),
            None
        );
        let uncited = vec![record(
            "call_1",
            fact(
                "process",
                "imgworker",
                "media7",
                Severity::Critical,
                FactClass::Exhaustion,
            ),
        )];
        assert_eq!(
            request(&finding("All is well.", &[]), &uncited, &[], now),
            None
        );
    }
}
