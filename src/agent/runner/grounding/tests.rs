use serde_json::json;

use super::*;
use crate::analyze::{Entity, Fact, FactClass, Severity, Source};

fn record(id: &str, output: &str, fact: Fact) -> CallRecord {
    CallRecord {
        id: id.into(),
        name: "prometheus_query".into(),
        arguments: json!({}),
        ok: true,
        output: output.into(),
        repeat_of: None,
        facts: vec![fact],
    }
}

fn fact(kind: &str, name: &str, host: &str, severity: Severity) -> Fact {
    Fact::new(
        FactClass::Availability,
        "test",
        Entity::new(kind, name).on_host(Some(host.into())),
        "down",
        severity,
        Source::new("prometheus_query", json!({})),
    )
}

fn finding(summary: &str, cause: &str) -> Finding {
    Finding {
        summary: summary.into(),
        probable_cause: cause.into(),
        evidence: vec![Evidence {
            claim: summary.into(),
            tool_call_ids: vec!["fact_1".into()],
        }],
        ..Default::default()
    }
}

const TRIGGER: &str = "Alert ProxyErrors firing: instance=edge7:8082 router=shelf@docker";

/// A context fact first (never a cause), then two problems on other entities, then a
/// third, and a tool's result that is not a sweep fact.
fn world() -> Vec<CallRecord> {
    let mut context = fact("host", "edge7", "edge7", Severity::Info);
    context.class = FactClass::Context;
    vec![
        record("fact_1", "host edge7: memory fine", context),
        record(
            "fact_2",
            "service quotagate on edge7: HTTP 429 answers rose",
            fact("service", "quotagate", "edge7", Severity::Critical),
        ),
        record(
            "fact_3",
            "container shelfsrv on edge7: restarted",
            fact("container", "shelfsrv", "edge7", Severity::Warning),
        ),
        record(
            "fact_4",
            "filesystem /srv on depot2: used 97 %",
            fact("filesystem", "/srv", "depot2", Severity::Warning),
        ),
        record(
            "call_1",
            "mount /data on vaultbox failing",
            fact("filesystem", "/data", "vaultbox", Severity::Critical),
        ),
    ]
}

#[test]
fn an_answer_naming_no_fact_gets_the_two_top_ranked_problems_as_its_cause() {
    let f = finding("The CPU on edge7 is high.", "ProxyErrors fired on edge7.");
    let (out, note) = ground(&f, &world(), TRIGGER).expect("grounded");
    assert!(
        out.probable_cause.starts_with(COMPUTED_CAUSE),
        "{}",
        out.probable_cause
    );
    assert!(
        out.probable_cause.contains("fact_2: service quotagate"),
        "{}",
        out.probable_cause
    );
    assert!(
        out.probable_cause.contains("fact_3: container shelfsrv"),
        "{}",
        out.probable_cause
    );
    assert!(!out.probable_cause.contains("fact_4"), "two at most");
    assert!(
        !out.probable_cause.contains("memory fine"),
        "context is no cause"
    );
    assert_eq!(out.evidence[0].tool_call_ids, ["fact_2", "fact_3"]);
    assert_eq!(out.summary, f.summary, "the model's summary stays");
    assert!(note.contains("ProxyErrors fired on edge7."), "{note}");
    assert!(note.contains("fact_2, fact_3"), "{note}");
}

#[test]
fn an_answer_naming_the_first_ranked_problem_stands() {
    let f = finding("Quotagate rejects the requests.", "rate limit");
    assert!(
        ground(&f, &world(), TRIGGER).is_none(),
        "case does not matter"
    );
    let f = finding("Quotagate and depot2's /srv.", "both");
    assert!(ground(&f, &world(), TRIGGER).is_none());
}

#[test]
fn an_answer_naming_a_lower_ranked_problem_keeps_it_and_gets_the_first_beside_it() {
    let f = finding("The disk fills.", "/srv on depot2 is nearly full");
    let (out, note) = ground(&f, &world(), TRIGGER).expect("first stated beside");
    assert!(
        out.probable_cause
            .starts_with("/srv on depot2 is nearly full. "),
        "the model's cause first: {}",
        out.probable_cause
    );
    assert!(
        out.probable_cause
            .contains(&format!("{RANKED_FIRST} fact_2: service quotagate")),
        "{}",
        out.probable_cause
    );
    assert!(!out.probable_cause.contains("fact_3"), "only the first");
    assert_eq!(out.evidence[0], f.evidence[0], "the model's evidence first");
    assert_eq!(out.evidence.last().unwrap().tool_call_ids, ["fact_2"]);
    assert!(note.contains("fact_2"), "{note}");
}

#[test]
fn naming_only_the_triggers_words_or_a_tools_result_is_not_naming_a_fact() {
    // "edge7" is in the trigger; "vaultbox" is a tool result, not a sweep fact.
    let f = finding("edge7 errors", "vaultbox's /data fails");
    let (out, _) = ground(&f, &world(), TRIGGER).expect("grounded");
    assert!(
        out.probable_cause.contains("fact_2"),
        "{}",
        out.probable_cause
    );
}

#[test]
fn without_problem_facts_beyond_the_trigger_the_answer_stands() {
    let mut context = fact("host", "edge7", "edge7", Severity::Info);
    context.class = FactClass::Context;
    let restating = fact("router", "shelf@docker", "edge7", Severity::Critical);
    let records = vec![
        record("fact_1", "host edge7", context),
        record("fact_2", "router shelf@docker on edge7: errors", restating),
    ];
    let f = finding("errors", "errors");
    assert!(ground(&f, &records, TRIGGER).is_none());
    assert!(ground(&f, &[], TRIGGER).is_none());
}

#[test]
fn an_answer_resting_on_the_models_own_calls_stands() {
    let mut f = finding("edge7 errors", "ProxyErrors fired");
    f.evidence[0].tool_call_ids = vec!["call_1".into()];
    assert!(ground(&f, &world(), TRIGGER).is_none());
    // A first check run for it is not its own call.
    let mut records = world();
    records[4].id = "evidence_1".into();
    f.evidence[0].tool_call_ids = vec!["evidence_1".into()];
    assert!(ground(&f, &records, TRIGGER).is_some());
}
