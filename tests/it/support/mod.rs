//! Shared test fixtures: the app in-process (`spawn_app`), the real binary
//! (`Daemon`), free ports, and polling with a deadline instead of sleeps.

#![allow(dead_code)]

pub mod alerts;
pub mod external;
pub mod fake_appliance;
pub mod fake_grafana_writes;
pub mod fake_kube;
pub mod fake_llm;
pub mod fake_upstreams;
pub mod gated_llm;
pub mod hostile;
pub mod mail;
pub mod receiver;
pub mod report_external;
pub mod report_fakes;
pub mod tool_registry;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sre_agent::config::{Config, ConfigSource};
use sre_agent::{App, AppState};
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

/// The app running in this process on 127.0.0.1:0 with a temp data dir.
pub struct TestApp {
    pub addr: SocketAddr,
    pub base: String,
    pub state: AppState,
    pub token: CancellationToken,
    pub handle: tokio::task::JoinHandle<Result<(), sre_agent::app::ServeError>>,
    pub dir: TempDir,
    pub http: reqwest::Client,
}

/// A config from `toml`, listening on 127.0.0.1:0 with its data in `dir/data`.
pub fn test_config(dir: &Path, toml: &str) -> Config {
    let file = dir.join("config.toml");
    std::fs::write(&file, toml).unwrap();
    let mut config =
        Config::load(&ConfigSource { file: Some(file) }).expect("test config is valid");
    config.server.listen = "127.0.0.1:0".into();
    config.server.data_dir = dir.join("data");
    config
}

/// Starts the real app in-process with `toml` merged into a temp config.
pub async fn spawn_app(toml: &str) -> TestApp {
    sre_agent::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(dir.path(), toml);
    spawn_app_with(config, dir).await
}

pub async fn spawn_app_with(config: Config, dir: TempDir) -> TestApp {
    sre_agent::install_crypto_provider();
    let app = App::build(config).await.expect("app builds");
    let addr = app.local_addr();
    let state = app.state().clone();
    let token = CancellationToken::new();
    let handle = tokio::spawn(app.run_until_stopped(sre_agent::http::router, token.clone()));
    TestApp {
        addr,
        base: format!("http://{addr}"),
        state,
        token,
        handle,
        dir,
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap(),
    }
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.http.get(self.url(path)).send().await.unwrap()
    }

    pub async fn metrics(&self) -> String {
        self.get("/metrics").await.text().await.unwrap()
    }

    /// Stops the app and waits for a clean shutdown.
    pub async fn stop(self) -> TempDir {
        self.token.cancel();
        self.handle.await.unwrap().unwrap();
        self.dir
    }
}

/// The value of one series in a Prometheus text exposition, e.g.
/// `metric_value(&text, "sre_agent_llm_tokens_total{type=\"prompt\"}")`.
pub fn metric_value(exposition: &str, series: &str) -> Option<f64> {
    exposition
        .lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            l.strip_prefix(series)
                .and_then(|rest| rest.strip_prefix(' '))
        })
        .and_then(|v| v.trim().parse().ok())
}

/// Polls `check` until it returns `Some` or `timeout` passes.
pub async fn eventually<T, F, Fut>(timeout: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The sre-agent binary cargo built for these tests.
pub fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_sre-agent"))
}

/// The real binary as a child process; killed on drop.
pub struct Daemon {
    pub child: Child,
    pub base: String,
    pub log: PathBuf,
}

impl Daemon {
    /// The daemon's `/metrics` text.
    pub async fn metrics(&self) -> String {
        reqwest::get(format!("{}/metrics", self.base))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// Starts `sre-agent serve --config FILE` in `dir` with `env`, and waits for /readyz.
    pub async fn start(dir: &Path, config_file: &Path, env: &[(&str, &str)]) -> Daemon {
        // The test's own HTTP client needs the provider too (when this test runs alone).
        sre_agent::install_crypto_provider();
        let text = std::fs::read_to_string(config_file).unwrap();
        let listen = text
            .lines()
            .find_map(|l| {
                l.trim()
                    .strip_prefix("listen = ")
                    .map(|v| v.trim_matches('"').to_string())
            })
            .expect("config has server.listen");
        let log = dir.join("daemon.log");
        let child = Command::new(binary())
            .args(["serve", "--config"])
            .arg(config_file)
            .current_dir(dir)
            .envs(env.iter().copied())
            .env_remove("SRE_AGENT_CONFIG")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let daemon = Daemon {
            child,
            base: format!("http://{listen}"),
            log,
        };
        let client = reqwest::Client::new();
        let url = format!("{}/readyz", daemon.base);
        eventually(Duration::from_secs(20), "daemon /readyz", || {
            let client = client.clone();
            let url = url.clone();
            async move {
                client
                    .get(&url)
                    .send()
                    .await
                    .ok()
                    .filter(|r| r.status().is_success())
                    .map(|_| ())
            }
        })
        .await;
        daemon
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends a signal (e.g. "TERM", "KILL") via kill(1).
    pub fn signal(&self, sig: &str) {
        let status = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits for exit up to `timeout`; returns the exit code.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<i32> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the binary with `args` in `dir`; returns (exit code, stdout, stderr).
pub fn run_cli(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(binary())
        .args(args)
        .current_dir(dir)
        .env_remove("SRE_AGENT_CONFIG")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
