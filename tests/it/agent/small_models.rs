//! What small local models do to the loop, scripted with the answers Qwen2.5-Coder-1.5B
//! really gave (src/llm/testdata): tool calls written as text, made-up findings, empty
//! answers, loops, unknown tools, an overflowing context, and the tools a small context
//! is offered.

use serde_json::Value;

use super::{ask, wait_final};
use crate::support::fake_llm::{FakeLlm, answer, error, finding_json, tool_calls};
use crate::support::{metric_value, spawn_app};

/// The fenced call the real model writes when the server does not parse it.
const FENCED_CALL: &str = "```json\n{\n  \"name\": \"current_time\",\n  \"arguments\": {}\n}\n```";

/// The real model's first answer with sre-agent's system prompt: a made-up finding citing
/// tool names that were never called, at "high" confidence.
fn made_up_finding() -> String {
    let sample: Value = serde_json::from_str(include_str!(
        "../../../src/llm/testdata/7tools-system.response.json"
    ))
    .unwrap();
    sample["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_string()
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_tool_call_written_as_text_runs_and_goes_back_as_a_real_tool_call() {
    let fake = FakeLlm::start(vec![
        answer(FENCED_CALL, (100, 20, 0)),
        answer(&finding_json("it is late", "call_1"), (150, 40, 0)),
    ])
    .await;
    let app = spawn_app(&fake.config("")).await;
    let id = ask(&app, "what time is it?").await;
    let inv = wait_final(&app, &id).await;
    assert_eq!(inv["status"], "finished", "{inv:#}");
    assert_eq!(inv["finding"]["confidence"], "high");
    let reqs = fake.requests();
    let echoed = &reqs[1].messages()[2];
    assert_eq!(echoed["tool_calls"][0]["function"]["name"], "current_time");
    assert_eq!(echoed["tool_calls"][0]["id"], "call_1");
    let result = &reqs[1].tool_results()[0];
    assert!(result.contains("(unix ") && result.ends_with("Cite this result as call_1."));
    let m = app.metrics().await;
    assert_eq!(
        metric_value(
            &m,
            "sre_agent_tool_calls_total{status=\"ok\",tool=\"current_time\"}"
        ),
        Some(1.0)
    );
    app.stop().await;
}

#[tokio::test]
async fn a_made_up_finding_is_sent_back_once_then_stored_inconclusive_without_its_claims() {
    let fake = FakeLlm::start(vec![answer(&made_up_finding(), (844, 142, 0))]).await;
    let app = spawn_app(&fake.config("")).await;
    let id = ask(
        &app,
        "How full is /var/lib/vz on pve1 and when will it be full?",
    )
    .await;
    let inv = wait_final(&app, &id).await;
    assert_eq!(inv["status"], "inconclusive", "{inv:#}");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    let nudge = reqs[1].messages().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        nudge.contains("You have not called any tool yet"),
        "{nudge}"
    );
    let f = &inv["finding"];
    assert_eq!(f["confidence"], "low");
    let summary = f["summary"].as_str().unwrap();
    assert!(summary.contains("No tool was called"), "{summary}");
    // Nothing the model made up is kept: neither its claims nor its invented call ids.
    let stored = f.to_string();
    assert!(!stored.contains("proxmox_storage"), "{stored}");
    assert!(!stored.contains("Increase storage capacity"), "{stored}");
    app.stop().await;
}

#[tokio::test]
async fn an_empty_answer_gets_one_correction_then_an_inconclusive_finding_from_the_evidence() {
    let fake = FakeLlm::start(vec![
        tool_calls(&[("call_1", "current_time", "{}")], (100, 10, 0)),
        answer("", (150, 1, 0)),
    ])
    .await;
    let app = spawn_app(&fake.config("")).await;
    let id = ask(&app, "how full is the disk?").await;
    let inv = wait_final(&app, &id).await;
    assert_eq!(inv["status"], "inconclusive", "{inv:#}");
    let f = &inv["finding"];
    let summary = f["summary"].as_str().unwrap();
    assert!(summary.starts_with("Inconclusive: the model's final answer was empty, also after one correction. 1 of 1 tool calls returned data"), "{summary}");
    assert_eq!(f["confidence"], "low");
    assert_eq!(f["evidence"][0]["tool_call_ids"][0], "call_1");
    assert!(
        f["evidence"][0]["claim"]
            .as_str()
            .unwrap()
            .contains("current_time returned: ")
    );
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 3);
    let m = app.metrics().await;
    assert_eq!(
        metric_value(
            &m,
            "sre_agent_investigations_total{status=\"inconclusive\",trigger=\"ask\"}"
        ),
        Some(1.0)
    );
    app.stop().await;
}

#[tokio::test]
async fn a_model_that_loops_on_a_call_that_returned_data_is_asked_once_without_tools_and_finishes()
{
    let call = || tool_calls(&[("x", "current_time", "{}")], (10, 1, 0));
    let fake = FakeLlm::start(vec![
        call(),
        call(),
        call(),
        call(),
        answer(&finding_json("the clock answers", "x"), (20, 5, 0)),
    ])
    .await;
    let app = spawn_app(&fake.config("")).await;
    let id = ask(&app, "loop").await;
    let inv = wait_final(&app, &id).await;
    assert_eq!(inv["status"], "finished", "{inv:#}");
    assert_eq!(inv["finding"]["summary"], "the clock answers", "{inv:#}");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 5);
    assert!(!reqs[4].has_tools(), "{}", reqs[4].body);
    assert_eq!(
        reqs[4].body["tools"], reqs[3].body["tools"],
        "sent, not callable"
    );
    let last = reqs[4].messages().last().cloned().unwrap();
    assert!(
        last["content"]
            .as_str()
            .unwrap()
            .contains("No more tool calls: answer from those results. Reply with only the JSON"),
        "{last}"
    );
    app.stop().await;
}

#[tokio::test]
async fn a_model_that_repeats_the_same_call_gets_the_earlier_result_then_ends_inconclusive() {
    let fake = FakeLlm::start(vec![tool_calls(&[("x", "current_time", "{}")], (10, 1, 0))]).await;
    let app = spawn_app(&fake.config("")).await;
    let id = ask(&app, "loop").await;
    let inv = wait_final(&app, &id).await;
    assert_eq!(inv["status"], "inconclusive", "{inv:#}");
    let summary = inv["finding"]["summary"].as_str().unwrap();
    assert!(
        summary.contains("repeated identical calls 3 times"),
        "{summary}"
    );
    assert!(summary.contains("also after 2 corrections"), "{summary}");
    // The first call and three repeats, then one call without tools for the answer
    // (the fake repeats its call, so no answer): five LLM calls, one tool run.
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 5);
    assert!(!reqs[4].has_tools(), "{}", reqs[4].body);
    assert_eq!(
        reqs[4].body["tools"], reqs[3].body["tools"],
        "sent, not callable"
    );
    assert!(
        summary.contains("answer asked for without tools was empty"),
        "{summary}"
    );
    let results = reqs[2].tool_results();
    assert!(
        results[1].starts_with("Same call as x, not run again."),
        "{results:?}"
    );
    // Ids the fake repeats every turn are made unique.
    let ids: Vec<&str> = reqs[3]
        .messages()
        .iter()
        .filter_map(|m| m["tool_call_id"].as_str())
        .collect();
    assert_eq!(ids, ["x", "call_2", "call_3"]);
    let m = app.metrics().await;
    assert_eq!(
        metric_value(
            &m,
            "sre_agent_tool_calls_total{status=\"ok\",tool=\"current_time\"}"
        ),
        Some(1.0)
    );
    app.stop().await;
}

#[tokio::test]
async fn unknown_tools_are_answered_with_the_offered_ones_then_the_investigation_ends_inconclusive()
{
    let fake = FakeLlm::start(vec![tool_calls(
        &[("call_1", "kubectl_exec", "{\"cmd\": \"df -h\"}")],
        (10, 1, 0),
    )])
    .await;
    let app = spawn_app(&fake.config("")).await;
    let id = ask(&app, "disk?").await;
    let inv = wait_final(&app, &id).await;
    assert_eq!(inv["status"], "inconclusive", "{inv:#}");
    let summary = inv["finding"]["summary"].as_str().unwrap();
    assert!(
        summary.contains("called unknown tools (kubectl_exec"),
        "{summary}"
    );
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 3);
    let answer = &reqs[1].tool_results()[0];
    assert!(answer.starts_with("error: there is no tool \"kubectl_exec\". The tools you can call are: current_time, runbook_search."), "{answer}");
    app.stop().await;
}

#[tokio::test]
async fn a_server_that_says_the_context_is_exceeded_gets_bounded_retries_then_inconclusive() {
    let fake = FakeLlm::start(vec![error(
        400,
        "the request exceeds the available context size, try increasing it",
        &[],
    )])
    .await;
    let app = spawn_app(&fake.config("")).await;
    let id = ask(&app, "big").await;
    let inv = wait_final(&app, &id).await;
    assert_eq!(inv["status"], "inconclusive", "{inv:#}");
    let summary = inv["finding"]["summary"].as_str().unwrap();
    assert!(
        summary.contains("does not fit the model's context window"),
        "{summary}"
    );
    assert!(summary.contains("llm.context_tokens"), "{summary}");
    assert_eq!(fake.requests().len(), 3);
    app.stop().await;
}

#[tokio::test]
async fn a_small_context_offers_the_query_tools_and_one_of_every_integration_and_a_large_one_all() {
    let integrations = "[prometheus]\nurl = \"http://127.0.0.1:1\"\n[loki]\nurl = \"http://127.0.0.1:1\"\n\
        [grafana]\nurl = \"http://127.0.0.1:1\"\n[alertmanager]\nurl = \"http://127.0.0.1:1\"\n";
    for (context, question) in [
        (8192, "why do DNS lookups fail?"),
        (32768, "why do DNS lookups fail?"),
    ] {
        let fake = FakeLlm::start(vec![answer(&finding_json("x", "none"), (10, 1, 0))]).await;
        let toml = format!(
            "{}\n{integrations}",
            fake.config(&format!("context_tokens = {context}"))
        );
        let app = spawn_app(&toml).await;
        let id = ask(&app, question).await;
        wait_final(&app, &id).await;
        let names = tool_names(&fake.requests()[0].body);
        if context == 8192 {
            // No fact ranked any integration (the sweep reached nothing): the query tools
            // and a tool of every configured integration, whatever the question's words.
            assert!(names.len() <= 10, "{names:?}");
            for want in ["prometheus_query", "prometheus_query_range", "current_time"] {
                assert!(names.iter().any(|n| n == want), "{want} not in {names:?}");
            }
            for family in ["loki_", "grafana_", "alertmanager_"] {
                assert!(
                    names.iter().any(|n| n.starts_with(family)),
                    "no {family} tool in {names:?}"
                );
            }
        } else {
            assert!(names.len() >= 13, "{names:?}");
        }
        app.stop().await;
    }
}

#[tokio::test]
async fn an_inconclusive_investigation_is_notified_like_a_finished_one() {
    let receiver = crate::support::receiver::Receiver::start().await;
    let fake = FakeLlm::start(vec![answer("", (10, 1, 0))]).await;
    let toml = format!(
        "{}\n[notify]\nretry_backoff = \"200ms\"\n\n[[notify.webhooks]]\nurl = \"{}/json\"\n",
        fake.config(""),
        receiver.base
    );
    let app = spawn_app(&toml).await;
    let id = ask(&app, "anything wrong?").await;
    assert_eq!(wait_final(&app, &id).await["status"], "inconclusive");
    let posted = crate::support::eventually(super::WAIT, "the webhook post", || async {
        receiver.at("/json").map(|r| r.json())
    })
    .await;
    assert_eq!(posted["investigation"]["status"], "inconclusive");
    let summary = posted["finding"]["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("Inconclusive: the model's final answer was empty"),
        "{summary}"
    );
    app.stop().await;
}

#[tokio::test]
async fn a_turn_asking_for_more_calls_than_allowed_runs_only_the_first_eight() {
    let calls: Vec<(String, String)> = (1..=12)
        .map(|i| (format!("call_{i}"), format!("{{\"query\": \"{i}\"}}")))
        .collect();
    let refs: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(id, args)| (id.as_str(), "runbook_search", args.as_str()))
        .collect();
    let fake = FakeLlm::start(vec![
        tool_calls(&refs, (100, 10, 0)),
        answer(&finding_json("searched", "call_1"), (150, 10, 0)),
    ])
    .await;
    let app = spawn_app(&fake.config("")).await;
    let id = ask(&app, "search the runbooks").await;
    wait_final(&app, &id).await;
    let m = app.metrics().await;
    let ran: f64 = ["ok", "error"]
        .iter()
        .filter_map(|s| {
            metric_value(
                &m,
                &format!("sre_agent_tool_calls_total{{status=\"{s}\",tool=\"runbook_search\"}}"),
            )
        })
        .sum();
    assert_eq!(ran, 8.0, "{m}");
    let results = fake.requests()[1].tool_results();
    assert_eq!(results.len(), 12);
    assert!(
        results[8..]
            .iter()
            .all(|r| r.contains("too many calls in one turn")),
        "{:?}",
        &results[8..]
    );
    app.stop().await;
}
