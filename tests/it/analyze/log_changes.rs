//! `log_changes` on hours of a homelab's logs in the formats real services write
//! (`log_world`): an incident in one service, in words no error list holds (postfix's
//! `status=deferred … Connection timed out`, a JSON `"level": "warning"` retry storm, a
//! service gone quiet), is found with when it began, and the eight other services, their
//! ids, addresses and paths varying line to line, yield no change at all. When nothing
//! changed, the service a question names gets its rate and patterns as context.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use sre_agent::analyze::{Fact, FactClass, Focus, Scope, Severity, Sweep, logs};
use sre_agent::config::UpstreamConfig;
use sre_agent::eval::fakes::{FakeServer, loki_router};
use sre_agent::integrations::LokiClient;

use super::log_world::{Rng, Stream, cut, homelab, labels, lines, postfix, stream, structlog};
use super::world::lines as render;

async fn sweep(world: Vec<Stream>, scope: Scope) -> Vec<Fact> {
    sweep_within(world, scope, Duration::from_secs(120)).await
}

/// The facts of `log_changes` given `reads_time_limit` for its reads.
async fn sweep_within(world: Vec<Stream>, scope: Scope, reads_time_limit: Duration) -> Vec<Fact> {
    sre_agent::install_crypto_provider();
    let server = FakeServer::start(loki_router(world)).await.unwrap();
    let config = UpstreamConfig {
        url: Some(server.url.parse().unwrap()),
        ..Default::default()
    };
    let client = Arc::new(LokiClient::new(&config).unwrap());
    // The fake Loki scans every line for every query (a debug build, a busy machine): the
    // time limit is the sweep's concern, tested on its own; here every read must finish.
    let analyzer = logs::LogChanges::new(client).with_reads_time_limit(reads_time_limit);
    let started = std::time::Instant::now();
    let report = Sweep::of(vec![Arc::new(analyzer)])
        .with_time_limit(Duration::from_secs(150))
        .run(scope)
        .await;
    eprintln!("log_changes took {:?}", started.elapsed());
    assert!(report.notes.is_empty(), "{:?}", report.notes);
    report.facts
}

/// The scope of a question asked now (the agent looks six hours back).
fn question(text: &str) -> Scope {
    let now = Utc::now();
    Scope::new(now, Some(now - TimeDelta::hours(6))).with_focus(Focus::question(text))
}

/// The scope of an alert with `labels` that began `ago`.
fn alert(pairs: &[(&str, &str)], ago: TimeDelta) -> Scope {
    let now = Utc::now();
    let start = now - ago;
    Scope::new(now, Some(start)).with_focus(Focus::alert(&labels(pairs), Some(start)))
}

fn minutes_ago(t: Option<DateTime<Utc>>) -> i64 {
    (Utc::now() - t.expect("a since")).num_minutes()
}

/// The facts that say something changed (not context).
fn changes(facts: &[Fact]) -> Vec<&Fact> {
    facts
        .iter()
        .filter(|f| f.class != FactClass::Context)
        .collect()
}

#[tokio::test]
async fn mail_deferred_by_a_relay_that_times_out_is_a_new_postfix_pattern_since_it_began() {
    let mut world = homelab(7);
    cut(&mut world, "postfix.service", TimeDelta::minutes(35));
    // The same traffic, but every delivery now waits for a relay that does not answer,
    // and the queue manager retries the deferred mail.
    let deferred = |rng: &mut Rng, t: DateTime<Utc>| {
        let line = postfix(rng, t);
        match line.contains("status=sent") || rng.below(2) == 0 {
            false => line,
            true => format!(
                "postfix/smtp[{}]: {}: to=<ops@example.org>, relay=none, delay={}, delays=0.02/0/{}/0, dsn=4.4.1, status=deferred (connect to smtp.provider.example[203.0.113.25]:587: Connection timed out)",
                1000 + rng.below(9000),
                rng.hex(10),
                30 + rng.below(2000),
                30 + rng.below(2000)
            ),
        }
    };
    stream(&mut world, "postfix.service").extend(lines(
        20,
        TimeDelta::minutes(35),
        TimeDelta::zero(),
        TimeDelta::seconds(20),
        deferred,
    ));
    let facts = sweep(
        world,
        question("What's wrong with the mail relay? Nobody got mail for half an hour."),
    )
    .await;
    let changed = changes(&facts);
    assert!(
        changed.iter().all(|f| f.entity.name == "postfix.service"),
        "only postfix changed:\n{}",
        render(&facts)
    );
    let new = changed
        .iter()
        .find(|f| f.what == "new log pattern")
        .unwrap_or_else(|| panic!("no new pattern:\n{}", render(&facts)));
    let detail = new.detail.as_deref().unwrap();
    assert!(
        detail.contains(
            "status=deferred (connect to smtp.provider.example[203.0.113.25]:587: Connection timed out)"
        ),
        "an example line, its end kept: {detail}"
    );
    assert!(detail.contains("e.g.: postfix/smtp["), "{detail}");
    assert_eq!(new.entity.host.as_deref(), Some("relay1"));
    let ago = minutes_ago(new.since);
    assert!((33..=38).contains(&ago), "{ago} min: {}", render(&facts));
    let count = new.value.unwrap().value;
    assert!((40.0..=120.0).contains(&count), "{}", render(&facts));
    // The query that shows it selects the stream by its labels and the lines by the
    // pattern, escaped for LogQL.
    let query = new.source.arguments["query"].as_str().unwrap();
    assert!(
        query.starts_with(r#"{unit="postfix.service", host="relay1"} |~ ""#),
        "{query}"
    );
    assert_eq!(new.source.tool, "loki_query");
}

#[tokio::test]
async fn a_retry_storm_in_json_logs_is_a_rise_of_the_worker_with_its_new_warning_pattern() {
    let mut world = homelab(3);
    let storm = |rng: &mut Rng, t: DateTime<Utc>| match rng.below(6) {
        0 => structlog(rng, t),
        n => format!(
            "{{\"event\": \"upstream unavailable, retrying\", \"level\": \"warning\", \"timestamp\": \"{}\", \"attempt\": {n}, \"url\": \"http://10.0.2.15:8080/api/thumbnails\", \"error\": \"ConnectError('[Errno 111] Connection refused')\"}}",
            t.format("%Y-%m-%dT%H:%M:%S%.6fZ"),
        ),
    };
    cut(&mut world, "worker.service", TimeDelta::minutes(12));
    stream(&mut world, "worker.service").extend(lines(
        21,
        TimeDelta::minutes(12),
        TimeDelta::zero(),
        TimeDelta::milliseconds(700),
        storm,
    ));
    let scope = alert(
        &[
            ("alertname", "ThumbnailQueueBacklog"),
            ("instance", "docker1:9100"),
        ],
        TimeDelta::minutes(8),
    );
    let facts = sweep(world, scope).await;
    let changed = changes(&facts);
    assert!(
        changed.iter().all(|f| f.entity.name == "worker.service"),
        "{}",
        render(&facts)
    );
    let rise = changed
        .iter()
        .find(|f| f.what == "log lines rose to")
        .unwrap_or_else(|| panic!("no rise:\n{}", render(&facts)));
    assert!(
        (11..=15).contains(&minutes_ago(rise.since)),
        "{}",
        render(&facts)
    );
    let per_min = rise.value.unwrap().value * 60.0;
    assert!((60.0..=110.0).contains(&per_min), "{}", render(&facts));
    // The new pattern is the line the rise quotes: one fact, the rise's, with the
    // pattern's count added.
    assert_eq!(changed.len(), 1, "{}", render(&facts));
    let detail = rise.detail.as_deref().unwrap();
    assert!(
        detail.contains("upstream unavailable, retrying"),
        "{}",
        render(&facts)
    );
    assert!(
        detail.contains("; also new log pattern "),
        "{}",
        render(&facts)
    );
    assert_eq!(
        rise.severity,
        Severity::Warning,
        "its level field says warning"
    );
}

#[tokio::test]
async fn with_no_time_left_for_reading_lines_the_rate_change_alone_is_reported() {
    let mut world = homelab(3);
    cut(&mut world, "worker.service", TimeDelta::minutes(12));
    stream(&mut world, "worker.service").extend(lines(
        22,
        TimeDelta::minutes(12),
        TimeDelta::zero(),
        TimeDelta::milliseconds(500),
        structlog,
    ));
    let scope = alert(&[("alertname", "Backlog")], TimeDelta::minutes(8));
    let facts = sweep_within(world, scope, Duration::ZERO).await;
    assert_eq!(facts.len(), 1, "{}", render(&facts));
    assert_eq!(facts[0].what, "log lines rose to");
    assert_eq!(facts[0].entity.name, "worker.service");
}

#[tokio::test]
async fn a_steady_service_that_falls_silent_is_reported_with_its_last_line() {
    let mut world = homelab(3);
    cut(&mut world, "gitea.service", TimeDelta::minutes(20));
    let last = (Utc::now() - TimeDelta::minutes(20))
        .timestamp_nanos_opt()
        .unwrap();
    stream(&mut world, "gitea.service").push((
        last,
        "ts=2026-11-27T01:02:03.456Z level=info caller=graceful.go:75 msg=\"PID: 812. Background context for manager closed - context canceled - Shutting down...\"".into(),
    ));
    let scope = alert(
        &[
            ("alertname", "ProbeFailed"),
            ("instance", "https://git.home.lan"),
        ],
        TimeDelta::minutes(15),
    );
    let facts = sweep(world, scope).await;
    let changed = changes(&facts);
    assert_eq!(changed.len(), 1, "{}", render(&facts));
    let f = changed[0];
    assert_eq!(f.entity.name, "gitea.service");
    assert!(f.what.starts_with("stopped logging"), "{}", render(&facts));
    assert_eq!(minutes_ago(f.since), 20, "{}", render(&facts));
    assert!(f.detail.as_deref().unwrap().contains("Shutting down"));
}

#[tokio::test]
async fn when_nothing_changed_the_service_a_question_names_gets_its_rate_and_top_patterns() {
    let facts = sweep(homelab(7), question("is the pihole ok? dns feels slow")).await;
    assert!(
        changes(&facts).is_empty(),
        "nothing changed:\n{}",
        render(&facts)
    );
    let f = facts
        .iter()
        .find(|f| f.entity.host.as_deref() == Some("pihole"))
        .unwrap_or_else(|| panic!("no context for the pihole:\n{}", render(&facts)));
    assert_eq!(f.class, FactClass::Context);
    assert_eq!(f.entity.name, "pihole-FTL.service");
    let per_min = f.value.unwrap().value * 60.0;
    assert!((20.0..=40.0).contains(&per_min), "{}", render(&facts));
    let detail = f.detail.as_deref().unwrap();
    assert!(
        ["query[A]", "forwarded", "reply", "cached"]
            .iter()
            .any(|w| detail.contains(w)),
        "{detail}"
    );
    assert!(
        facts.len() <= 3,
        "context is kept to a few services: {}",
        render(&facts)
    );
}

#[tokio::test]
async fn a_python_traceback_logged_line_by_line_is_a_new_pattern_quoted_by_its_exception() {
    let mut world = homelab(3);
    // Celery's worker failing a task, one line per journal entry a millisecond apart.
    let trace = [
        "[2026-11-27 10:00:01,123: ERROR/ForkPoolWorker-2] Task thumbnails.render[8c1f] raised unexpected: OperationalError",
        "Traceback (most recent call last):",
        "  File \"/usr/lib/python3/dist-packages/celery/app/trace.py\", line 477, in trace_task",
        "    R = retval = fun(*args, **kwargs)",
        "  File \"/srv/worker/thumbnails.py\", line 31, in render",
        "    row = db.fetch_one(query, job_id)",
        "  File \"/usr/lib/python3/dist-packages/psycopg2/extras.py\", line 146, in execute",
        "    return super().execute(query, vars)",
        "psycopg2.OperationalError: could not connect to server: Connection refused",
    ];
    let starts = lines(
        22,
        TimeDelta::minutes(12),
        TimeDelta::zero(),
        TimeDelta::seconds(10),
        |_, _| String::new(),
    );
    let worker = stream(&mut world, "worker.service");
    for (t, _) in starts {
        worker.extend(
            trace
                .iter()
                .enumerate()
                .map(|(i, l)| (t + i as i64 * 1_000_000, l.to_string())),
        );
    }
    worker.sort_by_key(|(t, _)| *t);
    let scope = alert(
        &[
            ("alertname", "ThumbnailQueueBacklog"),
            ("instance", "docker1:9100"),
        ],
        TimeDelta::minutes(8),
    );
    let facts = sweep(world, scope).await;
    // Quoted by the rise and as a new pattern: one fact.
    let new: Vec<&Fact> = changes(&facts);
    assert_eq!(new.len(), 1, "{}", render(&facts));
    assert!(
        new.iter().any(|f| f
            .detail
            .as_deref()
            .unwrap()
            .contains("psycopg2.OperationalError: could not connect to server")
            && f.severity >= Severity::Warning),
        "{}",
        render(&facts)
    );
    // Its header, its first line and its frames are no patterns of their own.
    for f in &new {
        let detail = f.detail.as_deref().unwrap();
        assert!(
            !detail.contains("File \"")
                && !detail.contains("Traceback")
                && !detail.contains("raised unexpected"),
            "{}",
            render(&facts)
        );
    }
}
