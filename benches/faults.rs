//! Fault injection: webhooks at a steady load for `FAULTS_SECS` (default 180) while the
//! daemon binary is `kill -9`ed at random moments (every 2–6 s) and restarted, the data
//! directory's filesystem (a tmpfs of 2 GiB) fills up and is freed twice, and every 25th
//! request is written and abandoned mid-request. Afterwards every alert that got a 2xx must
//! be in the store exactly once and every investigation must have run to a final state.
//! Prints `sent`, `acknowledged`, `found`, `lost` (must be 0), `duplicated`, `restarts`
//! (must be >= 20) and more; exits non-zero when a bound is missed.
//!
//! Needs root (it mounts the tmpfs). Run: `cargo bench --bench faults`
//! (`--profile dev` for a debug build).

// A panic is how a test or a bench reports a failure.
#![allow(clippy::unwrap_used)]

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;

const POSTERS: u64 = 8;
const LEAVE_EVERY: u64 = 25;
/// Room for the daemon's own data over a release run (every alert a new group, ~6.6 kB of
/// disk each, 100,000 or more acknowledged in three minutes): a smaller tmpfs fills with the
/// store itself, and a daemon on a disk full of its own data rightly refuses to start.
const TMPFS: &str = "size=2g";

/// The tmpfs holding the data directory; unmounted when dropped.
struct Mount(PathBuf);

impl Mount {
    fn new(dir: &Path) -> Mount {
        std::fs::create_dir_all(dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", TMPFS, "tmpfs"])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "cannot mount a tmpfs at {} (run as root)",
            dir.display()
        );
        Mount(dir.to_path_buf())
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

struct Daemon {
    child: Child,
    port: u16,
    data: PathBuf,
    log: PathBuf,
}

impl Daemon {
    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        // `FAULTS_BINARY` runs another build (an older one, to compare).
        let binary = std::env::var("FAULTS_BINARY")
            .unwrap_or_else(|_| env!("CARGO_BIN_EXE_sre-agent").to_string());
        self.child = Command::new(binary)
            .arg("serve")
            .env(
                "SRE_AGENT_SERVER__LISTEN",
                format!("127.0.0.1:{}", self.port),
            )
            .env("SRE_AGENT_SERVER__DATA_DIR", &self.data)
            .env("SRE_AGENT_LLM__BASE_URL", "http://127.0.0.1:9/v1")
            .env("SRE_AGENT_LOG__LEVEL", "warn")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
    }

    /// Starts it again until it answers `/readyz` (a start on a full disk may fail).
    async fn until_ready(&mut self, http: &reqwest::Client) {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let ready = http
                .get(format!("http://127.0.0.1:{}/readyz", self.port))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if ready {
                return;
            }
            if Instant::now() >= deadline {
                let log = std::fs::read_to_string(&self.log).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(20).collect();
                let du = Command::new("du")
                    .arg("-a")
                    .arg(&self.data)
                    .output()
                    .unwrap();
                panic!(
                    "daemon not ready after 120 s; the end of its log:\n{}\nthe data directory:\n{}",
                    tail.join("\n"),
                    String::from_utf8_lossy(&du.stdout)
                );
            }
            if self.child.try_wait().ok().flatten().is_some() {
                tokio::time::sleep(Duration::from_millis(300)).await;
                self.spawn();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn payload(id: u64) -> Vec<u8> {
    serde_json::to_vec(&json!({"version": "4", "status": "firing", "alerts": [{
        "status": "firing",
        "labels": {"alertname": "Fault", "instance": format!("a{id}")},
        "annotations": {"description": "x".repeat(300)}}]}))
    .unwrap()
}

/// Writes the request and leaves before the answer.
async fn leave(port: u16, body: &[u8]) {
    let Ok(mut s) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return;
    };
    let head = format!(
        "POST /webhook/alertmanager HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let _ = s.write_all(head.as_bytes()).await;
    let _ = s.write_all(body).await;
}

/// Fills the filesystem of `dir` to the last byte; returns the filler's path.
fn fill(dir: &Path) -> PathBuf {
    use std::io::Write;
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).unwrap();
    let block = vec![0u8; 64 << 10];
    while f.write_all(&block).is_ok() {}
    let small = [0u8; 512];
    while f.write_all(&small).is_ok() {}
    path
}

#[derive(Default)]
struct Tally {
    sent: AtomicU64,
    left: AtomicU64,
    refused: AtomicU64,
    acked: Mutex<HashSet<u64>>,
}

async fn post_steadily(port: u16, next: Arc<AtomicU64>, tally: Arc<Tally>, stop: Arc<AtomicBool>) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/webhook/alertmanager");
    while !stop.load(Ordering::Relaxed) {
        let id = next.fetch_add(1, Ordering::SeqCst);
        tally.sent.fetch_add(1, Ordering::Relaxed);
        if id.is_multiple_of(LEAVE_EVERY) {
            leave(port, &payload(id)).await;
            tally.left.fetch_add(1, Ordering::Relaxed);
        } else {
            let req = http.post(&url).header("content-type", "application/json");
            match req.body(payload(id)).send().await {
                Ok(r) if r.status().is_success() => {
                    tally.acked.lock().unwrap().insert(id);
                }
                // A 503 (disk full), a refused connection (restarting): the sender's retry
                // is the next alert.
                _ => {
                    tally.refused.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Every group's key and `received`, page by page.
async fn groups(http: &reqwest::Client, port: u16) -> HashMap<String, u64> {
    let mut out = HashMap::new();
    let mut cursor = String::new();
    loop {
        let url = format!("http://127.0.0.1:{port}/api/v1/alerts?limit=1000&cursor={cursor}");
        let page: Value = http.get(url).send().await.unwrap().json().await.unwrap();
        for g in page["groups"].as_array().unwrap() {
            let key = g["key"].as_str().unwrap_or_default().to_string();
            out.insert(key, g["received"].as_u64().unwrap_or(0));
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = c.to_string(),
            None => return out,
        }
    }
}

async fn backlog_empty(http: &reqwest::Client, port: u16) -> bool {
    let Ok(r) = http
        .get(format!("http://127.0.0.1:{port}/metrics"))
        .send()
        .await
    else {
        return false;
    };
    r.text()
        .await
        .is_ok_and(|m| m.lines().any(|l| l == "sre_agent_alert_backlog 0"))
}

#[tokio::main]
async fn main() {
    sre_agent::install_crypto_provider();
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    let secs: u64 = std::env::var("FAULTS_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(180);
    println!("profile: {profile}, run: {secs} s, tmpfs {TMPFS}");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mount = Mount::new(&data);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let mut daemon = Daemon {
        child: Command::new("true").spawn().unwrap(),
        port,
        data: data.clone(),
        log: dir.path().join("daemon.log"),
    };
    daemon.spawn();
    daemon.until_ready(&http).await;

    let (tally, stop, next) = (
        Arc::new(Tally::default()),
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicU64::new(1)),
    );
    let posters: Vec<_> = (0..POSTERS)
        .map(|_| {
            tokio::spawn(post_steadily(
                port,
                next.clone(),
                tally.clone(),
                stop.clone(),
            ))
        })
        .collect();
    let start = Instant::now();
    let end = start + Duration::from_secs(secs);
    // Two full-disk episodes of 6 s, at 30 % and 70 % of the run, whatever the daemon does.
    let filling = {
        let data = data.clone();
        tokio::spawn(async move {
            let mut episodes = 0u64;
            for at in [secs * 3 / 10, secs * 7 / 10] {
                tokio::time::sleep_until((start + Duration::from_secs(at)).into()).await;
                let path = tokio::task::spawn_blocking({
                    let data = data.clone();
                    move || fill(&data)
                })
                .await
                .unwrap();
                episodes += 1;
                tokio::time::sleep(Duration::from_secs(6)).await;
                std::fs::remove_file(path).unwrap();
            }
            episodes
        })
    };
    let mut restarts = 0u64;
    while Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(rand::random_range(2_000..6_000))).await;
        daemon.kill9();
        daemon.spawn();
        daemon.until_ready(&http).await;
        restarts += 1;
    }
    stop.store(true, Ordering::Relaxed);
    for p in posters {
        p.await.unwrap();
    }
    let full_episodes = filling.await.unwrap();
    // One more crash after the load, then everything accepted must be decided.
    daemon.kill9();
    daemon.spawn();
    daemon.until_ready(&http).await;
    restarts += 1;
    let deadline = Instant::now() + Duration::from_secs(120);
    while !backlog_empty(&http, port).await {
        assert!(Instant::now() < deadline, "the alert backlog never emptied");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let stored = groups(&http, port).await;
    let acked = tally.acked.lock().unwrap().clone();
    let mut found = 0u64;
    let mut duplicated = 0u64;
    for id in &acked {
        match stored.get(&format!("{{alertname=\"Fault\", instance=\"a{id}\"}}")) {
            Some(1) => found += 1,
            Some(_) => {
                found += 1;
                duplicated += 1;
            }
            None => {}
        }
    }
    let lost = acked.len() as u64 - found;
    // Investigations: every one reaches a final state (the LLM is unreachable: failed).
    let deadline = Instant::now() + Duration::from_secs(180);
    let (total, unfinished) = loop {
        let body: Value = http
            .get(format!(
                "http://127.0.0.1:{port}/api/v1/investigations?limit=200"
            ))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let items = body["items"]
            .as_array()
            .or(body["investigations"].as_array())
            .cloned()
            .unwrap_or_default();
        let unfinished = items
            .iter()
            .filter(|i| matches!(i["status"].as_str(), Some("queued" | "running")))
            .count();
        if unfinished == 0 || Instant::now() >= deadline {
            break (items.len(), unfinished);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    daemon.kill9();
    drop(mount);
    println!("sent: {}", tally.sent.load(Ordering::Relaxed));
    println!(
        "abandoned_mid_request: {}",
        tally.left.load(Ordering::Relaxed)
    );
    println!(
        "refused_or_failed (503, restarting): {}",
        tally.refused.load(Ordering::Relaxed)
    );
    println!("acknowledged: {}", acked.len());
    println!("found: {found}");
    println!("lost: {lost} (target 0)");
    println!("duplicated: {duplicated} (target 0)");
    println!("restarts_survived: {restarts} (target >= 20)");
    println!("disk_full_episodes: {full_episodes}");
    println!("investigations: {total}, not run to a final state: {unfinished} (target 0)");
    if lost > 0 || duplicated > 0 || restarts < 20 || unfinished > 0 {
        std::process::exit(1);
    }
}
