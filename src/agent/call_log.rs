//! The calls an investigation made and what they returned: to answer a repeated call with
//! the earlier result, to check the ids a finding cites, and to build the evidence of an
//! inconclusive finding. Evidence gathered before the first LLM call is recorded here too
//! ([`CallLog::add_evidence`]), so the model can cite it like a tool call.

mod attribute;

use std::collections::BTreeMap;

use serde_json::Value;

use super::Finding;
use crate::analyze::Fact;
use crate::llm::match_tool_name;

/// The ids of health-sweep facts: `fact_1`, `fact_2`, …
pub const FACT_ID_PREFIX: &str = "fact_";

/// One tool call (or piece of pre-gathered evidence) and its result.
#[derive(Clone, Debug, PartialEq)]
pub struct CallRecord {
    pub id: String,
    /// The tool's name, or the evidence's source.
    pub name: String,
    pub arguments: Value,
    /// Whether it returned data rather than an error.
    pub ok: bool,
    /// The output as the model saw it (inside the fence).
    pub output: String,
    /// The earlier identical call this one repeated (it was not run again).
    pub repeat_of: Option<String>,
    /// The typed facts behind the output (a health-sweep fact, or what a tool computed).
    pub facts: Vec<Fact>,
}

impl CallRecord {
    /// "prometheus_query {"query":"up"}": what was called, for humans.
    pub fn describe(&self) -> String {
        match &self.arguments {
            Value::Null => self.name.clone(),
            Value::Object(m) if m.is_empty() => self.name.clone(),
            args => format!(
                "{} {}",
                self.name,
                crate::text::truncate(&args.to_string(), 120)
            ),
        }
    }
}

/// Everything an investigation called, in order.
#[derive(Clone, Debug, Default)]
pub struct CallLog {
    records: Vec<CallRecord>,
}

impl CallLog {
    /// Records evidence gathered before the first LLM call (e.g. the alert rule's series),
    /// citable as `id` like a tool call.
    pub fn add_evidence(&mut self, id: &str, source: &str, text: &str) {
        self.push(CallRecord {
            id: id.to_string(),
            name: source.to_string(),
            arguments: Value::Null,
            ok: true,
            output: text.to_string(),
            repeat_of: None,
            facts: Vec::new(),
        });
    }

    pub fn push(&mut self, record: CallRecord) {
        self.records.push(record);
    }

    pub fn records(&self) -> &[CallRecord] {
        &self.records
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The earlier call of `name` with the same arguments (keys in any order) that ran.
    pub fn earlier(&self, name: &str, arguments: &Value) -> Option<&CallRecord> {
        let key = canonical(arguments);
        self.records.iter().find(|r| {
            r.repeat_of.is_none()
                && !r.id.starts_with(FACT_ID_PREFIX)
                && r.name == name
                && canonical(&r.arguments) == key
        })
    }

    /// `proposed` when no call has that id yet (nor one in `also_taken`), else the first
    /// free `call_N`: servers without ids, and text calls, reuse the same ids every turn.
    pub fn unique_id(&self, proposed: &str, also_taken: &[String]) -> String {
        let taken = |id: &str| {
            self.records.iter().any(|r| r.id == id) || also_taken.iter().any(|t| t == id)
        };
        if !proposed.trim().is_empty() && !taken(proposed) {
            return proposed.to_string();
        }
        (self.records.len() + also_taken.len() + 1..)
            .map(|n| format!("call_{n}"))
            .find(|id| !taken(id))
            .expect("an unused id")
    }

    /// The record `cited` means: its id (also in another case), or the name of a tool that
    /// returned data (small models cite tool names), its latest call.
    fn resolve(&self, cited: &str) -> Option<&CallRecord> {
        let c = cited.trim();
        if let Some(r) = self
            .records
            .iter()
            .find(|r| r.id == c || r.id.eq_ignore_ascii_case(c))
        {
            return Some(r);
        }
        let names: Vec<&str> = self.records.iter().map(|r| r.name.as_str()).collect();
        if let Some(name) = match_tool_name(c, &names) {
            return self.records.iter().rev().find(|r| r.name == name && r.ok);
        }
        // "call_2", "tool_call_2", "2": small models number the calls they were shown, in
        // order (as `unique_id` numbers the calls that come without an id). An
        // `evidence_N` that does not exist names no call.
        let lower = c.to_ascii_lowercase();
        if lower.starts_with("evidence") || lower.starts_with(FACT_ID_PREFIX) {
            return None;
        }
        let n: usize = c
            .trim_start_matches(|ch: char| ch.is_ascii_alphabetic() || ch == '_' || ch == '-')
            .parse()
            .ok()?;
        self.records.get(n.checked_sub(1)?)
    }

    /// Checks what `finding` cites against what really ran: ids of calls never made are
    /// dropped, tool names become the ids of their calls, a claim left citing nothing cites
    /// the result whose figures and names it restates ([`attribute::restated`]), and
    /// without any cited result that returned data the confidence is lowered to low.
    /// Returns a note per change.
    pub fn check_citations(&self, finding: &mut Finding) -> Vec<String> {
        let mut dropped = Vec::new();
        let mut attributed = Vec::new();
        let mut supported = false;
        for e in &mut finding.evidence {
            let mut kept: Vec<String> = Vec::new();
            for cited in &e.tool_call_ids {
                match self.resolve(cited) {
                    Some(r) => {
                        supported |= r.ok;
                        if !kept.contains(&r.id) {
                            kept.push(r.id.clone());
                        }
                    }
                    None => dropped.push(cited.clone()),
                }
            }
            if kept.is_empty()
                && let Some(i) = attribute::restated(&e.claim, &self.records)
            {
                let r = &self.records[i];
                supported = true;
                attributed.push(r.id.clone());
                kept.push(r.id.clone());
            }
            e.tool_call_ids = kept;
        }
        let mut notes = Vec::new();
        if !dropped.is_empty() {
            notes.push(format!(
                "the finding cited tool calls that were never made; removed from its evidence: {}",
                dropped.join(", ")
            ));
        }
        if !attributed.is_empty() {
            notes.push(format!(
                "claims citing no call that ran were matched by their words to: {}",
                attributed.join(", ")
            ));
        }
        if !supported && !finding.confidence.trim().eq_ignore_ascii_case("low") {
            let why = if self.records.iter().any(|r| r.ok) {
                "none of its claims cites a tool result that returned data"
            } else {
                "no tool returned data in this investigation"
            };
            notes.push(format!(
                "confidence lowered from {:?} to low: {why}",
                finding.confidence
            ));
            finding.confidence = "low".into();
        }
        notes
    }

    /// The finding for an investigation the model could not conclude.
    pub fn inconclusive_finding(&self, what_went_wrong: &str) -> Finding {
        let ran: Vec<&CallRecord> = self
            .records
            .iter()
            .filter(|r| r.repeat_of.is_none())
            .collect();
        Finding::inconclusive(what_went_wrong, &ran)
    }
}

/// JSON with object keys sorted at every level, so equal arguments give equal text.
pub fn canonical(v: &Value) -> String {
    fn sort(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let sorted: BTreeMap<_, _> = m.iter().map(|(k, v)| (k.clone(), sort(v))).collect();
                Value::Object(sorted.into_iter().collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(sort).collect()),
            other => other.clone(),
        }
    }
    sort(v).to_string()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::agent::Evidence;

    fn log() -> CallLog {
        let mut log = CallLog::default();
        log.add_evidence("ev_1", "alert rule DiskFillingUp", "expr: … = 0.873");
        for (id, name, args, ok) in [
            (
                "call_1",
                "prometheus_query",
                json!({"query": "up", "time": "now"}),
                true,
            ),
            ("call_2", "loki_query", json!({}), false),
        ] {
            log.push(CallRecord {
                id: id.into(),
                name: name.into(),
                arguments: args,
                ok,
                output: "out".into(),
                repeat_of: None,
                facts: Vec::new(),
            });
        }
        log
    }

    fn finding(confidence: &str, ids: &[&str]) -> Finding {
        Finding {
            summary: "s".into(),
            confidence: confidence.into(),
            evidence: vec![Evidence {
                claim: "c".into(),
                tool_call_ids: ids.iter().map(|s| s.to_string()).collect(),
            }],
            ..Default::default()
        }
    }

    #[test]
    fn the_same_call_with_keys_in_another_order_is_found_as_earlier() {
        let log = log();
        let r = log.earlier("prometheus_query", &json!({"time": "now", "query": "up"}));
        assert_eq!(r.unwrap().id, "call_1");
        assert!(
            log.earlier("prometheus_query", &json!({"query": "down"}))
                .is_none()
        );
    }

    #[test]
    fn ids_are_kept_unless_taken_or_empty() {
        let log = log();
        assert_eq!(log.unique_id("abc", &[]), "abc");
        assert_eq!(log.unique_id("call_1", &[]), "call_4");
        assert_eq!(log.unique_id("", &["call_4".into()]), "call_5");
    }

    #[test]
    fn the_real_small_model_finding_loses_its_invented_ids_and_its_high_confidence() {
        // Qwen2.5-Coder-1.5B cited tool names it never called, with "high" confidence.
        let mut f = finding("high", &["proxmox_storage", "current_time"]);
        let notes = CallLog::default().check_citations(&mut f);
        assert!(f.evidence[0].tool_call_ids.is_empty());
        assert_eq!(f.confidence, "low");
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("proxmox_storage, current_time"));
        assert!(notes[1].contains("from \"high\" to low"));
    }

    #[test]
    fn a_cited_result_with_data_keeps_the_confidence_and_tool_names_become_ids() {
        let log = log();
        let mut f = finding("high", &["CALL_1", "bogus"]);
        let notes = log.check_citations(&mut f);
        assert_eq!(f.evidence[0].tool_call_ids, ["call_1"]);
        assert_eq!(f.confidence, "high");
        assert_eq!(notes.len(), 1);
        let mut by_name = finding("medium", &["prometheus-query"]);
        assert!(log.check_citations(&mut by_name).is_empty());
        assert_eq!(by_name.evidence[0].tool_call_ids, ["call_1"]);
        let mut evidence = finding("high", &["ev_1"]);
        assert!(log.check_citations(&mut evidence).is_empty());
    }

    #[test]
    fn numbered_ids_the_model_made_up_are_the_calls_in_that_place() {
        // Qwen2.5-Coder-1.5B, shown evidence_1..3 (probe-5xx-loki), cited "call_1",
        // "tool_call_2"; a number past the calls, and an `evidence_N` that is not one,
        // are still dropped.
        let mut log = CallLog::default();
        for i in 1..=3 {
            log.add_evidence(&format!("evidence_{i}"), "prometheus_query", "out");
        }
        log.push(CallRecord {
            id: "x9f".into(),
            name: "loki_query".into(),
            arguments: json!({}),
            ok: true,
            output: "out".into(),
            repeat_of: None,
            facts: Vec::new(),
        });
        let cited = [
            "call_1",
            "tool_call_2",
            "3",
            "call_4",
            "call_5",
            "evidence_4",
        ];
        let mut f = finding("high", &cited);
        let notes = log.check_citations(&mut f);
        assert_eq!(
            f.evidence[0].tool_call_ids,
            ["evidence_1", "evidence_2", "evidence_3", "x9f"]
        );
        assert_eq!(f.confidence, "high");
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].ends_with("call_5, evidence_4"), "{notes:?}");
    }

    #[test]
    fn citing_only_a_failed_call_or_nothing_lowers_the_confidence() {
        let log = log();
        for ids in [&["call_2"][..], &[]] {
            let mut f = finding("high", ids);
            let notes = log.check_citations(&mut f);
            assert_eq!(f.confidence, "low", "{ids:?}");
            assert!(
                notes.last().unwrap().contains("none of its claims"),
                "{notes:?}"
            );
        }
        let mut low = finding("low", &[]);
        assert!(log.check_citations(&mut low).is_empty());
    }

    #[test]
    fn a_claim_citing_the_template_role_cites_the_result_it_restates() {
        // Qwen2.5-Coder-1.5B cited `tool_response` (its chat template's role for tool
        // results) on every claim; the claims copied one fact each.
        let mut log = CallLog::default();
        log.add_evidence(
            "fact_1",
            "health sweep",
            "config reload of prometheus on mon3:9090 failed at 20:14 UTC",
        );
        log.add_evidence("fact_2", "health sweep", "disk sdc on mon3 is 71 % busy");
        let mut f = finding("medium", &["tool_response"]);
        f.evidence[0].claim = "prometheus on mon3:9090 failed its config reload at 20:14".into();
        f.evidence.push(Evidence {
            claim: "something is wrong".into(),
            tool_call_ids: Vec::new(),
        });
        let notes = log.check_citations(&mut f);
        assert_eq!(f.evidence[0].tool_call_ids, ["fact_1"]);
        assert!(f.evidence[1].tool_call_ids.is_empty());
        assert_eq!(f.confidence, "medium", "{notes:?}");
        assert!(
            notes
                .iter()
                .any(|n| n.contains("matched by their words to: fact_1"))
        );
    }
}
