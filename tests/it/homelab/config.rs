//! Registration when unconfigured, declarative HTTP tools, and homelab config validation.

use std::sync::Arc;

use serde_json::json;
use sre_agent::config::Config;
use sre_agent::telemetry::Metrics;
use sre_agent::tools::{ToolRegistry, register_homelab_tools};

use super::{call, call_err, load_err, registry};
use crate::support::fake_homelab::FakeHomelab;
use crate::support::test_config;

#[tokio::test]
async fn an_unconfigured_registry_holds_none_of_the_homelab_tools() {
    let r = registry(&Config::default());
    assert!(r.is_empty(), "unexpected tools: {:?}", r.names());
    assert!(
        !Config::default()
            .enabled_integrations()
            .contains(&"kubernetes")
    );
}

#[tokio::test]
async fn a_declarative_http_tool_fills_its_template_sends_its_header_and_follows_the_json_path() {
    let fake = FakeHomelab::start(
        vec![(
            "GET /api/v1/devices/living%20room/state".into(),
            json!({"data": {"sensors": [{"name": "temp", "value": 21.5}, {"name": "humidity", "value": 48}]}}),
        )],
        "Token hass-secret",
        json!({}),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        r#"
[[tools.http]]
name = "room_sensor"
description = "Sensor value of a room"
url = "{}/api/v1/devices/{{room}}/state?index={{index}}"
header_name = "Authorization"
header_value = "Token hass-secret"
json_path = "data.sensors[1].value"
[tools.http.parameters]
type = "object"
required = ["room", "index"]
[tools.http.parameters.properties.room]
type = "string"
[tools.http.parameters.properties.index]
type = "integer"
"#,
        fake.url
    );
    let config = test_config(dir.path(), &toml);
    assert!(!config.redacted_toml().contains("hass-secret"));
    let r = registry(&config);
    assert_eq!(r.names(), ["room_sensor"]);
    let out = call(
        &r,
        "room_sensor",
        json!({"room": "living room", "index": 1}),
    )
    .await;
    assert_eq!(out, "48");
    assert_eq!(
        fake.requests(),
        ["GET /api/v1/devices/living%20room/state?index=1"]
    );
    let err = call_err(&r, "room_sensor", json!({"room": "x"})).await;
    assert!(err.contains("missing required argument \"index\""), "{err}");
}

#[test]
fn bad_declarative_http_tools_are_rejected_at_load_naming_the_key() {
    let tool = |body: &str| format!("[[tools.http]]\ndescription = \"d\"\n{body}\n");
    let ok_params = "[tools.http.parameters]\ntype = \"object\"\n[tools.http.parameters.properties.q]\ntype = \"string\"\n";
    let cases = [
        (
            tool("name = \"bad name!\"\nurl = \"http://h/x\""),
            "tools.http[0].name: invalid name \"bad name!\"",
        ),
        (
            tool("name = \"k8s_nodes\"\nurl = \"http://h/x\""),
            "tools.http[0].name: \"k8s_nodes\" clashes with a built-in tool",
        ),
        (
            format!(
                "{}{}",
                tool("name = \"a\"\nurl = \"http://h/x\""),
                tool("name = \"a\"\nurl = \"http://h/y\"")
            ),
            "tools.http[1].name: duplicate name \"a\"",
        ),
        (
            tool("name = \"a\"\nurl = \"http://h/{q}\""),
            "tools.http[0].url: placeholder {q} is not declared",
        ),
        (
            format!(
                "{}{ok_params}",
                tool("name = \"a\"\nurl = \"http://{q}/x\"")
            ),
            "tools.http[0].url:",
        ),
        (
            tool("name = \"a\"\nurl = \"not a url\""),
            "tools.http[0].url: invalid URL template",
        ),
        (
            tool("name = \"a\"\nurl = \"http://h/x\"\nheader_name = \"X-Key\""),
            "tools.http[0].header_value: header_name and header_value must be set together",
        ),
        (
            tool("name = \"a\"\nurl = \"http://h/x\"\nmax_bytes = 0"),
            "tools.http[0].max_bytes",
        ),
        (
            tool("name = \"a\"\nurl = \"http://h/x\"\nmethod = \"POST\""),
            "unknown",
        ),
    ];
    for (toml, want) in cases {
        let err = load_err(&toml);
        assert!(err.contains(want), "want {want:?}, got {err:?} for\n{toml}");
    }
}

#[test]
fn homelab_sections_are_validated_naming_the_key() {
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
fn a_bad_kubeconfig_fails_at_registration_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kubeconfig");
    std::fs::write(&kc, "not: [valid").unwrap();
    let toml = format!(
        "[kubernetes]\nenabled = true\nkubeconfig = {:?}\n",
        kc.display().to_string()
    );
    let config = test_config(dir.path(), &toml);
    let mut r = ToolRegistry::new(Arc::new(Metrics::new("m")), 4000);
    let err = format!("{:#}", register_homelab_tools(&mut r, &config).unwrap_err());
    assert!(err.contains("kubernetes.kubeconfig"), "{err}");
}

#[test]
fn build_registry_adds_the_configured_homelab_tools_next_to_the_core_ones() {
    sre_agent::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let toml = "[truenas]\nurl = \"https://nas.lan\"\napi_key = \"k\"\n";
    let config = test_config(dir.path(), toml);
    let r = sre_agent::tools::build_registry(&config, Arc::new(Metrics::new("m"))).unwrap();
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
fn the_commented_homelab_examples_in_config_toml_are_valid_when_uncommented() {
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
