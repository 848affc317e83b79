//! Issue 15, proof by attack on the webhook parsers: arbitrary bytes and structure-aware
//! mutations of the captured Grafana and Alertmanager payloads never panic nor hang, and
//! either parse or give a short error; a parsed payload keeps every alert. Over HTTP the
//! same mutations get a 2xx that stored every alert, or a 4xx JSON error that stored
//! nothing, never a 5xx. (The LLM response parser has its own in `src/llm/fuzz_tests.rs`.)

use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::Value;
use sre_agent::alerts::{AlertSource, parse_webhook};

use crate::support::spawn_app;
use sre_agent_testkit::json_mutation::{
    ByteEdit, Mutation, apply, byte_edit, edit_bytes, mutation,
};

/// The captured payloads (tests/it/fixtures, from reference/captured and Grafana's docs).
const CAPTURED: &[(AlertSource, &str)] = &[
    (
        AlertSource::Grafana,
        include_str!("../fixtures/grafana-webhook-firing.json"),
    ),
    (
        AlertSource::Grafana,
        include_str!("../fixtures/grafana-webhook-resolved.json"),
    ),
    (
        AlertSource::Grafana,
        include_str!("../fixtures/grafana8-webhook-mixed.json"),
    ),
    (
        AlertSource::Alertmanager,
        include_str!("../fixtures/alertmanager-webhook-firing.json"),
    ),
    (
        AlertSource::Alertmanager,
        include_str!("../fixtures/alertmanager-webhook-firing-two-alerts.json"),
    ),
    (
        AlertSource::Alertmanager,
        include_str!("../fixtures/alertmanager-webhook-resolved.json"),
    ),
];

/// The longest error a client is answered (it must not echo a huge body back).
const MAX_ERROR_CHARS: usize = 600;

/// Generous: a parse takes microseconds; this only catches a hang or a quadratic blow-up.
const MAX_PARSE_TIME: Duration = Duration::from_secs(2);

/// `cases` cases, or `PROPTEST_CASES` when set (for a longer run).
fn config(cases: u32) -> Config {
    let base = Config::default();
    Config {
        cases: if std::env::var_os("PROPTEST_CASES").is_some() {
            base.cases
        } else {
            cases
        },
        failure_persistence: None,
        ..base
    }
}

fn source() -> impl Strategy<Value = AlertSource> {
    prop_oneof![Just(AlertSource::Grafana), Just(AlertSource::Alertmanager)]
}

/// Parses `body` and checks the contract: no panic (the test would fail), no hang, a
/// short clear error or every alert of the body's `alerts` array kept, with its labels.
fn check_parse(source: AlertSource, body: &[u8]) -> Result<(), TestCaseError> {
    let start = Instant::now();
    let result = parse_webhook(source, body);
    prop_assert!(
        start.elapsed() < MAX_PARSE_TIME,
        "took {:?}",
        start.elapsed()
    );
    match result {
        Err(e) => {
            prop_assert!(!e.trim().is_empty(), "an empty error");
            prop_assert!(
                e.chars().count() <= MAX_ERROR_CHARS,
                "an error of {} characters: {}…",
                e.chars().count(),
                e.chars().take(200).collect::<String>()
            );
        }
        Ok(batch) => {
            // Broken bytes inside a field the parser skips are not its business; then
            // there is no document to count the alerts of.
            let Ok(doc) = serde_json::from_slice::<Value>(body) else {
                return Ok(());
            };
            let sent = doc["alerts"].as_array().map(Vec::len);
            prop_assert_eq!(Some(batch.alerts.len()), sent, "every alert is kept");
            for (alert, raw) in batch.alerts.iter().zip(doc["alerts"].as_array().unwrap()) {
                prop_assert_eq!(alert.source, source);
                prop_assert!(
                    !alert.fingerprint.is_empty(),
                    "an alert without fingerprint"
                );
                // Labels within the intake's caps come through as sent (longer ones are cut).
                use sre_agent::alerts::cap::{LABEL_VALUE_CHARS, LABELS_MAX, NAME_CHARS};
                let within = |k: &str, v: &str| {
                    k.chars().count() <= NAME_CHARS && v.chars().count() <= LABEL_VALUE_CHARS
                };
                if let Some(labels) = raw["labels"].as_object().filter(|l| l.len() <= LABELS_MAX) {
                    for (k, v) in labels {
                        if let Some(v) = v.as_str().filter(|v| within(k, v)) {
                            prop_assert_eq!(alert.labels.get(k).map(String::as_str), Some(v));
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

fn captured() -> impl Strategy<Value = (AlertSource, Value)> {
    prop::sample::select(CAPTURED).prop_map(|(s, text)| (s, serde_json::from_str(text).unwrap()))
}

#[test]
fn arbitrary_bytes_never_panic_the_webhook_parsers() {
    let mut runner = TestRunner::new(config(2000));
    runner
        .run(
            &(source(), prop::collection::vec(any::<u8>(), 0..2048)),
            |(s, bytes)| check_parse(s, &bytes),
        )
        .unwrap();
}

#[test]
fn mutated_captured_payloads_parse_with_every_alert_or_fail_with_a_short_error() {
    let mut runner = TestRunner::new(config(3000));
    runner
        .run(
            &(captured(), prop::collection::vec(mutation(), 1..5)),
            |((s, doc), mutations): ((AlertSource, Value), Vec<Mutation>)| {
                let doc = mutations.iter().fold(doc, apply);
                check_parse(s, &serde_json::to_vec(&doc).unwrap())
            },
        )
        .unwrap();
}

#[test]
fn byte_edited_captured_payloads_parse_with_every_alert_or_fail_with_a_short_error() {
    let mut runner = TestRunner::new(config(3000));
    let text = prop::sample::select(CAPTURED);
    runner
        .run(
            &(text, prop::collection::vec(byte_edit(), 1..6)),
            |((s, text), edits): ((AlertSource, &str), Vec<ByteEdit>)| {
                check_parse(s, &edit_bytes(text.as_bytes().to_vec(), &edits))
            },
        )
        .unwrap();
}

#[test]
fn a_storm_of_copies_keeps_every_alert() {
    let mut runner = TestRunner::new(config(40));
    runner
        .run(&(captured(), 0usize..3000), |((s, mut doc), n)| {
            let one = doc["alerts"][0].clone();
            doc["alerts"] = Value::Array(vec![one; n]);
            check_parse(s, &serde_json::to_vec(&doc).unwrap())
        })
        .unwrap();
}

// Regression: a long string where a list or a map belongs made the error echo all of it
// (serde quotes the unexpected string), so a 1 MB body came back in a 1 MB 400 answer.
#[test]
fn an_error_about_a_huge_value_is_short() {
    let huge = "x".repeat(1_000_000);
    for body in [
        format!(r#"{{"alerts":"{huge}"}}"#),
        format!(r#"{{"alerts":[{{"labels":"{huge}"}}]}}"#),
        format!(r#"{{"alerts":[], "{huge}": }}"#),
        format!(r#"{{"alerts":[{{"values":"{huge}"}}]}}"#),
    ] {
        let err = parse_webhook(AlertSource::Grafana, body.as_bytes()).unwrap_err();
        assert!(
            err.chars().count() <= MAX_ERROR_CHARS,
            "{} chars",
            err.len()
        );
        assert!(err.contains("invalid JSON body"), "{err}");
    }
    let body = format!(r#"{{"version":"{huge}","alerts":[]}}"#);
    let err = parse_webhook(AlertSource::Grafana, body.as_bytes()).unwrap_err();
    assert!(
        err.chars().count() <= MAX_ERROR_CHARS,
        "{} chars",
        err.len()
    );
    assert!(err.contains("unsupported webhook version"), "{err}");
}

// Regression guard: nesting far past serde_json's recursion limit is an error, not a stack
// overflow, in every lenient field (they read a `serde_json::Value` first).
// Regression: serde reads a struct from a JSON list too, so `[null, null, 0, null, […]]`
// was taken for a webhook whose alerts were its fifth element.
#[test]
fn a_list_is_not_a_webhook_body() {
    for body in [
        &br#"[null, null, 0, null, [{"labels": {"a": "b"}}]]"#[..],
        b" \n[]",
        b"\"x\"",
    ] {
        let err = parse_webhook(AlertSource::Alertmanager, body).unwrap_err();
        assert!(err.contains("a JSON object"), "{err}");
    }
}

#[test]
fn deeply_nested_values_are_an_error_not_a_stack_overflow() {
    let deep = |n: usize| format!("{}1{}", r#"{"a":"#.repeat(n), "}".repeat(n));
    for field in ["labels", "annotations", "values", "status", "fingerprint"] {
        let body = format!(r#"{{"alerts":[{{"{field}":{}}}]}}"#, deep(100_000));
        let err = parse_webhook(AlertSource::Alertmanager, body.as_bytes()).unwrap_err();
        assert!(err.contains("recursion limit"), "{field}: {err}");
    }
}

/// Over HTTP: a mutated payload is a 200 that stored every alert it names, or a 4xx JSON
/// error that stored nothing; never a 5xx, and the daemon keeps answering.
#[test]
fn mutated_payloads_over_http_store_every_alert_or_nothing_and_never_get_a_5xx() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let app = rt.block_on(spawn_app(""));
    let mut runner = TestRunner::new(config(120));
    runner
        .run(
            &(captured(), prop::collection::vec(mutation(), 0..4)),
            |((s, doc), mutations)| {
                let doc = mutations.iter().fold(doc, apply);
                let path = match s {
                    AlertSource::Grafana => "/webhook/grafana",
                    AlertSource::Alertmanager => "/webhook/alertmanager",
                };
                let before = app.state.intake.store().alert_count();
                let (status, body) = rt.block_on(async {
                    let resp = app
                        .http
                        .post(app.url(path))
                        .json(&doc)
                        .send()
                        .await
                        .unwrap();
                    let status = resp.status();
                    (status, resp.json::<Value>().await)
                });
                let body = body.map_err(|e| TestCaseError::fail(format!("{status}: {e}")))?;
                let stored = app.state.intake.store().alert_count() - before;
                prop_assert!(!status.is_server_error(), "{status}: {body}");
                if status.is_success() {
                    let sent = doc["alerts"].as_array().map_or(0, Vec::len);
                    prop_assert_eq!(body["received"].as_u64(), Some(sent as u64));
                    prop_assert_eq!(stored, sent, "every received alert is stored");
                } else {
                    prop_assert!(body["error"].is_string(), "{status}: {body}");
                    prop_assert_eq!(stored, 0, "a rejected payload stored alerts");
                }
                Ok(())
            },
        )
        .unwrap();
    let healthy = rt
        .block_on(async { app.http.get(app.url("/healthz")).send().await })
        .unwrap();
    assert!(healthy.status().is_success());
}
