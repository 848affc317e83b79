//! Homelab tools against fakes: Kubernetes (real JSON, every path recorded), Proxmox VE,
//! Proxmox Backup Server, TrueNAS, and declarative HTTP tools.

use std::sync::Arc;

use serde_json::{Value, json};
use sre_agent::config::{Config, ConfigSource};
use sre_agent::telemetry::Metrics;
use sre_agent::tools::{ToolRegistry, register_homelab_tools};

use crate::support::fake_homelab::{FakeHomelab, pbs_routes, proxmox_routes, truenas_routes};
use crate::support::fake_kube::FakeKube;
use crate::support::test_config;

fn registry(config: &Config) -> ToolRegistry {
    sre_agent::install_crypto_provider();
    let mut r = ToolRegistry::new(
        Arc::new(Metrics::new("test-model")),
        config.llm.max_tool_output_chars,
    );
    register_homelab_tools(&mut r, config).expect("homelab tools register");
    r
}

async fn call(r: &ToolRegistry, name: &str, args: Value) -> String {
    let out = r.call(name, args).await;
    assert!(out.ok, "{name} failed: {}", out.text);
    out.text
}

async fn call_err(r: &ToolRegistry, name: &str, args: Value) -> String {
    let out = r.call(name, args).await;
    assert!(!out.ok, "{name} should fail: {}", out.text);
    out.text
}

fn load_err(toml: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, toml).unwrap();
    Config::load(&ConfigSource { file: Some(file) })
        .expect_err("config must be rejected")
        .to_string()
}

async fn kube_registry(extra: &str) -> (FakeKube, ToolRegistry, tempfile::TempDir) {
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
async fn every_kubernetes_tool_answers_from_real_json_and_never_requests_secrets_or_configmaps() {
    let (fake, r, _dir) = kube_registry("").await;
    assert_eq!(
        r.names(),
        [
            "k8s_list_pods",
            "k8s_describe_pod",
            "k8s_pod_logs",
            "k8s_events",
            "k8s_nodes",
            "k8s_workloads"
        ]
    );

    let pods = call(
        &r,
        "k8s_list_pods",
        json!({"namespace": "apps", "selector": "app=web"}),
    )
    .await;
    assert!(
        pods.contains("apps/web-7d4b9c-x2x9q phase=Running ready=0/1 restarts=7 node=k3s-node-1"),
        "{pods}"
    );
    assert!(
        pods.contains("waiting[web]=CrashLoopBackOff last[web]=OOMKilled(exit 137)"),
        "{pods}"
    );
    assert!(
        pods.contains("apps/db-0 phase=Running ready=1/1 restarts=0"),
        "{pods}"
    );

    let pod = call(
        &r,
        "k8s_describe_pod",
        json!({"namespace": "apps", "name": "web-7d4b9c-x2x9q"}),
    )
    .await;
    for want in [
        "state=Waiting reason=CrashLoopBackOff",
        "lastState=Terminated reason=OOMKilled exitCode=137",
        "requests[cpu=250m,memory=128Mi] limits[memory=256Mi]",
        "conditions: Ready=False(ContainersNotReady)",
        "Warning BackOff Pod/apps/web-7d4b9c-x2x9q",
        "controlled by ReplicaSet web-7d4b9c",
    ] {
        assert!(pod.contains(want), "missing {want:?} in:\n{pod}");
    }
    for secret in [
        "hunter2",
        "DB_PASSWORD",
        "API_KEY",
        "web-secrets",
        "web-config",
    ] {
        assert!(!pod.contains(secret), "{secret:?} leaked:\n{pod}");
    }

    let logs = call(
        &r,
        "k8s_pod_logs",
        json!({"namespace": "apps", "name": "web-7d4b9c-x2x9q", "previous": true, "tail": 100}),
    )
    .await;
    assert!(
        logs.contains("WARN upstream db timeout after 5000ms (attempt 0) [×40 similar]"),
        "{logs}"
    );
    assert!(
        logs.ends_with("fatal: out of memory allocating 268435456 bytes"),
        "{logs}"
    );

    let events = call(
        &r,
        "k8s_events",
        json!({"namespace": "apps", "warnings_only": true}),
    )
    .await;
    assert!(
        events.contains(
            "Warning BackOff Pod/apps/web-7d4b9c-x2x9q: Back-off restarting failed container web"
        ),
        "{events}"
    );
    assert!(events.contains("(×31)"), "{events}");

    let nodes = call(&r, "k8s_nodes", json!({})).await;
    assert!(
        nodes.contains("k3s-node-1 Ready=True pressure=[MemoryPressure]"),
        "{nodes}"
    );
    assert!(nodes.contains("cpu requested 1250m/4000m (31%)"), "{nodes}");

    let workloads = call(&r, "k8s_workloads", json!({"namespace": "apps"})).await;
    assert!(
        workloads.contains("deployment apps/web desired=2 ready=1 updated=2 available=1 NOT READY"),
        "{workloads}"
    );
    assert!(
        workloads.contains("statefulset apps/db desired=1 ready=1"),
        "{workloads}"
    );
    assert!(
        workloads.contains("daemonset apps/node-exporter desired=1 ready=1"),
        "{workloads}"
    );

    let paths = fake.paths();
    assert!(
        paths
            .iter()
            .any(|p| p.contains("/log?") && p.contains("previous=true")),
        "{paths:?}"
    );
    assert!(
        paths.iter().any(|p| p.contains("labelSelector=app%3Dweb")),
        "{paths:?}"
    );
    let touched: Vec<_> = paths
        .iter()
        .filter(|p| p.contains("/secrets") || p.contains("/configmaps"))
        .collect();
    assert!(touched.is_empty(), "requested {touched:?}");
}

#[tokio::test]
async fn a_namespace_outside_the_allow_list_is_refused_without_asking_the_api() {
    let (fake, r, _dir) = kube_registry("namespaces = [\"apps\"]\n").await;
    for (tool, args) in [
        ("k8s_list_pods", json!({"namespace": "kube-system"})),
        (
            "k8s_describe_pod",
            json!({"namespace": "kube-system", "name": "coredns"}),
        ),
        (
            "k8s_pod_logs",
            json!({"namespace": "kube-system", "name": "coredns"}),
        ),
        ("k8s_events", json!({"namespace": "kube-system"})),
        ("k8s_workloads", json!({"namespace": "kube-system"})),
    ] {
        let err = call_err(&r, tool, args).await;
        assert!(
            err.contains("namespace \"kube-system\" is not allowed"),
            "{tool}: {err}"
        );
    }
    assert!(fake.paths().is_empty(), "{:?}", fake.paths());
    call(&r, "k8s_list_pods", json!({})).await;
    assert_eq!(fake.paths(), ["/api/v1/namespaces/apps/pods?"]);
}

#[tokio::test]
async fn a_kubernetes_403_names_the_missing_verb_resource_and_namespace() {
    let (fake, r, _dir) = kube_registry("").await;
    fake.set_forbidden(true);
    let err = call_err(&r, "k8s_list_pods", json!({"namespace": "apps"})).await;
    assert!(
        err.contains("needs verb \"list\" on resource \"pods\" in namespace \"apps\""),
        "{err}"
    );
    assert!(err.contains("rbac.yaml"), "{err}");
    let err = call_err(
        &r,
        "k8s_pod_logs",
        json!({"namespace": "apps", "name": "web"}),
    )
    .await;
    assert!(
        err.contains("verb \"get\" on resource \"pods/log\" in namespace \"apps\""),
        "{err}"
    );
    let err = call_err(&r, "k8s_nodes", json!({})).await;
    assert!(
        err.contains("verb \"list\" on resource \"nodes\" (all namespaces)"),
        "{err}"
    );
    for tool in ["k8s_describe_pod", "k8s_events", "k8s_workloads"] {
        let args = json!({"namespace": "apps", "name": "web"});
        let args = if tool == "k8s_describe_pod" {
            args
        } else {
            json!({"namespace": "apps"})
        };
        let err = call_err(&r, tool, args).await;
        assert!(err.contains("403 Forbidden"), "{tool}: {err}");
    }
}

#[tokio::test]
async fn pod_logs_are_capped_by_the_tool_output_budget_keeping_the_newest_lines() {
    let (_fake, r, _dir) = kube_registry("[llm]\nmax_tool_output_chars = 200\n").await;
    let logs = call(
        &r,
        "k8s_pod_logs",
        json!({"namespace": "apps", "name": "web-7d4b9c-x2x9q"}),
    )
    .await;
    assert!(logs.chars().count() <= 200, "{logs}");
    assert!(
        logs.starts_with("[1 earlier line groups omitted]"),
        "{logs}"
    );
    assert!(logs.contains("[×40 similar]"), "{logs}");
    assert!(
        logs.ends_with("fatal: out of memory allocating 268435456 bytes"),
        "{logs}"
    );
}

async fn proxmox_fake(routes: Vec<(String, Value)>, auth: &str) -> FakeHomelab {
    FakeHomelab::start(routes, auth, json!({"data": null})).await
}

#[tokio::test]
async fn proxmox_tools_summarise_nodes_guests_storage_and_failed_tasks() {
    let fake = proxmox_fake(proxmox_routes(), "PVEAPIToken=sre@pve!agent=s3cr3t").await;
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "[proxmox]\nurl = \"{}\"\ntoken_id = \"sre@pve!agent\"\ntoken_secret = \"s3cr3t\"\n",
        fake.url
    );
    let r = registry(&test_config(dir.path(), &toml));
    assert_eq!(
        r.names(),
        [
            "proxmox_nodes",
            "proxmox_guests",
            "proxmox_storage",
            "proxmox_tasks"
        ]
    );

    let nodes = call(&r, "proxmox_nodes", json!({})).await;
    assert!(
        nodes.contains(
            "pve1 status=online cpu=5.2% of 8 cores memory=12.0 GiB/31.2 GiB (38.4%) uptime=10d0h"
        ),
        "{nodes}"
    );
    assert!(nodes.contains("pve2 status=offline"), "{nodes}");
    let guests = call(&r, "proxmox_guests", json!({"node": "pve1"})).await;
    assert!(
        guests.contains("pve1/qemu/100 k3s-master status=running uptime=1d0h"),
        "{guests}"
    );
    assert!(
        guests.contains("pve1/qemu/101 win11 status=stopped uptime=-"),
        "{guests}"
    );
    assert!(
        guests.contains("pve1/lxc/200 pihole status=running uptime=1h0m"),
        "{guests}"
    );
    assert!(
        !guests.contains("debian-template"),
        "templates are not guests: {guests}"
    );
    let err = call_err(&r, "proxmox_guests", json!({"node": "pve9"})).await;
    assert!(err.contains("no node \"pve9\"; nodes: pve1, pve2"), "{err}");
    let storage = call(&r, "proxmox_storage", json!({})).await;
    assert!(
        storage.contains("pve1/local-zfs type=zfspool active=true used=1.6 TiB/1.7 TiB (95.1%)"),
        "{storage}"
    );
    let tasks = call(
        &r,
        "proxmox_tasks",
        json!({"errors_only": true, "since": 0}),
    )
    .await;
    assert!(
        tasks.contains("pve1 vzdump 100 (3m) by root@pam started 2h0m ago, status: job errors"),
        "{tasks}"
    );
    assert!(!tasks.contains("qmstart"), "{tasks}");
    assert!(
        fake.requests()
            .iter()
            .any(|q| q.contains("/tasks?limit=50&errors=1&since=0")),
        "{:?}",
        fake.requests()
    );

    fake.set_forbidden(true);
    let err = call_err(&r, "proxmox_nodes", json!({})).await;
    assert!(err.contains("Proxmox VE at"), "{err}");
    assert!(err.contains("returned 403"), "{err}");
    assert!(
        err.contains("needs the PVEAuditor role (Sys.Audit, VM.Audit, Datastore.Audit)"),
        "{err}"
    );
    assert!(!err.contains("s3cr3t"), "{err}");
}

#[tokio::test]
async fn pbs_tools_show_datastores_backup_ages_and_failed_tasks() {
    let fake = FakeHomelab::start(
        pbs_routes(),
        "PBSAPIToken=sre@pbs!agent:pbs-secret",
        json!({"data": null, "message": "permission check failed"}),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "[pbs]\nurl = \"{}\"\ntoken_id = \"sre@pbs!agent\"\ntoken_secret = \"pbs-secret\"\n",
        fake.url
    );
    let r = registry(&test_config(dir.path(), &toml));
    let stores = call(&r, "pbs_datastores", json!({})).await;
    assert!(
        stores.contains("backup used=2.0 TiB/3.6 TiB (55.0%) full in ~"),
        "{stores}"
    );
    assert!(
        stores.contains("last GC: removed 1.0 GiB pending 2.0 GiB"),
        "{stores}"
    );
    let backups = call(&r, "pbs_backups", json!({})).await;
    let lines: Vec<&str> = backups.lines().collect();
    assert!(
        lines[0].starts_with("backup:ct/200 last snapshot 9d0h ago"),
        "{backups}"
    );
    assert!(
        lines[1].starts_with("backup:vm/100 last snapshot 1h0m ago"),
        "{backups}"
    );
    assert!(lines[1].ends_with("snapshots=14 (k3s-master)"), "{backups}");
    let tasks = call(&r, "pbs_tasks", json!({"errors_only": true})).await;
    assert_eq!(
        tasks,
        "verificationjob backup:v-3b7f by root@pam started 1h30m ago, status: verification failed - please check the log for details"
    );
    fake.set_forbidden(true);
    let err = call_err(&r, "pbs_backups", json!({})).await;
    assert!(
        err.contains("Proxmox Backup Server at") && err.contains("returned 403"),
        "{err}"
    );
    assert!(
        err.contains("needs the Audit role (Datastore.Audit"),
        "{err}"
    );
}

#[tokio::test]
async fn truenas_tools_show_pool_health_active_alerts_and_disk_smart_results() {
    let fake = FakeHomelab::start(
        truenas_routes(),
        "Bearer 1-truenaskey",
        json!({"message": "Not authorized"}),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "[truenas]\nurl = \"{}\"\napi_key = \"1-truenaskey\"\n",
        fake.url
    );
    let r = registry(&test_config(dir.path(), &toml));
    let pools = call(&r, "truenas_pools", json!({})).await;
    assert!(
        pools.contains("tank status=DEGRADED healthy=false (One or more devices are faulted"),
        "{pools}"
    );
    assert!(
        pools.contains("(65.6%) last scrub: finished errors=0"),
        "{pools}"
    );
    let alerts = call(&r, "truenas_alerts", json!({})).await;
    let lines: Vec<&str> = alerts.lines().collect();
    assert_eq!(lines.len(), 2, "dismissed alerts are left out: {alerts}");
    assert!(
        lines[0].starts_with("CRITICAL VolumeStatus (2h0m ago): Pool tank state is DEGRADED"),
        "{alerts}"
    );
    assert!(
        lines[1].starts_with("WARNING ZpoolCapacityWarning"),
        "{alerts}"
    );
    let disks = call(&r, "truenas_disks", json!({})).await;
    assert!(disks.contains("sda HDD ST4000VN008-2DR166 3.6 TiB pool=tank temperature=41°C last SMART test=Short offline SUCCESS"), "{disks}");
    assert!(disks.contains("sdb HDD ST4000VN008-2DR166 3.6 TiB pool=tank temperature=n/a last SMART test=Extended offline FAILED (Completed: read failure)"), "{disks}");
    fake.set_forbidden(true);
    let err = call_err(&r, "truenas_pools", json!({})).await;
    assert!(
        err.contains("TrueNAS at") && err.contains("returned 403"),
        "{err}"
    );
    assert!(err.contains("READONLY_ADMIN"), "{err}");
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

#[tokio::test]
async fn tls_options_reach_the_client_and_verify_tls_false_is_accepted() {
    let fake = proxmox_fake(proxmox_routes(), "PVEAPIToken=sre@pve!agent=s").await;
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "[proxmox]\nurl = \"{}\"\ntoken_id = \"sre@pve!agent\"\ntoken_secret = \"s\"\nverify_tls = false\n",
        fake.url
    );
    let config = test_config(dir.path(), &toml);
    assert!(config.enabled_integrations().contains(&"proxmox"));
    let r = registry(&config);
    call(&r, "proxmox_nodes", json!({})).await;
}

#[test]
fn the_shipped_rbac_grants_only_read_verbs_and_never_secrets_or_configmaps() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/kubernetes/rbac.yaml"
    ))
    .unwrap();
    let rules: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .collect();
    for l in rules.iter().filter(|l| l.starts_with("verbs:")) {
        assert_eq!(*l, "verbs: [\"get\", \"list\", \"watch\"]");
    }
    let resources: String = rules
        .iter()
        .filter(|l| l.starts_with("resources:"))
        .copied()
        .collect();
    for needed in [
        "\"pods\"",
        "\"pods/log\"",
        "\"events\"",
        "\"nodes\"",
        "\"namespaces\"",
        "\"deployments\"",
        "\"statefulsets\"",
        "\"daemonsets\"",
        "\"replicasets\"",
    ] {
        assert!(resources.contains(needed), "{needed} missing");
    }
    assert!(!resources.contains("secrets") && !resources.contains("configmaps"));
    assert!(text.contains("kind: ServiceAccount") && text.contains("kind: ClusterRoleBinding"));
}
