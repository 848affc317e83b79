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
        .header("content-type", "application/json")
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

/// Batch `b` of a storm: NodeDown firing on `per` instances of its own
/// (`host{b*per}` …), one alert each.
fn storm_batch(b: usize, per: usize) -> Vec<u8> {
    let alerts: Vec<Value> = (b * per..(b + 1) * per)
        .map(|i| {
            serde_json::json!({"status": "firing",
                "labels": {"alertname": "NodeDown", "instance": format!("host{i}")},
                "annotations": {"summary": "node down"},
                "startsAt": "2026-11-22T20:45:24.847Z", "endsAt": "0001-01-01T00:00:00Z",
                "fingerprint": format!("{i:016x}")})
        })
        .collect();
    serde_json::to_vec(&serde_json::json!({"version": "4", "status": "firing",
        "receiver": "sre", "groupKey": "{}:{}", "alerts": alerts}))
    .unwrap()
}

#[tokio::test]
async fn kill_9_in_a_storm_loses_no_answered_alert() {
    use futures::StreamExt;
    let llm = FakeLlm::start(vec![answer(
        &finding_json("nodes down", "evidence"),
        (10, 5, 0),
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let config = daemon_config(dir.path(), port, &llm);
    let daemon = Daemon::start(dir.path(), &config, &[]).await;
    let (batches, per) = (40, 25);
    let http = reqwest::Client::new();
    let url = format!("{}/webhook/alertmanager", daemon.base);
    // 8 in flight; killed once 20 are answered, with the rest in flight or not yet sent.
    let mut posts = futures::stream::iter(0..batches)
        .map(|b| {
            let req = http
                .post(&url)
                .bearer_auth(TOKEN)
                .header("content-type", "application/json")
                .body(storm_batch(b, per))
                .send();
            async move { (b, req.await) }
        })
        .buffer_unordered(8);
    let (mut answered, mut deferred) = (Vec::new(), 0);
    while let Some((b, resp)) = posts.next().await {
        let Ok(resp) = resp else { continue };
        if resp.status() == reqwest::StatusCode::ACCEPTED {
            let body: Value = resp.json().await.unwrap();
            assert_eq!(
                (body["deferred"].as_bool(), body["received"].as_u64()),
                (Some(true), Some(per as u64)),
                "{body}"
            );
            deferred += 1;
        } else {
            assert_eq!(resp.status(), reqwest::StatusCode::OK);
        }
        answered.push(b);
        if answered.len() == 20 {
            daemon.signal("KILL");
        }
    }
    assert!(
        answered.len() >= 20 && deferred > 0,
        "{answered:?}, {deferred} deferred"
    );
    drop(daemon);

    // Batches the kill left undecided are decided before the restarted daemon listens.
    let daemon = Daemon::start(dir.path(), &config, &[]).await;
    let alerts: Value = reqwest::get(format!("{}/api/v1/alerts?limit=1000", daemon.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let instances: std::collections::HashSet<&str> = alerts["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["last_alert"]["labels"]["instance"].as_str().unwrap())
        .collect();
    for b in &answered {
        for i in b * per..(b + 1) * per {
            assert!(
                instances.contains(format!("host{i}").as_str()),
                "batch {b}: host{i} missing"
            );
        }
    }
    let metrics = daemon.metrics().await;
    assert!(
        metrics.contains("\nsre_agent_alert_backlog 0\n"),
        "{metrics}"
    );
    let invs = all_final(&daemon.base, None, 1).await;
    assert!(
        invs.len() <= 3,
        "one storm, not one investigation per instance: {invs:?}"
    );
}
