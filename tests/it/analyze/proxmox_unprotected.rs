//! `proxmox_unprotected` against a fake Proxmox VE answering `GET /cluster/backup`, `GET
//! /cluster/resources?type=vm` and `GET /pools/{poolid}` as PVE does: a running guest no
//! job's `vmid` list names and one only a disabled job selects are warnings naming the
//! jobs and their schedules; guests covered by a `vmid` list, by `all` on their node and
//! by a pool say nothing, nor do a stopped guest, a template and a guest excluded on
//! purpose; a covered guest whose newest backup is four nights old is overdue, one
//! without a backup that has run only a day is not; without the job list, PVE's own
//! not-backed-up list is read; a PVE with neither says nothing, and one that refuses both
//! skips with a note.

use chrono::{TimeDelta, Utc};
use serde_json::{Value, json};
use sre_agent::analyze::{Focus, Scope, Severity, Sweep};

use super::appliances::{none, one, sweep};
use super::world::lines;
use crate::support::fake_appliance::FakeAppliance;
use crate::support::test_config;

const AUTH: &str = "PVEAPIToken=ops@pve!audit=k";

fn data(v: Value) -> Value {
    json!({ "data": v })
}

/// A guest as `GET /cluster/resources?type=vm` lists it.
fn res(kind: &str, vmid: u32, name: &str, node: &str, status: &str) -> Value {
    json!({"id": format!("{kind}/{vmid}"), "type": kind, "vmid": vmid, "name": name, "node": node,
        "status": status, "template": 0, "maxcpu": 2, "maxmem": 4294967296u64, "uptime": 86400,
        "cpu": 0.01, "mem": 1073741824u64, "disk": 0, "maxdisk": 34359738368u64})
}

/// A backup as a PBS storage's content lists it.
fn backup(storage: &str, vmid: u32, ctime: i64) -> Value {
    json!({"volid": format!("{storage}:backup/vm/{vmid}/2026-11-23T02:00:05Z"), "content": "backup",
        "format": "pbs-vm", "ctime": ctime, "size": 34359738368u64, "subtype": "qemu", "vmid": vmid,
        "verification": {"state": "ok", "upid": "UPID:pbs:0000:0000:0000:0000:verify::root@pam:"}})
}

fn toml(fake: &FakeAppliance) -> String {
    format!(
        "[proxmox]\nurl = \"{}\"\ntoken_id = \"ops@pve!audit\"\ntoken_secret = \"k\"\n",
        fake.url
    )
}

fn nodes() -> (String, Value) {
    (
        "GET /api2/json/nodes".into(),
        data(json!([
            {"node": "hv-a", "status": "online", "uptime": 900000},
            {"node": "hv-b", "status": "online", "uptime": 900000}
        ])),
    )
}

fn resources() -> (String, Value) {
    let mut template = res("qemu", 9000, "golden-image", "hv-b", "stopped");
    template["template"] = json!(1);
    (
        "GET /api2/json/cluster/resources".into(),
        data(json!([
            res("qemu", 100, "web", "hv-a", "running"),
            res("qemu", 101, "db", "hv-a", "running"),
            res("lxc", 102, "scratch", "hv-a", "running"),
            res("qemu", 110, "mailstore", "hv-b", "running"),
            res("qemu", 111, "ci-old", "hv-b", "stopped"),
            res("qemu", 120, "erp", "hv-b", "running"),
            res("lxc", 121, "wiki", "hv-b", "running"),
            template,
            {"id": "storage/hv-a/local", "type": "storage", "storage": "local", "node": "hv-a"}
        ])),
    )
}

#[tokio::test]
async fn guests_no_enabled_backup_job_selects_are_named_with_the_jobs_and_their_schedules() {
    let t = Utc::now().timestamp();
    let routes = vec![
        nodes(),
        resources(),
        (
            "GET /api2/json/cluster/backup".into(),
            data(json!([
                {"id": "backup-d41c", "type": "vzdump", "schedule": "02:00", "storage": "pbs-main",
                 "mode": "snapshot", "enabled": 1, "vmid": "100,101", "next-run": t + 3600},
                {"id": "backup-a7e2", "type": "vzdump", "schedule": "sun 03:00", "storage": "nfs-bk",
                 "all": 1, "exclude": "102", "node": "hv-a", "enabled": 1, "next-run": t + 86400},
                {"id": "backup-77f0", "type": "vzdump", "schedule": "21:00", "storage": "pbs-main",
                 "pool": "prod", "enabled": 1},
                {"id": "backup-0b19", "type": "vzdump", "schedule": "sat 04:00", "storage": "pbs-main",
                 "vmid": "121", "enabled": 0}
            ])),
        ),
        (
            "GET /api2/json/pools/prod".into(),
            data(json!({"comment": "production", "members": [
                {"id": "qemu/120", "type": "qemu", "vmid": 120, "node": "hv-b", "name": "erp", "status": "running"},
                {"id": "storage/hv-b/tank", "type": "storage", "storage": "tank", "node": "hv-b"}
            ]})),
        ),
    ];
    let mut routes = routes;
    routes.extend([
        (
            // web backed up last night; db's newest is four nights old.
            "GET /api2/json/nodes/hv-a/storage/pbs-main/content".to_string(),
            data(json!([
                backup("pbs-main", 100, t - 5 * 3600),
                backup("pbs-main", 100, t - 29 * 3600),
                backup("pbs-main", 101, t - 96 * 3600)
            ])),
        ),
        (
            "GET /api2/json/nodes/hv-a/storage/nfs-bk/content".to_string(),
            data(json!([backup("nfs-bk", 100, t - 30 * 3600)])),
        ),
        // erp has no backup yet, but has run only a day: not told.
        (
            "GET /api2/json/nodes/hv-b/storage/pbs-main/content".to_string(),
            data(json!([])),
        ),
    ]);
    let fake = FakeAppliance::start(routes, AUTH, json!({"data": null})).await;
    let (facts, notes, now) = sweep(&toml(&fake)).await;
    assert!(
        !notes.iter().any(|n| n.contains("proxmox_unprotected")),
        "{notes:?}"
    );
    let facts: Vec<_> = facts
        .into_iter()
        .filter(|f| f.analyzer == "proxmox_unprotected")
        .collect();
    let all = lines(&facts);
    assert_eq!(facts.len(), 3, "{all}");

    let db = one(&facts, "db");
    assert_eq!(db.what, "backup overdue, last backup");
    assert_eq!(db.severity, Severity::Warning);
    assert_eq!((now - db.since.unwrap()).num_hours(), 96);
    assert_eq!(db.limit.unwrap().value, (78 * 3600) as f64);
    let detail = db.detail.as_deref().unwrap();
    assert!(
        detail.starts_with("newest backup on pbs-main 4.0 days ago, "),
        "{detail}"
    );
    assert!(
        detail.ends_with("; job backup-d41c (schedule 02:00, expected every 24.0 h)"),
        "{detail}"
    );
    assert!(
        fake.requests()
            .iter()
            .any(|r| r == "GET /api2/json/nodes/hv-a/storage/pbs-main/content?content=backup"),
        "{:?}",
        fake.requests()
    );

    let mail = one(&facts, "mailstore");
    assert_eq!(mail.what, "not in any backup job");
    assert_eq!(mail.severity, Severity::Warning);
    assert_eq!(mail.entity.host.as_deref(), Some("hv-b"));
    assert_eq!(mail.entity.labels["vmid"], "110");
    assert_eq!(mail.entity.labels["id"], "qemu/110");
    assert_eq!(mail.source.tool, "proxmox_backup_jobs");
    let detail = mail.detail.as_deref().unwrap();
    assert!(
        detail.starts_with(
            "VM 110, running; no enabled backup job selects it; backup jobs: backup-d41c \
             (schedule 02:00, vmid 100,101, to pbs-main); backup-a7e2 (schedule sun 03:00, all \
             except 102, node hv-a, to nfs-bk);"
        ),
        "{detail}"
    );

    let wiki = one(&facts, "wiki");
    assert_eq!(wiki.what, "only in a disabled backup job");
    assert_eq!(wiki.severity, Severity::Warning);
    assert!(
        wiki.detail
            .as_deref()
            .unwrap()
            .starts_with("container 121, running; selected only by disabled job backup-0b19"),
        "{all}"
    );
    for quiet in ["web", "scratch", "ci-old", "erp", "golden-image"] {
        none(&facts, quiet);
    }
    assert!(
        fake.requests()
            .iter()
            .any(|r| r == "GET /api2/json/cluster/resources?type=vm"),
        "{:?}",
        fake.requests()
    );

    // Asked about the excluded container, the sweep tells it as context.
    sre_agent::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(dir.path(), &toml(&fake));
    let upstreams = sre_agent::integrations::Upstreams::from_config(&config).unwrap();
    let now = Utc::now();
    let scope = Scope::new(now, Some(now - TimeDelta::minutes(5)))
        .with_focus(Focus::question("is scratch backed up?"));
    let report = Sweep::new(&config, &upstreams).run(scope).await;
    let scratch = report
        .facts
        .iter()
        .find(|f| f.analyzer == "proxmox_unprotected" && f.entity.name == "scratch")
        .expect("scratch told");
    assert_eq!(scratch.what, "excluded from backup");
    assert_eq!(scratch.severity, Severity::Info);

    // The tool the facts cite shows the same.
    let r = crate::support::tool_registry::registry(&config);
    let out = crate::support::tool_registry::call(&r, "proxmox_backup_jobs", json!({})).await;
    for line in [
        "job backup-0b19 (schedule sat 04:00, vmid 121, to pbs-main, disabled)",
        "not backed up: hv-a/lxc/102 scratch status=running: excluded by backup-a7e2",
        "not backed up: hv-b/qemu/110 mailstore status=running: in no enabled job",
        "not backed up: hv-b/lxc/121 wiki status=running: only in disabled backup-0b19",
        "backup overdue: hv-a/qemu/101 db: newest backup on pbs-main 4d0h ago (job backup-d41c, schedule 02:00)",
    ] {
        assert!(out.lines().any(|l| l == line), "{line}\n{out}");
    }
}

#[tokio::test]
async fn without_the_job_list_pves_own_list_is_read_and_without_either_nothing_is_said() {
    let not_backed_up = (
        "GET /api2/json/cluster/backup-info/not-backed-up".to_string(),
        data(json!([{"vmid": 110, "name": "mailstore", "type": "qemu"}])),
    );
    let routes = vec![nodes(), resources(), not_backed_up];
    let fake = FakeAppliance::start(routes, AUTH, json!({"data": null})).await;
    let (facts, notes, _) = sweep(&toml(&fake)).await;
    assert!(
        !notes.iter().any(|n| n.contains("proxmox_unprotected")),
        "{notes:?}"
    );
    let mail = one(&facts, "mailstore");
    assert_eq!(mail.analyzer, "proxmox_unprotected");
    assert_eq!(mail.severity, Severity::Warning);
    assert_eq!(mail.entity.host.as_deref(), Some("hv-b"));
    assert_eq!(
        mail.detail.as_deref(),
        Some("VM 110, running; PVE lists it among the guests no backup job selects")
    );

    // Neither list (an old PVE): nothing, and no note.
    let fake = FakeAppliance::start(vec![nodes(), resources()], AUTH, json!({"data": null})).await;
    let (facts, notes, _) = sweep(&toml(&fake)).await;
    assert!(facts.iter().all(|f| f.analyzer != "proxmox_unprotected"));
    assert!(
        !notes.iter().any(|n| n.contains("proxmox_unprotected")),
        "{notes:?}"
    );

    // Both refused: a note says why.
    let fake = FakeAppliance::start(vec![nodes()], AUTH, json!({"data": null})).await;
    fake.set_forbidden(true);
    let (_, notes, _) = sweep(&toml(&fake)).await;
    let note = notes
        .iter()
        .find(|n| n.starts_with("proxmox_unprotected: skipped (backup jobs not readable"))
        .unwrap_or_else(|| panic!("{notes:?}"));
    assert!(note.contains("403"), "{note}");
}
