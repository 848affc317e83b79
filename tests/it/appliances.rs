//! Proxmox VE, Proxmox Backup Server and TrueNAS tools against their fakes.

use serde_json::{Value, json};

use crate::support::fake_appliance::{FakeAppliance, pbs_routes, proxmox_routes, truenas_routes};
use crate::support::test_config;
use crate::support::tool_registry::{call, call_err, registry};

async fn proxmox_fake(routes: Vec<(String, Value)>, auth: &str) -> FakeAppliance {
    FakeAppliance::start(routes, auth, json!({"data": null})).await
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
            "proxmox_tasks",
            "proxmox_replication",
            "proxmox_backup_jobs"
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

    let replication = call(&r, "proxmox_replication", json!({})).await;
    assert_eq!(
        replication,
        "pve1 job 100-0 guest 100 -> pve2 schedule=*/15 last_sync=4h0m ago last_try=10m ago \
         fail_count=14 error: No route to host (pve2)",
    );
    let err = call_err(&r, "proxmox_replication", json!({"node": "pve9"})).await;
    assert!(err.contains("no node \"pve9\""), "{err}");

    // The backup jobs, then the guests of the online node none covers.
    let jobs = call(&r, "proxmox_backup_jobs", json!({})).await;
    assert_eq!(
        jobs,
        "job backup-5f2c9a1e-7b3d (schedule 02:00, vmid 100, to local)\n\
         not backed up: pve1/qemu/101 win11 status=stopped: in no enabled job\n\
         not backed up: pve1/qemu/9000 debian-template status=stopped template: in no enabled job\n\
         not backed up: pve1/lxc/200 pihole status=running: in no enabled job",
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
    let fake = FakeAppliance::start(
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
    let fake = FakeAppliance::start(
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
        pools.contains("tank status=DEGRADED, has a problem (One or more devices are faulted"),
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
async fn a_self_signed_proxmox_is_trusted_through_ca_file_or_verify_tls_false_and_refused_otherwise()
 {
    sre_agent::install_crypto_provider();
    let certs = tempfile::tempdir().unwrap();
    if !crate::support::report_external::gen_certs(certs.path()) {
        return;
    }
    let fake = FakeAppliance::start_tls(
        proxmox_routes(),
        "PVEAPIToken=sre@pve!agent=s",
        certs.path(),
    )
    .await;
    let base = format!(
        "[proxmox]\nurl = \"{}\"\ntoken_id = \"sre@pve!agent\"\ntoken_secret = \"s\"\n",
        fake.url
    );
    let ca = certs.path().join("ca.pem");
    for (extra, works) in [
        (format!("ca_file = {:?}\n", ca.display().to_string()), true),
        ("verify_tls = false\n".to_string(), true),
        (String::new(), false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let r = registry(&test_config(dir.path(), &format!("{base}{extra}")));
        let out = r.call("proxmox_nodes", json!({})).await;
        assert_eq!(out.ok, works, "{extra}: {}", out.text);
        if works {
            assert!(out.text.contains("pve1 status=online"), "{}", out.text);
        } else {
            assert!(
                out.text.contains("Proxmox VE at https://127.0.0.1:"),
                "{}",
                out.text
            );
            assert!(
                out.text.to_lowercase().contains("certificate"),
                "{}",
                out.text
            );
        }
    }
}
