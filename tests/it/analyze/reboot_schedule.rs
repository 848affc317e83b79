//! `scheduled_reboots` over 15 days of boot times on the captured node_exporter of three
//! hosts (every real series over the last hours): one booted at the same time of day on
//! each of the last six days, the last 100 minutes ago within the incident's window; one
//! rebooted as often at no particular time; one up for a month. Only the first keeps a
//! schedule.

use sre_agent::analyze::{FactClass, Severity};

use super::world::{Capture, SeriesDef, World, lines, of, set};

const DAY: i64 = 86_400;
const HISTORY: i64 = 15 * DAY;
/// The captured background is written for the last hours only (15 days of thousands of
/// series a minute apart is more than the test needs).
const BACKGROUND: i64 = 3 * 3600;

fn node(host: &str) -> Vec<SeriesDef> {
    let mut defs = Capture::load_pair("node_exporter.prom", "node_exporter.after15s.prom", 15.0)
        .series(&format!("{host}:9100"), "node");
    for d in &mut defs {
        let f = std::mem::replace(&mut d.value, Box::new(|_| None));
        d.value = Box::new(move |ago| if ago <= BACKGROUND { f(ago) } else { None });
    }
    defs
}

/// A boot time that moved to each of `boots_ago` (seconds before now) as it came.
fn booted(defs: &mut [SeriesDef], host: &str, boots_ago: Vec<i64>) {
    let t0 = chrono::Utc::now().timestamp();
    let instance = format!("{host}:9100");
    set(
        defs,
        "node_boot_time_seconds",
        &[("instance", &instance)],
        move |_, ago| {
            let boot = boots_ago
                .iter()
                .filter(|b| **b >= ago)
                .min()
                .copied()
                .unwrap_or(30 * DAY);
            Some((t0 - boot) as f64)
        },
    );
}

#[tokio::test]
async fn a_host_booting_at_the_same_time_each_day_keeps_a_schedule_and_irregular_reboots_do_not() {
    let mut defs = Vec::new();
    let mut daily = node("fir-1");
    booted(
        &mut daily,
        "fir-1",
        (0..6).map(|d| d * DAY + 6000 + 60 * (d % 3)).collect(),
    );
    defs.extend(daily);
    let mut irregular = node("fir-2");
    booted(
        &mut irregular,
        "fir-2",
        vec![
            5400,
            DAY + 30_000,
            2 * DAY + 61_000,
            4 * DAY + 12_000,
            5 * DAY + 44_000,
            7 * DAY + 3_000,
        ],
    );
    defs.extend(irregular);
    let mut calm = node("fir-3");
    booted(&mut calm, "fir-3", Vec::new());
    defs.extend(calm);
    let Some(world) = World::build(&defs, HISTORY, 600).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(3600)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    let found = of(&facts, "scheduled_reboots");
    assert_eq!(found.len(), 1, "{all}");
    let f = &found[0];
    assert_eq!(f.entity.name, "fir-1", "{all}");
    assert_eq!((f.class, f.severity), (FactClass::Change, Severity::Info));
    assert!(f.what.contains("every day (6 of the last 6 days"), "{all}");
    assert!(
        f.detail.as_deref().unwrap().ends_with("not a crash"),
        "{all}"
    );
    assert_eq!(f.source.tool, "prometheus_query_range");
}
