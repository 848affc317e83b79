//! Flood: the daemon's memory when senders put too much in their alerts, and its intake
//! when every alert is a new group. Runs the binary of the bench's profile as its own
//! process and prints `name: value (target …)` lines:
//! - 1,000 groups whose alerts carry a 1 MB label: the daemon's peak and settled RSS;
//! - `FLOOD_GROUPS` (default 100,000) distinct groups, one alert per request from
//!   16 clients: alerts/s (decided), p50/p99 time to 2xx, peak and settled RSS, disk per
//!   alert.
//!
//! Each RSS is printed with its anonymous part (`RssAnon`: heap and stacks; the rest is the
//! binary's code, mapped from its file). The daemon runs with the default configuration, so
//! its caches are bounded by the default `store.cache_mib`.
//!
//! A webhook answered 503 (busy: `webhook.max_inflight_bytes`) is retried after its
//! `Retry-After`, as senders do, and counted.
//!
//! Run: `cargo bench --bench flood` (`--profile dev` for a debug build; `FLOOD_SKIP_BIG=1`
//! skips the 1 MB labels).

// A panic is how a test or a bench reports a failure.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "support/decided.rs"]
mod support;
use support::decided;

const CLIENTS: u64 = 16;
const BIG_GROUPS: u64 = 1_000;
/// Webhooks answered 503 busy (and retried).
static BUSY: AtomicU64 = AtomicU64::new(0);

fn payload(alerts: Vec<Value>) -> Vec<u8> {
    serde_json::to_vec(&json!({"version": "4", "status": "firing", "alerts": alerts})).unwrap()
}

/// Alert `i` of a sender that templates a value into a label: a new group each time.
fn distinct(i: u64) -> Value {
    json!({"status": "firing",
        "labels": {"alertname": "Templated", "instance": format!("host{}", i % 50),
                   "job": format!("value {i}"), "severity": "warning"},
        "annotations": {"summary": "a value in a label", "description": "x".repeat(200)},
        "startsAt": "2026-11-22T20:45:24.847Z", "generatorURL": "http://prom/graph?g0.expr=up"})
}

/// A `/proc/{pid}/status` figure in MiB (`VmRSS:` resident, `RssAnon:` its heap and stacks).
fn status_mib(pid: u32, field: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

fn rss_mib(pid: u32) -> f64 {
    status_mib(pid, "VmRSS:")
}

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

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1e3
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
            .env("SRE_AGENT_WEBHOOK__MAX_BODY_BYTES", "2000000")
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

    /// The anonymous part of the RSS (the rest is the binary's mapped code).
    fn anon(&self) -> f64 {
        status_mib(self.child.id(), "RssAnon:")
    }

    /// Peak RSS while `work` runs (sampled every 20 ms).
    async fn peak_during<T>(&self, work: impl Future<Output = T>) -> (T, f64) {
        let stop = Arc::new(AtomicBool::new(false));
        let (pid, flag) = (self.child.id(), stop.clone());
        let watch = tokio::spawn(async move {
            let mut peak: f64 = 0.0;
            while !flag.load(Ordering::Relaxed) {
                peak = peak.max(rss_mib(pid));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            peak
        });
        let out = work.await;
        stop.store(true, Ordering::Relaxed);
        let peak = watch.await.unwrap().max(self.rss());
        (out, peak)
    }

    /// RSS and its anonymous part once the daemon has settled (its allocator gives freed
    /// pages back each second).
    async fn settled_rss(&self) -> (f64, f64) {
        tokio::time::sleep(Duration::from_secs(3)).await;
        (self.rss(), self.anon())
    }

    fn stop(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// Posts alerts `0..n` made by `alert`, one per request, from `CLIENTS` clients; returns
/// the latencies to 2xx.
async fn post_each(
    http: &reqwest::Client,
    url: &str,
    n: u64,
    alert: fn(u64) -> Value,
) -> Vec<Duration> {
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..CLIENTS {
        let (http, url, next) = (http.clone(), url.to_string(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= n {
                    return lat;
                }
                let body = payload(vec![alert(i)]);
                let t = Instant::now();
                loop {
                    let r = http
                        .post(&url)
                        .header("content-type", "application/json")
                        .body(body.clone())
                        .send()
                        .await
                        .unwrap();
                    if r.status() == reqwest::StatusCode::SERVICE_UNAVAILABLE {
                        // Busy (webhook.max_inflight_bytes): retried after Retry-After, as
                        // senders do; the latency counts the wait.
                        let wait = r
                            .headers()
                            .get("retry-after")
                            .and_then(|v| v.to_str().ok()?.parse().ok())
                            .unwrap_or(1);
                        BUSY.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_secs(wait)).await;
                        continue;
                    }
                    assert!(r.status().is_success(), "{}", r.status());
                    break;
                }
                lat.push(t.elapsed());
            }
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all.sort();
    all
}

fn big(i: u64) -> Value {
    json!({"status": "firing",
        "labels": {"alertname": "Huge", "instance": format!("host{i}"), "blob": "b".repeat(1 << 20)}})
}

#[tokio::main]
async fn main() {
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    println!("profile: {profile}");
    sre_agent::install_crypto_provider();
    let http = reqwest::Client::new();

    let dir = tempfile::tempdir().unwrap();
    if std::env::var("FLOOD_SKIP_BIG").is_err() {
        let daemon = Daemon::start(dir.path(), &http).await;
        let url = format!("{}/webhook/alertmanager", daemon.url);
        let idle = daemon.rss();
        let (_, peak) = daemon
            .peak_during(async {
                post_each(&http, &url, BIG_GROUPS, big).await;
                decided(&http, &daemon.url).await.unwrap();
            })
            .await;
        println!(
            "big_labels_rss_peak_mib: {peak:.1} (target < 64; {BIG_GROUPS} groups, 1 MB label each; idle before {idle:.1})"
        );
        let (rss, anon) = daemon.settled_rss().await;
        println!("big_labels_rss_settled_mib: {rss:.1} (target < 64; anonymous {anon:.1})");
        println!(
            "big_labels_busy_retries: {} (503 with Retry-After, retried)",
            BUSY.swap(0, Ordering::Relaxed)
        );
        daemon.stop();
    }

    let groups: u64 = std::env::var("FLOOD_GROUPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &http).await;
    let url = format!("{}/webhook/alertmanager", daemon.url);
    let (idle, idle_anon) = (daemon.rss(), daemon.anon());
    let start = Instant::now();
    let (lat, peak) = daemon
        .peak_during(async {
            let lat = post_each(&http, &url, groups, distinct).await;
            decided(&http, &daemon.url).await.unwrap();
            lat
        })
        .await;
    let secs = start.elapsed().as_secs_f64();
    println!(
        "distinct_groups_alerts_per_second: {:.0} (target >= 4000; {groups} groups, {CLIENTS} clients, 1 alert/request, decided)",
        groups as f64 / secs
    );
    println!("distinct_groups_p50_ms: {:.2}", percentile(&lat, 0.5));
    println!(
        "distinct_groups_busy_retries: {}",
        BUSY.load(Ordering::Relaxed)
    );
    println!(
        "distinct_groups_p99_ms: {:.2} (target < 10)",
        percentile(&lat, 0.99)
    );
    println!(
        "distinct_groups_rss_peak_mib: {peak:.1} (target < 64; idle before {idle:.1}, anonymous {idle_anon:.1})"
    );
    let (rss, anon) = daemon.settled_rss().await;
    println!("distinct_groups_rss_settled_mib: {rss:.1} (target < 64; anonymous {anon:.1})");
    println!(
        "distinct_groups_disk_bytes_per_alert: {:.0}",
        disk_bytes(&dir.path().join("data")) as f64 / groups as f64
    );
    daemon.stop();
}
