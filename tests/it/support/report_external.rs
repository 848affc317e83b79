//! External services for the report tests: a backfilled week in a real Prometheus, test
//! certificates, and the real SMTP sink (STARTTLS + AUTH), via tests/support/ scripts.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::external::{Foreground, Service, require_tool, scripts_dir, wait_for_port};

fn script(name: &str, args: &[String]) -> String {
    let out = Command::new(scripts_dir().join(name))
        .args(args)
        .output()
        .expect("script runs");
    assert!(
        out.status.success(),
        "{name} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A real Prometheus serving a deterministic backfilled week; `expected.json` in its dir.
pub fn start_backfilled_prometheus() -> Option<(Service, serde_json::Value)> {
    if !require_tool("prometheus") || !require_tool("promtool") {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().display().to_string();
    script("backfill_week.sh", &["--data".into(), data.clone()]);
    let url = script(
        "start_prometheus.sh",
        &[
            "--no-scrape".into(),
            "--port".into(),
            super::free_port().to_string(),
            "--data".into(),
            data,
            "--retention".into(),
            "100y".into(),
        ],
    );
    let expected =
        serde_json::from_slice(&std::fs::read(dir.path().join("expected.json")).unwrap()).unwrap();
    Some((Service { url, dir }, expected))
}

/// A throwaway CA and a localhost certificate in `dir`.
pub fn gen_certs(dir: &Path) -> bool {
    if !require_tool("openssl") {
        return false;
    }
    script("gen_test_certs.sh", &[dir.display().to_string()]);
    true
}

/// The SMTP sink; with `certs`, STARTTLS is required and AUTH `user:pass` too.
pub fn start_smtp_sink(certs: Option<&Path>, auth: Option<&str>) -> Option<Foreground> {
    let has_aiosmtpd = Command::new("/usr/bin/python3")
        .args(["-c", "import aiosmtpd"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_aiosmtpd && !require_tool("aiosmtpd-missing") {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let port = super::free_port();
    let mut cmd = Command::new(scripts_dir().join("smtp_sink.py"));
    cmd.args(["--port", &port.to_string(), "--maildir"])
        .arg(dir.path().join("messages"))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(c) = certs {
        cmd.arg("--tls-cert")
            .arg(c.join("leaf.pem"))
            .arg("--tls-key")
            .arg(c.join("leaf.key"))
            .arg("--require-starttls");
    }
    if let Some(a) = auth {
        cmd.args(["--auth", a]);
    }
    let child = cmd.spawn().unwrap();
    wait_for_port(port, Duration::from_secs(15));
    Some(Foreground { child, port, dir })
}

/// The .eml files the sink stored, oldest first.
pub fn mails(sink: &Foreground) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(sink.dir.path().join("messages"))
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|e| e == "eml"));
    v.sort();
    v
}
