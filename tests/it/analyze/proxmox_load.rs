//! `proxmox_guests` on nodes whose CPUs are busy: the node's fact names its busiest running
//! guests (by CPUs used), says whether their vCPUs over-commit it and which one started
//! during the window, so an alert about a slow guest on the same node ranks the node's fact
//! above unrelated ones. A quiet node, and a busy node's idle or stopped guests, are not
//! named.

use std::collections::BTreeMap;

use chrono::Utc;
use serde_json::{Value, json};
use sre_agent::analyze::{Focus, Severity, rank};

use super::appliances::{none, one, sweep};
use super::world::lines;
use crate::support::fake_appliance::FakeAppliance;

fn data(v: Value) -> Value {
    json!({ "data": v })
}

/// A running VM as `GET /nodes/{node}/qemu` lists it.
fn vm(id: u32, name: &str, cpus: u32, cpu: f64, uptime: u64) -> Value {
    json!({"vmid": id, "name": name, "status": "running", "uptime": uptime, "cpu": cpu, "cpus": cpus,
        "mem": 2147483648u64, "maxmem": 8589934592u64, "disk": 0, "maxdisk": 34359738368u64,
        "netin": 1, "netout": 2, "diskread": 3, "diskwrite": 4, "pid": 4242})
}

#[tokio::test]
async fn a_busy_node_names_the_guest_that_started_eating_its_cpus_and_ranks_for_an_alert_on_a_neighbour()
 {
    let routes = vec![
        (
            "GET /api2/json/nodes".into(),
            data(json!([
            {"node": "hv-north", "status": "online", "cpu": 0.967, "maxcpu": 24, "mem": 1, "maxmem": 2,
             "uptime": 3_000_000, "type": "node", "id": "node/hv-north"},
            {"node": "hv-south", "status": "online", "cpu": 0.31, "maxcpu": 24, "mem": 1, "maxmem": 2,
             "uptime": 3_000_000, "type": "node", "id": "node/hv-south"}])),
        ),
        (
            "GET /api2/json/nodes/hv-north/qemu".into(),
            data(json!([
                vm(412, "render-batch", 16, 0.99, 40 * 60),
                vm(405, "ledger-api", 6, 0.52, 11 * 86400),
                vm(407, "grafana", 2, 0.03, 11 * 86400),
                {"vmid": 499, "name": "spare", "status": "stopped", "cpus": 8, "cpu": 0, "uptime": 0}
            ])),
        ),
        (
            "GET /api2/json/nodes/hv-north/lxc".into(),
            data(json!([
            {"vmid": "420", "name": "queue-worker", "status": "running", "type": "lxc", "uptime": 500000,
             "cpu": 0.6, "cpus": 4, "mem": 1, "maxmem": 2}])),
        ),
        (
            "GET /api2/json/nodes/hv-south/qemu".into(),
            data(json!([vm(510, "mail-relay", 2, 0.2, 86400),
            {"vmid": 511, "name": "wiki", "status": "stopped", "cpus": 2, "uptime": 0}])),
        ),
        ("GET /api2/json/nodes/hv-south/lxc".into(), data(json!([]))),
        (
            "GET /api2/json/nodes/hv-south/qemu/511/config".into(),
            data(json!({"onboot": 1, "name": "wiki"})),
        ),
        (
            "GET /api2/json/nodes/hv-north/tasks".into(),
            data(json!([])),
        ),
        (
            "GET /api2/json/nodes/hv-south/tasks".into(),
            data(json!([])),
        ),
        (
            "GET /api2/json/nodes/hv-north/storage".into(),
            data(json!([])),
        ),
        (
            "GET /api2/json/nodes/hv-south/storage".into(),
            data(json!([])),
        ),
        (
            "GET /api2/json/nodes/hv-north/replication".into(),
            data(json!([])),
        ),
        (
            "GET /api2/json/nodes/hv-south/replication".into(),
            data(json!([])),
        ),
    ];
    let fake =
        FakeAppliance::start(routes, "PVEAPIToken=ops@pve!sweep=k", json!({"data": null})).await;
    let toml = format!(
        "[proxmox]\nurl = \"{}\"\ntoken_id = \"ops@pve!sweep\"\ntoken_secret = \"k\"\n",
        fake.url
    );
    let (facts, notes, _) = sweep(&toml).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);

    let f = one(&facts, "hv-north");
    assert_eq!(
        (f.what.as_str(), f.severity),
        ("CPU busy", Severity::Warning),
        "{all}"
    );
    assert!((f.value.unwrap().value - 96.7).abs() < 0.01, "{all}");
    // The entity names the node and nothing else (no token, no address).
    assert_eq!(f.entity.labels.keys().collect::<Vec<_>>(), ["node"]);
    let detail = f.detail.as_deref().unwrap();
    assert!(
        detail.starts_with("24 CPUs; guests' vCPUs 28 of 24 (over-committed); busiest running guests: render-batch (VM 412) 16 vCPUs at 99 %, started 40 min ago; "),
        "{detail}"
    );
    let order: Vec<usize> = ["render-batch", "ledger-api", "queue-worker"]
        .iter()
        .map(|g| detail.find(g).unwrap_or_else(|| panic!("{g} in {detail}")))
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{detail}");
    assert!(
        detail.contains("queue-worker (CT 420) 4 vCPUs at 60 %, up 5.8 days"),
        "{detail}"
    );
    for quiet in ["grafana", "spare"] {
        assert!(!detail.contains(quiet), "{detail}");
    }
    none(&facts, "hv-south");
    assert!(!all.contains("secret") && !all.contains("=k"), "{all}");

    // An alert on the ledger API's latency, a guest of the busy node: the node's fact
    // comes before the stopped wiki on the other node.
    let labels = BTreeMap::from([
        ("alertname".to_string(), "LatencyHigh".to_string()),
        ("instance".to_string(), "ledger-api:8080".to_string()),
    ]);
    let ranked = rank(facts.clone(), &Focus::alert(&labels, Some(Utc::now())));
    let at = |name: &str| {
        ranked
            .iter()
            .position(|r| r.fact.entity.name == name)
            .unwrap_or_else(|| panic!("{name}: {all}"))
    };
    assert!(at("hv-north") < at("wiki"), "{all}");
}
