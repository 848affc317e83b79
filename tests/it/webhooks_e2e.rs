//! The real chain: Prometheus rule → Alertmanager → the daemon's webhook → a stored
//! investigation; and kill -9 right after the 2xx, then a restart of the real binary.

use std::time::Duration;

use serde_json::Value;

use crate::support::alerts::{all_final, am_storm, investigations};
use crate::support::external::{start_alertmanager, start_prometheus_alerting};
use crate::support::fake_llm::{FakeLlm, answer, finding_json, tool_calls};
use crate::support::{Daemon, eventually, free_port, spawn_app};

const TOKEN: &str = "am-token";

#[tokio::test]
async fn a_prometheus_alert_routed_by_alertmanager_ends_in_a_stored_investigation() {
    let app = spawn_app(&format!("[webhook]\ntoken = \"{TOKEN}\"\n")).await;
    let Some(am) = start_alertmanager(&app.url("/webhook/alertmanager"), Some(TOKEN)) else {
        return;
    };
    let rules = app.dir.path().join("rules.yml");
    std::fs::write(
        &rules,
        "groups:\n- name: test\n  rules:\n  - alert: AlwaysFiring\n    expr: vector(1) > 0\n    \
         labels: {severity: warning, instance: lab1}\n    annotations: {summary: \"Always firing\"}\n",
    )
    .unwrap();
    let am_addr = am.url.trim_start_matches("http://").to_string();
    let Some(_prom) = start_prometheus_alerting(&[rules], &am_addr) else {
        return;
    };
    let invs = eventually(
        Duration::from_secs(60),
        "an alert investigation",
        || async {
            let invs = investigations(&app.base, None).await;
            (!invs.is_empty()).then_some(invs)
        },
    )
    .await;
    assert_eq!(invs[0]["trigger"], "alert");
    assert!(
        invs[0]["title"]
            .as_str()
            .unwrap()
            .starts_with("AlwaysFiring")
    );
    let group = app
        .state
        .intake
        .store()
        .recent_groups(10, None, sre_agent::alerts::store::Samples::Last)
        .unwrap()
        .groups
        .remove(0);
    assert_eq!(group.last_alert.labels["instance"], "lab1");
    assert!(group.last_alert.generator_url.is_some());
}

fn daemon_config(dir: &std::path::Path, port: u16, llm: &FakeLlm) -> std::path::PathBuf {
    let file = dir.join("config.toml");
    std::fs::write(
        &file,
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\ndata_dir = \"{}\"\n\n[webhook]\ntoken = \"{TOKEN}\"\n\n{}",
            dir.join("data").display(),
            llm.config("")
        ),
    )
    .unwrap();
    file
}

#[tokio::test]
async fn kill_9_right_after_the_2xx_still_investigates_exactly_once() {
    // By turn: a first run cut off after its tool call starts again from the tool call.
    let llm = FakeLlm::start_by_turn(vec![
        tool_calls(&[("call_1", "current_time", "{}")], (10, 5, 0)),
        answer(&finding_json("disk full", "call_1"), (10, 5, 0)),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let config = daemon_config(dir.path(), port, &llm);
    let daemon = Daemon::start(dir.path(), &config, &[]).await;
    let body = serde_json::to_vec(&am_storm(3, 1, "firing")).unwrap();
    let resp = reqwest::Client::new()
        .post(format!("{}/webhook/alertmanager", daemon.base))
        .bearer_auth(TOKEN)
        .body(body)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success());
    daemon.signal("KILL");
    drop(daemon);

    let daemon = Daemon::start(dir.path(), &config, &[]).await;
    let invs = all_final(&daemon.base, None, 1).await;
    assert_eq!(invs.len(), 1, "{invs:?}");
    assert_eq!(invs[0]["status"], "finished", "{:?}", invs[0]);
    let alerts: Value = reqwest::get(format!("{}/api/v1/alerts", daemon.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(alerts["groups"][0]["received"], 3);
    assert_eq!(alerts["groups"][0]["investigation"]["id"], invs[0]["id"]);
}
