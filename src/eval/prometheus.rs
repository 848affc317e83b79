//! A real Prometheus serving a scenario's series: the OpenMetrics text is backfilled with
//! `promtool tsdb create-blocks-from openmetrics` into a fresh data dir, then `prometheus`
//! starts on it (no scrape jobs; the scenario's rule files loaded) on a free loopback port.
//!
//! Blocks reaching past now are accepted on a TSDB that has never run: its head is empty,
//! so nothing overlaps, and an instant query at now sees the latest sample. `prometheus`
//! and `promtool` are found on PATH.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::EvalError;

/// A running Prometheus; killed on drop.
pub struct PrometheusProcess {
    pub url: String,
    child: Child,
}

impl Drop for PrometheusProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn tool_error(tool: &'static str, e: std::io::Error) -> EvalError {
    EvalError::Tool {
        tool,
        reason: if e.kind() == std::io::ErrorKind::NotFound {
            format!("{tool} is not on PATH (install the Prometheus server package)")
        } else {
            e.to_string()
        },
    }
}

/// The longest block promtool writes (a scenario's window is at most 30 days, like the
/// retention Prometheus starts with).
const MAX_BLOCK_HOURS: u32 = 31 * 24;

/// Backfills `openmetrics` into `dir/data`.
pub fn backfill(dir: &Path, openmetrics: &str) -> Result<PathBuf, EvalError> {
    let file = dir.join("series.om.txt");
    std::fs::write(&file, openmetrics).map_err(|e| EvalError::io(&file, e))?;
    let data = dir.join("data");
    let out = Command::new("promtool")
        .args(["tsdb", "create-blocks-from", "openmetrics", "--quiet"])
        // One block for the whole window instead of one per 2 h: promtool writes and
        // compacts each block on its own, and a week in 2 h blocks took 25 times longer.
        .arg(format!("--max-block-duration={MAX_BLOCK_HOURS}h"))
        .arg(&file)
        .arg(&data)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| tool_error("promtool", e))?;
    if !out.status.success() {
        return Err(EvalError::Tool {
            tool: "promtool",
            reason: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(data)
}

/// Starts Prometheus on `data` with `rules`, waiting until `/-/ready` answers.
pub async fn start(
    dir: &Path,
    data: &Path,
    rules: &[PathBuf],
) -> Result<PrometheusProcess, EvalError> {
    start_scraping(dir, data, rules, "").await
}

/// Starts Prometheus like [`start`], also scraping `scrape_configs` (the YAML of a
/// `scrape_configs:` list, empty for none): tests of what Prometheus says about its own
/// targets (`up`, `/api/v1/targets`).
pub async fn start_scraping(
    dir: &Path,
    data: &Path,
    rules: &[PathBuf],
    scrape_configs: &str,
) -> Result<PrometheusProcess, EvalError> {
    let mut config = String::from("global:\n  evaluation_interval: 15s\n  scrape_interval: 15s\n");
    if !scrape_configs.trim().is_empty() {
        config.push_str("scrape_configs:\n");
        config.push_str(scrape_configs);
        config.push('\n');
    }
    if !rules.is_empty() {
        config.push_str("rule_files:\n");
        for r in rules {
            config.push_str(&format!("  - {:?}\n", r.display().to_string()));
        }
    }
    let config_file = dir.join("prometheus.yml");
    std::fs::write(&config_file, config).map_err(|e| EvalError::io(&config_file, e))?;
    let port = free_port()?;
    let url = format!("http://127.0.0.1:{port}");
    let log = dir.join("prometheus.log");
    let log_file = std::fs::File::create(&log).map_err(|e| EvalError::io(&log, e))?;
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config_file.display()))
        .arg(format!("--storage.tsdb.path={}", data.display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg(format!("--web.external-url={url}"))
        .arg("--storage.tsdb.retention.time=30d")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file)
        .spawn()
        .map_err(|e| tool_error("prometheus", e))?;
    let mut process = PrometheusProcess { url, child };
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ready = http
            .get(format!("{}/-/ready", process.url))
            .timeout(Duration::from_secs(1))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success());
        if ready {
            return Ok(process);
        }
        let exited = process.child.try_wait().ok().flatten().is_some();
        if exited || Instant::now() > deadline {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(5).collect();
            return Err(EvalError::Tool {
                tool: "prometheus",
                reason: format!(
                    "not ready ({}); log tail: {}",
                    if exited { "exited" } else { "timeout" },
                    tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
                ),
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn free_port() -> Result<u16, EvalError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| EvalError::Tool {
            tool: "prometheus",
            reason: format!("no free port: {e}"),
        })
}
