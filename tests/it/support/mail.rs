//! Real SMTP for tests: test certificates from gen_test_certs.sh and smtp_sink.py
//! (aiosmtpd) with optional STARTTLS and AUTH, storing every message as .eml + .json.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::external::{Foreground, scripts_dir, wait_for_port};

/// Whether Debian's python3 with aiosmtpd is there; skips (false) or panics when required.
pub fn require_aiosmtpd() -> bool {
    let ok = Command::new("/usr/bin/python3")
        .args(["-c", "import aiosmtpd"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        if std::env::var("SRE_AGENT_REQUIRE_EXTERNAL").as_deref() == Ok("1") {
            panic!("python3-aiosmtpd is required; run tests/support/install_deps.sh");
        }
        eprintln!("SKIPPED: python3-aiosmtpd not installed (run tests/support/install_deps.sh)");
    }
    ok
}

/// A throwaway CA + localhost certificate in `dir` (ca.pem, leaf.pem, leaf.key).
pub fn gen_test_certs(dir: &Path) -> PathBuf {
    let out = Command::new(scripts_dir().join("gen_test_certs.sh"))
        .arg(dir)
        .output()
        .expect("gen_test_certs.sh runs");
    assert!(
        out.status.success(),
        "gen_test_certs.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.to_path_buf()
}

/// smtp_sink.py options.
#[derive(Default)]
pub struct SinkOptions<'a> {
    /// Directory with leaf.pem/leaf.key: offer and require STARTTLS.
    pub starttls_certs: Option<&'a Path>,
    /// "USER:PASS": AUTH required.
    pub auth: Option<&'a str>,
}

/// Starts smtp_sink.py on `port` (use `free_port()`); messages land in `maildir(&sink)`.
pub fn start_smtp_sink(port: u16, opts: &SinkOptions) -> Foreground {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.arg(scripts_dir().join("smtp_sink.py"))
        .args(["--port", &port.to_string(), "--maildir"])
        .arg(dir.path().join("mail"));
    if let Some(certs) = opts.starttls_certs {
        cmd.arg("--tls-cert")
            .arg(certs.join("leaf.pem"))
            .arg("--tls-key")
            .arg(certs.join("leaf.key"))
            .arg("--require-starttls");
    }
    if let Some(auth) = opts.auth {
        cmd.args(["--auth", auth]);
    }
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("smtp_sink.py starts");
    wait_for_port(port, Duration::from_secs(15));
    Foreground { child, port, dir }
}

/// The messages the sink accepted so far: (envelope JSON, raw .eml text), oldest first.
pub fn received_mail(sink: &Foreground) -> Vec<(serde_json::Value, String)> {
    let dir = sink.dir.path().join("mail");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut names: Vec<_> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "eml"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|eml| {
            let meta = std::fs::read_to_string(eml.with_extension("json")).unwrap();
            (
                serde_json::from_str(&meta).unwrap(),
                std::fs::read_to_string(&eml).unwrap(),
            )
        })
        .collect()
}
