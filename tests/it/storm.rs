//! Alert storms through the real binary over HTTP: 200 instances of one Grafana alert
//! become one investigation that names them all (and one bounded re-investigation when
//! more join after it started); later groups attach with outcome `storm`; the storm
//! resolves with its groups, its cooldown holds when it fires again, and it survives a
//! restart. Then a 10,000-alert Alertmanager storm across 1,000 instances.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::alerts::{all_decided, all_final, grafana_storm, investigations};
use crate::support::fake_llm::{FakeLlm, answer, finding_json, tool_calls};
use crate::support::{Daemon, eventually, free_port, metric_value};

fn daemon_config(dir: &Path, port: u16, llm: &FakeLlm) -> PathBuf {
    let file = dir.join("config.toml");
    std::fs::write(
        &file,
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\ndata_dir = \"{}\"\n\n\
             [alerts]\nstorm_hold = \"1s\"\n\n{}",
            dir.join("data").display(),
            llm.config("")
        ),
    )
    .unwrap();
    file
}

fn script() -> Vec<crate::support::fake_llm::Reply> {
    vec![
        tool_calls(&[("call_1", "current_time", "{}")], (10, 5, 0)),
        answer(
            &finding_json("disks filling on many hosts", "call_1"),
            (10, 5, 0),
        ),
    ]
}

async fn post(base: &str, path: &str, body: &Value) -> Value {
    let resp = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .json(body)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    let body: Value = resp.json().await.unwrap();
    if body["deferred"] == true {
        // Answered once on disk (a batch of over 20 alerts): its decisions follow.
        all_decided(base).await;
    }
    body
}

async fn get(base: &str, path: &str) -> Value {
    reqwest::get(format!("{base}{path}"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn storm_outcomes(base: &str, source: &str) -> f64 {
    outcomes(base, source, "storm").await
}

/// `sre_agent_alerts_received_total` of `source` and `outcome`.
async fn outcomes(base: &str, source: &str, outcome: &str) -> f64 {
    let text = reqwest::get(format!("{base}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let series =
        format!(r#"sre_agent_alerts_received_total{{outcome="{outcome}",source="{source}"}}"#);
    metric_value(&text, &series).unwrap_or(0.0)
}

/// The fenced alert data of the first LLM request whose title-less prompt is a storm's and
/// whose data contains `marker`.
fn first_storm_request(llm: &FakeLlm, marker: &str) -> String {
    llm.requests()
        .iter()
        .filter_map(|r| {
            let user = r.messages().iter().find(|m| m["role"] == "user")?;
            let text = user["content"].as_str()?.to_string();
            text.contains("alert storm").then_some(text)
        })
        .map(|text| {
            let start = text
                .find("<data source=\"alert\">")
                .expect("fenced alert data");
            let end = text.rfind("</data>").expect("fence closed");
            assert!(start < end);
            text[start..end].to_string()
        })
        .find(|fenced| fenced.contains(marker))
        .unwrap_or_else(|| panic!("no storm request with {marker}"))
}

async fn the_storm(base: &str) -> Value {
    let storms = get(base, "/api/v1/storms").await;
    assert_eq!(storms["storms"].as_array().unwrap().len(), 1, "{storms}");
    storms["storms"][0].clone()
}

#[tokio::test]
async fn a_200_instance_grafana_storm_is_one_investigation_that_names_every_instance() {
    let llm = FakeLlm::start(script()).await;
    let dir = tempfile::tempdir().unwrap();
    let config = daemon_config(dir.path(), free_port(), &llm);
    let daemon = Daemon::start(dir.path(), &config, &[]).await;
    let base = daemon.base.clone();

    let summary = post(&base, "/webhook/grafana", &grafana_storm(0, 200, "firing")).await;
    assert_eq!(
        (summary["received"].as_u64(), summary["deferred"].as_bool()),
        (Some(200), Some(true))
    );
    assert_eq!(
        the_storm(&base).await["key"],
        r#"{alertname="DiskFillingUp"}"#
    );
    let invs = all_final(&base, None, 1).await;
    assert_eq!(invs.len(), 1, "{invs:?}");
    assert_eq!(invs[0]["title"], "DiskFillingUp on 200 instances");
    let fenced = first_storm_request(&llm, "host[0-199]:9100");
    assert!(fenced.contains("… and 180 more"), "{fenced}");
    assert!(fenced.contains("\"groups\":200"), "{fenced}");

    // 50 more instances join after it finished: they attach, and one re-investigation names all.
    let storm_before = storm_outcomes(&base, "grafana").await;
    let queued_before = outcomes(&base, "grafana", "queued").await;
    post(&base, "/webhook/grafana", &grafana_storm(200, 50, "firing")).await;
    assert_eq!(outcomes(&base, "grafana", "queued").await, queued_before);
    assert_eq!(storm_outcomes(&base, "grafana").await - storm_before, 50.0);
    let invs = all_final(&base, None, 2).await;
    assert_eq!(invs.len(), 2, "{invs:?}");
    assert!(
        invs.iter()
            .any(|i| i["title"] == "DiskFillingUp on 250 instances (re-investigation)")
    );
    first_storm_request(&llm, "host[0-249]:9100");

    // The API shows each group's storm, and the storm with its groups.
    let alerts = get(&base, "/api/v1/alerts?limit=300").await;
    let groups = alerts["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 250);
    assert!(
        groups
            .iter()
            .all(|g| g["storm"]["key"] == r#"{alertname="DiskFillingUp"}"#)
    );
    let storm = the_storm(&base).await;
    assert_eq!(
        (storm["status"].as_str(), storm["members"].as_u64()),
        (Some("firing"), Some(250))
    );

    // Every group resolves: the storm resolves. Firing again within the cooldown: nothing new.
    post(
        &base,
        "/webhook/grafana",
        &grafana_storm(0, 250, "resolved"),
    )
    .await;
    assert_eq!(the_storm(&base).await["status"], "resolved");
    post(&base, "/webhook/grafana", &grafana_storm(0, 250, "firing")).await;
    assert_eq!(the_storm(&base).await["status"], "firing");
    assert_eq!(investigations(&base, None).await.len(), 2);

    // A restart keeps the storm: new groups still attach to it.
    daemon.signal("KILL");
    drop(daemon);
    let daemon = Daemon::start(dir.path(), &config, &[]).await;
    let base = daemon.base.clone();
    let storm = the_storm(&base).await;
    assert_eq!(
        (storm["status"].as_str(), storm["members"].as_u64()),
        (Some("firing"), Some(250))
    );
    let after = post(&base, "/webhook/grafana", &grafana_storm(250, 10, "firing")).await;
    assert_eq!(
        (after["queued"].as_u64(), after["deferred"].as_bool()),
        (Some(0), None),
        "{after}"
    );
    assert_eq!(storm_outcomes(&base, "grafana").await, 10.0);
    assert_eq!(the_storm(&base).await["members"], 260);
    assert_eq!(investigations(&base, None).await.len(), 2);
}

/// An Alertmanager payload of alerts `first..first+n` of `NodeDown` over 1,000 instances.
fn am_alerts(first: usize, n: usize) -> Value {
    let alerts: Vec<Value> = (first..first + n)
        .map(|i| {
            json!({"status": "firing",
                "labels": {"alertname": "NodeDown", "instance": format!("node{}:9100", i % 1000),
                           "replica": i.to_string(), "severity": "critical"},
                "annotations": {"summary": "node down"},
                "startsAt": "2026-11-22T20:45:24.847Z", "endsAt": "0001-01-01T00:00:00Z",
                "generatorURL": "http://prom/graph", "fingerprint": format!("{i:016x}")})
        })
        .collect();
    json!({"version": "4", "status": "firing", "receiver": "sre", "groupKey": "{}:{}",
        "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {},
        "externalURL": "http://am", "truncatedAlerts": 0, "alerts": alerts})
}

#[tokio::test]
async fn a_10000_alert_storm_over_1000_instances_stays_bounded_in_investigations_and_llm_calls() {
    let llm = FakeLlm::start(script()).await;
    let dir = tempfile::tempdir().unwrap();
    let config = daemon_config(dir.path(), free_port(), &llm);
    let daemon = Daemon::start(dir.path(), &config, &[]).await;
    let base = daemon.base.clone();
    for wave in 0..5 {
        let posts = (0..4).map(|j| {
            let body = am_alerts((wave * 4 + j) * 500, 500);
            let base = base.clone();
            async move { post(&base, "/webhook/alertmanager", &body).await }
        });
        for summary in futures::future::join_all(posts).await {
            assert_eq!(summary["received"], 500);
        }
    }
    all_decided(&base).await;
    let invs = all_final(&base, None, 1).await;
    // Let a re-investigation, if one was decided, be submitted and finish too.
    let invs = eventually(std::time::Duration::from_secs(30), "settled", || async {
        let now = all_final(&base, None, invs.len()).await;
        let storm = the_storm(&base).await;
        (storm["investigation"]["status"] != "pending").then_some(now)
    })
    .await;
    assert!(!invs.is_empty() && invs.len() <= 3, "{invs:?}");
    let storm = the_storm(&base).await;
    assert_eq!(storm["members"], 1000);
    assert_eq!(storm["alerts"], 9_996, "all but the 4 before the threshold");
    assert!(storm_outcomes(&base, "alertmanager").await >= 9_996.0);
    assert!(
        llm.requests().len() <= invs.len() * 10,
        "{}",
        llm.requests().len()
    );
    let fenced = first_storm_request(&llm, "node[");
    assert!(fenced.contains("more"), "{fenced}");
}
