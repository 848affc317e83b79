//! Key figures: the typed facts behind a finding, shown apart from the model's own claims
//! so a finding states them even when a small model paraphrases them away. They come from
//! the facts of the calls the finding cites (health-sweep facts `fact_N`, and facts a tool
//! computed), then from the sweep's facts about the trigger itself; never from the model
//! and never from parsing rendered text.

use chrono::Utc;

use super::call_log::CallRecord;
use super::{Evidence, Finding};

/// Most figures a finding carries.
const MAX_FIGURES: usize = 4;

/// The key figures of `finding`: the facts of the records it cites, in citation order,
/// then those of the `pinned` records (the sweep's facts about the trigger).
pub fn for_finding(finding: &Finding, records: &[CallRecord], pinned: &[String]) -> Vec<Evidence> {
    let now = Utc::now();
    let cited = finding.evidence.iter().flat_map(|e| e.tool_call_ids.iter());
    let mut out: Vec<Evidence> = Vec::new();
    for id in cited.chain(pinned) {
        let Some(r) = records.iter().find(|r| &r.id == id && r.ok) else {
            continue;
        };
        for f in &r.facts {
            let claim = f.line(now);
            if out.len() < MAX_FIGURES && !out.iter().any(|e| e.claim == claim) {
                out.push(Evidence {
                    claim,
                    tool_call_ids: vec![r.id.clone()],
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::analyze::{Entity, Fact, FactClass, Severity, Source};

    fn record(id: &str, name: &str, facts: Vec<Fact>) -> CallRecord {
        CallRecord {
            id: id.into(),
            name: "prometheus_query".into(),
            arguments: Value::Null,
            ok: true,
            output: format!("text of {name} that no one parses"),
            repeat_of: None,
            facts,
        }
    }

    fn fact(name: &str) -> Fact {
        Fact::new(
            FactClass::Exhaustion,
            "t",
            Entity::new("filesystem", name),
            "space used",
            Severity::Warning,
            Source::promql("q"),
        )
    }

    #[test]
    fn figures_are_the_facts_the_finding_cites_then_the_pinned_ones_without_repeats() {
        let records = vec![
            record("fact_1", "a", vec![fact("/a")]),
            record("fact_2", "b", vec![fact("/b")]),
            record("call_3", "c", Vec::new()),
        ];
        let finding = Finding {
            summary: "s".into(),
            evidence: vec![
                Evidence {
                    claim: "b is full".into(),
                    tool_call_ids: vec!["fact_2".into(), "call_3".into()],
                },
                Evidence {
                    claim: "again".into(),
                    tool_call_ids: vec!["fact_2".into()],
                },
            ],
            ..Default::default()
        };
        let got = for_finding(&finding, &records, &["fact_1".into()]);
        let claims: Vec<&str> = got.iter().map(|e| e.claim.as_str()).collect();
        assert_eq!(
            claims,
            vec!["filesystem /b: space used", "filesystem /a: space used"]
        );
        assert_eq!(got[0].tool_call_ids, vec!["fact_2"]);
        assert!(for_finding(&Finding::default(), &records, &[]).is_empty());
    }
}
