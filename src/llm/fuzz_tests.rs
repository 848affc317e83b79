//! Issue 15, proof by attack on the LLM response parser: arbitrary bytes and
//! structure-aware mutations of recorded model answers (`testdata/`) never panic nor hang
//! in `wire::parse_response` and `normalize::normalize_response`; they parse or give a
//! short error, a parsed answer keeps every named tool call, and only offered tools come
//! out of the text. The webhook parsers have theirs in `tests/it/trust/fuzz.rs`.

use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::Value;

use super::fixtures::SEVEN;
use super::normalize::normalize_response;
use super::repair::parse_lenient;
use super::wire::parse_response;

use sre_agent_testkit::json_mutation::{self, apply, byte_edit, edit_bytes, mutation};

const RECORDED: &[&str] = &[
    include_str!("testdata/1tool-nosystem-raw.response.json"),
    include_str!("testdata/1tool-system-raw.response.json"),
    include_str!("testdata/1tool-system.response.json"),
    include_str!("testdata/7tools-nosystem-raw.response.json"),
    include_str!("testdata/7tools-system-turn2.response.json"),
    include_str!("testdata/7tools-system.response.json"),
];

/// Errors end up in logs and stored events: they must not carry a whole huge answer.
const MAX_ERROR_CHARS: usize = 800;

/// Generous for a debug build: this only catches a hang or a quadratic blow-up.
const MAX_TIME: Duration = Duration::from_secs(20);

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

/// The tool calls a well-formed parse must keep: entries of the first choice's
/// `tool_calls` with a `function` that has a non-blank name.
fn named_calls(doc: &Value) -> usize {
    doc["choices"][0]["message"]["tool_calls"]
        .as_array()
        .map_or(0, |calls| {
            calls
                .iter()
                .filter(|c| {
                    c["function"]["name"]
                        .as_str()
                        .is_some_and(|n| !n.trim().is_empty())
                })
                .count()
        })
}

/// Parses and normalizes `body` as the client does, checking the contract.
fn check_answer(body: &[u8]) -> Result<(), TestCaseError> {
    let start = Instant::now();
    let parsed = parse_response(body);
    let (content, calls, usage) = match parsed {
        Err(e) => {
            prop_assert!(!e.trim().is_empty());
            prop_assert!(
                e.chars().count() <= MAX_ERROR_CHARS,
                "an error of {} characters",
                e.chars().count()
            );
            return Ok(());
        }
        Ok(p) => p,
    };
    // Broken bytes inside a field the parser skips (`timings`, `id`) are not its business;
    // then there is no document to count the calls of.
    if let Ok(doc) = serde_json::from_slice::<Value>(body) {
        // At least: serde also reads a `function` written as a list, field by field.
        prop_assert!(calls.len() >= named_calls(&doc), "a named call was lost");
    }
    prop_assert!(
        calls.iter().all(|c| !c.name.trim().is_empty()),
        "a call without name"
    );
    prop_assert!(calls.iter().all(|c| !c.id.is_empty()), "a call without id");
    let mut sum = usage;
    sum += usage;
    let _ = sum.total();
    let structured = calls.len();
    let (_, calls, _) = normalize_response(content, calls, SEVEN);
    prop_assert!(start.elapsed() < MAX_TIME, "took {:?}", start.elapsed());
    if structured == 0 {
        for c in &calls {
            prop_assert!(
                SEVEN.contains(&c.name.as_str()),
                "{} was not offered",
                c.name
            );
        }
    }
    Ok(())
}

/// Text in the shapes models write calls in, shuffled: markers, brackets, quotes, names.
fn token_soup() -> impl Strategy<Value = String> {
    let tokens = prop::sample::select(vec![
        "{",
        "}",
        "[",
        "]",
        "\"",
        "'",
        ":",
        ",",
        " ",
        "\n",
        "\\",
        "\\u",
        "name",
        "\"name\"",
        "\"arguments\"",
        "\"parameters\"",
        "args",
        "function",
        "\"function\"",
        "description",
        "properties",
        "\"type\"",
        "object",
        "prometheus_query",
        "\"prometheus_query\"",
        "PrometheusQuery",
        "loki_query",
        "{\"query\": \"up\"}",
        "<tool_call>",
        "</tool_call>",
        "[TOOL_CALLS]",
        "[ARGS]",
        "[CALL_ID]",
        "abc123",
        "```json\n",
        "```",
        "<tools>",
        "</tools>",
        "<|python_tag|>",
        "True",
        "None",
        "1e999",
        "null",
        "ü",
        "\u{0}",
        "</data>",
    ]);
    prop_oneof![
        prop::collection::vec(tokens, 0..120).prop_map(|t| t.concat()),
        any::<String>(),
    ]
}

#[test]
fn arbitrary_bytes_never_panic_the_response_parser() {
    TestRunner::new(config(2000))
        .run(&prop::collection::vec(any::<u8>(), 0..2048), |b| {
            check_answer(&b)
        })
        .unwrap();
}

#[test]
fn mutated_recorded_answers_parse_with_every_call_or_fail_with_a_short_error() {
    let recorded = prop::sample::select(RECORDED)
        .prop_map(|t| serde_json::from_str::<Value>(t).expect("recorded answers are JSON"));
    TestRunner::new(config(3000))
        .run(
            &(recorded, prop::collection::vec(mutation(), 1..5)),
            |(doc, mutations)| {
                let doc = mutations.iter().fold(doc, apply);
                check_answer(&serde_json::to_vec(&doc).unwrap())
            },
        )
        .unwrap();
}

#[test]
fn byte_edited_recorded_answers_parse_with_every_call_or_fail_with_a_short_error() {
    TestRunner::new(config(3000))
        .run(
            &(
                prop::sample::select(RECORDED),
                prop::collection::vec(byte_edit(), 1..6),
            ),
            |(text, edits)| check_answer(&edit_bytes(text.as_bytes().to_vec(), &edits)),
        )
        .unwrap();
}

#[test]
fn any_content_text_yields_only_offered_calls_in_bounded_time() {
    TestRunner::new(config(3000))
        .run(&token_soup(), |content| {
            let start = Instant::now();
            let (_, calls, _) = normalize_response(Some(content), Vec::new(), SEVEN);
            prop_assert!(start.elapsed() < MAX_TIME, "took {:?}", start.elapsed());
            for c in &calls {
                prop_assert!(
                    SEVEN.contains(&c.name.as_str()),
                    "{} was not offered",
                    c.name
                );
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn lenient_parsing_accepts_all_valid_json_unchanged_and_never_panics() {
    TestRunner::new(config(3000))
        .run(&json_mutation::any_json(), |v| {
            let text = v.to_string();
            prop_assert_eq!(parse_lenient(&text), Some(v));
            Ok(())
        })
        .unwrap();
    TestRunner::new(config(3000))
        .run(&token_soup(), |text| {
            let _ = parse_lenient(&text);
            Ok(())
        })
        .unwrap();
}

// Regression: content of unclosed brackets was scanned from every bracket to the end and
// repaired each time (quadratic): 200 KB of `[` held a worker for minutes; an 8 MiB answer
// (the body cap) for hours.
#[test]
fn a_flood_of_brackets_or_call_markers_is_read_in_bounded_time() {
    for content in [
        "[".repeat(200_000),
        "{".repeat(200_000),
        "{\"a\":[".repeat(40_000),
        "x[ARGS]{".repeat(25_000),
        format!("{}{{\"name\":\"prometheus_query\"}}", "[ ".repeat(100_000)),
    ] {
        let start = Instant::now();
        let _ = normalize_response(Some(content.clone()), Vec::new(), SEVEN);
        let took = start.elapsed();
        assert!(took < MAX_TIME, "{took:?} for {}…", &content[..20]);
    }
}

// Regression: token counts near u64::MAX overflowed (a panic in debug builds, a wrapped
// total in release) when the agent summed them.
#[test]
fn huge_token_counts_add_up_without_overflow() {
    let body = br#"{"choices":[{"message":{"content":"hi"}}],"usage":{
        "prompt_tokens":18446744073709551615,"completion_tokens":18446744073709551615}}"#;
    let (_, _, usage) = parse_response(body).unwrap();
    let mut sum = usage;
    sum += usage;
    assert_eq!(sum.total(), u64::MAX);
}

// Regression: a call whose name was blank (`"function": ["   "]`, or `{"name": " "}`) was
// kept, and the model was told a tool named " " does not exist.
#[test]
fn a_call_with_a_blank_name_is_dropped() {
    let body = br#"{"choices":[{"message":{"content":null,"tool_calls":[
        {"id":"a","function":["   "]},{"id":"b","function":{"name":" ","arguments":"{}"}},
        {"id":"c","function":{"name":"current_time","arguments":"{}"}}]}}]}"#;
    let (_, calls, _) = parse_response(body).unwrap();
    let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["current_time"]);
}

// Regression: an unexpected string in the answer was quoted whole in the error.
#[test]
fn an_error_about_a_huge_value_is_short() {
    let huge = "x".repeat(1_000_000);
    let body = format!(r#"{{"choices":"{huge}"}}"#);
    let err = parse_response(body.as_bytes()).unwrap_err();
    assert!(
        err.chars().count() <= MAX_ERROR_CHARS,
        "{} chars",
        err.len()
    );
    assert!(err.contains("body starts"), "{err}");
}
