//! Real external services for tests (Prometheus, Alertmanager, SMTP, webhook receiver),
//! started with the project's scripts in tests/support/. When a tool is missing, the test
//! is skipped with a printed reason, unless SRE_TEST_REQUIRE_EXTERNAL=1 (set by
//! tests/run.sh and CI), where a missing tool fails the test.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tempfile::TempDir;

/// tests/support/ in this repository.
pub fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support")
}

/// Whether `tool` is on PATH; otherwise skips (returns false) or panics when required.
pub fn require_tool(tool: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        if std::env::var("SRE_TEST_REQUIRE_EXTERNAL").as_deref() == Ok("1") {
            panic!(
                "{tool} is required (SRE_TEST_REQUIRE_EXTERNAL=1); run tests/support/install_deps.sh"
            );
        }
        eprintln!("SKIPPED: {tool} not installed (run tests/support/install_deps.sh)");
    }
    found
}

/// A script-started service; `stop.sh` runs on drop.
pub struct Service {
    pub url: String,
    pub dir: TempDir,
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = Command::new(scripts_dir().join("stop.sh"))
            .arg(self.dir.path())
            .output();
    }
}

fn run_start_script(script: &str, args: &[String], dir: TempDir) -> Service {
    let out = Command::new(scripts_dir().join(script))
        .args(args)
        .output()
        .expect("start script runs");
    assert!(
        out.status.success(),
        "{script} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let url = String::from_utf8_lossy(&out.stdout).trim().to_string();
    Service { url, dir }
}

/// A real Prometheus scraping `targets` ("127.0.0.1:PORT"), or serving only `data_dir`
/// contents when `targets` is empty.
pub fn start_prometheus(targets: &[String], rules: &[PathBuf], job: &str) -> Option<Service> {
    if !require_tool("prometheus") {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec![
        "--port".into(),
        super::free_port().to_string(),
        "--data".into(),
        dir.path().display().to_string(),
        "--job".into(),
        job.into(),
    ];
    if targets.is_empty() {
        args.push("--no-scrape".into());
    } else {
        args.push("--scrape".into());
        args.push(targets.join(","));
    }
    for r in rules {
        args.push("--rules".into());
        args.push(r.display().to_string());
    }
    Some(run_start_script("start_prometheus.sh", &args, dir))
}

/// A foreground helper process (smtp_sink.py, webhook_receiver.py); killed on drop.
pub struct Foreground {
    pub child: Child,
    pub port: u16,
    pub dir: TempDir,
}

impl Drop for Foreground {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until something listens on 127.0.0.1:`port`.
pub fn wait_for_port(port: u16, timeout: Duration) {
    let deadline = std::time::Instant::now() + timeout;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "nothing listens on port {port} after {timeout:?}"
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// A real Alertmanager POSTing every group to `webhook` (with `Authorization: Bearer`
/// when `bearer` is set), group_wait/group_interval 1s.
pub fn start_alertmanager(webhook: &str, bearer: Option<&str>) -> Option<Service> {
    if !require_tool("prometheus-alertmanager") {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec![
        "--port".into(),
        super::free_port().to_string(),
        "--data".into(),
        dir.path().display().to_string(),
        "--webhook".into(),
        webhook.to_string(),
    ];
    if let Some(token) = bearer {
        args.push("--bearer".into());
        args.push(token.into());
    }
    Some(run_start_script("start_alertmanager.sh", &args, dir))
}

/// A real Prometheus evaluating `rules` every second and sending alerts to `alertmanager`
/// ("127.0.0.1:PORT"); scrapes nothing.
pub fn start_prometheus_alerting(rules: &[PathBuf], alertmanager: &str) -> Option<Service> {
    if !require_tool("prometheus") {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec![
        "--port".into(),
        super::free_port().to_string(),
        "--data".into(),
        dir.path().display().to_string(),
        "--no-scrape".into(),
        "--alertmanager".into(),
        alertmanager.into(),
    ];
    for r in rules {
        args.push("--rules".into());
        args.push(r.display().to_string());
    }
    Some(run_start_script("start_prometheus.sh", &args, dir))
}
