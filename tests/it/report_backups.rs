//! The weekly report's "Backups and virtualisation" section from the PBS and Proxmox fakes.

use std::sync::Arc;

use serde_json::json;
use sre_agent::report::period::PeriodSpec;
use sre_agent::report::{ReportRequest, Reporter, model::ReportTrigger, render};
use sre_agent::store::Store;
use sre_agent::telemetry::Metrics;

use crate::support::fake_appliance::{FakeAppliance, pbs_routes, proxmox_routes};
use crate::support::test_config;

#[tokio::test]
async fn the_weekly_report_lists_overdue_backups_failed_tasks_and_guests_down() {
    sre_agent::install_crypto_provider();
    let pbs =
        FakeAppliance::start(pbs_routes(), "PBSAPIToken=r@pbs!t:s", json!({"data": null})).await;
    let pve = FakeAppliance::start(
        proxmox_routes(),
        "PVEAPIToken=r@pve!t=s",
        json!({"data": null}),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "[pbs]\nurl = \"{}\"\ntoken_id = \"r@pbs!t\"\ntoken_secret = \"s\"\nbackup_interval = \"2d\"\n\
         [proxmox]\nurl = \"{}\"\ntoken_id = \"r@pve!t\"\ntoken_secret = \"s\"\n",
        pbs.url, pve.url
    );
    let config = test_config(dir.path(), &toml);
    let store = Store::open(&config.server.data_dir).unwrap();
    let metrics = Arc::new(Metrics::new(&config.llm.model));
    let reporter = Reporter::new(
        Arc::new(config.clone()),
        sre_agent::integrations::Upstreams::from_config(&config).unwrap(),
        &store,
        metrics,
    )
    .unwrap();
    let report = reporter
        .run(ReportRequest {
            trigger: ReportTrigger::Cli,
            period: PeriodSpec::Last,
            now: chrono::Utc::now(),
            send: false,
        })
        .await
        .unwrap();

    let h = report
        .data
        .backups
        .as_ref()
        .expect("backups section present");
    assert!(h.notes.is_empty(), "{:?}", h.notes);
    assert_eq!(h.data.backup_groups, 2);
    let overdue: Vec<_> = h
        .data
        .overdue_backups
        .iter()
        .map(|o| o.group.as_str())
        .collect();
    assert_eq!(
        overdue,
        ["ct/200"],
        "vm/100 is an hour old, ct/200 nine days"
    );
    let failed: Vec<_> = h
        .data
        .failed_tasks
        .iter()
        .map(|t| (t.source.as_str(), t.kind.as_str(), t.status.as_str()))
        .collect();
    assert_eq!(
        failed,
        [
            ("pve1", "vzdump", "job errors"),
            (
                "pbs",
                "verificationjob",
                "verification failed - please check the log for details"
            ),
        ]
    );
    let down: Vec<_> = h
        .data
        .guests_down
        .iter()
        .map(|g| format!("{}/{}/{} {}", g.node, g.kind, g.vmid, g.status))
        .collect();
    assert_eq!(down, ["pve1/qemu/101 stopped", "pve2/node/- offline"]);

    let md = render::to_markdown(&report);
    assert!(md.contains("Backups and virtualisation"), "{md}");
    assert!(
        md.contains("1 of 2 backup groups overdue, 2 failed tasks, 2 guests down."),
        "{md}"
    );
    assert!(md.contains("ct/200 (pihole)"), "{md}");
    assert!(
        pbs.requests()
            .iter()
            .any(|r| r.contains("/nodes/localhost/tasks?limit=50&errors=true&since="))
    );
}

#[tokio::test]
async fn without_pbs_or_proxmox_the_report_has_no_backup_section() {
    sre_agent::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(dir.path(), "");
    let store = Store::open(&config.server.data_dir).unwrap();
    let reporter = {
        let upstreams = sre_agent::integrations::Upstreams::from_config(&config).unwrap();
        Reporter::new(
            Arc::new(config),
            upstreams,
            &store,
            Arc::new(Metrics::new("m")),
        )
        .unwrap()
    };
    let report = reporter
        .run(ReportRequest {
            trigger: ReportTrigger::Cli,
            period: PeriodSpec::Last,
            now: chrono::Utc::now(),
            send: false,
        })
        .await
        .unwrap();
    assert!(report.data.backups.is_none());
    assert!(!render::to_markdown(&report).contains("Backups and virtualisation"));
    assert!(
        !serde_json::to_string(&report.data)
            .unwrap()
            .contains("\"backups\"")
    );
}

#[tokio::test]
async fn an_unreachable_pbs_becomes_a_note_naming_the_service() {
    sre_agent::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let port = crate::support::free_port();
    let toml = format!(
        "[pbs]\nurl = \"http://127.0.0.1:{port}\"\ntoken_id = \"r@pbs!t\"\ntoken_secret = \"s\"\n"
    );
    let config = test_config(dir.path(), &toml);
    let store = Store::open(&config.server.data_dir).unwrap();
    let reporter = {
        let upstreams = sre_agent::integrations::Upstreams::from_config(&config).unwrap();
        Reporter::new(
            Arc::new(config),
            upstreams,
            &store,
            Arc::new(Metrics::new("m")),
        )
        .unwrap()
    };
    let report = reporter
        .run(ReportRequest {
            trigger: ReportTrigger::Cli,
            period: PeriodSpec::Last,
            now: chrono::Utc::now(),
            send: false,
        })
        .await
        .unwrap();
    let h = report.data.backups.unwrap();
    assert_eq!(h.notes.len(), 1, "{:?}", h.notes);
    assert!(
        h.notes[0].contains("Proxmox Backup Server at http://127.0.0.1:"),
        "{:?}",
        h.notes
    );
}
