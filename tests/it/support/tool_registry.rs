//! A registry holding only the integrations' tools (Kubernetes, Proxmox VE, Proxmox Backup
//! Server, TrueNAS, declarative HTTP), calls that must succeed or fail, and config loading
//! that must fail, for the tests of those tools against their fakes.

use std::sync::Arc;

use serde_json::Value;
use sre_agent::config::{Config, ConfigSource};
use sre_agent::integrations::Upstreams;
use sre_agent::telemetry::Metrics;
use sre_agent::tools::ToolRegistry;
use sre_agent::tools::catalog::{register_integrations, validate};

use super::fake_kube::FakeKube;
use super::test_config;

pub fn registry(config: &Config) -> ToolRegistry {
    sre_agent::install_crypto_provider();
    let mut r = ToolRegistry::new(
        Arc::new(Metrics::new("test-model")),
        config.llm.max_tool_output_chars,
    );
    let upstreams = Upstreams::from_config(config).expect("upstream clients build");
    register_integrations(&mut r, config, &upstreams).expect("integration tools register");
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
    // As `check-config` and the daemon do: the config, then the tool names it declares.
    Config::load(&ConfigSource { file: Some(file) })
        .and_then(|c| validate(&c))
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
