use serde_json::json;

use super::*;
use crate::analyze::{Entity, Source};

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

fn fact(kind: &str, name: &str, host: &str, what: &str, severity: Severity) -> Fact {
    Fact::new(
        FactClass::Availability,
        "test",
        Entity::new(kind, name).on_host(Some(host.into())),
        what,
        severity,
        Source::new("prometheus_query", json!({})),
    )
}

fn finding(summary: &str, cause: &str, cites: &[&str]) -> Finding {
    Finding {
        summary: summary.into(),
        probable_cause: cause.into(),
        evidence: vec![Evidence {
            claim: summary.into(),
            tool_call_ids: cites.iter().map(|s| s.to_string()).collect(),
        }],
        ..Default::default()
    }
}

/// The sweep's fact about the trigger itself.
fn symptom() -> Vec<String> {
    vec!["fact_1".to_string()]
}

const TRIGGER: &str = "Alert WebsiteDown firing: instance=http://kiosk.lan:8123 job=blackbox";

/// The alert's probe, a held guest without a start, a disk full for days elsewhere and a
/// context fact.
fn world(start: DateTime<Utc>) -> Vec<CallRecord> {
    let mut context = fact("host", "kiosk", "kiosk", "memory available", Severity::Info);
    context.class = FactClass::Context;
    vec![
        record(
            "fact_1",
            fact(
                "probe",
                "http://kiosk.lan:8123",
                "kiosk.lan",
                "failing",
                Severity::Critical,
            )
            .since(Some(start - TimeDelta::minutes(6)))
            .detail("no status code and no connect phase recorded"),
        ),
        record("fact_2", {
            let mut held = fact(
                "guest",
                "kioskvm",
                "hyper4",
                "running but held",
                Severity::Critical,
            );
            held.source = Source::new("proxmox_guests", json!({}));
            held
        }),
        record(
            "fact_3",
            fact("filesystem", "/srv", "archive9", "used", Severity::Warning)
                .since(Some(start - TimeDelta::days(3))),
        ),
        // Full for all the history read: no start, long before the alert.
        record(
            "fact_5",
            fact("filesystem", "/", "archive8", "used", Severity::Critical),
        ),
        record("fact_4", context),
    ]
}

#[test]
fn a_cause_that_restates_the_alert_is_asked_which_fact_that_began_with_it_caused_it() {
    let start = Utc::now() - TimeDelta::minutes(30);
    let records = world(start);
    let f = finding(
        "kiosk.lan:8123 does not answer",
        "the probe of kiosk.lan is failing",
        &["fact_1"],
    );
    let ask =
        request(&f, &records, &symptom(), TRIGGER, Some(start), Utc::now()).expect("a request");
    assert!(
        ask.starts_with("Your probable cause repeats what the alert says."),
        "{ask}"
    );
    assert!(ask.contains("fact_2: guest kioskvm on hyper4"), "{ask}");
    // Full for days before the alert: not its cause. Context: never.
    assert!(
        !ask.contains("fact_3") && !ask.contains("fact_4") && !ask.contains("fact_5"),
        "{ask}"
    );
    assert!(ask.contains("<data source=\"facts\">"), "fenced: {ask}");
    // The symptom's own words copied as the cause do not name a cause.
    let copied = finding(
        "kiosk.lan:8123 does not answer",
        "no status code and no connect phase recorded",
        &["tool_response"],
    );
    assert!(
        request(
            &copied,
            &records,
            &symptom(),
            TRIGGER,
            Some(start),
            Utc::now()
        )
        .is_some()
    );
}

#[test]
fn a_finding_that_names_or_cites_a_fact_beyond_the_alert_is_not_asked() {
    let start = Utc::now() - TimeDelta::minutes(30);
    let records = world(start);
    let now = Utc::now();
    let names = finding(
        "kiosk.lan:8123 does not answer",
        "its VM on hyper4 is held",
        &["fact_1"],
    );
    assert_eq!(
        request(&names, &records, &symptom(), TRIGGER, Some(start), now),
        None
    );
    let cites = finding("kiosk.lan:8123 does not answer", "it failed", &["fact_2"]);
    assert_eq!(
        request(&cites, &records, &symptom(), TRIGGER, Some(start), now),
        None
    );
    // Nothing but the alert's own fact and old or context facts: nothing to choose from.
    let only_alert: Vec<CallRecord> = records.into_iter().filter(|r| r.id != "fact_2").collect();
    let restates = finding(
        "kiosk.lan:8123 does not answer",
        "probe failing",
        &["fact_1"],
    );
    assert_eq!(
        request(
            &restates,
            &only_alert,
            &symptom(),
            TRIGGER,
            Some(start),
            now
        ),
        None
    );
}

#[test]
fn a_fact_about_the_alerts_own_host_is_named_by_the_words_of_its_detail() {
    let start = Utc::now() - TimeDelta::minutes(40);
    let trigger = "Alert ReplicaStopped instance=dbr2:9104 summary=SQL thread of dbr2 not running";
    let errors = fact(
        "host",
        "dbr2",
        "dbr2",
        "new error log lines",
        Severity::Warning,
    )
    .since(Some(start))
    .detail(
        "[ERROR] Slave SQL: Could not execute Write_rows: Duplicate entry '4471' for key 'PRIMARY'",
    );
    let records = vec![
        record(
            "fact_1",
            fact(
                "series",
                "dbr2",
                "dbr2",
                "fell from 1 to 0",
                Severity::Critical,
            )
            .since(Some(start)),
        ),
        record("fact_2", errors),
    ];
    let now = Utc::now();
    let restates = finding(
        "SQL thread not running on dbr2",
        "the SQL thread stopped",
        &["fact_1"],
    );
    let ask =
        request(&restates, &records, &symptom(), trigger, Some(start), now).expect("a request");
    assert!(
        ask.contains("fact_2: logs dbr2") || ask.contains("fact_2: host dbr2"),
        "{ask}"
    );
    let names = finding(
        "SQL thread not running on dbr2",
        "a duplicate key stopped replication",
        &["fact_1"],
    );
    assert_eq!(
        request(&names, &records, &symptom(), trigger, Some(start), now),
        None
    );
}

#[test]
fn a_state_that_began_well_after_the_alert_is_an_effect_not_a_cause() {
    let start = Utc::now() - TimeDelta::hours(2);
    let records = vec![
        record(
            "fact_1",
            fact(
                "probe",
                "http://kiosk.lan:8123",
                "kiosk.lan",
                "failing",
                Severity::Critical,
            )
            .since(Some(start)),
        ),
        record(
            "fact_2",
            fact(
                "target",
                "hyper4:9100",
                "hyper4",
                "down",
                Severity::Critical,
            )
            .since(Some(start + TimeDelta::minutes(50))),
        ),
    ];
    let f = finding(
        "kiosk.lan:8123 does not answer",
        "probe failing",
        &["fact_1"],
    );
    assert_eq!(
        request(&f, &records, &symptom(), TRIGGER, Some(start), Utc::now()),
        None
    );
    // A question has no start: any fact that began in the sweep's window may be asked about.
    assert!(request(&f, &records, &symptom(), TRIGGER, None, Utc::now()).is_some());
}

#[test]
fn the_answer_naming_a_fact_becomes_the_probable_cause_and_its_first_claim() {
    let records = world(Utc::now());
    let first = finding(
        "kiosk.lan:8123 does not answer",
        "probe failing",
        &["fact_1"],
    );
    let short = "```json\n{\"probable_cause\": \"VM kioskvm on hyper4 is held by QEMU\", \
                 \"tool_call_ids\": [\"fact_2\"]}\n```";
    let (f, changed) = apply(first.clone(), short, &records);
    assert!(changed);
    assert_eq!(f.probable_cause, "VM kioskvm on hyper4 is held by QEMU");
    assert_eq!(f.evidence[0].tool_call_ids, vec!["fact_2".to_string()]);
    assert_eq!(f.summary, first.summary);
    // A whole finding as the answer is read for its cause and citations.
    let whole = json!({"summary": "s", "probable_cause": "the guest is held",
        "evidence": [{"claim": "held", "tool_call_ids": ["fact_2"]}]})
    .to_string();
    let (f, changed) = apply(first.clone(), &whole, &records);
    assert!(changed);
    assert_eq!(f.probable_cause, "the guest is held");
    // None named, an id that never ran, or no JSON: the first finding stands.
    for answer in [
        "{\"probable_cause\": \"\"}",
        "{\"probable_cause\": \"a cosmic ray\", \"tool_call_ids\": [\"fact_9\"]}",
        "I think the probe failed.",
    ] {
        let (f, changed) = apply(first.clone(), answer, &records);
        assert!(!changed, "{answer}");
        assert_eq!(f.probable_cause, first.probable_cause);
        assert_eq!(f.evidence.len(), 1);
    }
}
