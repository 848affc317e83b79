//! The weekly report end to end: a real Prometheus with a backfilled week (numbers checked
//! against expected.json), Loki/Grafana/LLM fakes, the real SMTP sink, failure notes,
//! the fallback summary, exactly-once delivery per period and catch-up.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sre_agent::report::model::{HygieneIssue, Report, ReportStatus, ReportTrigger};
use sre_agent::report::period::PeriodSpec;
use sre_agent::report::{ReportRequest, Reporter};
use sre_agent::schedule;
use sre_agent::store::Store;
use sre_agent::telemetry::Metrics;

use crate::support::report_external::{
    gen_certs, mails, start_backfilled_prometheus, start_smtp_sink,
};
use crate::support::report_fakes::{InFlight, start_grafana, start_llm, start_loki};
use crate::support::{eventually, metric_value, spawn_app, test_config};

fn reporter(dir: &std::path::Path, toml: &str) -> (Reporter, Arc<Metrics>, Store) {
    sre_agent::install_crypto_provider();
    let config = test_config(dir, toml);
    let store = Store::open(&config.server.data_dir).unwrap();
    let metrics = Arc::new(Metrics::new(&config.llm.model));
    let r = Reporter::new(
        Arc::new(config.clone()),
        sre_agent::integrations::Upstreams::from_config(&config).unwrap(),
        &store,
        metrics.clone(),
    )
    .unwrap();
    (r, metrics, store)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9_f64.max(b.abs() * 1e-6)
}

fn expected_value(expected: &Value, query: &str, label: &str, name: &str) -> f64 {
    expected["queries"][query]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["metric"][label] == name)
        .unwrap_or_else(|| panic!("{query} has no {label}={name}"))["value"]
        .as_f64()
        .unwrap()
}

fn parse_mail(path: &std::path::Path) -> (String, String, String) {
    let raw = std::fs::read(path).unwrap();
    use mail_parser::MimeHeaders as _;
    let msg = mail_parser::MessageParser::default().parse(&raw).unwrap();
    let ctype = msg
        .content_type()
        .map(|c| format!("{}/{}", c.ctype(), c.subtype().unwrap_or_default()))
        .unwrap_or_default();
    (
        msg.subject().unwrap_or_default().to_string(),
        ctype,
        msg.body_text(0).unwrap_or_default().replace("\r\n", "\n"),
    )
}

/// The fake model's narrative: markdown, with a heading, emphasis, a list and raw HTML.
const NARRATIVE: &str = "# Weekly summary\n\nThe week was **mostly calm**.\n\n\
                         - DiskFillingUp on pve1 needs space.\n- <script>alert(1)</script>";

/// No markdown syntax left as text: no line starting with `#`, no `**`.
fn assert_no_raw_markdown(part: &str, body: &str) {
    for line in body.lines() {
        assert!(!line.trim_start().starts_with('#'), "{part}: {line}");
    }
    assert!(!body.contains("**"), "{part}: {body}");
}

fn html_part(path: &std::path::Path) -> String {
    let raw = std::fs::read(path).unwrap();
    let msg = mail_parser::MessageParser::default().parse(&raw).unwrap();
    msg.body_html(0).unwrap_or_default().into_owned()
}

/// The inline image parts of a message: (Content-ID without <>, bytes).
fn inline_images(path: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    use mail_parser::MimeHeaders as _;
    let raw = std::fs::read(path).unwrap();
    let msg = mail_parser::MessageParser::default().parse(&raw).unwrap();
    msg.parts
        .iter()
        .filter(|p| p.content_type().is_some_and(|c| c.ctype() == "image"))
        .map(|p| {
            let cid = p.content_id().unwrap_or_default();
            (
                cid.trim_matches(['<', '>']).to_string(),
                p.contents().to_vec(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_backfilled_week_gives_the_known_numbers_in_one_emailed_report_with_one_llm_call() {
    let Some((prom, expected)) = start_backfilled_prometheus() else {
        return;
    };
    let certs = tempfile::tempdir().unwrap();
    if !gen_certs(certs.path()) {
        return;
    }
    let Some(sink) = start_smtp_sink(Some(certs.path()), Some("reporter:secret")) else {
        return;
    };
    let inflight = InFlight::default();
    let delay = Duration::from_millis(300);
    let loki = start_loki(&inflight, delay).await;
    let grafana = start_grafana(&inflight, delay).await;
    let llm = start_llm(&inflight, delay, NARRATIVE).await;
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        r#"
[prometheus]
url = "{prom}"
[loki]
url = "{loki}"
[grafana]
url = "{grafana}"
token = "glsa_test"
[llm]
base_url = "{llm}"
api_key = "sk-test"
[report]
recipients = ["Ops <ops@example.org>"]
[smtp]
host = "localhost"
port = {port}
security = "starttls"
username = "reporter"
password = "secret"
from = "sre-agent <sre-agent@example.org>"
ca_file = "{ca}"
timeout = "10s"
[[slos]]
name = "Web availability"
query = 'avg_over_time(probe_success{{job="blackbox"}}[$__range])'
objective = 0.99
"#,
        prom = prom.url,
        loki = loki.url,
        grafana = grafana.url,
        llm = llm.url,
        port = sink.port,
        ca = certs.path().join("ca.pem").display(),
    );
    let (reporter, metrics, _store) = reporter(dir.path(), &toml);
    let end = DateTime::<Utc>::from_timestamp(expected["end"].as_i64().unwrap(), 0).unwrap();
    let report = reporter
        .run(ReportRequest {
            trigger: ReportTrigger::Api,
            period: PeriodSpec::Last,
            now: end,
            send: true,
        })
        .await
        .unwrap();

    assert_eq!(
        report.status,
        ReportStatus::Sent,
        "{:?}",
        report.delivery_error
    );
    let d = &report.data;
    for (name, s) in [
        ("alerts", &d.alerts.notes),
        ("slos", &d.slos.notes),
        ("agent", &d.agent.notes),
        ("cost", &d.cost.notes),
        ("logs", &d.logs.notes),
    ] {
        assert!(s.is_empty(), "{name} notes: {s:?}");
    }
    // Alerts: episodes and firing minutes per alert as generated.
    for (name, want) in expected["summary"]["alerts"].as_object().unwrap() {
        let got = d
            .alerts
            .data
            .alerts
            .iter()
            .find(|a| &a.alertname == name)
            .unwrap();
        assert_eq!(
            got.episodes as u64,
            want["firing_episodes"].as_u64().unwrap(),
            "{name}"
        );
        assert!(
            close(got.firing_minutes, want["firing_minutes"].as_f64().unwrap()),
            "{name}: {got:?}"
        );
    }
    // SLOs and availability.
    let probes = "avg_over_time(probe_success[7d])";
    for p in &d.slos.data.probes {
        assert!(
            close(
                p.ratio,
                expected_value(&expected, probes, "instance", &p.instance)
            ),
            "{p:?}"
        );
    }
    let ups = "avg_over_time(up[7d])";
    for t in &d.slos.data.targets {
        assert!(
            close(
                t.ratio,
                expected_value(&expected, ups, "instance", &t.instance)
            ),
            "{t:?}"
        );
    }
    let slo = &d.slos.data.slos[0];
    let mean: f64 = d.slos.data.probes.iter().map(|p| p.ratio).sum::<f64>() / 4.0;
    assert!(close(slo.achieved.unwrap(), mean) && slo.met == Some(true));
    // Seven days, plus the partial day the window starts in unless it ends at midnight
    // (the backfill ends at the last full hour minus one, so between 01:00 and 02:00 UTC).
    let partial_day = usize::from(end.time() != chrono::NaiveTime::MIN);
    assert_eq!(d.slos.data.per_day.len(), 7 + partial_day);
    // Agent activity, tokens and cost.
    let s = &expected["summary"];
    assert_eq!(
        d.agent.data.investigations,
        s["investigations_total"].as_f64().unwrap()
    );
    for (k, v) in s["investigations_by_trigger_status"].as_object().unwrap() {
        assert_eq!(
            d.agent.data.by_trigger_status[k],
            v.as_f64().unwrap(),
            "{k}"
        );
    }
    assert_eq!(d.agent.data.investigations_source, "prometheus");
    let tool_calls: f64 = d.agent.data.tools.iter().map(|t| t.calls).sum();
    assert_eq!(tool_calls, s["tool_calls_total"].as_f64().unwrap());
    for (k, v) in s["tokens"].as_object().unwrap() {
        assert_eq!(d.cost.data.tokens[k], v.as_f64().unwrap(), "{k} tokens");
    }
    assert!(close(
        d.cost.data.dollars_total,
        s["cost_dollars_total"].as_f64().unwrap()
    ));
    // Logs and Grafana from the fakes.
    assert_eq!(
        (d.logs.data.jobs[0].this_week, d.logs.data.jobs[0].last_week),
        (35.0, 14.0)
    );
    assert_eq!(d.logs.data.patterns[0].count, 2);
    let g = d.alerts.data.grafana.as_ref().unwrap();
    assert_eq!((g.rules, g.firing_now.len(), g.state_changes), (2, 1, 3));
    // Collectors overlapped: Loki and Grafana requests were in flight together.
    assert!(
        inflight.max_seen() >= 3,
        "max in flight {}",
        inflight.max_seen()
    );

    // Exactly one LLM call, without tools, with the data fenced.
    let bodies = llm.bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 1);
    assert!(bodies[0].get("tools").is_none());
    let user = bodies[0]["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.starts_with("<report-data>") && user.len() < 6_100,
        "{}",
        user.len()
    );
    assert_eq!(report.summary.model.as_deref(), Some("gpt-4o-mini"));

    // The email: multipart/alternative, the subject names the period, numbers inside.
    let mail = eventually(Duration::from_secs(10), "the report email", || async {
        mails(&sink).into_iter().next()
    })
    .await;
    let (subject, ctype, text) = parse_mail(&mail);
    assert_eq!(subject, report.title());
    assert!(subject.starts_with(&format!("sre-agent weekly report {}", report.window.period)));
    assert_eq!(ctype, "multipart/alternative");
    assert!(
        text.contains("DiskFillingUp") && text.contains("3960"),
        "{text}"
    );
    assert!(text.contains("The week was mostly calm."), "{text}");
    assert!(
        text.contains("- DiskFillingUp on pve1 needs space."),
        "{text}"
    );
    assert_no_raw_markdown("text part", &text);
    let html = html_part(&mail);
    assert_no_raw_markdown("HTML part", &html);
    assert!(
        html.contains(">Weekly summary</h3>") && html.contains("<strong>mostly calm</strong>"),
        "{html}"
    );
    assert!(html.contains("&lt;script&gt;") && !html.contains("<script"));
    // Alert hygiene: DiskFillingUp fires from day five to the end of the backfill.
    let never = d
        .hygiene
        .data
        .findings
        .iter()
        .find(|f| f.alertname == "DiskFillingUp")
        .unwrap_or_else(|| panic!("{:?}", d.hygiene));
    assert_eq!(never.issue, HygieneIssue::NeverResolved, "{never:?}");
    assert!(d.hygiene.notes.is_empty(), "{:?}", d.hygiene.notes);
    assert!(html.contains(">Alert hygiene</h2>") && html.contains(">never resolved</td>"));
    // Every chart is an inline image part referenced by its Content-ID.
    let images = inline_images(&mail);
    assert_eq!(images.len(), 2, "{images:?}");
    for (cid, png) in &images {
        assert!(html.contains(&format!("src=\"cid:{cid}\"")), "{cid}");
        assert!(
            png.starts_with(b"\x89PNG") && png.len() < 30 * 1024,
            "{cid}"
        );
    }
    assert!(
        text.contains("investigations (counted by sre-agent's Prometheus counters)."),
        "{text}"
    );
    let raw = String::from_utf8_lossy(&std::fs::read(&mail).unwrap()).into_owned();
    assert!(
        raw.contains("multipart/related")
            && raw.contains("image/png")
            && raw.contains("cid:alerts-per-day")
    );
    let envelope: Value =
        serde_json::from_slice(&std::fs::read(mail.with_extension("json")).unwrap()).unwrap();
    assert_eq!(envelope["rcpt_tos"], serde_json::json!(["ops@example.org"]));

    let m = metrics.encode();
    assert_eq!(
        metric_value(
            &m,
            r#"sre_agent_reports_total{status="sent",trigger="api"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        metric_value(
            &m,
            r#"sre_agent_report_collector_runs_total{collector="logs",status="ok"}"#
        ),
        Some(1.0)
    );
    assert!(metric_value(&m, "sre_agent_last_report_timestamp_seconds").unwrap() > 0.0);
}

#[tokio::test]
async fn with_loki_and_the_llm_down_the_report_still_goes_out_with_a_logs_note_and_an_automatic_summary()
 {
    let Some(sink) = start_smtp_sink(None, None) else {
        return;
    };
    let (loki_port, llm_port) = (crate::support::free_port(), crate::support::free_port());
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        r#"
[loki]
url = "http://127.0.0.1:{loki_port}"
[llm]
base_url = "http://127.0.0.1:{llm_port}/v1"
max_retries = 0
[report]
recipients = ["ops@example.org"]
collector_timeout = "5s"
[smtp]
host = "127.0.0.1"
port = {port}
security = "none"
"#,
        port = sink.port
    );
    let (reporter, _, _) = reporter(dir.path(), &toml);
    let report = reporter
        .run(ReportRequest {
            trigger: ReportTrigger::Cli,
            period: PeriodSpec::Last,
            now: Utc::now(),
            send: true,
        })
        .await
        .unwrap();
    assert_eq!(
        report.status,
        ReportStatus::Sent,
        "{:?}",
        report.delivery_error
    );
    let note = &report.data.logs.notes[0];
    assert!(
        note.contains(&format!("Loki at http://127.0.0.1:{loki_port}")),
        "{note}"
    );
    let reason = report.summary.fallback_reason.as_deref().unwrap();
    assert!(
        reason.contains(&format!("127.0.0.1:{llm_port}")),
        "{reason}"
    );
    let mail = eventually(Duration::from_secs(10), "the report email", || async {
        mails(&sink).into_iter().next()
    })
    .await;
    let (_, _, text) = parse_mail(&mail);
    assert!(
        text.contains("LLM unavailable:") && text.contains("automatic summary"),
        "{text}"
    );
    assert!(
        text.contains("Log errors\n----------\n\nNote: Loki at"),
        "{text}"
    );
}

fn sent(sink: &crate::support::external::Foreground) -> usize {
    mails(sink).len()
}

#[tokio::test]
async fn a_missed_week_is_caught_up_at_start_and_a_restart_in_the_same_week_sends_nothing_more() {
    let Some(sink) = start_smtp_sink(None, None) else {
        return;
    };
    let toml = format!(
        r#"
[report]
schedule = "0 0 8 * * Mon"
recipients = ["ops@example.org"]
[smtp]
host = "127.0.0.1"
port = {port}
security = "none"
"#,
        port = sink.port
    );
    let app = spawn_app(&toml).await;
    let report: Report = eventually(Duration::from_secs(20), "the catch-up report", || async {
        let list = app.state.reports.store().list(10).unwrap();
        list.into_iter().find(|r| r.status == ReportStatus::Sent)
    })
    .await;
    assert_eq!(report.trigger, ReportTrigger::Catchup);
    eventually(Duration::from_secs(10), "one email", || async {
        (sent(&sink) == 1).then_some(())
    })
    .await;
    // The metric is counted just after the report is stored as sent: poll for it.
    eventually(Duration::from_secs(10), "the catch-up metric", || async {
        let m = app.metrics().await;
        let series = r#"sre_agent_reports_total{status="sent",trigger="catchup"}"#;
        (metric_value(&m, series) == Some(1.0)).then_some(())
    })
    .await;

    // Restart on the same data: nothing is missed, and the week's fire sends nothing more.
    let dir = app.stop().await;
    let config = test_config(dir.path(), &toml);
    let app = crate::support::spawn_app_with(config, dir).await;
    let job = schedule::report_job(&app.state.reports, "0 0 8 * * Mon").unwrap();
    let now = Utc::now();
    assert_eq!(
        schedule::missed_fire(&job, &app.state.reports, now).unwrap(),
        None
    );
    let fire = job.previous_before(now).unwrap();
    assert!(
        schedule::report_for_fire(&app.state.reports, ReportTrigger::Schedule, fire)
            .await
            .is_none()
    );
    let m = app.metrics().await;
    assert!(metric_value(&m, "sre_agent_last_report_timestamp_seconds").unwrap() > 0.0);
    assert_eq!(sent(&sink), 1);
    assert_eq!(app.state.reports.store().list(10).unwrap().len(), 1);
    app.stop().await;
}
