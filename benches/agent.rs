//! Agent benchmarks (issue 4), printed as `name: value (target …)`:
//! - overhead per step, excluding LLM and tool latency (target < 1 ms);
//! - first request size with every tool on (target < 8 kB; HolmesGPT 32–40 kB);
//! - `sre-agent ask` wall time and peak RSS against an instant fake LLM and a real
//!   Prometheus with one tool call (targets < 150 ms, < 20 MiB; HolmesGPT 7.75 s, 356 MiB);
//! - daemon peak RSS with 20 concurrent investigations (target < 60 MiB).

// A panic is how a test or a bench reports a failure.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::routing::post;
use serde_json::{Value, json};
use sre_agent::agent::{Dispatcher, InvestigationRequest, Trigger, first_request_body};
use sre_agent::config::{Config, ConfigSource};
use sre_agent::llm::LlmClient;
use sre_agent::store::Store;
use sre_agent::telemetry::Metrics;

/// How the fake LLM behaves: `steps` tool-call turns, then a final answer.
#[derive(Clone)]
struct Plan {
    steps: usize,
    tool: &'static str,
    args: &'static str,
    delay: Duration,
}

async fn fake_reply(
    State(plan): State<Plan>,
    axum::Json(body): axum::Json<Value>,
) -> axum::Json<Value> {
    if !plan.delay.is_zero() {
        tokio::time::sleep(plan.delay).await;
    }
    let turns = body["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "assistant").count())
        .unwrap_or(0);
    let usage = json!({"prompt_tokens": 500, "completion_tokens": 50, "total_tokens": 550});
    let message = if turns < plan.steps && body.get("tools").is_some() {
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("call_{turns}"),
            "type": "function", "function": {"name": plan.tool, "arguments": plan.args}}]})
    } else {
        let finding = json!({"summary": "bench finding", "probable_cause": "none",
            "severity": "info", "confidence": "high", "evidence": [], "next_steps": []});
        json!({"role": "assistant", "content": finding.to_string()})
    };
    axum::Json(json!({"choices": [{"index": 0, "message": message}], "usage": usage}))
}

async fn start_fake(plan: Plan) -> String {
    let app = Router::new()
        .route("/v1/chat/completions", post(fake_reply))
        .with_state(plan);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1")
}

fn config_in(dir: &Path, toml: &str) -> Config {
    let file = dir.join("config.toml");
    std::fs::write(&file, toml).unwrap();
    Config::load(&ConfigSource { file: Some(file) }).unwrap()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Overhead per step: investigation wall time minus the same number of raw HTTP
/// round trips to the same instant fake, divided by the steps.
async fn overhead_per_step() -> f64 {
    let steps = 10;
    let url = start_fake(Plan {
        steps,
        tool: "current_time",
        args: "{}",
        delay: Duration::ZERO,
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = config_in(
        dir.path(),
        &format!("[llm]\nbase_url = \"{url}\"\nmax_steps = 20\n"),
    );
    config.server.data_dir = dir.path().join("data");
    let store = Store::open(&config.server.data_dir).unwrap();
    let metrics = Arc::new(Metrics::new(&config.llm.model));
    let d = Dispatcher::new(
        &config,
        &sre_agent::integrations::Upstreams::from_config(&config).unwrap(),
        &store,
        metrics,
    )
    .unwrap();
    let token = tokio_util::sync::CancellationToken::new();
    let tracker = tokio_util::task::TaskTracker::new();
    d.start(token.clone(), &tracker).unwrap();
    let mut finished = d.finished();
    let runs = 20;
    let start = Instant::now();
    for _ in 0..runs {
        let inv = d
            .submit(InvestigationRequest {
                trigger: Trigger::Ask,
                title: "bench".into(),
                prompt: "bench question".into(),
                context: None,
                group_key: None,
            })
            .await
            .unwrap();
        while !d.get(&inv.id).unwrap().unwrap().status.is_final() {
            finished.changed().await.unwrap();
        }
    }
    let agent = start.elapsed().as_secs_f64();
    // The same HTTP exchanges without the agent.
    let llm = LlmClient::new(&config.llm, Arc::new(Metrics::new("x")))
        .unwrap()
        .unwrap();
    let defs = sre_agent::agent::build_tools(
        &config,
        &sre_agent::integrations::Upstreams::from_config(&config).unwrap(),
        Arc::new(Metrics::new("x")),
    )
    .unwrap()
    .definitions();
    let msgs = [sre_agent::llm::ChatMessage::User("bench question".into())];
    let start = Instant::now();
    for _ in 0..runs * (steps + 1) {
        llm.chat(&msgs, &defs).await.unwrap();
    }
    let http = start.elapsed().as_secs_f64();
    token.cancel();
    ((agent - http).max(0.0) / (runs * (steps + 1)) as f64) * 1000.0
}

fn first_request_bytes() -> usize {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(
        dir.path(),
        "[llm]\nbase_url = \"http://127.0.0.1:1/v1\"\n\
         [prometheus]\nurl = \"http://127.0.0.1:1\"\n[loki]\nurl = \"http://127.0.0.1:1\"\n\
         [grafana]\nurl = \"http://127.0.0.1:1\"\ntoken = \"t\"\n\
         [alertmanager]\nurl = \"http://127.0.0.1:1\"\n",
    );
    let tools = sre_agent::agent::build_tools(
        &config,
        &sre_agent::integrations::Upstreams::from_config(&config).unwrap(),
        Arc::new(Metrics::new("x")),
    )
    .unwrap();
    let context = r#"{"labels":{"alertname":"HighErrorRate","job":"checkout","severity":"critical"},"annotations":{"summary":"5xx ratio above 5% for 10m"}}"#;
    let body = first_request_body(
        &config.llm,
        &tools.definitions(),
        "Investigate the firing alert HighErrorRate.",
        Some(context),
    );
    println!("tools_in_first_request: {}", tools.names().join(","));
    body.to_string().len()
}

/// Runs the binary with `args` in `dir`; returns (success, wall ms, max RSS KiB) of that
/// child alone, via wait4(2).
fn run_measured(dir: &Path, args: &[&str]) -> (bool, f64, i64) {
    let start = Instant::now();
    let mut child = Command::new(binary())
        .args(args)
        .current_dir(dir)
        .env_remove("SRE_AGENT_CONFIG")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: wait4 writes only into the zeroed rusage and the status integer we pass.
    let rusage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut u);
        u
    };
    let wall = start.elapsed().as_secs_f64() * 1000.0;
    // Already reaped by wait4; this only settles the handle.
    let _ = child.try_wait();
    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    (ok, wall, rusage.ru_maxrss)
}

fn start_prometheus(dir: &Path) -> Option<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/start_prometheus.sh");
    let out = Command::new(script)
        .args(["--port", &free_port().to_string(), "--data"])
        .arg(dir)
        .arg("--no-scrape")
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn stop_prometheus(dir: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/stop.sh");
    let _ = Command::new(script).arg(dir).output();
}

fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_sre-agent"))
}

/// Median wall time (ms) and peak RSS (MiB) of `sre-agent ask` run in-process.
async fn ask_wall_and_rss() -> (f64, f64, &'static str) {
    let prom_dir = tempfile::tempdir().unwrap();
    let prom = start_prometheus(prom_dir.path());
    let tool = if prom.is_some() {
        "prometheus_query"
    } else {
        "current_time"
    };
    let args = if prom.is_some() {
        r#"{"query":"up"}"#
    } else {
        "{}"
    };
    let url = start_fake(Plan {
        steps: 1,
        tool,
        args,
        delay: Duration::ZERO,
    })
    .await;
    let mut walls = Vec::new();
    let mut peak_kib = 0;
    for _ in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let mut toml = format!(
            "[server]\nlisten = \"127.0.0.1:{}\"\ndata_dir = \"data\"\n[llm]\nbase_url = \"{url}\"\n",
            free_port()
        );
        if let Some(p) = &prom {
            toml.push_str(&format!("[prometheus]\nurl = \"{p}\"\n"));
        }
        std::fs::write(dir.path().join("config.toml"), toml).unwrap();
        let dir_path = dir.path().to_path_buf();
        let (ok, wall, rss) = tokio::task::spawn_blocking(move || {
            run_measured(
                &dir_path,
                &["ask", "what is up?", "--config", "config.toml"],
            )
        })
        .await
        .unwrap();
        assert!(ok, "sre-agent ask failed");
        walls.push(wall);
        peak_kib = peak_kib.max(rss);
    }
    stop_prometheus(prom_dir.path());
    walls.sort_by(f64::total_cmp);
    let rss_mib = peak_kib as f64 / 1024.0;
    (walls[walls.len() / 2], rss_mib, tool)
}

/// Peak RSS (MiB) of the daemon running 20 investigations at once.
async fn daemon_rss_20_concurrent() -> f64 {
    let url = start_fake(Plan {
        steps: 2,
        tool: "current_time",
        args: "{}",
        delay: Duration::from_millis(300),
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let toml = format!(
        "[server]\nlisten = \"127.0.0.1:{port}\"\ndata_dir = \"data\"\n[llm]\nbase_url = \"{url}\"\n\
         [alerts]\nconcurrency = 20\n"
    );
    std::fs::write(dir.path().join("config.toml"), toml).unwrap();
    let mut child = Command::new(binary())
        .args(["serve", "--config", "config.toml"])
        .current_dir(dir.path())
        .env_remove("SRE_AGENT_CONFIG")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while http.get(format!("{base}/readyz")).send().await.is_err() {
        assert!(Instant::now() < deadline, "daemon did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut ids = Vec::new();
    for i in 0..20 {
        let v: Value = http
            .post(format!("{base}/api/v1/ask"))
            .json(&json!({"question": format!("question {i}")}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        ids.push(v["id"].as_str().unwrap().to_string());
    }
    for id in &ids {
        loop {
            let v: Value = http
                .get(format!("{base}/api/v1/investigations/{id}"))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if !["queued", "running"].contains(&v["status"].as_str().unwrap_or("")) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let hwm_kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0.0);
    let _ = child.kill();
    let _ = child.wait();
    hwm_kib / 1024.0
}

#[tokio::main]
async fn main() {
    sre_agent::install_crypto_provider();
    let binary_kind = if binary().to_string_lossy().contains("/release/") {
        "release"
    } else {
        "debug"
    };
    println!("binary: {} ({binary_kind})", binary().display());
    let overhead = overhead_per_step().await;
    println!("agent_overhead_per_step_ms: {overhead:.3} (target < 1 ms)");
    let bytes = first_request_bytes();
    println!("first_request_bytes_all_tools: {bytes} (target < 8192; HolmesGPT 32000–40000)");
    let (wall, rss, tool) = ask_wall_and_rss().await;
    println!("ask_wall_ms_one_{tool}_call: {wall:.1} (target < 150 ms; HolmesGPT 7750 ms)");
    println!("ask_peak_rss_mib: {rss:.1} (target < 20 MiB; HolmesGPT 356 MiB)");
    let rss20 = daemon_rss_20_concurrent().await;
    println!("daemon_peak_rss_20_concurrent_mib: {rss20:.1} (target < 60 MiB)");
}
