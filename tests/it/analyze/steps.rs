//! The step detector on captured real node_exporter and process-exporter output: of the
//! thousands of series of two calm hosts, the one that stepped on the alerting host is
//! reported (a filesystem remounted read-only, whatever the metric is called), and the
//! other host, where nothing changed, adds nothing.

use chrono::{TimeDelta, Utc};
use sre_agent::analyze::{Focus, Scope, Severity, Sweep};

use super::world::{World, calm, lines, node_host, set};

#[tokio::test]
async fn of_two_calm_captured_hosts_only_the_alerting_hosts_step_is_reported() {
    let mut defs = Vec::new();
    for h in ["oak-1", "oak-2"] {
        let mut host = node_host(h);
        calm(&mut host, h);
        defs.extend(host);
    }
    // oak-1's root filesystem went read-only 20 minutes ago.
    set(
        &mut defs,
        "node_filesystem_readonly",
        &[("instance", "oak-1:9100"), ("mountpoint", "/")],
        |_, ago| Some(if ago <= 1200 { 1.0 } else { 0.0 }),
    );
    let Some(world) = World::build(&defs, 4 * 3600, 60).await else {
        return;
    };
    let now = Utc::now();
    let started = now - TimeDelta::minutes(15);
    let labels = [("instance".to_string(), "oak-1:9100".to_string())]
        .into_iter()
        .collect();
    let scope = Scope::new(now, Some(started)).with_focus(Focus::alert(&labels, Some(started)));
    let sweep = Sweep::of(sre_agent::analyze::prom::analyzers(world.client()));
    let report = sweep.run(scope).await;
    assert!(report.notes.is_empty(), "{:?}", report.notes);
    let facts: Vec<_> = report
        .facts
        .into_iter()
        .filter(|f| f.analyzer == "steps")
        .collect();
    let all = lines(&facts);
    eprintln!("{all}");
    let readonly = facts
        .iter()
        .find(|f| f.entity.name == "node_filesystem_readonly")
        .expect(&all);
    assert_eq!(readonly.entity.host.as_deref(), Some("oak-1"), "{all}");
    assert_eq!(readonly.severity, Severity::Warning);
    assert!(readonly.line(now).contains("mountpoint=/"), "{all}");
    // The capture's steady counters and constant gauges are not steps, on either host.
    assert!(
        facts
            .iter()
            .all(|f| f.entity.name == "node_filesystem_readonly"),
        "{all}"
    );
}
