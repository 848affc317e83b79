//! Webhook intake benchmark with durable writes (each 2xx follows the batch's sync to the
//! alert inbox): sustained alerts/s (decided, not only answered) and p50/p99 time to 2xx
//! with concurrent single-alert posts, batch throughput, and the process RSS during a
//! 10,000-alert storm.
//! Run: `cargo bench --bench intake`. Prints `name: value (target …)` lines.

// A panic is how a test or a bench reports a failure.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sre_agent::App;
use sre_agent::config::{Config, ConfigSource};
use tokio_util::sync::CancellationToken;

#[path = "support/decided.rs"]
mod support;
use support::decided;

const CLIENTS: usize = 16;
const SUSTAINED_FOR: Duration = Duration::from_secs(5);

fn payload(n: usize, offset: usize) -> Vec<u8> {
    let alerts: Vec<Value> = (0..n)
        .map(|i| {
            let i = i + offset;
            json!({"status": "firing",
                "labels": {"alertname": "BenchAlert", "instance": format!("host{}", i % 20),
                           "replica": i.to_string(), "severity": "warning"},
                "annotations": {"summary": "benchmark alert", "description": "x".repeat(200)},
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

fn rss_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    sre_agent::install_crypto_provider();
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("config.toml");
    std::fs::write(&file, "[log]\nlevel = \"error\"\n")?;
    let mut config = Config::load(&ConfigSource { file: Some(file) })?;
    config.server.listen = "127.0.0.1:0".into();
    config.server.data_dir = dir.path().join("data");
    let app = App::build(config).await?;
    let base = format!("http://{}", app.local_addr());
    let url = format!("{base}/webhook/alertmanager");
    let token = CancellationToken::new();
    let server = tokio::spawn(app.run_until_stopped(sre_agent::http::router, token.clone()));
    let http = reqwest::Client::new();
    let rss_before = rss_kib("VmRSS:");

    // Sustained: CLIENTS concurrent posters of single-alert payloads.
    let start = Instant::now();
    let mut clients = Vec::new();
    for c in 0..CLIENTS {
        let http = http.clone();
        let url = url.clone();
        clients.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut i = 0;
            while start.elapsed() < SUSTAINED_FOR {
                let body = payload(1, c * 1_000_000 + i);
                let t = Instant::now();
                let resp = http
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                    .unwrap();
                assert!(resp.status().is_success());
                latencies.push(t.elapsed());
                i += 1;
            }
            latencies
        }));
    }
    let mut latencies = Vec::new();
    for c in clients {
        latencies.extend(c.await?);
    }
    decided(&http, &base).await?;
    let elapsed = start.elapsed().as_secs_f64();
    latencies.sort();
    println!(
        "intake_sustained_alerts_per_second: {:.0} (target >= 2000; {CLIENTS} clients, 1 alert/request)",
        latencies.len() as f64 / elapsed
    );
    println!(
        "intake_p50_ms: {:.2} (target: p99 < 10 ms)",
        percentile(&latencies, 0.50).as_secs_f64() * 1e3
    );
    println!(
        "intake_p99_ms: {:.2} (target < 10)",
        percentile(&latencies, 0.99).as_secs_f64() * 1e3
    );

    // Storm: 10,000 alerts as 100 requests of 100, 4 at a time.
    let storm_start = Instant::now();
    let mut peak = 0;
    for wave in 0..25 {
        let mut posts = Vec::new();
        for j in 0..4 {
            let body = payload(100, 50_000_000 + (wave * 4 + j) * 100);
            posts.push(
                http.post(&url)
                    .header("content-type", "application/json")
                    .body(body)
                    .send(),
            );
        }
        for r in futures::future::join_all(posts).await {
            assert!(r?.status().is_success());
        }
        peak = peak.max(rss_kib("VmRSS:"));
    }
    decided(&http, &base).await?;
    peak = peak.max(rss_kib("VmRSS:"));
    let storm_secs = storm_start.elapsed().as_secs_f64();
    println!(
        "storm_10000_alerts_per_second: {:.0} (batches of 100; target >= 2000)",
        10_000.0 / storm_secs
    );
    println!(
        "storm_rss_peak_mib: {:.1} (target < 80; whole bench process incl. client, before: {:.1})",
        peak as f64 / 1024.0,
        rss_before as f64 / 1024.0
    );
    println!(
        "process_vm_hwm_mib: {:.1} (high-water mark of the whole run)",
        rss_kib("VmHWM:") as f64 / 1024.0
    );
    token.cancel();
    server.await??;
    Ok(())
}
