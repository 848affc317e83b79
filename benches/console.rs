//! Console benchmarks (issue 17), printed as `name: value (target …)`: the time to answer
//! and the size of each console page, in-process over loopback HTTP, with 60 stored
//! investigations, one of them 20 steps long (its timeline page is the heaviest).
//! Targets: < 100 ms and < 100 kB a page.

// A panic is how a test or a bench reports a failure.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::post;
use serde_json::{Value, json};
use sre_agent::App;
use sre_agent::config::{Config, ConfigSource};
use tokio_util::sync::CancellationToken;

/// A fake LLM: 20 tool-call turns, then a finding citing the first call.
async fn fake_reply(axum::Json(body): axum::Json<Value>) -> axum::Json<Value> {
    let turns = body["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "assistant").count())
        .unwrap_or(0);
    let usage = json!({"prompt_tokens": 900, "completion_tokens": 60, "total_tokens": 960});
    let message = if turns < 20 && body.get("tools").is_some() {
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("call_{turns}"),
            "type": "function", "function": {"name": "current_time",
            "arguments": format!("{{\"n\": {turns}}}")}}]})
    } else {
        let finding = json!({"summary": "pve2 swaps under memory pressure",
            "probable_cause": "a VM with a memory leak", "severity": "warning",
            "confidence": "high", "evidence": [{"claim": "memory 97% used",
            "tool_call_ids": ["call_0"]}], "next_steps": ["restart the VM"]});
        json!({"role": "assistant", "content": finding.to_string()})
    };
    axum::Json(json!({"choices": [{"index": 0, "message": message}], "usage": usage}))
}

async fn start_fake() -> String {
    let app = Router::new().route("/v1/chat/completions", post(fake_reply));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1")
}

#[tokio::main]
async fn main() {
    sre_agent::install_crypto_provider();
    let llm = start_fake().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(
        &file,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\ndata_dir = \"{}\"\n\
             [llm]\nbase_url = \"{llm}\"\nmodel = \"bench\"\nmax_steps = 30\n\
             [alerts]\nmax_investigations_per_day = 1000\n",
            dir.path().join("data").display()
        ),
    )
    .unwrap();
    let config = Config::load(&ConfigSource { file: Some(file) }).expect("bench config");
    let app = App::build(config).await.expect("app builds");
    let base = format!("http://{}", app.local_addr());
    let token = CancellationToken::new();
    let running = tokio::spawn(app.run_until_stopped(sre_agent::http::router, token.clone()));
    let http = reqwest::Client::new();
    let mut ids = Vec::new();
    for i in 0..60 {
        let v: Value = http
            .post(format!("{base}/api/v1/ask"))
            .json(&json!({"question": format!("why is pve{i} slow?")}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        ids.push(v["id"].as_str().expect("queued").to_string());
    }
    let last = ids.last().unwrap().clone();
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let v: Value = http
            .get(format!("{base}/api/v1/investigations/{last}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if !["queued", "running"].contains(&v["status"].as_str().unwrap_or("")) {
            break;
        }
        assert!(Instant::now() < deadline, "investigations did not finish");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pages = [
        ("list", "/".to_string()),
        ("search", "/?q=pve59&trigger=ask".to_string()),
        ("timeline_20_steps", format!("/investigations/{last}")),
        ("alerts", "/alerts".to_string()),
        ("reports", "/reports".to_string()),
        ("ask", "/ask".to_string()),
        ("status", "/status".to_string()),
    ];
    for (name, path) in pages {
        let mut times = Vec::new();
        let mut bytes = 0;
        for _ in 0..30 {
            let start = Instant::now();
            let body = http
                .get(format!("{base}{path}"))
                .send()
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap();
            times.push(start.elapsed().as_secs_f64() * 1000.0);
            bytes = body.len();
        }
        times.sort_by(f64::total_cmp);
        println!(
            "console_{name}_ms: median {:.1}, max {:.1} (target < 100 ms); bytes: {bytes} (target < 100000)",
            times[times.len() / 2],
            times[times.len() - 1]
        );
    }
    token.cancel();
    let _ = running.await;
}
