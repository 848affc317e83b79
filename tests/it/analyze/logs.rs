//! `log_error_bursts` (alone: `log_changes` has its own tests) against the fake Loki (Loki's wire format and LogQL): the service
//! whose errors rose at the incident's start, among a service that is always noisy, a
//! quiet one and a single stray error.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{TimeDelta, Utc};
use sre_agent::analyze::{Fact, FactClass, Focus, Scope, Sweep, logs};
use sre_agent::config::UpstreamConfig;
use sre_agent::eval::fakes::{FakeServer, LogLine, loki_router};
use sre_agent::integrations::LokiClient;

use super::world::lines;

type Stream = (BTreeMap<String, String>, Vec<LogLine>);

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Lines every `every_secs` from `from_secs` ago until now, written by `line(i)`.
fn lines_every(from_secs: i64, every_secs: i64, line: impl Fn(i64) -> String) -> Vec<LogLine> {
    let now = Utc::now().timestamp_nanos_opt().unwrap();
    let mut out = Vec::new();
    let mut ago = from_secs;
    let mut i = 0;
    while ago > 0 {
        out.push((now - ago * 1_000_000_000, line(i)));
        ago -= every_secs;
        i += 1;
    }
    out
}

async fn sweep(streams: Vec<Stream>, started_secs_ago: i64) -> (Vec<Fact>, Vec<String>) {
    sre_agent::install_crypto_provider();
    let server = FakeServer::start(loki_router(streams)).await.unwrap();
    let config = UpstreamConfig {
        url: Some(server.url.parse().unwrap()),
        ..Default::default()
    };
    let client = Arc::new(LokiClient::new(&config).unwrap());
    let now = Utc::now();
    let scope = Scope::new(now, Some(now - TimeDelta::seconds(started_secs_ago)));
    let report = Sweep::of(vec![Arc::new(logs::LogErrorBursts(client))])
        .run(scope)
        .await;
    (report.facts, report.notes)
}

#[tokio::test]
async fn the_service_whose_errors_rose_at_the_alerts_start_is_reported_with_its_top_error() {
    let svc = |name: &str| {
        labels(&[
            ("service_name", name),
            ("job", "docker"),
            ("host", "node-a"),
        ])
    };
    let mut checkout = lines_every(4200, 10, |i| {
        format!(
            "level=info msg=\"order placed\" order_id={} took={}ms",
            5000 + i,
            i % 90
        )
    });
    // A stray error every 20 minutes, then 40 a minute for the last 8 minutes.
    checkout.extend(lines_every(4200, 1200, |i| {
        format!("level=error msg=\"card declined\" order_id={i}")
    }));
    checkout.extend(lines_every(480, 1, |i| match i % 3 {
        0 | 1 => format!(
            "level=error msg=\"payment gateway timeout\" order_id={} trace={:x}",
            9000 + i,
            0xdead_beef_u64 + i as u64 * 7919
        ),
        _ => format!("level=warn msg=\"retrying payment\" attempt={}", i % 5),
    }));
    let streams = vec![
        (svc("checkout"), checkout),
        // Always noisy: 20 errors a minute for the whole window (worse-looking, no burst).
        (
            svc("inventory"),
            lines_every(4200, 3, |i| {
                format!("ERROR cache refresh failed for sku {}", 100 + i % 50)
            }),
        ),
        (
            svc("frontend"),
            lines_every(4200, 5, |i| format!("GET /health 200 {}ms", i % 7)),
        ),
        // One error three minutes ago.
        (
            svc("postgres"),
            lines_every(180, 600, |_| {
                "FATAL: password authentication failed for user \"app\"".into()
            }),
        ),
    ];
    let (facts, notes) = sweep(streams, 480).await;
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(facts.len(), 1, "{}", lines(&facts));
    let f = &facts[0];
    assert_eq!(f.class, FactClass::Logs);
    assert_eq!(f.entity.name, "checkout");
    assert_eq!(f.entity.labels["service_name"], "checkout");
    let ago = (Utc::now() - f.since.expect("a since")).num_seconds();
    assert!((420..=600).contains(&ago), "{ago} s: {}", lines(&facts));
    let per_min = f.value.unwrap().value * 60.0;
    assert!((30.0..=45.0).contains(&per_min), "{}", lines(&facts));
    let detail = f.detail.as_deref().unwrap();
    assert!(
        detail.contains("payment gateway timeout\" order_id=<n> trace=<hex>"),
        "{detail}"
    );
    assert_eq!(f.source.tool, "loki_query");
    assert!(
        f.source.arguments["query"]
            .as_str()
            .unwrap()
            .starts_with("{service_name=\"checkout\"}")
    );
}

#[tokio::test]
async fn without_a_service_name_label_the_app_label_names_the_service_and_calm_logs_report_nothing()
{
    let pod = |app: &str, pod: &str| {
        labels(&[
            ("namespace", "shop"),
            ("app", app),
            ("pod", pod),
            ("container", app),
        ])
    };
    let burst = lines_every(300, 2, |i| {
        format!("panic: runtime error: index out of range [{i}]")
    });
    let calm = lines_every(4000, 30, |i| format!("served request {i} in 3ms"));
    let (facts, notes) = sweep(
        vec![
            (pod("cart", "cart-7d9f-x2"), burst),
            (pod("web", "web-1"), calm.clone()),
        ],
        300,
    )
    .await;
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(facts.len(), 1, "{}", lines(&facts));
    assert_eq!(facts[0].entity.labels["app"], "cart");
    assert!(
        facts[0]
            .detail
            .as_deref()
            .unwrap()
            .contains("index out of range [<n>]")
    );

    let (facts, _) = sweep(vec![(pod("web", "web-1"), calm)], 300).await;
    assert!(facts.is_empty(), "{}", lines(&facts));
}

#[tokio::test]
async fn a_service_name_with_quotes_and_backslashes_is_escaped_in_the_queries_built_from_it() {
    let name = r#"web "edge" \ 1"#;
    let burst = lines_every(240, 2, |i| format!("upstream connect error id={i}"));
    let (facts, notes) = sweep(vec![(labels(&[("service_name", name)]), burst)], 240).await;
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(facts.len(), 1, "{}", lines(&facts));
    assert_eq!(facts[0].entity.name, name);
    assert!(
        facts[0]
            .detail
            .as_deref()
            .unwrap()
            .contains("upstream connect error id=<n>")
    );
}

#[tokio::test]
async fn an_unreachable_loki_skips_each_analyzer_with_a_note_naming_loki() {
    sre_agent::install_crypto_provider();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = UpstreamConfig {
        url: Some(format!("http://127.0.0.1:{port}").parse().unwrap()),
        ..Default::default()
    };
    let client = Arc::new(LokiClient::new(&config).unwrap());
    let report = Sweep::of(logs::analyzers(client))
        .run(Scope::new(Utc::now(), None))
        .await;
    assert!(report.facts.is_empty());
    assert_eq!(report.notes.len(), 4, "{:?}", report.notes);
    let names = [
        "log_error_bursts",
        "access_status_bursts",
        "admin_commands",
        "log_changes",
    ];
    for (note, name) in report.notes.iter().zip(names) {
        assert!(note.starts_with(&format!("{name}: skipped (")), "{note}");
        assert!(note.contains("Loki"), "{note}");
    }
}

/// A service logging a Java stack trace every 2 s for the last 8 minutes (Spring Boot's
/// console log, one line per entry a millisecond apart) beside a calm one.
fn java_traces() -> Vec<Stream> {
    let svc = |name: &str| labels(&[("service_name", name), ("host", "node-b")]);
    let trace = [
        "2026-11-27T10:00:01.123Z ERROR 1 --- [nio-8080-exec-4] o.a.c.c.C.[.[.[/].[dispatcherServlet]    : Servlet.service() for servlet [dispatcherServlet] threw exception",
        "org.springframework.transaction.CannotCreateTransactionException: Could not open JPA EntityManager for transaction",
        "\tat org.springframework.orm.jpa.JpaTransactionManager.doBegin(JpaTransactionManager.java:466)",
        "\tat org.springframework.transaction.support.AbstractPlatformTransactionManager.startTransaction(AbstractPlatformTransactionManager.java:531)",
        "Caused by: java.sql.SQLTransientConnectionException: HikariPool-1 - Connection is not available, request timed out after 30001ms.",
        "\tat com.zaxxer.hikari.pool.HikariPool.createTimeoutException(HikariPool.java:696)",
        "\t... 12 common frames omitted",
        "Caused by: org.postgresql.util.PSQLException: Connection to orders-db:5432 refused. Check that the hostname and port are correct and that the postmaster is accepting TCP/IP connections.",
        "\tat org.postgresql.core.v3.ConnectionFactoryImpl.openConnectionImpl(ConnectionFactoryImpl.java:342)",
        "\t... 18 common frames omitted",
    ];
    let mut orders = lines_every(4200, 10, |i| {
        format!(
            "2026-11-27T10:00:01.123Z  INFO 1 --- [nio-8080-exec-{}] c.e.orders.OrderController : order {} created",
            i % 10,
            7000 + i
        )
    });
    for (t, _) in lines_every(480, 2, |_| String::new()) {
        orders.extend(
            trace
                .iter()
                .enumerate()
                .map(|(i, l)| (t + i as i64 * 1_000_000, l.to_string())),
        );
    }
    orders.sort_by_key(|(t, _)| *t);
    vec![
        (svc("orders"), orders),
        (
            svc("frontend"),
            lines_every(4200, 5, |i| format!("GET /health 200 {}ms", i % 7)),
        ),
    ]
}

#[tokio::test]
async fn a_burst_of_java_stack_traces_is_quoted_by_the_deepest_cause_not_a_frame_or_header() {
    let (facts, notes) = sweep(java_traces(), 480).await;
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(facts.len(), 1, "{}", lines(&facts));
    let detail = facts[0].detail.as_deref().unwrap();
    assert!(
        detail
            .contains("×): org.postgresql.util.PSQLException: Connection to orders-db:<n> refused"),
        "{detail}"
    );
}

#[tokio::test]
async fn the_log_analyzers_quoting_one_trace_of_one_service_give_one_fact() {
    sre_agent::install_crypto_provider();
    let server = FakeServer::start(loki_router(java_traces())).await.unwrap();
    let config = UpstreamConfig {
        url: Some(server.url.parse().unwrap()),
        ..Default::default()
    };
    let client = Arc::new(LokiClient::new(&config).unwrap());
    let now = Utc::now();
    let start = now - TimeDelta::seconds(480);
    let focus = Focus::alert(
        &labels(&[("alertname", "OrdersErrors"), ("host", "node-b")]),
        Some(start),
    );
    let scope = Scope::new(now, Some(start)).with_focus(focus);
    let report = Sweep::of(logs::analyzers(client))
        .with_time_limit(std::time::Duration::from_secs(150))
        .run(scope)
        .await;
    assert!(report.notes.is_empty(), "{:?}", report.notes);
    let quoting: Vec<&Fact> = report
        .facts
        .iter()
        .filter(|f| f.class == FactClass::Logs)
        .filter(|f| f.detail.as_deref().unwrap_or("").contains("PSQLException"))
        .collect();
    assert_eq!(quoting.len(), 1, "{}", lines(&report.facts));
    let detail = quoting[0].detail.as_deref().unwrap();
    assert!(detail.contains("; also "), "{}", lines(&report.facts));
    assert_eq!(quoting[0].entity.host.as_deref(), Some("node-b"));
}
