//! A model's final answer in prose (markdown, plain sentences) read as a finding: small
//! models often answer in prose however the prompt asks. The summary is its first
//! paragraph, the probable cause the paragraph that gives one (else the second), each
//! sentence that cites a call id becomes a claim with that id, and the next steps are the
//! list items under a heading about them. Also the rule-based conclusion from the health
//! sweep's facts, for when the model's answer is unusable.

use std::sync::LazyLock;

use regex_lite::Regex;

use super::call_log::{CallRecord, FACT_ID_PREFIX};
use super::{Evidence, Finding};
use crate::text::truncate;

/// Shortest prose taken as an answer (shorter: "Let me check." is no finding).
const MIN_PROSE_CHARS: usize = 80;
/// Longest summary and cause kept.
const MAX_PART_CHARS: usize = 600;
/// Facts a rule-based conclusion states.
const CONCLUSION_FACTS: usize = 3;

static CALL_ID: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(?:fact|evidence|call)_[A-Za-z0-9]+\b").expect("valid regex"));

/// The finding in a prose answer, when it is long enough or cites a call.
pub fn from_prose(answer: &str) -> Option<Finding> {
    let text = answer.trim();
    let cites = CALL_ID.is_match(text);
    if text.chars().count() < MIN_PROSE_CHARS && !cites {
        return None;
    }
    let mut paragraphs: Vec<String> = Vec::new();
    let mut steps: Vec<String> = Vec::new();
    let mut in_steps = false;
    let mut current = String::new();
    let flush = |current: &mut String, paragraphs: &mut Vec<String>| {
        if !current.trim().is_empty() {
            paragraphs.push(current.trim().to_string());
        }
        current.clear();
    };
    for line in text.lines() {
        let l = line.trim();
        let heading = l.starts_with('#') || (l.starts_with("**") && l.ends_with("**"));
        if heading {
            flush(&mut current, &mut paragraphs);
            let h = l.to_lowercase();
            in_steps = h.contains("next") || h.contains("recommend") || h.contains("action");
            continue;
        }
        if l.is_empty() {
            flush(&mut current, &mut paragraphs);
            continue;
        }
        let item = strip_list_marker(l);
        if in_steps && item.is_some() {
            steps.push(plain(item.unwrap_or(l)));
            continue;
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(&plain(item.unwrap_or(l)));
    }
    flush(&mut current, &mut paragraphs);
    let summary = truncate(paragraphs.first()?, MAX_PART_CHARS);
    let cause = paragraphs
        .iter()
        .skip(1)
        .find(|p| p.to_lowercase().contains("cause"))
        .or(paragraphs.get(1))
        .map(|p| truncate(p, MAX_PART_CHARS))
        .unwrap_or_default();
    let evidence = paragraphs
        .iter()
        .flat_map(|p| sentences(p))
        .filter_map(|s| {
            let ids: Vec<String> = CALL_ID
                .find_iter(&s)
                .map(|m| m.as_str().to_string())
                .collect();
            (!ids.is_empty()).then(|| Evidence {
                claim: truncate(&s, MAX_PART_CHARS),
                tool_call_ids: ids,
            })
        })
        .collect();
    Some(Finding {
        summary,
        probable_cause: cause,
        confidence: "medium".into(),
        evidence,
        next_steps: steps,
        ..Default::default()
    })
}

/// The finding stated from the health sweep's most relevant facts when the model gave no
/// usable answer, marked as a rule-based conclusion; `None` without facts.
pub fn rule_based(why: &str, records: &[CallRecord]) -> Option<Finding> {
    let facts: Vec<&CallRecord> = records
        .iter()
        .filter(|r| r.id.starts_with(FACT_ID_PREFIX) && !r.facts.is_empty())
        .take(CONCLUSION_FACTS)
        .collect();
    let top = facts.first()?;
    let severity = facts
        .iter()
        .flat_map(|r| &r.facts)
        .map(|f| f.severity)
        .max()
        .map(|s| s.as_str().to_string())
        .unwrap_or_default();
    Some(Finding {
        summary: format!(
            "Rule-based conclusion from the health sweep (the model gave no usable answer: \
             {why}): {}",
            top.output
        ),
        probable_cause: format!(
            "Not explained by the model. The most relevant fact found: {}",
            top.output
        ),
        severity,
        confidence: "low".into(),
        evidence: facts
            .iter()
            .map(|r| Evidence {
                claim: r.output.clone(),
                tool_call_ids: vec![r.id.clone()],
            })
            .collect(),
        next_steps: vec![
            "Check the facts above on the affected system.".into(),
            "If the model often gives no usable answer, try a larger model.".into(),
        ],
        ..Default::default()
    })
}

/// `- x`, `* x`, `1. x`, `2) x` → `x`.
fn strip_list_marker(l: &str) -> Option<&str> {
    if let Some(rest) = l.strip_prefix("- ").or_else(|| l.strip_prefix("* ")) {
        return Some(rest);
    }
    let digits = l.chars().take_while(char::is_ascii_digit).count();
    let rest = l.get(digits..)?;
    (digits > 0)
        .then(|| rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")))
        .flatten()
}

/// Markdown emphasis and code marks removed.
fn plain(s: &str) -> String {
    s.replace("**", "").replace('`', "").trim().to_string()
}

/// Sentences of a paragraph (split after `.`, `!`, `?` followed by a space).
fn sentences(p: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = p.chars().peekable();
    while let Some(c) = chars.next() {
        cur.push(c);
        if matches!(c, '.' | '!' | '?') && chars.peek().is_none_or(|n| n.is_whitespace()) {
            out.push(cur.trim().to_string());
            cur.clear();
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_markdown_answer_becomes_summary_cause_cited_claims_and_next_steps() {
        let answer = "## Summary\n\n**/srv on cedar-07 is 94 % full** and fills at 2 GiB/h \
                      (fact_1).\n\n## Cause\n\nThe probable cause is the backup job writing \
                      to /srv, see call_2. It started at 10:00.\n\n## Next steps\n\n1. Prune \
                      old backups\n- Move images elsewhere\n";
        let f = from_prose(answer).expect("a finding");
        assert_eq!(
            f.summary,
            "/srv on cedar-07 is 94 % full and fills at 2 GiB/h (fact_1)."
        );
        assert!(
            f.probable_cause
                .starts_with("The probable cause is the backup job")
        );
        assert_eq!(f.evidence.len(), 2);
        assert_eq!(f.evidence[1].tool_call_ids, vec!["call_2"]);
        assert_eq!(
            f.next_steps,
            vec!["Prune old backups", "Move images elsewhere"]
        );
    }

    #[test]
    fn a_short_remark_is_no_finding_but_a_short_answer_citing_a_fact_is() {
        assert!(from_prose("Let me check the disk.").is_none());
        assert!(from_prose("").is_none());
        let f = from_prose("Disk full, see fact_1").unwrap();
        assert_eq!(f.summary, "Disk full, see fact_1");
        assert!(from_prose("ü".repeat(200).as_str()).is_some());
    }
}
