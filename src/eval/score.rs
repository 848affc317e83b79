//! Deterministic scoring of one investigation against a scenario's expectation: its final
//! status, the facts, numbers and forbidden claims in the stored finding's text (summary,
//! probable cause, evidence claims, next steps), and the tools its timeline shows called.

use regex_lite::Regex;
use serde::Serialize;

use super::scenario::{Expectation, NumberFact};
use crate::agent::{Event, EventKind, Investigation};

/// Pass or fail, with every reason it failed.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Verdict {
    pub passed: bool,
    pub reasons: Vec<String>,
}

fn regex(pattern: &str, case_insensitive: bool) -> Option<Regex> {
    let p = if case_insensitive {
        format!("(?i){pattern}")
    } else {
        pattern.to_string()
    };
    Regex::new(&p).ok()
}

/// The text a finding's claims are read from.
pub fn finding_text(inv: &Investigation) -> String {
    let Some(f) = &inv.finding else {
        return String::new();
    };
    let mut parts = vec![f.summary.clone(), f.probable_cause.clone()];
    parts.extend(f.evidence.iter().map(|e| e.claim.clone()));
    parts.extend(f.next_steps.iter().cloned());
    parts.extend(f.figures.iter().map(|e| e.claim.clone()));
    parts.join("\n")
}

/// The finding's own words: everything but the key figures, which the sweep computed.
pub fn model_text(inv: &Investigation) -> String {
    let Some(f) = &inv.finding else {
        return String::new();
    };
    let mut parts = vec![f.summary.clone(), f.probable_cause.clone()];
    parts.extend(f.evidence.iter().map(|e| e.claim.clone()));
    parts.join("\n")
}

/// Names of the tools the investigation called.
pub fn tools_called(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCall { name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect()
}

/// `name (call id): output excerpt` of the tool calls that failed.
pub fn tool_errors(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCall {
                id,
                name,
                ok: false,
                output_excerpt,
                ..
            } => Some(format!("{name} ({id}): {output_excerpt}")),
            _ => None,
        })
        .collect()
}

/// The notes the investigation recorded (corrections asked of the model, its last answer
/// when that was not the finding, limits reached), in order.
pub fn notes(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Note { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

/// Whether `text` states a number within `fact`'s tolerance (followed by its unit when
/// one is given). Thousands separators are read as part of the number.
fn states_number(text: &str, fact: &NumberFact) -> bool {
    let numbers = Regex::new(r"-?\d[\d,]*(?:\.\d+)?").expect("valid regex");
    let unit = fact
        .unit
        .as_ref()
        .and_then(|u| regex(&format!(r"^\s*(?:{u})"), true));
    numbers.find_iter(text).any(|m| {
        let digits = m.as_str().replace(',', "");
        let Ok(v) = digits.parse::<f64>() else {
            return false;
        };
        (v - fact.value).abs() <= fact.tolerance + 1e-9
            && unit.as_ref().is_none_or(|u| u.is_match(&text[m.end()..]))
    })
}

/// Scores `inv` and its `events` against `expect`.
pub fn score(expect: &Expectation, inv: &Investigation, events: &[Event]) -> Verdict {
    let mut reasons = Vec::new();
    let status = inv.status.as_str();
    if !expect.status.iter().any(|s| s == status) {
        let why = inv
            .error
            .as_deref()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        reasons.push(format!(
            "status {status}, expected {}{why}",
            expect.status.join(" or ")
        ));
    }
    let text = finding_text(inv);
    if text.trim().is_empty() {
        reasons.push("no finding text".into());
    }
    for fact in &expect.facts {
        if !regex(fact, true).is_some_and(|r| r.is_match(&text)) {
            reasons.push(format!("missing fact /{fact}/"));
        }
    }
    // The key figures may carry every fact; the finding's own words must still name what
    // it is about (the first fact: the host, pod, process or service at fault).
    if let Some(first) = expect.facts.first()
        && regex(first, true).is_some_and(|r| r.is_match(&text))
        && !regex(first, true).is_some_and(|r| r.is_match(&model_text(inv)))
    {
        reasons.push(format!(
            "only the key figures name /{first}/; the summary, cause and claims do not"
        ));
    }
    for n in &expect.numbers {
        if !states_number(&text, n) {
            let unit = n
                .unit
                .as_deref()
                .map(|u| format!(" /{u}/"))
                .unwrap_or_default();
            reasons.push(format!(
                "missing number: {} ≈ {} ± {}{unit}",
                n.what, n.value, n.tolerance
            ));
        }
    }
    // A claim is one part of the finding (its summary, cause, a claim, a step, a key
    // figure): a forbidden pattern matching across two parts claims nothing.
    for bad in &expect.forbidden {
        let found = regex(bad, true).and_then(|r| text.lines().find_map(|l| r.find(l)));
        if let Some(m) = found {
            reasons.push(format!("forbidden claim /{bad}/: {:?}", m.as_str()));
        }
    }
    let called = tools_called(events);
    for tool in &expect.tools {
        if !regex(tool, false).is_some_and(|r| called.iter().any(|c| r.is_match(c))) {
            let seen = if called.is_empty() {
                "none".to_string()
            } else {
                called.join(", ")
            };
            reasons.push(format!("no call of a tool /{tool}/ (called: {seen})"));
        }
    }
    Verdict {
        passed: reasons.is_empty(),
        reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{Evidence, Finding, InvestigationRequest, InvestigationStatus, Trigger};

    fn investigation(summary: &str, claim: &str) -> Investigation {
        let mut inv = Investigation::new(
            InvestigationRequest {
                trigger: Trigger::Ask,
                title: "t".into(),
                prompt: "p".into(),
                context: None,
                group_key: None,
            },
            "m",
        );
        inv.status = InvestigationStatus::Finished;
        inv.finding = Some(Finding {
            summary: summary.into(),
            evidence: vec![Evidence {
                claim: claim.into(),
                tool_call_ids: vec![],
            }],
            ..Default::default()
        });
        inv
    }

    fn expectation(toml_text: &str) -> Expectation {
        toml::from_str(toml_text).unwrap()
    }

    fn tool_event(name: &str) -> Event {
        Event::new(
            1,
            EventKind::ToolCall {
                id: "c1".into(),
                name: name.into(),
                arguments: serde_json::json!({}),
                duration_ms: 1,
                ok: true,
                output_excerpt: String::new(),
            },
        )
    }

    #[test]
    fn a_finding_with_the_facts_numbers_and_tools_passes() {
        let e = expectation(
            r#"facts = ["/var/lib/vz"]
               numbers = [{ what = "used", value = 94, tolerance = 1.5, unit = "%|percent" },
                          { what = "hours left", value = 1300, tolerance = 50 }]
               tools = ["^prometheus_"]
               forbidden = ["no data"]"#,
        );
        let inv = investigation("/var/lib/vz on pve1 is 94.6 % full", "full in 1,320 hours");
        let v = score(&e, &inv, &[tool_event("prometheus_query")]);
        assert!(v.passed, "{:?}", v.reasons);
    }

    #[test]
    fn a_forbidden_claim_is_read_within_one_part_of_the_finding() {
        let e = expectation(r#"forbidden = ["because[^.]*/var/lib/docker"]"#);
        let across = investigation("writes fail because snapshots fail", "/var/lib/docker 97 %");
        assert!(
            score(&e, &across, &[]).passed,
            "two parts claim nothing together"
        );
        let within = investigation("writes fail because /var/lib/docker is full", "");
        assert!(!score(&e, &within, &[]).passed);
    }

    #[test]
    fn each_miss_is_a_reason() {
        let e = expectation(
            r#"status = ["finished"]
               facts = ["pve2"]
               numbers = [{ what = "used", value = 94, tolerance = 1, unit = "%" }]
               tools = ["^loki_"]
               forbidden = ["(?i)no data"]"#,
        );
        let mut inv = investigation("94 GiB used; No data for pve1", "");
        inv.status = InvestigationStatus::Failed;
        let v = score(&e, &inv, &[tool_event("prometheus_query")]);
        assert!(!v.passed);
        let all = v.reasons.join("\n");
        for part in [
            "status failed",
            "missing fact /pve2/",
            "missing number: used",
            "forbidden claim",
            "called: prometheus_query",
        ] {
            assert!(all.contains(part), "{part} not in {all}");
        }
    }

    #[test]
    fn key_figures_alone_do_not_name_the_subject_for_the_model() {
        let e = expectation(r#"facts = ["quill-db", "full"]"#);
        let mut inv = investigation("The application returns errors", "see the figures");
        if let Some(f) = inv.finding.as_mut() {
            f.figures = vec![Evidence {
                claim: "filesystem /var/lib/postgresql on quill-db: space used 100 %, full".into(),
                tool_call_ids: vec!["fact_1".into()],
            }];
        }
        let v = score(&e, &inv, &[]);
        assert!(!v.passed);
        assert!(
            v.reasons[0].starts_with("only the key figures name /quill-db/"),
            "{:?}",
            v.reasons
        );
        let named = investigation("quill-db's database disk is full", "");
        assert!(score(&e, &named, &[]).passed);
    }
}
