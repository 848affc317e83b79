//! End to end with a real local model (tests/llm/: Qwen2.5-Coder-1.5B on the CPU, served
//! with its own chat template): three shipped eval scenarios run through the real daemon,
//! the real Prometheus and the model. The assertions are structural (a small model's answer
//! varies): the tool calls reach the real Prometheus, a non-empty finding is stored with a
//! final status, tokens are counted. Whether the findings are right is what `sre-agent
//! eval` measures (`docs/benchmarks.md`).
//!
//! Runs when `SRE_TEST_LLM_URL` is set (`tests/run.sh` starts the model after every other
//! test, on a quiet CPU, and sets it); skipped otherwise, failed when `SRE_TEST_REQUIRE_LLM=1`.

use std::path::Path;
use std::time::Duration;

use sre_agent::cli::eval::run_scenario;
use sre_agent::eval::Scenario;

use crate::support::external::require_tool;
use crate::support::test_config;

/// The model's base URL and name, or `None` (skip) when no model is running.
fn model() -> Option<(String, String)> {
    match std::env::var("SRE_TEST_LLM_URL") {
        Ok(url) if !url.is_empty() => {
            let name = std::env::var("SRE_TEST_LLM_MODEL")
                .unwrap_or_else(|_| "qwen2.5-coder-1.5b-instruct-q4_k_m".into());
            Some((url, name))
        }
        _ => {
            assert!(
                std::env::var("SRE_TEST_REQUIRE_LLM").as_deref() != Ok("1"),
                "SRE_TEST_LLM_URL is required (SRE_TEST_REQUIRE_LLM=1): run tests/llm/start.sh"
            );
            eprintln!("SKIPPED: no local model (SRE_TEST_LLM_URL); tests/run.sh starts one");
            None
        }
    }
}

async fn run_with_the_local_model(name: &str) {
    let Some((url, model)) = model() else {
        return;
    };
    if !(require_tool("prometheus") && require_tool("promtool")) {
        return;
    }
    sre_agent::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(
        dir.path(),
        &format!("[llm]\nbase_url = \"{url}\"\nmodel = \"{model}\"\ntimeout = \"600s\"\n"),
    );
    let scenario = Scenario::load(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("eval/scenarios")
            .join(name),
    )
    .unwrap();
    let run = run_scenario(&config, &scenario, Duration::from_secs(900)).await;
    eprintln!(
        "{name}: {} in {:.0} s, {} steps, {} prompt + {} completion tokens, tools {:?}; {}",
        run.status,
        run.seconds,
        run.steps,
        run.prompt_tokens,
        run.completion_tokens,
        run.tools_called,
        run.verdict.reasons.join("; ")
    );
    assert!(run.investigation_id.is_some(), "{name}: {:?}", run.verdict);
    assert!(
        ["finished", "inconclusive", "limit_reached"].contains(&run.status.as_str()),
        "{name}: status {}",
        run.status
    );
    assert!(
        run.tools_called
            .iter()
            .any(|t| t.starts_with("prometheus_")),
        "{name}: no call reached Prometheus: {:?}",
        run.tools_called
    );
    assert!(
        run.tool_errors.is_empty() || run.tools_called.len() > run.tool_errors.len(),
        "{name}: every tool call failed: {:?}",
        run.tool_errors
    );
    assert!(!run.summary.trim().is_empty(), "{name}: empty summary");
    assert!(
        run.prompt_tokens > 0 && run.completion_tokens > 0,
        "{name}: tokens not counted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grafana_disk_filling_alert_ends_in_a_stored_finding_from_the_local_model() {
    run_with_the_local_model("disk-filling").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alertmanager_node_down_alert_ends_in_a_stored_finding_from_the_local_model() {
    run_with_the_local_model("node-down").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grafana_cpu_alert_ends_in_a_stored_finding_from_the_local_model() {
    run_with_the_local_model("cpu-hog").await;
}
