//! `inventory` on captured real exporter output (node_exporter and process-exporter on two
//! hosts, one of them down now): the jobs with their targets up and hosts, and the metric
//! families the exporters emit, largest first — what a question about unmeasured things
//! needs to be answered "there is no data for it".

use sre_agent::analyze::{FactClass, Severity};

use super::world::{World, calm, lines, node_host, series};

#[tokio::test]
async fn the_inventory_lists_jobs_with_targets_up_and_hosts_and_the_exporters_metric_families() {
    let mut defs = Vec::new();
    for h in ["elm-1", "elm-2"] {
        let mut host = node_host(h);
        calm(&mut host, h);
        defs.extend(host);
        defs.push(series(
            "up",
            &[("instance", &format!("{h}:9256")), ("job", "process")],
            |_| Some(1.0),
        ));
    }
    defs.push(series(
        "up",
        &[("instance", "elm-1:9100"), ("job", "node")],
        |_| Some(1.0),
    ));
    // elm-2's node_exporter stopped answering ten minutes ago.
    defs.push(series(
        "up",
        &[("instance", "elm-2:9100"), ("job", "node")],
        |ago| Some(if ago < 600 { 0.0 } else { 1.0 }),
    ));
    let Some(world) = World::build(&defs, 7200, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(600)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    let inv: Vec<_> = facts.iter().filter(|f| f.analyzer == "inventory").collect();
    assert_eq!(inv.len(), 1, "{all}");
    let f = inv[0];
    assert_eq!((f.class, f.severity), (FactClass::Context, Severity::Info));
    assert_eq!(f.what, "4 scrape targets in 2 jobs, 3 up", "{all}");
    assert_eq!(f.source.tool, "prometheus_targets");
    let detail = f.detail.as_deref().unwrap_or_default();
    assert!(
        detail.starts_with("jobs: node 1 of 2 up (elm-1, elm-2), process 2 of 2 up (elm-1, elm-2); metric families: node ("),
        "{detail}"
    );
    // process-exporter's families are there too, and nothing the exporters do not emit.
    for family in ["namedprocess (", "go (", "process ("] {
        assert!(detail.contains(family), "{family} in {detail}");
    }
    assert!(!detail.contains("ups"), "{detail}");
}
