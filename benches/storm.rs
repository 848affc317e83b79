//! Storm intake benchmark: a 10,000-alert storm of one alert across 1,000 instances, each
//! webhook answered once its batch is on disk (decided too when no batch is ahead of it),
//! sent two ways: 100 webhooks of 100 alerts (4
//! in flight), and the way an Alertmanager grouping by alert name and instance sends it,
//! 1,000 webhooks of one instance's 10 alerts (16 in flight). Prints p50/p99 time to 2xx,
//! the investigations it became and the LLM calls they made (the LLM is a local stand-in
//! answering a finding at once). Throughput and CPU are measured until every batch is
//! decided (`sre_agent_alert_backlog` back at 0), not only answered.
//! Run: `cargo bench --bench storm`. Prints `name: value (target …)` lines.

// A panic is how a test or a bench reports a failure.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::post;
use serde_json::{Value, json};
use sre_agent::App;
use sre_agent::config::{Config, ConfigSource};
use tokio_util::sync::CancellationToken;

#[path = "support/decided.rs"]
mod support;
use support::decided;

const ALERTS: usize = 10_000;
const INSTANCES: usize = 1_000;

/// How the storm's alerts are sent.
#[derive(Clone, Copy)]
enum Delivery {
    /// Payloads of 100 consecutive alerts (100 instances each), 4 in flight.
    Batches,
    /// One payload per instance (its 10 alerts), 16 in flight.
    PerInstance,
}

impl Delivery {
    fn per_request(self) -> usize {
        match self {
            Self::Batches => 100,
            Self::PerInstance => ALERTS / INSTANCES,
        }
    }
    fn in_flight(self) -> usize {
        match self {
            Self::Batches => 4,
            Self::PerInstance => 16,
        }
    }
    /// The alert numbers of payload `r`.
    fn alerts(self, r: usize) -> Vec<usize> {
        let n = self.per_request();
        match self {
            Self::Batches => (r * n..(r + 1) * n).collect(),
            Self::PerInstance => (0..n).map(|k| r + k * INSTANCES).collect(),
        }
    }
}

fn payload(alerts: Vec<usize>) -> Vec<u8> {
    let alerts: Vec<Value> = alerts
        .into_iter()
        .map(|i| {
            json!({"status": "firing",
                "labels": {"alertname": "DiskFillingUp", "instance": format!("host{}:9100", i % INSTANCES),
                           "mountpoint": "/", "replica": i.to_string(), "severity": "warning"},
                "annotations": {"summary": "disk filling", "description": "x".repeat(200)},
                "startsAt": "2026-11-22T20:45:24.847Z", "endsAt": "0001-01-01T00:00:00Z",
                "generatorURL": "http://prom/graph?g0.expr=up", "fingerprint": format!("{i:016x}")})
        })
        .collect();
    serde_json::to_vec(
        &json!({"version": "4", "status": "firing", "receiver": "bench",
        "groupKey": "{}:{}", "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {},
        "externalURL": "http://am", "truncatedAlerts": 0, "alerts": alerts}),
    )
    .unwrap()
}

/// An OpenAI-compatible stand-in that answers every call with a finding; counts calls.
async fn fake_llm(calls: Arc<AtomicUsize>) -> anyhow::Result<String> {
    let finding = json!({"summary": "disks filling on many hosts", "probable_cause": "bench",
        "severity": "warning", "confidence": "low", "evidence": [], "next_steps": []})
    .to_string();
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move || {
            calls.fetch_add(1, Ordering::SeqCst);
            let finding = finding.clone();
            async move {
                axum::Json(
                    json!({"id": "c", "object": "chat.completion", "model": "bench",
                    "choices": [{"index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": finding}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(format!("http://{addr}/v1"))
}

/// CPU time this process has used so far (user + system, every thread).
fn cpu_time() -> Duration {
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1_000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    sre_agent::install_crypto_provider();
    // The same storm with coalescing off first, as the baseline of the ack latency.
    run("baseline_", 0, Delivery::Batches).await?;
    run("storm_", 5, Delivery::Batches).await?;
    run("per_instance_storm_", 5, Delivery::PerInstance).await
}

/// Posts the storm with `alerts.storm_threshold = threshold`; prints figures named
/// `{prefix}…`.
async fn run(prefix: &str, threshold: u32, delivery: Delivery) -> anyhow::Result<()> {
    let calls = Arc::new(AtomicUsize::new(0));
    let llm_url = fake_llm(calls.clone()).await?;
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("config.toml");
    std::fs::write(
        &file,
        format!(
            "[log]\nlevel = \"error\"\n[llm]\nbase_url = \"{llm_url}\"\n[alerts]\n\
             storm_hold = \"1s\"\nstorm_threshold = {threshold}\nmax_investigations_per_day = 50\n\
             daily_cost_limit_usd = 0\n"
        ),
    )?;
    let mut config = Config::load(&ConfigSource { file: Some(file) })?;
    config.server.listen = "127.0.0.1:0".into();
    config.server.data_dir = dir.path().join("data");
    let app = App::build(config).await?;
    let base = format!("http://{}", app.local_addr());
    let url = format!("{base}/webhook/alertmanager");
    let token = CancellationToken::new();
    let server = tokio::spawn(app.run_until_stopped(sre_agent::http::router, token.clone()));
    let http = reqwest::Client::new();

    let (per_request, in_flight) = (delivery.per_request(), delivery.in_flight());
    let bodies: Vec<Vec<u8>> = (0..ALERTS / per_request)
        .map(|r| payload(delivery.alerts(r)))
        .collect();
    let start = Instant::now();
    let cpu_start = cpu_time();
    let mut latencies = Vec::new();
    let mut slowest = Vec::new();
    let (mut answered_decided, mut deferred) = (Vec::new(), Vec::new());
    for wave in bodies.chunks(in_flight) {
        let posts = wave.iter().map(|body| {
            let req = http
                .post(&url)
                .header("content-type", "application/json")
                .body(body.clone());
            async move {
                let t = Instant::now();
                let resp = req.send().await?;
                anyhow::ensure!(resp.status().is_success(), "status {}", resp.status());
                Ok::<_, anyhow::Error>((t.elapsed(), resp.status().as_u16() == 202))
            }
        });
        let mut last = Duration::ZERO;
        for r in futures::future::join_all(posts).await {
            let (t, was_deferred) = r?;
            last = last.max(t);
            latencies.push(t);
            if was_deferred {
                deferred.push(t);
            } else {
                answered_decided.push(t);
            }
        }
        slowest.push(last);
    }
    let acked = start.elapsed().as_secs_f64();
    // Batches answered before their decisions (202) are decided by now.
    decided(&http, &base).await?;
    let secs = start.elapsed().as_secs_f64();
    let cpu = (cpu_time() - cpu_start).as_secs_f64();
    latencies.sort();
    slowest.sort();
    answered_decided.sort();
    deferred.sort();

    // Wait for the storm's investigation (and a re-investigation, if any) to finish.
    let deadline = Instant::now() + Duration::from_secs(if threshold == 0 { 5 } else { 60 });
    let investigations = loop {
        let body: Value = http
            .get(format!("{base}/api/v1/investigations?limit=200"))
            .send()
            .await?
            .json()
            .await?;
        let items = body["items"].as_array().cloned().unwrap_or_default();
        let storms: Value = http
            .get(format!("{base}/api/v1/storms"))
            .send()
            .await?
            .json()
            .await?;
        let pending = storms["storms"]
            .as_array()
            .is_some_and(|s| s.iter().any(|s| s["investigation"]["status"] == "pending"));
        let settled = !items.is_empty()
            && !pending
            && items
                .iter()
                .all(|i| !matches!(i["status"].as_str(), Some("queued" | "running")));
        if settled || Instant::now() > deadline {
            break items.len();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    println!(
        "{prefix}ack_p50_ms: {:.2} ({} requests of {per_request} alerts, {in_flight} in flight)",
        percentile(&latencies, 0.50).as_secs_f64() * 1e3,
        latencies.len()
    );
    println!(
        "{prefix}ack_p99_ms: {:.2} (target < 10)",
        percentile(&latencies, 0.99).as_secs_f64() * 1e3
    );
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{prefix}ack_spread_ms: p25 {:.2}, p75 {:.2}, p90 {:.2}, max {:.2}; slowest of each \
         round of {in_flight}: p50 {:.2}, p90 {:.2}",
        ms(percentile(&latencies, 0.25)),
        ms(percentile(&latencies, 0.75)),
        ms(percentile(&latencies, 0.90)),
        ms(*latencies.last().expect("requests were sent")),
        ms(percentile(&slowest, 0.50)),
        ms(percentile(&slowest, 0.90)),
    );
    let answers = |name: &str, lat: &[Duration]| match lat {
        [] => format!("{name} none"),
        _ => format!(
            "{name} {} (p50 {:.2} ms, p99 {:.2} ms)",
            lat.len(),
            ms(percentile(lat, 0.50)),
            ms(percentile(lat, 0.99))
        ),
    };
    println!(
        "{prefix}answers: {}; {}",
        answers("decided first (200)", &answered_decided),
        answers("deferred (202)", &deferred)
    );
    println!(
        "{prefix}alerts_per_second: {:.0} ({ALERTS} alerts over {INSTANCES} instances, all \
         decided; all answered after {:.2} s)",
        ALERTS as f64 / secs,
        acked
    );
    println!(
        "{prefix}cpu_per_alert_us: {:.1} (daemon and client in this process; {:.2} cores busy on average)",
        cpu * 1e6 / ALERTS as f64,
        cpu / secs
    );
    println!("{prefix}investigations: {investigations} (storm target <= 3)");
    println!(
        "{prefix}llm_calls: {} (storm target <= 3 investigations x llm.max_steps)",
        calls.load(Ordering::SeqCst)
    );
    token.cancel();
    server.await??;
    Ok(())
}
