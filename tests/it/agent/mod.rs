//! The investigation loop end to end: API and CLI, against a scripted fake LLM (and the
//! real tools), checking what reaches the model, limits, retries, metrics and secrets.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::fake_llm::{FakeLlm, answer, error, finding_json, tool_calls};
use crate::support::{TestApp, eventually, metric_value, spawn_app};

mod cause;
mod cli;
mod dispatch;
mod general;
mod grounding;
mod panics;
mod small_models;

pub const WAIT: Duration = Duration::from_secs(20);

pub async fn ask(app: &TestApp, question: &str) -> String {
    let resp = app
        .http
        .post(app.url("/api/v1/ask"))
        .json(&json!({ "question": question }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 202);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["status"], "queued");
    body["id"].as_str().unwrap().to_string()
}

/// Polls the API until the investigation is final; returns its detail JSON.
pub async fn wait_final(app: &TestApp, id: &str) -> Value {
    let url = app.url(&format!("/api/v1/investigations/{id}"));
    eventually(WAIT, "a final investigation status", || {
        let req = app.http.get(&url);
        async move {
            let v: Value = req.send().await.ok()?.json().await.ok()?;
            let s = v["status"].as_str()?;
            (!["queued", "running"].contains(&s)).then_some(v)
        }
    })
    .await
}

#[tokio::test]
async fn without_an_llm_an_ask_ends_failed_and_says_how_to_configure_it() {
    let app = spawn_app("").await;
    let id = ask(&app, "why is the disk full?").await;
    let inv = wait_final(&app, &id).await;
    assert_eq!(inv["status"], "failed");
    assert_eq!(inv["error"], "LLM not configured (set llm.base_url)");
    let m = app.metrics().await;
    assert_eq!(
        metric_value(
            &m,
            "sre_agent_investigations_total{status=\"failed\",trigger=\"ask\"}"
        ),
        Some(1.0)
    );
    app.stop().await;
}

#[tokio::test]
async fn a_tool_result_reaches_the_model_and_the_investigation_finishes_with_a_finding() {
    let fake = FakeLlm::start(vec![
        tool_calls(&[("call_a", "current_time", "{}")], (100, 10, 0)),
        answer(&finding_json("clock checked", "call_a"), (150, 40, 0)),
    ])
    .await;
    let app = spawn_app(&fake.config("")).await;
    let id = ask(&app, "what time is it?").await;
    let inv = wait_final(&app, &id).await;
    assert_eq!(inv["status"], "finished", "{inv:#}");
    assert_eq!(inv["finding"]["summary"], "clock checked");
    assert_eq!(inv["finding"]["evidence"][0]["tool_call_ids"][0], "call_a");
    assert_eq!(inv["steps"], 2);
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    let results = reqs[1].tool_results();
    assert_eq!(results.len(), 1);
    assert!(results[0].contains("(unix "), "{}", results[0]);
    assert!(results[0].starts_with("<data source=\"tool\">"));
    let events = inv["events"].as_array().unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["llm_call", "tool_call", "llm_call"]);
    assert_eq!(events[1]["name"], "current_time");
    assert_eq!(events[1]["ok"], true);
    app.stop().await;
}

#[tokio::test]
async fn post_ask_rejects_bad_json_and_empty_questions_and_unknown_ids_are_404() {
    let app = spawn_app("[server]\napi_token = \"api-secret\"\n").await;
    let post = |body: &'static str, token: Option<&str>| {
        let mut req = app
            .http
            .post(app.url("/api/v1/ask"))
            .header("content-type", "application/json")
            .body(body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send()
    };
    assert_eq!(
        post("{\"question\":\"x\"}", None).await.unwrap().status(),
        401
    );
    for bad in ["{not json", "{}", "{\"question\":\"  \"}"] {
        let resp = post(bad, Some("api-secret")).await.unwrap();
        assert_eq!(resp.status(), 400, "{bad}");
        let v: Value = resp.json().await.unwrap();
        assert!(v["error"].is_string());
    }
    let del = app
        .http
        .delete(app.url("/api/v1/investigations/nope"))
        .bearer_auth("api-secret")
        .send()
        .await
        .unwrap();
    assert_eq!(del.status(), 404);
    app.stop().await;
}

#[tokio::test]
async fn investigations_list_newest_first_with_a_cursor_and_can_be_deleted() {
    let app = spawn_app("").await;
    let mut ids = Vec::new();
    for q in ["one", "two", "three"] {
        ids.push(ask(&app, q).await);
    }
    for id in &ids {
        wait_final(&app, id).await;
    }
    let page: Value = app
        .get("/api/v1/investigations?limit=2&status=failed")
        .await
        .json()
        .await
        .unwrap();
    let items = page["items"].as_array().unwrap();
    assert_eq!(items[0]["id"], ids[2].as_str());
    assert_eq!(items[1]["id"], ids[1].as_str());
    let cursor = page["next_cursor"].as_str().unwrap();
    let rest: Value = app
        .get(&format!("/api/v1/investigations?limit=2&cursor={cursor}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(rest["items"][0]["id"], ids[0].as_str());
    assert!(rest["next_cursor"].is_null());
    assert_eq!(
        app.get("/api/v1/investigations?status=bogus")
            .await
            .status(),
        400
    );
    let url = app.url(&format!("/api/v1/investigations/{}", ids[0]));
    assert_eq!(app.http.delete(&url).send().await.unwrap().status(), 204);
    assert_eq!(
        app.get(&format!("/api/v1/investigations/{}", ids[0]))
            .await
            .status(),
        404
    );
    app.stop().await;
}

#[tokio::test]
async fn a_429_with_retry_after_is_retried_and_the_investigation_finishes() {
    let fake = FakeLlm::start(vec![
        error(429, "Rate limit reached", &[("retry-after", "1")]),
        tool_calls(&[("call_1", "current_time", "{}")], (10, 5, 0)),
        answer(&finding_json("ok after retry", "call_1"), (10, 5, 0)),
    ])
    .await;
    let app = spawn_app(&fake.config("")).await;
    let id = ask(&app, "retry please").await;
    let inv = wait_final(&app, &id).await;
    assert_eq!(inv["status"], "finished", "{inv:#}");
    // The 429, the tool call, and the answer.
    assert_eq!(fake.requests().len(), 3);
    let m = app.metrics().await;
    assert_eq!(
        metric_value(&m, "sre_agent_llm_calls_total{status=\"ok\"}"),
        Some(2.0)
    );
    app.stop().await;
}

#[tokio::test]
async fn a_401_is_not_retried_and_fails_naming_the_url_while_the_daemon_stays_healthy() {
    let fake = FakeLlm::start(vec![error(401, "Incorrect API key provided", &[])]).await;
    let app = spawn_app(&fake.config("max_retries = 3")).await;
    let id = ask(&app, "anything").await;
    let inv = wait_final(&app, &id).await;
    assert_eq!(inv["status"], "failed");
    let err = inv["error"].as_str().unwrap();
    assert!(
        err.contains(&format!("{}/chat/completions", fake.url)),
        "{err}"
    );
    assert!(
        err.contains("401") && err.contains("Incorrect API key"),
        "{err}"
    );
    assert_eq!(fake.requests().len(), 1);
    assert_eq!(app.get("/healthz").await.status(), 200);
    let m = app.metrics().await;
    assert_eq!(
        metric_value(&m, "sre_agent_llm_calls_total{status=\"error\"}"),
        Some(1.0)
    );
    app.stop().await;
}

#[tokio::test]
async fn a_model_that_never_stops_is_stopped_at_max_steps_with_one_final_call_without_tools() {
    let script = (0..3)
        .map(|i| {
            let args = format!("{{\"n\":{i}}}");
            tool_calls(&[(&format!("call_{i}"), "current_time", &args)], (10, 1, 0))
        })
        .chain([answer(&finding_json("partial", "call_0"), (10, 1, 0))])
        .collect();
    let fake = FakeLlm::start(script).await;
    let app = spawn_app(&fake.config("max_steps = 3")).await;
    let id = ask(&app, "loop forever").await;
    let inv = wait_final(&app, &id).await;
    assert_eq!(inv["status"], "limit_reached", "{inv:#}");
    assert_eq!(inv["finding"]["summary"], "partial");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 4);
    assert!(reqs[..3].iter().all(|r| r.has_tools()));
    assert!(!reqs[3].has_tools());
    // Unknown argument "n": the validation error went back to the model as text.
    assert!(reqs[1].tool_results()[0].contains("unknown argument"));
    let m = app.metrics().await;
    assert_eq!(
        metric_value(
            &m,
            "sre_agent_investigations_total{status=\"limit_reached\",trigger=\"ask\"}"
        ),
        Some(1.0)
    );
    app.stop().await;
}

#[tokio::test]
async fn a_slow_model_answers_from_what_it_gathered_once_answer_after_has_passed() {
    // Each answer takes 1.1 s; after 2 s no more tool calls start.
    let script = (0..6)
        .map(|i| tool_calls(&[(&format!("call_{i}"), "current_time", "{}")], (10, 1, 0)))
        .collect();
    let fake = FakeLlm::start_slow(script, std::time::Duration::from_millis(1100)).await;
    fake.answer_without_tools(answer(&finding_json("in time", "call_0"), (10, 1, 0)));
    let app = spawn_app(&fake.config("answer_after = \"2s\"")).await;
    let id = ask(&app, "what time is it, many times").await;
    let inv = wait_final(&app, &id).await;
    assert_eq!(inv["status"], "finished", "{inv:#}");
    let reqs = fake.requests();
    let (last, before) = reqs.split_last().unwrap();
    assert_eq!(
        last.body["tools"], before[0].body["tools"],
        "the final call sends the same tools (a local server keeps its cached prompt)"
    );
    assert_eq!(last.body["tool_choice"], "none");
    assert!(!last.has_tools(), "the final call offers no tools");
    assert!(
        !before.is_empty() && before.len() < 6 && before.iter().all(|r| r.has_tools()),
        "{} calls with tools",
        before.len()
    );
    let notes = inv["notes"].to_string();
    assert!(notes.contains("llm.answer_after = 2 s"), "{notes}");
    app.stop().await;
}

#[tokio::test]
async fn a_repeated_call_is_not_run_again_and_the_model_is_told() {
    let fake = FakeLlm::start(vec![
        tool_calls(&[("call_1", "current_time", "{}")], (10, 1, 0)),
        tool_calls(&[("call_2", "current_time", " { } ")], (10, 1, 0)),
        answer(&finding_json("done", "call_1"), (10, 1, 0)),
    ])
    .await;
    let app = spawn_app(&fake.config("")).await;
    let id = ask(&app, "time twice").await;
    assert_eq!(wait_final(&app, &id).await["status"], "finished");
    let results = fake.requests()[2].tool_results();
    assert!(
        results[1].contains("not run again") && results[1].contains("call_1"),
        "{results:?}"
    );
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
async fn malformed_tool_arguments_go_back_to_the_model_as_error_text() {
    let fake = FakeLlm::start(vec![
        tool_calls(&[("call_1", "current_time", "{not json")], (10, 1, 0)),
        answer("plain text, not JSON", (10, 1, 0)),
    ])
    .await;
    let app = spawn_app(&fake.config("")).await;
    let id = ask(&app, "bad args").await;
    let inv = wait_final(&app, &id).await;
    // Prose is not a finding: one request for the JSON, then an inconclusive finding built
    // from the evidence (here: the failed call).
    assert_eq!(inv["status"], "inconclusive", "{inv:#}");
    let summary = inv["finding"]["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("Inconclusive: the model's final answer was not the JSON finding"),
        "{summary}"
    );
    assert_eq!(inv["finding"]["confidence"], "low");
    assert_eq!(inv["finding"]["evidence"][0]["tool_call_ids"][0], "call_1");
    assert!(
        inv["notes"][0]
            .as_str()
            .unwrap()
            .contains("plain text, not JSON")
    );
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 3);
    assert!(
        reqs[2].messages().last().unwrap()["content"]
            .as_str()
            .unwrap()
            .contains("not the JSON object")
    );
    assert!(reqs[1].tool_results()[0].contains("not a valid JSON object"));
    // The echoed assistant message carries valid JSON arguments.
    let echoed = &reqs[1].messages()[2]["tool_calls"][0]["function"]["arguments"];
    assert_eq!(echoed, "{}");
    app.stop().await;
}

#[tokio::test]
async fn token_and_cost_metrics_equal_the_usage_the_model_reported() {
    let fake = FakeLlm::start(vec![
        tool_calls(&[("call_1", "current_time", "{}")], (1000, 200, 400)),
        answer(&finding_json("done", "call_1"), (3000, 500, 1000)),
    ])
    .await;
    let app = spawn_app(&fake.config("")).await;
    let id = ask(&app, "count tokens").await;
    let inv = wait_final(&app, &id).await;
    let m = app.metrics().await;
    let v = |s: &str| metric_value(&m, s).unwrap();
    assert_eq!(v("sre_agent_llm_tokens_total{type=\"prompt\"}"), 4000.0);
    assert_eq!(v("sre_agent_llm_tokens_total{type=\"completion\"}"), 700.0);
    assert_eq!(v("sre_agent_llm_tokens_total{type=\"cached\"}"), 1400.0);
    // (4000-1400)×2 + 1400×0.5 + 700×8 per million.
    let want = (2600.0 * 2.0 + 1400.0 * 0.5 + 700.0 * 8.0) / 1e6;
    let cost = v("sre_agent_llm_estimated_cost_dollars_total{model=\"fake-model\"}");
    assert!((cost - want).abs() < 1e-9, "{cost} != {want}");
    assert!((inv["cost_usd"].as_f64().unwrap() - want).abs() < 1e-9);
    assert_eq!(
        inv["tokens"],
        json!({"prompt": 4000, "completion": 700, "cached": 1400})
    );
    app.stop().await;
}

#[tokio::test]
async fn the_api_key_is_only_in_the_authorization_header_never_in_bodies_or_events() {
    let key = "sk-test-very-secret-key-123";
    let fake = FakeLlm::start(vec![
        tool_calls(&[("call_1", "current_time", "{}")], (10, 1, 0)),
        answer(&finding_json("done", "call_1"), (10, 1, 0)),
    ])
    .await;
    let app = spawn_app(&fake.config(&format!("api_key = \"{key}\""))).await;
    let id = ask(&app, "secret check").await;
    let inv = wait_final(&app, &id).await;
    assert_eq!(inv["status"], "finished");
    for r in fake.requests() {
        assert_eq!(r.header("authorization"), Some(&*format!("Bearer {key}")));
        assert!(!r.raw.contains(key));
    }
    assert!(!inv.to_string().contains(key));
    app.stop().await;
}

#[tokio::test]
async fn the_token_limit_stops_the_loop_and_asks_for_the_finding_without_tools() {
    let fake = FakeLlm::start(vec![
        tool_calls(&[("call_1", "current_time", "{}")], (900, 200, 0)),
        answer(&finding_json("over the token limit", "call_1"), (10, 1, 0)),
    ])
    .await;
    let app = spawn_app(&fake.config("max_tokens_per_investigation = 1000")).await;
    let id = ask(&app, "expensive").await;
    let inv = wait_final(&app, &id).await;
    assert_eq!(inv["status"], "limit_reached", "{inv:#}");
    assert!(inv["notes"][0].as_str().unwrap().contains("token limit"));
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    assert!(!reqs[1].has_tools());
    app.stop().await;
}

#[tokio::test]
async fn a_real_prometheus_result_reaches_the_model() {
    let Some(prom) = crate::support::external::start_prometheus(&[], &[], "test") else {
        return;
    };
    let fake = FakeLlm::start(vec![
        tool_calls(
            &[("call_p", "prometheus_query", r#"{"query":"vector(42)"}"#)],
            (100, 10, 0),
        ),
        answer(&finding_json("the answer is 42", "call_p"), (150, 40, 0)),
    ])
    .await;
    let toml = format!(
        "{}\n[prometheus]\nurl = \"{}\"\n",
        fake.config(""),
        prom.url
    );
    let app = spawn_app(&toml).await;
    let id = ask(&app, "what does vector(42) say?").await;
    let inv = wait_final(&app, &id).await;
    assert_eq!(inv["status"], "finished", "{inv:#}");
    let reqs = fake.requests();
    let tools: Vec<&str> = reqs[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"prometheus_query"), "{tools:?}");
    let result = &reqs[1].tool_results()[0];
    assert!(result.contains("42"), "{result}");
    let call = inv["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "tool_call")
        .expect("a tool call event");
    assert_eq!(call["ok"], true, "{inv:#}");
    app.stop().await;
}

#[test]
fn the_first_request_with_every_tool_on_stays_under_8_kb() {
    let dir = tempfile::tempdir().unwrap();
    let config = crate::support::test_config(
        dir.path(),
        "[llm]\nbase_url = \"http://127.0.0.1:1/v1\"\n[prometheus]\nurl = \"http://127.0.0.1:1\"\n\
         [loki]\nurl = \"http://127.0.0.1:1\"\n[grafana]\nurl = \"http://127.0.0.1:1\"\n\
         [alertmanager]\nurl = \"http://127.0.0.1:1\"\n",
    );
    sre_agent::install_crypto_provider();
    let metrics = std::sync::Arc::new(sre_agent::telemetry::Metrics::new("m"));
    let tools = sre_agent::agent::build_tools(
        &config,
        &sre_agent::integrations::Upstreams::from_config(&config).unwrap(),
        metrics,
    )
    .unwrap();
    assert!(tools.names().len() >= 10, "{:?}", tools.names());
    let body = sre_agent::agent::first_request_body(
        &config.llm,
        &tools.definitions(),
        "Investigate the firing alert HighErrorRate.",
        Some(r#"{"labels":{"alertname":"HighErrorRate","job":"checkout"}}"#),
    );
    let size = body.to_string().len();
    assert!(size < 8192, "first request is {size} bytes");
}
