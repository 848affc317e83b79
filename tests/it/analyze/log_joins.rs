//! Log lines joined to other analyzers' facts, on a real Prometheus and the fake Loki: a
//! failed reload (real Alertmanager output) and a failed systemd unit carry the line their
//! service logged as it failed, and a failing connection's other end, named by address or
//! by name in the client's lines, is found (through node_exporter's `node_uname_info`, a
//! domain suffix aside) and what it logged as the failures began comes with it.

use std::sync::Arc;

use chrono::{TimeDelta, Utc};
use sre_agent::analyze::{Fact, Focus, Resolver, Scope, Sweep, logs, prom};
use sre_agent::config::UpstreamConfig;
use sre_agent::eval::fakes::{FakeServer, LogLine, loki_router};
use sre_agent::integrations::LokiClient;

use super::captured::{When, target};
use super::log_world::{Stream, journal, labels, lines};
use super::world::{SeriesDef, World, series};

fn min(m: i64) -> TimeDelta {
    TimeDelta::minutes(m)
}

/// Lines at `ago` before now (seconds), in order, a second apart.
fn burst(ago: i64, texts: &[&str]) -> Vec<LogLine> {
    let now = Utc::now().timestamp_nanos_opt().unwrap();
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| (now - (ago - i as i64) * 1_000_000_000, t.to_string()))
        .collect()
}

/// The sweep of `analyzers` over `world` and `streams`, with the alert `focus` (labels)
/// that began `started_ago` seconds ago.
async fn sweep(
    world: &World,
    analyzers: Vec<Arc<dyn sre_agent::analyze::Analyzer>>,
    streams: Vec<Stream>,
    focus: &[(&str, &str)],
    started_ago: i64,
) -> (Vec<Fact>, Vec<String>) {
    let server = FakeServer::start(loki_router(streams)).await.unwrap();
    let config = UpstreamConfig {
        url: Some(server.url.parse().unwrap()),
        ..Default::default()
    };
    let loki = Arc::new(LokiClient::new(&config).unwrap());
    let now = Utc::now();
    let started = now - TimeDelta::seconds(started_ago);
    let mut scope = Scope::new(now, Some(started));
    if !focus.is_empty() {
        scope = scope.with_focus(Focus::alert(&labels(focus), Some(started)));
    }
    let mut all = analyzers;
    all.extend(logs::analyzers(loki.clone()));
    let report = Sweep::of(all)
        .with_resolver(Resolver {
            prometheus: Some(world.client()),
            loki: Some(loki),
        })
        .run(scope)
        .await;
    (report.facts, report.notes)
}

fn shown(facts: &[Fact]) -> String {
    super::world::lines(facts)
}

#[tokio::test]
async fn a_failed_reload_and_a_failed_unit_carry_what_their_service_logged_as_it_failed() {
    let t0 = Utc::now().timestamp() as f64;
    // Alertmanager reloaded a broken configuration 7 minutes ago (its real output).
    let always: When = Box::new(|_| true);
    let phases: Vec<(When, &str)> = vec![
        (
            Box::new(|ago| ago < 420),
            "alertmanager_self_failed_reload.prom",
        ),
        (always, "alertmanager_self.prom"),
    ];
    let mut defs: Vec<SeriesDef> = target(
        &[("instance", "mon-2:9093"), ("job", "alertmanager")],
        phases,
    );
    for d in defs.iter_mut().filter(|d| {
        d.name == "alertmanager_config_last_reload_success_timestamp_seconds"
            || d.name == "process_start_time_seconds"
    }) {
        d.value = Box::new(move |_| Some(t0 - 2.0 * 86400.0));
    }
    // Caddy's unit failed 8 minutes ago on web1 (web1.lan to Prometheus).
    for (state, failed) in [("failed", true), ("active", false)] {
        defs.push(series(
            "node_systemd_unit_state",
            &[
                ("instance", "web1.lan:9100"),
                ("job", "node"),
                ("name", "caddy.service"),
                ("state", state),
                ("type", "notify"),
            ],
            move |ago| Some(f64::from(u8::from((ago < 480) == failed))),
        ));
    }
    let Some(world) = World::build(&defs, 2 * 3600, 15).await else {
        return;
    };
    let am_routine = |_: &mut _, _| {
        "time=2026-11-27T20:00:00.000Z level=INFO source=silence.go:512 msg=\"Running maintenance\" component=silences".to_string()
    };
    let mut am = lines(1, min(120), min(0), min(3), am_routine);
    am.extend(burst(
        420,
        &[
            "time=2026-11-27T20:00:00.000Z level=INFO source=coordinator.go:112 msg=\"Loading configuration file\" component=configuration file=/etc/alertmanager/alertmanager.yml",
            "time=2026-11-27T20:00:00.000Z level=ERROR source=coordinator.go:117 msg=\"Loading configuration file failed\" component=configuration file=/etc/alertmanager/alertmanager.yml err=\"yaml: unmarshal errors:\\n  line 12: field recievers not found in type config.plain\"",
        ],
    ));
    let caddy_routine = |_: &mut _, _| {
        r#"{"level":"info","ts":1732737600.1,"logger":"http.log.access","msg":"handled request","status":200}"#.to_string()
    };
    let mut caddy = lines(2, min(120), min(8), min(1), caddy_routine);
    caddy.extend(burst(
        480,
        &[
            "Error: adapting config using caddyfile: /etc/caddy/Caddyfile:12 - Error during parsing: unrecognized directive: reverse_proxyy",
            "caddy.service: Main process exited, code=exited, status=1/FAILURE",
        ],
    ));
    let sshd = lines(3, min(120), min(0), min(5), |_, _| {
        "Accepted publickey for deploy from 10.0.0.9 port 51515 ssh2".to_string()
    });
    let streams = vec![
        (journal("mon-2", "alertmanager.service"), am),
        (journal("web1", "caddy.service"), caddy),
        (journal("web1", "sshd.service"), sshd),
    ];
    let (facts, notes) = sweep(&world, prom::analyzers(world.client()), streams, &[], 420).await;
    assert!(notes.is_empty(), "{notes:?}");
    let failed = facts
        .iter()
        .find(|f| f.what == "config reload failed")
        .unwrap_or_else(|| panic!("{}", shown(&facts)));
    let detail = failed.detail.as_deref().unwrap_or_default();
    assert!(
        detail.contains("running the configuration loaded at"),
        "{detail}"
    );
    assert!(
        detail.contains("its log around") && detail.contains("line 12: field recievers not found"),
        "{}",
        shown(&facts)
    );
    let unit = facts
        .iter()
        .find(|f| f.analyzer == "systemd_failed_units")
        .unwrap_or_else(|| panic!("{}", shown(&facts)));
    let detail = unit.detail.as_deref().unwrap_or_default();
    assert!(
        detail.contains("Caddyfile:12 - Error during parsing")
            && detail.contains("status=1/FAILURE"),
        "{}",
        shown(&facts)
    );
    // sshd's routine lines are no unit's reason.
    assert!(!detail.contains("Accepted publickey"), "{detail}");
}

/// A homelab whose MQTT broker restarted in local-only mode and whose database shut
/// down: the clients' failures name the broker by address and the database by a name with
/// a domain, the brokers' and database's hosts log under their short names.
fn peers_streams() -> Vec<Stream> {
    let z2m_routine = |_: &mut _, _| {
        "Zigbee2MQTT:info  2026-11-27 20:00:00: MQTT publish: topic 'zigbee2mqtt/sensor', payload '{\"temperature\":21.3}'".to_string()
    };
    let mut z2m = lines(4, min(120), min(20), min(1), z2m_routine);
    z2m.extend(lines(5, min(20), min(0), TimeDelta::seconds(10), |_, _| {
        "Zigbee2MQTT:error 2026-11-27 20:01:02: MQTT error: connect ECONNREFUSED 10.0.0.5:1883"
            .to_string()
    }));
    let ha = lines(6, min(20), min(0), TimeDelta::seconds(30), |_, _| {
        "2026-11-27 20:01:02.123 ERROR (MainThread) [homeassistant.components.mqtt.client] Failed to connect to MQTT server due to exception: [Errno 111] Connection refused".to_string()
    });
    let mut broker = lines(7, min(120), min(23), min(2), |rng, _| {
        format!(
            "1732737600: New client connected from 10.0.0.7:{} as z2m (p2, c1, k60).",
            40000 + rng.below(20000)
        )
    });
    broker.extend(burst(
        23 * 60,
        &[
            "1732737600: mosquitto version 2.0.18 terminating",
            "1732737601: mosquitto version 2.0.18 starting",
            "1732737601: Config loaded from /mosquitto/config/mosquitto.conf.",
            "1732737601: Starting in local only mode. Connections will only be possible from clients running on this machine.",
            "1732737601: Create a configuration file which defines a listener to allow remote access.",
            "1732737601: Opening ipv4 listen socket on port 1883.",
            "1732737601: mosquitto version 2.0.18 running",
        ],
    ));
    let mut worker = lines(8, min(120), min(12), min(1), |_, _| {
        "INFO worker: processed batch of 20 jobs".to_string()
    });
    worker.extend(lines(9, min(12), min(0), TimeDelta::seconds(20), |_, _| {
        "psycopg2.OperationalError: connection to server at \"db1.lan\" (10.0.0.8), port 5432 failed: Connection refused".to_string()
    }));
    let mut pg = lines(10, min(120), min(13), min(5), |_, _| {
        "2026-11-27 20:00:00.000 UTC [812] LOG:  checkpoint starting: time".to_string()
    });
    pg.extend(burst(
        13 * 60,
        &[
            "2026-11-27 20:00:00.000 UTC [812] LOG:  received fast shutdown request",
            "2026-11-27 20:00:00.000 UTC [901] FATAL:  the database system is shutting down",
            "2026-11-27 20:00:01.000 UTC [812] LOG:  database system is shut down",
        ],
    ));
    vec![
        (
            labels(&[("host", "hub"), ("container", "zigbee2mqtt")]),
            z2m,
        ),
        (
            labels(&[("host", "hub"), ("container", "homeassistant")]),
            ha,
        ),
        (
            labels(&[("host", "brokerpi"), ("container", "mosquitto")]),
            broker,
        ),
        (labels(&[("host", "app1"), ("container", "worker")]), worker),
        (journal("db1", "postgresql@15-main.service"), pg),
    ]
}

#[tokio::test]
async fn a_failing_connections_other_end_is_found_by_address_or_name_and_what_it_logged_comes_with_it()
 {
    let mut defs = Vec::new();
    for (instance, nodename) in [("10.0.0.5:9100", "brokerpi"), ("10.0.0.7:9100", "hub")] {
        defs.push(series(
            "node_uname_info",
            &[
                ("instance", instance),
                ("job", "node"),
                ("nodename", nodename),
            ],
            |_| Some(1.0),
        ));
    }
    let Some(world) = World::build(&defs, 2 * 3600, 60).await else {
        return;
    };
    let focus = [("host", "hub"), ("container", "zigbee2mqtt")];
    let (facts, notes) = sweep(&world, Vec::new(), peers_streams(), &focus, 15 * 60).await;
    assert!(notes.is_empty(), "{notes:?}");
    let peers: Vec<&Fact> = facts
        .iter()
        .filter(|f| f.analyzer == "connection_peers")
        .collect();
    assert_eq!(peers.len(), 2, "{}", shown(&facts));
    // The client the alert is about first: its broker, by address.
    let mqtt = peers[0];
    assert_eq!(mqtt.what, "connection to 10.0.0.5:1883 refused");
    assert_eq!(mqtt.entity.name, "zigbee2mqtt");
    assert_eq!(mqtt.entity.host.as_deref(), Some("hub"));
    let ago = (Utc::now() - mqtt.since.unwrap()).num_minutes();
    assert!((19..=20).contains(&ago), "{}", shown(&facts));
    let detail = mqtt.detail.as_deref().unwrap();
    assert!(detail.starts_with("brokerpi logged from"), "{detail}");
    assert!(
        detail.contains("Starting in local only mode")
            && detail.contains("version 2.0.18 starting"),
        "{detail}"
    );
    assert!(!detail.contains("New client connected"), "{detail}");
    assert_eq!(
        mqtt.source.arguments["query"].as_str(),
        Some(r#"{host="brokerpi"}"#)
    );
    // The database, by a name with a domain its host's streams do not have.
    let db = peers[1];
    assert_eq!(db.what, "connection to db1.lan:5432 refused");
    assert_eq!(db.entity.host.as_deref(), Some("app1"));
    let detail = db.detail.as_deref().unwrap();
    assert!(
        detail.starts_with("db1 logged from")
            && detail.contains("the database system is shutting down")
            && detail.contains("received fast shutdown request"),
        "{detail}"
    );
    // Home Assistant named no peer: no fact of its own.
    assert!(
        !peers.iter().any(|f| f.entity.name == "homeassistant"),
        "{}",
        shown(&facts)
    );
}
