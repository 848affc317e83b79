use std::collections::BTreeMap;

use chrono::{DateTime, TimeDelta, Utc};

use super::*;
use crate::analyze::Focus;
use crate::eval::fakes::{FakeServer, loki_router};

type Streams = Vec<(BTreeMap<String, String>, Vec<(i64, String)>)>;

fn stream(host: &str, unit: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("hostname".to_string(), host.to_string()),
        ("unit".to_string(), unit.to_string()),
    ])
}

/// Lines at minutes relative to the alert's start (negative: before it).
fn at_start(started: DateTime<Utc>, entries: &[(i64, &str)]) -> Vec<(i64, String)> {
    entries
        .iter()
        .map(|(m, l)| {
            let t = started + TimeDelta::minutes(*m);
            (t.timestamp_nanos_opt().unwrap(), l.to_string())
        })
        .collect()
}

async fn run(
    streams: Streams,
    focus: Focus,
    now: DateTime<Utc>,
    started: DateTime<Utc>,
) -> Vec<Fact> {
    crate::install_crypto_provider();
    let server = FakeServer::start(loki_router(streams)).await.unwrap();
    let mut config = crate::config::Config::default();
    config.loki.url = Some(server.url.parse().unwrap());
    let upstreams = crate::integrations::Upstreams::from_config(&config).unwrap();
    let scope = Scope::new(now, Some(started)).with_focus(focus);
    LogsElsewhere(upstreams.loki.unwrap())
        .run(&scope)
        .await
        .unwrap()
}

fn fleet(started: DateTime<Utc>) -> Streams {
    let mut chatty: Vec<(i64, String)> = Vec::new();
    for i in 0..12 {
        chatty.extend(at_start(
            started,
            &[(i % 4 - 2, "GET /api/item/4471 200 12ms")],
        ));
    }
    vec![
        // The alert's own host: its lines are logs_at_start's.
        (
            stream("media-2", "jellyfin"),
            at_start(
                started,
                &[(0, "level=error msg=\"stream stalled: /mnt/library\"")],
            ),
        ),
        // A NAS whose bond lost its last link a minute before: no level, few lines.
        (
            stream("nas-east", "kernel"),
            at_start(
                started,
                &[
                    (-90, "nfsd: last server has exited, flushing export cache"),
                    // Half an hour before: the range begins then; routine since.
                    (
                        -31,
                        "bond0: link status definitely up for interface enp4s0, 1000 Mbps full duplex",
                    ),
                    (
                        -1,
                        "bond0: link status definitely down for interface enp3s0, disabling it",
                    ),
                    (-1, "bond0: now running without any active interface!"),
                ],
            ),
        ),
        // A gateway that logged an error two minutes after.
        (
            stream("edge-gw", "dnsmasq"),
            at_start(
                started,
                &[(2, "level=error msg=\"upstream 9.9.9.9 timed out\"")],
            ),
        ),
        // A printer's routine, before and at the start.
        (
            stream("printhub", "cups"),
            at_start(
                started,
                &[
                    (-60, "Job 311 completed."),
                    (-30, "Job 312 completed."),
                    (0, "Job 313 completed."),
                ],
            ),
        ),
        // A busy web host whose many new lines say nothing bad.
        (stream("webhost", "nginx"), chatty),
        // A host that failed long before the start.
        (
            stream("farbox", "app"),
            at_start(started, &[(-50, "level=error msg=\"disk quota exceeded\"")]),
        ),
    ]
}

#[tokio::test]
async fn other_hosts_new_lines_at_the_alerts_start_are_told_nearest_first() {
    let now = Utc::now();
    let started = now - TimeDelta::minutes(30);
    let focus = Focus::alert(
        &BTreeMap::from([("instance".to_string(), "media-2:9100".to_string())]),
        Some(started),
    );
    let facts = run(fleet(started), focus, now, started).await;
    let lines: Vec<String> = facts.iter().map(|f| f.line(now)).collect();
    assert_eq!(facts.len(), 2, "{lines:?}");
    assert_eq!(
        facts[0].entity.host.as_deref(),
        Some("nas-east"),
        "{lines:?}"
    );
    assert!(
        lines[0].contains("bond0: now running without any active interface"),
        "{lines:?}"
    );
    assert!(
        !lines[0].contains("nfsd"),
        "routine before the range: {lines:?}"
    );
    assert_eq!(facts[0].severity, Severity::Info);
    assert_eq!(
        facts[1].entity.host.as_deref(),
        Some("edge-gw"),
        "{lines:?}"
    );
    assert_eq!(facts[1].severity, Severity::Warning);
    assert!(facts.iter().all(|f| f.analyzer == "logs_elsewhere"));
    let all = lines.join("\n");
    for absent in ["media-2", "printhub", "webhost", "farbox"] {
        assert!(!all.contains(absent), "{absent}: {all}");
    }
}

#[tokio::test]
async fn a_question_or_a_large_fleet_reads_nothing() {
    let now = Utc::now();
    let started = now - TimeDelta::minutes(30);
    let facts = run(
        fleet(started),
        Focus::question("why is jellyfin stalling?"),
        now,
        started,
    )
    .await;
    assert!(facts.is_empty(), "{facts:?}");
    let mut big = fleet(started);
    for i in 0..13 {
        big.push((
            stream(&format!("rack{i}"), "app"),
            at_start(started, &[(0, "level=error msg=\"x\"")]),
        ));
    }
    let focus = Focus::alert(
        &BTreeMap::from([("instance".to_string(), "media-2:9100".to_string())]),
        Some(started),
    );
    assert!(run(big, focus, now, started).await.is_empty());
}
