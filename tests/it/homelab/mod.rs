//! Homelab tools against fakes: Kubernetes (real JSON, every path recorded), Proxmox VE,
//! Proxmox Backup Server, TrueNAS, and declarative HTTP tools; their configuration.

mod appliances;
mod config;
mod kubernetes;
mod report;

use std::sync::Arc;

use serde_json::Value;
use sre_agent::config::{Config, ConfigSource};
use sre_agent::telemetry::Metrics;
use sre_agent::tools::{ToolRegistry, register_homelab_tools};

use crate::support::fake_kube::FakeKube;
use crate::support::test_config;

pub fn registry(config: &Config) -> ToolRegistry {
    sre_agent::install_crypto_provider();
    let mut r = ToolRegistry::new(
        Arc::new(Metrics::new("test-model")),
        config.llm.max_tool_output_chars,
    );
    register_homelab_tools(&mut r, config).expect("homelab tools register");
    r
}

pub async fn call(r: &ToolRegistry, name: &str, args: Value) -> String {
    let out = r.call(name, args).await;
    assert!(out.ok, "{name} failed: {}", out.text);
    out.text
}

pub async fn call_err(r: &ToolRegistry, name: &str, args: Value) -> String {
    let out = r.call(name, args).await;
    assert!(!out.ok, "{name} should fail: {}", out.text);
    out.text
}

pub fn load_err(toml: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, toml).unwrap();
    Config::load(&ConfigSource { file: Some(file) })
        .expect_err("config must be rejected")
        .to_string()
}

pub async fn kube_registry(extra: &str) -> (FakeKube, ToolRegistry, tempfile::TempDir) {
    let fake = FakeKube::start().await;
    let dir = tempfile::tempdir().unwrap();
    let kc = fake.write_kubeconfig(dir.path());
    let toml = format!(
        "[kubernetes]\nenabled = true\nkubeconfig = {:?}\n{extra}",
        kc.display().to_string()
    );
    let config = test_config(dir.path(), &toml);
    (fake, registry(&config), dir)
}
