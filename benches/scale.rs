//! Scale: how the daemon behaves as stored alerts grow. Runs the release binary as its own
//! process, fills its store over HTTP to each size of `SCALE_SIZES` (default
//! `10000,100000`; add `1000000` for the full curve, about 10 minutes), and at each size
//! prints: single-alert intake rate and latency (16 concurrent posters, durable 2xx), the
//! daemon's RSS while ingesting and idle, disk bytes per stored alert, `GET /api/v1/alerts`
//! and `GET /api/v1/investigations` latency, then (daemon stopped, store opened here) the
//! retention sweep and the budget/report read of investigations, then idle RSS after a
//! restart and one listing.
//! Run: `SCALE_SIZES=10000,100000,1000000 cargo bench --bench scale`.
//! `SCALE_SECS` (default 5) is how long intake is measured at each size.

// A panic is how a test or a bench reports a failure.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use sre_agent::agent::store::InvestigationStore;
use sre_agent::alerts::store::AlertStore;
use sre_agent::store::Store;

#[path = "support/decided.rs"]
mod support;
use support::decided;

const CLIENTS: usize = 16;
const FILL_BATCH: usize = 100;
const FILL_CONCURRENCY: usize = 4;

/// Alert `i` of a noisy homelab: 10 alert names over 200 hosts (200 groups), each alert
/// distinct, flapping between firing and resolved.
fn alert(i: u64) -> Value {
    let status = if (i / 200).is_multiple_of(2) {
        "firing"
    } else {
        "resolved"
    };
    json!({"status": status,
        "labels": {"alertname": format!("Flap{}", i % 10), "instance": format!("host{}", i % 200),
                   "job": "node", "severity": "warning", "replica": i.to_string()},
        "annotations": {"summary": "a noisy alert", "description": "x".repeat(200)},
        "startsAt": "2026-11-22T20:45:24.847Z", "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "http://prom/graph?g0.expr=up", "fingerprint": format!("{i:016x}")})
}

fn payload(from: u64, n: u64) -> Vec<u8> {
    let alerts: Vec<Value> = (from..from + n).map(alert).collect();
    serde_json::to_vec(
        &json!({"version": "4", "status": "firing", "receiver": "bench",
        "groupKey": "{}:{}", "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {},
        "externalURL": "http://am", "truncatedAlerts": 0, "alerts": alerts}),
    )
    .unwrap()
}

fn rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

/// Bytes the directory takes on disk (allocated blocks).
fn disk_bytes(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let Ok(m) = e.metadata() else { continue };
        total += if m.is_dir() {
            disk_bytes(&e.path())
        } else {
            m.blocks() * 512
        };
    }
    total
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

struct Daemon {
    child: Child,
    url: String,
}

impl Daemon {
    async fn start(dir: &Path, http: &reqwest::Client) -> Daemon {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(env!("CARGO_BIN_EXE_sre-agent"))
            .arg("serve")
            .current_dir(dir)
            .env("SRE_AGENT_SERVER__LISTEN", format!("127.0.0.1:{port}"))
            .env("SRE_AGENT_SERVER__DATA_DIR", dir.join("data"))
            .env("SRE_AGENT_LOG__LEVEL", "error")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let url = format!("http://127.0.0.1:{port}");
        let start = Instant::now();
        while !http
            .get(format!("{url}/readyz"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "daemon not ready"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Daemon { child, url }
    }

    fn rss(&self) -> f64 {
        rss_mib(self.child.id())
    }

    fn stop(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// Samples the daemon's RSS every 50 ms until stopped; returns the peak.
fn watch_rss(pid: u32, stop: Arc<AtomicBool>) -> tokio::task::JoinHandle<f64> {
    tokio::spawn(async move {
        let mut peak: f64 = 0.0;
        while !stop.load(Ordering::Relaxed) {
            peak = peak.max(rss_mib(pid));
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        peak
    })
}

/// Posts alerts `[from, to)` in batches of `FILL_BATCH`, `FILL_CONCURRENCY` at a time.
async fn fill(http: &reqwest::Client, url: &str, from: u64, to: u64) {
    let next = Arc::new(AtomicU64::new(from));
    let mut tasks = Vec::new();
    for _ in 0..FILL_CONCURRENCY {
        let (http, url, next) = (http.clone(), url.to_string(), next.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let start = next.fetch_add(FILL_BATCH as u64, Ordering::SeqCst);
                if start >= to {
                    return;
                }
                let n = (to - start).min(FILL_BATCH as u64);
                let r = http
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(payload(start, n))
                    .send()
                    .await
                    .unwrap();
                assert!(r.status().is_success(), "{}", r.status());
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let base = url.trim_end_matches("/webhook/alertmanager");
    decided(http, base).await.unwrap();
}

/// `CLIENTS` posters of single alerts for `secs`; returns their latencies and the seconds
/// until every one was decided.
async fn sustained(
    http: &reqwest::Client,
    url: &str,
    from: u64,
    secs: u64,
) -> (Vec<Duration>, f64) {
    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..CLIENTS as u64 {
        let (http, url) = (http.clone(), url.to_string());
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut i = from + c * 10_000_000;
            while start.elapsed() < Duration::from_secs(secs) {
                let body = payload(i, 1);
                let t = Instant::now();
                let r = http
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                    .unwrap();
                assert!(r.status().is_success(), "{}", r.status());
                lat.push(t.elapsed());
                i += 1;
            }
            lat
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let base = url.trim_end_matches("/webhook/alertmanager");
    decided(http, base).await.unwrap();
    all.sort();
    (all, start.elapsed().as_secs_f64())
}

/// `n` GETs of `path`; returns sorted latencies and the last body.
async fn api(http: &reqwest::Client, url: &str, path: &str, n: usize) -> (Vec<Duration>, Value) {
    let mut lat = Vec::new();
    let mut body = Value::Null;
    for _ in 0..n {
        let t = Instant::now();
        let r = http.get(format!("{url}{path}")).send().await.unwrap();
        assert!(r.status().is_success(), "{path}: {}", r.status());
        body = r.json().await.unwrap();
        lat.push(t.elapsed());
    }
    let slow: Vec<String> = lat
        .iter()
        .enumerate()
        .filter(|(_, d)| **d > Duration::from_millis(5))
        .map(|(i, d)| format!("call {} of {n}: {:.1} ms", i + 1, ms(*d)))
        .collect();
    if !slow.is_empty() {
        let daemon = daemon_over_10ms(http, url, path.split('?').next().unwrap_or(path)).await;
        println!(
            "    over 5 ms: {} (daemon-side, this run: {daemon})",
            slow.join(", ")
        );
    }
    lat.sort();
    (lat, body)
}

/// How many of the daemon's own timings of `endpoint` so far took over 10 ms, from its
/// `sre_agent_http_request_duration_seconds` histogram.
async fn daemon_over_10ms(http: &reqwest::Client, url: &str, endpoint: &str) -> String {
    let Ok(r) = http.get(format!("{url}/metrics")).send().await else {
        return "no /metrics".into();
    };
    let text = r.text().await.unwrap_or_default();
    let series = |suffix: &str, le: Option<&str>| -> Option<f64> {
        text.lines()
            .filter(|l| {
                l.starts_with(&format!(
                    "sre_agent_http_request_duration_seconds{suffix}{{"
                ))
            })
            .filter(|l| l.contains(&format!("endpoint=\"{endpoint}\"")))
            .filter(|l| le.is_none_or(|le| l.contains(&format!("le=\"{le}\""))))
            .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
            .next()
    };
    match (series("_count", None), series("_bucket", Some("0.01"))) {
        (Some(all), Some(fast)) => format!("{} of {all} over 10 ms", all - fast),
        _ => "not found".into(),
    }
}

fn print_latency(name: &str, lat: &[Duration], target: &str) {
    println!(
        "  {name}: p50 {:.2} ms, p99 {:.2} ms ({target})",
        ms(percentile(lat, 0.5)),
        ms(percentile(lat, 0.99))
    );
}

#[tokio::main]
async fn main() {
    sre_agent::install_crypto_provider();
    let sizes: Vec<u64> = std::env::var("SCALE_SIZES")
        .unwrap_or_else(|_| "10000,100000".into())
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .expect("SCALE_SIZES: comma-separated counts")
        })
        .collect();
    let secs: u64 = std::env::var("SCALE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let http = reqwest::Client::new();
    let mut daemon = Daemon::start(dir.path(), &http).await;
    println!(
        "idle RSS at start: {:.1} MiB (target < 32 idle)",
        daemon.rss()
    );
    let began: DateTime<Utc> = Utc::now();
    let mut next = 0u64;
    let mut stored = 0u64;
    for size in sizes {
        let webhook = format!("{}/webhook/alertmanager", daemon.url);
        let stop = Arc::new(AtomicBool::new(false));
        let fill_peak = watch_rss(daemon.child.id(), stop.clone());
        let t = Instant::now();
        let fill_to = size.saturating_sub(stored);
        fill(&http, &webhook, next, next + fill_to).await;
        let fill_rate = fill_to as f64 / t.elapsed().as_secs_f64();
        next += fill_to;
        stored += fill_to;
        stop.store(true, Ordering::Relaxed);
        let fill_peak = fill_peak.await.unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let peak = watch_rss(daemon.child.id(), stop.clone());
        let (lat, took) = sustained(&http, &webhook, 1_000_000_000 + next, secs).await;
        stored += lat.len() as u64;
        next += 1;
        stop.store(true, Ordering::Relaxed);
        let peak = peak.await.unwrap();
        println!("{stored} alerts stored:");
        if fill_to == 0 {
            println!("  fill: none (the size before and its intake stored more)");
        } else {
            println!(
                "  fill in batches of {FILL_BATCH}, {FILL_CONCURRENCY} in flight: {fill_rate:.0} alerts/s, RSS peak {fill_peak:.1} MiB"
            );
        }
        println!(
            "  intake: {:.0} alerts/s, p50 {:.2} ms, p99 {:.2} ms ({CLIENTS} clients, 1 alert/request; target >= 5000/s, p99 < 10 ms)",
            lat.len() as f64 / took,
            ms(percentile(&lat, 0.5)),
            ms(percentile(&lat, 0.99))
        );
        println!(
            "  RSS while ingesting (the {CLIENTS} clients above): peak {peak:.1} MiB (target < 64)"
        );
        tokio::time::sleep(Duration::from_secs(3)).await;
        println!("  RSS idle: {:.1} MiB (target < 32)", daemon.rss());
        let bytes = disk_bytes(&data);
        println!(
            "  disk while running (this hour of the log uncompressed): {:.1} MB, {:.0} bytes per stored alert",
            bytes as f64 / 1e6,
            bytes as f64 / stored as f64
        );
        let (lat, body) = api(&http, &daemon.url, "/api/v1/alerts?limit=50", 50).await;
        print_latency("GET /api/v1/alerts?limit=50", &lat, "target p99 < 20 ms");
        let next_page = body["next_cursor"]
            .as_str()
            .map(|c| format!("/api/v1/alerts?limit=50&cursor={c}"));
        if let Some(path) = next_page {
            let (lat, _) = api(&http, &daemon.url, &path, 50).await;
            print_latency(
                "GET /api/v1/alerts, second page",
                &lat,
                "target p99 < 20 ms",
            );
        }
        let (lat, _) = api(&http, &daemon.url, "/api/v1/investigations?limit=50", 50).await;
        print_latency("GET /api/v1/investigations", &lat, "target p99 < 20 ms");
        println!(
            "  RSS after the API calls: {:.1} MiB (target < 32)",
            daemon.rss()
        );
        daemon.stop();

        // The daemon's periodic reads, on the stopped daemon's store.
        let store = Store::open(&data).unwrap();
        let alerts = AlertStore::open(&store).unwrap();
        let invs = InvestigationStore::open(&store).unwrap();
        // At steady state only the current hour of the log is uncompressed; the daemon
        // compresses each hour as it ends, so compress this run's now and measure again.
        let t = Instant::now();
        alerts.compact_log().unwrap();
        let elapsed = t.elapsed();
        let bytes = disk_bytes(&data);
        let journal = disk_bytes(&data.join("journal"));
        println!(
            "  disk with the log compressed (steady state): {:.1} MB, {:.0} bytes per stored alert (target < 1000; compressed in {:.0} ms): log {:.1} MB, sled {:.1} MB",
            bytes as f64 / 1e6,
            bytes as f64 / stored as f64,
            ms(elapsed),
            journal as f64 / 1e6,
            (bytes - journal) as f64 / 1e6
        );
        let t = Instant::now();
        let swept = alerts.sweep(began - chrono::Duration::days(30)).unwrap();
        println!(
            "  retention sweep, nothing to remove: {:.2} ms (removed {swept:?})",
            ms(t.elapsed())
        );
        let cutoff = began + (Utc::now() - began) / 100;
        let t = Instant::now();
        let swept = alerts.sweep(cutoff).unwrap();
        println!(
            "  retention sweep of the oldest ~1%: {:.2} ms (removed {} alerts, {} groups)",
            ms(t.elapsed()),
            swept.0,
            swept.1
        );
        stored -= swept.0 as u64;
        let t = Instant::now();
        let today = invs
            .between(Utc::now() - chrono::Duration::days(1), Utc::now())
            .unwrap();
        println!(
            "  investigations of the last day (budget, report): {:.2} ms ({} found)",
            ms(t.elapsed()),
            today.len()
        );
        let t = Instant::now();
        let hour = alerts
            .alerts_between(Utc::now() - chrono::Duration::minutes(1), Utc::now())
            .unwrap();
        println!(
            "  alerts of the last minute from the log: {:.2} ms ({} found)",
            ms(t.elapsed()),
            hour.len()
        );
        drop((alerts, invs, store));

        daemon = Daemon::start(dir.path(), &http).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let idle = daemon.rss();
        let (lat, _) = api(&http, &daemon.url, "/api/v1/alerts?limit=50", 3).await;
        println!(
            "  after a restart: idle {idle:.1} MiB, {:.1} MiB after 3 listings (first {:.2} ms)",
            daemon.rss(),
            ms(lat[lat.len() - 1])
        );
        // The intake again, on the restarted daemon: a daemon that took a month to store
        // this many alerts does not carry the heap of the bench's fill at 10,000s per second.
        let stop = Arc::new(AtomicBool::new(false));
        let peak = watch_rss(daemon.child.id(), stop.clone());
        let webhook = format!("{}/webhook/alertmanager", daemon.url);
        let (lat, took) = sustained(&http, &webhook, 2_000_000_000 + next, secs).await;
        stop.store(true, Ordering::Relaxed);
        stored += lat.len() as u64;
        println!(
            "  after a restart, the same intake: {:.0} alerts/s, p99 {:.2} ms, RSS peak {:.1} MiB (target < 64)",
            lat.len() as f64 / took,
            ms(percentile(&lat, 0.99)),
            peak.await.unwrap()
        );
    }
    daemon.stop();
}
