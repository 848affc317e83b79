//! `sre-agent eval` plumbing: every shipped scenario runs through the harness (its world on
//! a real Prometheus and the fakes, the real daemon, the real webhook or ask path) with a
//! scripted fake LLM replaying the scenario's `scripted.json`, and must pass; a wrong
//! scripted answer must fail with its reasons.

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use sre_agent::cli::eval::run_scenario;
use sre_agent::eval::rename::{contains_token, rename_scenario};
use sre_agent::eval::{RunOutcome, Scenario, ScenarioOutcome, SuiteOutcome};

use crate::support::external::require_tool;
use crate::support::fake_llm::{FakeLlm, Reply, answer, tool_calls};
use crate::support::test_config;

fn shipped() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("eval/scenarios")
}

/// The shipped scenarios, or those whose names contain `SRE_EVAL_ONLY` (comma-separated)
/// when it is set, for working on a few.
fn shipped_scenarios() -> Vec<Scenario> {
    let mut all = Scenario::load_all(&shipped()).expect("shipped scenarios load");
    if let Ok(only) = std::env::var("SRE_EVAL_ONLY") {
        all.retain(|s| only.split(',').any(|o| s.name.contains(o.trim())));
    }
    all
}

/// The fake LLM's replies from `scripted.json`: turns of `{"tool_calls": [{name,
/// arguments}]}` (ids call_1, call_2, … in order), `{"finding": {…}}` or `{"content": "…"}`.
fn script(turns: &[Value]) -> Vec<Reply> {
    let mut n = 0;
    turns
        .iter()
        .map(|turn| {
            if let Some(calls) = turn["tool_calls"].as_array() {
                let calls: Vec<(String, String, String)> = calls
                    .iter()
                    .map(|c| {
                        n += 1;
                        let name = c["name"].as_str().expect("tool call name");
                        (
                            format!("call_{n}"),
                            name.to_string(),
                            c["arguments"].to_string(),
                        )
                    })
                    .collect();
                let refs: Vec<(&str, &str, &str)> = calls
                    .iter()
                    .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
                    .collect();
                tool_calls(&refs, (900, 60, 0))
            } else if let Some(f) = turn.get("finding") {
                answer(&f.to_string(), (1400, 180, 0))
            } else {
                answer(turn["content"].as_str().expect("content"), (1400, 180, 0))
            }
        })
        .collect()
}

fn scripted(scenario: &Scenario) -> Vec<Value> {
    let file = scenario.dir.join("scripted.json");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// One run of `scenario` with `turns` as the model's replies.
async fn run_scripted(scenario: &Scenario, turns: &[Value]) -> RunOutcome {
    run_recorded(scenario, turns).await.0
}

/// One run, with the text of every message the daemon sent the model (its own system
/// prompt and tool definitions left out: they are the agent's, not the world's).
async fn run_recorded(scenario: &Scenario, turns: &[Value]) -> (RunOutcome, Vec<String>) {
    sre_agent::install_crypto_provider();
    let llm = FakeLlm::start(script(turns)).await;
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(dir.path(), &llm.config(""));
    let outcome = run_scenario(&config, scenario, Duration::from_secs(30)).await;
    let sent = llm
        .requests()
        .iter()
        .flat_map(|r| r.messages().clone())
        .filter(|m| m["role"] != "system")
        .map(|m| m.to_string())
        .collect();
    (outcome, sent)
}

/// Runs every scenario (at most `parallel` at once) and returns the suite with what each
/// run sent the model.
async fn run_suite(scenarios: &[Scenario], parallel: usize) -> (SuiteOutcome, Vec<Vec<String>>) {
    let runs: Vec<(ScenarioOutcome, Vec<String>)> = futures::stream::iter(scenarios.iter())
        .map(|s| async move {
            let (run, sent) = run_recorded(s, &scripted(s)).await;
            (ScenarioOutcome::new(&s.name, vec![run]), sent)
        })
        .buffered(parallel)
        .collect()
        .await;
    let (outcomes, sent): (Vec<_>, Vec<_>) = runs.into_iter().unzip();
    (SuiteOutcome::new("fake-model", outcomes), sent)
}

/// A suite's table with the lines that are not passes (failures and their reasons) first,
/// so a short log of the run shows them.
fn failures_first(table: &str) -> String {
    let failing: Vec<&str> = table
        .lines()
        .skip(1)
        .filter(|l| !l.contains(" PASS "))
        .collect();
    format!("{}\n\n{table}", failing.join("\n"))
}

/// Scenario runs at once: each is a Prometheus and a daemon, mostly waiting.
const PARALLEL: usize = 3;

fn tools_available() -> bool {
    require_tool("prometheus") && require_tool("promtool")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_shipped_scenario_passes_with_its_scripted_answers() {
    if !tools_available() {
        return;
    }
    let scenarios = shipped_scenarios();
    let started = std::time::Instant::now();
    let (suite, _) = run_suite(&scenarios, PARALLEL).await;
    eprintln!(
        "{} scenarios, scripted, in {:.1} s",
        suite.runs,
        started.elapsed().as_secs_f64()
    );
    let table = suite.to_text();
    assert!(suite.all_passed(), "{}", failures_first(&table));
    if std::env::var("SRE_EVAL_ONLY").is_err() {
        assert!(suite.runs >= 60, "only {} scenarios shipped", suite.runs);
    }
    // The world must answer every call the scripted model makes (ids call_N); calls the
    // agent makes on its own (alert-first evidence and the like) are the agent's and are
    // reported, not failed, here.
    let mut scripted_errors = Vec::new();
    for s in &suite.scenarios {
        for e in &s.runs[0].tool_errors {
            if e.contains(" (call_") {
                scripted_errors.push(format!("{}: {e}", s.name));
            } else {
                eprintln!("agent's own call failed in {}: {e}", s.name);
            }
        }
    }
    assert!(
        scripted_errors.is_empty(),
        "scripted calls failed:\n{}",
        scripted_errors.join("\n")
    );
    for s in &suite.scenarios {
        let r = &s.runs[0];
        assert!(!r.tools_called.is_empty(), "{}: no tool called", s.name);
        assert!(
            r.prompt_tokens > 0 && r.completion_tokens > 0,
            "{}: tokens",
            s.name
        );
        assert!(r.cost_usd > 0.0, "{}: cost", s.name);
        assert!(r.steps >= 2, "{}: steps {}", s.name, r.steps);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_scripted_answer_fails_with_the_reasons() {
    if !tools_available() {
        return;
    }
    // Alert-first evidence already calls Prometheus tools: a copy of the scenario requires
    // one that only the model would call. (Not disk-filling: its key figures, computed by
    // the tools, state how full and when full whatever the model writes.)
    let copy = tempfile::tempdir().unwrap();
    let dir = copy.path().join("cert-expiring");
    let copied = std::process::Command::new("cp")
        .arg("-r")
        .arg(shipped().join("cert-expiring"))
        .arg(&dir)
        .status()
        .unwrap();
    assert!(copied.success());
    let toml = dir.join("scenario.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    let text = text.replace(
        r#"tools = ["^prometheus_"]"#,
        r#"tools = ["^grafana_alert_rules$"]"#,
    );
    std::fs::write(&toml, text).unwrap();
    let scenario = Scenario::load(&dir).unwrap();
    let turns: Vec<Value> = serde_json::from_str(
        r#"[{"tool_calls": [{"name": "loki_query", "arguments": {"query": "{job=\"x\"}"}}]},
            {"finding": {"summary": "The certificate of photos.home.lan expires in five days.",
              "probable_cause": "none", "confidence": "low", "evidence": [], "next_steps": []}}]"#,
    )
    .unwrap();
    let run = run_scripted(&scenario, &turns).await;
    assert!(!run.verdict.passed);
    let reasons = run.verdict.reasons.join("\n");
    // The right host and days left are in the finding's key figures (the sweep's
    // certificate fact), so they are not missing; the wrong claim and the call that was
    // not made still fail the run.
    for expected in [
        "forbidden claim",
        "no call of a tool /^grafana_alert_rules$/",
    ] {
        assert!(
            reasons.contains(expected),
            "{expected:?} not in:\n{reasons}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_world_with_four_hosts_of_node_exporter_background_loads_in_a_few_seconds() {
    if !tools_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("scenario.toml"),
        r#"[trigger]
kind = "ask"
question = "Which host has the least free memory?"
[world]
duration = "6h"
background = [{ exporter = "node", instances = ["cedar-07", "nas", "pve2:9100", "kube-3"], noise = 0.02 },
              { exporter = "process", instances = ["nas"] }]
[expect]
facts = ["nas"]
"#,
    )
    .unwrap();
    sre_agent::install_crypto_provider();
    let scenario = Scenario::load(dir.path()).unwrap();
    let started = std::time::Instant::now();
    let world = sre_agent::eval::World::build(&scenario, chrono::Utc::now())
        .await
        .unwrap();
    let took = started.elapsed();
    let url = &world.prometheus.as_ref().unwrap().url;
    let http = reqwest::Client::new();
    let count = |q: &str| {
        let http = http.clone();
        let url = format!("{url}/api/v1/query");
        let q = q.to_string();
        async move {
            let v: Value = http
                .get(url)
                .query(&[("query", q)])
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            v["data"]["result"][0]["value"][1]
                .as_str()
                .unwrap_or("0")
                .parse::<f64>()
                .unwrap()
        }
    };
    let series = count("count({__name__=~\".+\"})").await;
    assert!(series > 4.0 * 400.0, "only {series} series");
    assert_eq!(count("count(up{job=\"node\"})").await, 4.0);
    // Counters were backfilled with a rate: CPU time grows on every host.
    let busy = count("count(rate(node_cpu_seconds_total{mode=\"idle\"}[5m]) > 0)").await;
    assert!(busy >= 4.0, "{busy}");
    // node_time_seconds follows the clock: no background host looks skewed.
    let skew = count("max(abs(node_time_seconds - timestamp(node_time_seconds)))").await;
    assert!(skew < 60.0, "skew {skew}");
    eprintln!("background world: {series} series loaded in {took:?}");
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

/// Renames every shipped scenario from `seed`, runs the suite, and checks that it passes
/// and that nothing the daemon sent the model holds an original name.
async fn renamed_suite_passes_and_leaks_no_name(seed: u64) {
    let scenarios = shipped_scenarios();
    let into = tempfile::tempdir().unwrap();
    let mut renamed = Vec::new();
    let mut originals = Vec::new();
    for s in &scenarios {
        let (r, renaming) = rename_scenario(s, seed, into.path()).expect("renames");
        originals.push(
            renaming
                .originals()
                .into_iter()
                .filter(|n| !n.contains('\\'))
                .map(str::to_string)
                .collect::<Vec<_>>(),
        );
        renamed.push(r);
    }
    // Every scenario's world has names a user chose.
    let unnamed: Vec<&str> = scenarios
        .iter()
        .zip(&originals)
        .filter(|(_, o)| o.is_empty())
        .map(|(s, _)| s.name.as_str())
        .collect();
    assert!(unnamed.is_empty(), "nothing to rename in {unnamed:?}");
    let started = std::time::Instant::now();
    let (suite, sent) = run_suite(&renamed, PARALLEL).await;
    eprintln!(
        "{} scenarios renamed with seed {seed}, scripted, in {:.1} s",
        suite.runs,
        started.elapsed().as_secs_f64()
    );
    assert!(
        suite.all_passed(),
        "seed {seed}: {}",
        failures_first(&suite.to_text())
    );
    for ((s, names), sent) in scenarios.iter().zip(&originals).zip(&sent) {
        assert!(!sent.is_empty(), "{}: nothing sent", s.name);
        for text in sent {
            for name in names {
                assert!(
                    !contains_token(text, name),
                    "{} (seed {seed}): the original name {name:?} reached the model in {}",
                    s.name,
                    text.chars().take(400).collect::<String>()
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_shipped_scenario_passes_renamed_and_no_original_name_reaches_the_model() {
    if !tools_available() {
        return;
    }
    renamed_suite_passes_and_leaks_no_name(20261126).await;
    // The scan can fail: unrenamed, the world's names do reach the model.
    let plain = Scenario::load(&shipped().join("disk-filling")).unwrap();
    let (_, sent) = run_recorded(&plain, &scripted(&plain)).await;
    assert!(sent.iter().any(|t| contains_token(t, "pve1")));
}

/// One run of `scenario` with `turns` and `extra` lines under `[llm]`, and the requests.
async fn run_with(
    scenario: &Scenario,
    turns: &[Value],
    extra: &str,
) -> (RunOutcome, Vec<crate::support::fake_llm::Recorded>) {
    sre_agent::install_crypto_provider();
    let llm = FakeLlm::start(script(turns)).await;
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(dir.path(), &llm.config(extra));
    let outcome = run_scenario(&config, scenario, Duration::from_secs(30)).await;
    (outcome, llm.requests())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_that_found_the_triggers_problem_asks_first_for_the_answer_from_its_facts() {
    if !tools_available() {
        return;
    }
    let scenario = Scenario::load_all(&shipped())
        .unwrap()
        .into_iter()
        .find(|s| s.name == "host-oom-kill-craft1-awesome")
        .unwrap();
    // The model answers at once from the facts (its scripted final answer alone).
    let last = scripted(&scenario).last().cloned().unwrap();
    let (run, requests) = run_with(&scenario, std::slice::from_ref(&last), "").await;
    assert!(run.verdict.passed, "{:?} {:?}", run.verdict, run.notes);
    assert!(!requests[0].has_tools(), "{}", requests[0].body);
    // Nothing cached yet to keep: the tools are not sent at all.
    assert!(
        requests[0].body.get("tools").is_none(),
        "{}",
        requests[0].body
    );
    // Off: the first call may call tools.
    let (_, requests) = run_with(
        &scenario,
        std::slice::from_ref(&last),
        "answer_first = false",
    )
    .await;
    assert!(requests[0].has_tools(), "{}", requests[0].body);
}
