//! The integrations' configuration: nothing registered when unconfigured, each section
//! validated naming the key, a bad kubeconfig, the commented examples in config.toml, and
//! one client per integration built in one place.

use std::path::Path;
use std::sync::Arc;

use sre_agent::config::Config;
use sre_agent::integrations::Upstreams;
use sre_agent::telemetry::Metrics;

use crate::support::test_config;
use crate::support::tool_registry::{load_err, registry};

#[tokio::test]
async fn an_unconfigured_registry_holds_none_of_the_integration_tools() {
    let r = registry(&Config::default());
    assert!(r.is_empty(), "unexpected tools: {:?}", r.names());
    assert!(
        !Config::default()
            .enabled_integrations()
            .contains(&"kubernetes")
    );
}

#[test]
fn integration_sections_are_validated_naming_the_key() {
    let cases = [
        (
            "[proxmox]\nurl = \"https://pve:8006\"\ntoken_secret = \"x\"\n",
            "proxmox.token_id: is required",
        ),
        (
            "[pbs]\nurl = \"https://pbs:8007\"\ntoken_id = \"root\"\ntoken_secret = \"x\"\n",
            "pbs.token_id: invalid token id",
        ),
        (
            "[truenas]\nurl = \"https://nas\"\n",
            "truenas.api_key: is required",
        ),
        (
            "[truenas]\nurl = \"https://nas\"\napi_key = \"k\"\nca_file = \"/nonexistent/ca.pem\"\n",
            "truenas.ca_file: cannot read",
        ),
        (
            "[proxmox]\nurl = \"https://pve:8006\"\ntoken_id = \"a@pve!b\"\ntoken_secret_file = \"/nonexistent\"\n",
            "proxmox.token_secret_file: cannot read",
        ),
        (
            "[kubernetes]\nenabled = true\nin_cluster = true\nkubeconfig = \"/x\"\n",
            "kubernetes.in_cluster",
        ),
        (
            "[kubernetes]\nenabld = true\n",
            "kubernetes.enabld: unknown key",
        ),
    ];
    for (toml, want) in cases {
        let err = load_err(toml);
        assert!(err.contains(want), "want {want:?}, got {err:?}");
    }
}

#[test]
fn an_unknown_key_in_pbs_is_refused_naming_every_key_the_section_has() {
    // `[pbs]` is the `[proxmox]` keys plus its own: every one of them is named, so the
    // section is one struct serde can list (not one flattened into another).
    let err = load_err("[pbs]\nbackup_intervall = \"1d\"\n");
    assert!(
        err.contains(
            "pbs.backup_intervall: unknown key (expected one of: url, token_id, \
             token_secret, token_secret_file, verify_tls, ca_file, timeout, backup_interval)"
        ),
        "{err}"
    );
}

#[test]
fn pbs_is_built_from_every_connection_key_of_its_section() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ca.pem"), "").unwrap();
    let toml = format!(
        "[pbs]\nurl = \"https://pbs:8007\"\ntoken_id = \"a@pbs!b\"\ntoken_secret = \"s\"\n\
         verify_tls = false\nca_file = {:?}\ntimeout = \"7s\"\nbackup_interval = \"2d\"\n",
        dir.path().join("ca.pem").display().to_string()
    );
    let config = test_config(dir.path(), &toml);
    let api = config.pbs.api();
    assert_eq!(api.url.unwrap().0.as_str(), "https://pbs:8007/");
    assert_eq!(api.token_id.as_deref(), Some("a@pbs!b"));
    assert_eq!(api.token_secret.unwrap().expose(), "s");
    assert!(!api.verify_tls);
    assert_eq!(api.ca_file, Some(dir.path().join("ca.pem")));
    assert_eq!(api.timeout.get(), std::time::Duration::from_secs(7));
    assert_eq!(
        config.pbs.backup_interval.get(),
        std::time::Duration::from_secs(2 * 86_400)
    );
}

#[test]
fn a_bad_kubeconfig_fails_when_the_clients_are_built_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kubeconfig");
    std::fs::write(&kc, "not: [valid").unwrap();
    let toml = format!(
        "[kubernetes]\nenabled = true\nkubeconfig = {:?}\n",
        kc.display().to_string()
    );
    let config = test_config(dir.path(), &toml);
    let err = match Upstreams::from_config(&config) {
        Ok(_) => panic!("a bad kubeconfig must be refused"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("kubernetes.kubeconfig"), "{err}");
}

#[test]
fn build_registry_adds_the_configured_integration_tools_next_to_the_core_ones() {
    sre_agent::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let toml = "[truenas]\nurl = \"https://nas.lan\"\napi_key = \"k\"\n";
    let config = test_config(dir.path(), toml);
    let r = sre_agent::tools::build_registry(
        &config,
        &Upstreams::from_config(&config).unwrap(),
        Arc::new(Metrics::new("m")),
    )
    .unwrap();
    let names = r.names();
    assert!(names.contains(&"current_time"), "{names:?}");
    assert!(names.contains(&"truenas_pools"), "{names:?}");
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("k8s_") || n.starts_with("proxmox_"))
    );
    let err = load_err(
        "[[tools.http]]\nname = \"prometheus_query\"\ndescription = \"d\"\nurl = \"http://h/x\"\n",
    );
    assert!(err.contains("clashes with a built-in tool"), "{err}");
}

#[test]
fn the_commented_integration_examples_in_config_toml_are_valid_when_uncommented() {
    let example =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config.toml")).unwrap();
    let homelab = example
        .split("# ---- Homelab integrations")
        .nth(1)
        .expect("config.toml documents the homelab integrations");
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "s3cret\n").unwrap();
    let mut toml = String::new();
    for line in homelab.lines().skip(1) {
        let line = line.strip_prefix("# ").unwrap_or(line);
        let key = line.split(" = ").next().unwrap_or("").trim();
        let is_toml = line.starts_with('[')
            || (line.contains(" = ") && key.chars().all(|c| c.is_ascii_lowercase() || c == '_'));
        if !is_toml || key == "ca_file" || key == "kubeconfig" || key == "context" {
            continue;
        }
        if key.ends_with("_file") {
            toml.push_str(&format!("{key} = {:?}\n", secret.display().to_string()));
        } else {
            toml.push_str(line);
            toml.push('\n');
        }
    }
    let config = test_config(dir.path(), &toml);
    assert_eq!(
        config.proxmox.token_secret.as_ref().unwrap().expose(),
        "s3cret"
    );
    assert_eq!(config.tools.http[0].name, "ups_status");
    assert_eq!(
        config.enabled_integrations(),
        ["proxmox", "pbs", "truenas"],
        "kubernetes stays off in the example"
    );
}

/// The `.rs` files under `dir`, recursively.
fn rust_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// The tools, the evidence, the health sweep, the report, the health checker and the
/// annotations read through the clients `Upstreams::from_config` builds: a part that built
/// its own would hold a second connection pool (or Kubernetes connection) to the same
/// upstream.
#[test]
fn each_integration_client_is_built_once_in_upstreams_and_nowhere_else() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let clients = [
        "PrometheusClient",
        "LokiClient",
        "GrafanaClient",
        "AlertmanagerClient",
        "KubeClient",
        "ProxmoxClient",
        "PbsClient",
        "TruenasClient",
    ];
    let mut built = Vec::new();
    for file in rust_files(&src) {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file.strip_prefix(&src).unwrap().display().to_string();
        for client in clients {
            for _ in text.matches(&format!("{client}::new(")) {
                built.push(format!("{name}: {client}"));
            }
        }
    }
    built.sort();
    let mut expected: Vec<String> = clients
        .iter()
        .map(|c| format!("integrations/upstreams.rs: {c}"))
        .collect();
    expected.sort();
    assert_eq!(built, expected);
}
