//! `trigger_onset` on a real Prometheus beside two calm captured node_exporter hosts: an
//! alert on one queue of an application's exporter fired an hour ago, its backlog began
//! to grow five hours ago (and the failures it counts with it); the series that carry the
//! alert's labels say so, a sibling queue and a noisy one do not, and an alert whose labels
//! name a whole host (hundreds of series) reads none.

use std::collections::BTreeMap;

use chrono::{TimeDelta, Utc};
use sre_agent::analyze::{Fact, Focus, Scope, Severity, Sweep};

use super::world::{SeriesDef, World, calm_hosts, lines, series};

fn alert(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn onsets(facts: Vec<Fact>) -> Vec<Fact> {
    facts
        .into_iter()
        .filter(|f| f.analyzer == "trigger_onset")
        .collect()
}

fn world_defs() -> Vec<SeriesDef> {
    let mut defs = calm_hosts(&["kiln-1", "kiln-2"]);
    let app = |queue: &'static str| {
        [
            ("instance", "kiln-2:9300"),
            ("job", "renderq"),
            ("queue", queue),
        ]
    };
    // The backlog: 0 until 5 h ago, then 40 jobs more an hour.
    defs.push(series("jobs_waiting", &app("render"), |ago| {
        Some(if ago > 5 * 3600 {
            0.0
        } else {
            (5 * 3600 - ago) as f64 / 90.0
        })
    }));
    // Failures counted from the same moment, 0.2 a second.
    defs.push(series("jobs_failed_total", &app("render"), |ago| {
        Some(if ago > 5 * 3600 {
            12.0
        } else {
            12.0 + 0.2 * (5 * 3600 - ago) as f64
        })
    }));
    // A sibling queue, steady, and a noisy one.
    defs.push(series("jobs_waiting", &app("thumbs"), |_| Some(3.0)));
    defs.push(series("jobs_waiting", &app("audio"), |ago| {
        Some(if (ago / 60) % 2 == 0 { 10.0 } else { 40.0 })
    }));
    defs
}

#[tokio::test]
async fn the_series_of_an_alerts_labels_tell_when_the_trouble_began_and_no_other_does() {
    let Some(world) = World::build(&world_defs(), 8 * 3600, 60).await else {
        return;
    };
    let sweep = Sweep::of(sre_agent::analyze::prom::analyzers(world.client()));
    let now = Utc::now();
    let started = now - TimeDelta::hours(1);
    let run = |labels: BTreeMap<String, String>| {
        let scope = Scope::new(now, Some(started)).with_focus(Focus::alert(&labels, Some(started)));
        sweep.run(scope)
    };

    let render = alert(&[
        ("alertname", "RenderBacklog"),
        ("instance", "kiln-2:9300"),
        ("job", "renderq"),
        ("queue", "render"),
        ("severity", "warning"),
    ]);
    let facts = onsets(run(render).await.facts);
    let all = lines(&facts);
    eprintln!("{all}");
    assert_eq!(facts.len(), 2, "{all}");
    for f in &facts {
        assert_eq!(f.severity, Severity::Warning, "{all}");
        assert_eq!(f.entity.host.as_deref(), Some("kiln-2"), "{all}");
        let since = f.since.expect("an onset");
        let off = (since - (now - TimeDelta::hours(5))).num_minutes().abs();
        assert!(off <= 15, "onset {since} is {off} min from 5 h ago: {all}");
    }
    let failed = facts
        .iter()
        .find(|f| f.entity.name == "jobs_failed_total")
        .expect(&all);
    assert!(failed.line(now).contains("rose to 0.2/s"), "{all}");

    // The steady and the noisy queue left no level; a host's labels are too broad.
    for quiet in [
        alert(&[("instance", "kiln-2:9300"), ("queue", "thumbs")]),
        alert(&[("instance", "kiln-2:9300"), ("queue", "audio")]),
        alert(&[
            ("alertname", "HostBusy"),
            ("instance", "kiln-1:9100"),
            ("job", "node"),
        ]),
    ] {
        let facts = onsets(run(quiet.clone()).await.facts);
        assert!(facts.is_empty(), "{quiet:?}: {}", lines(&facts));
    }
}
