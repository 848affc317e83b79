//! The weekly report through the outbox: a mail server down when the report is built gets
//! it when it is back, without a restart, once; a crash during the SMTP session does not
//! send the period's report a second time (at most once, the Message-ID recorded first);
//! an API send of the period the catch-up is delivering, before or while it goes out, makes
//! no second email. The report is the catch-up of the period missed before the daemon's
//! first start.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::Utc;
use serde_json::{Value, json};
use sre_agent::report::model::ReportStatus;
use sre_agent::report::period::PeriodSpec;
use sre_agent::schedule;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::support::mail::{SinkOptions, received_mail, require_aiosmtpd, start_smtp_sink};
use crate::support::{Daemon, TestApp, eventually, free_port, metric_value, spawn_app};

pub(super) fn report_toml(smtp_port: u16) -> String {
    format!(
        "[report]\nrecipients = [\"ops@example.org\"]\ncollector_timeout = \"2s\"\n\n\
         [smtp]\nhost = \"127.0.0.1\"\nport = {smtp_port}\nsecurity = \"none\"\ntimeout = \"5s\"\n\
         from = \"sre-agent <sre-agent@example.org>\"\n\n\
         [notify]\nretry_backoff = \"200ms\"\nretry_max_backoff = \"1s\"\n\n\
         [llm]\nbase_url = \"http://127.0.0.1:9/v1\"\nmax_retries = 0\n"
    )
}

/// The one stored report (the catch-up of the period missed before the first start,
/// built as soon as the daemon starts), once it is queued.
async fn the_report(http: &reqwest::Client, base: &str) -> Value {
    let url = format!("{base}/api/v1/reports");
    eventually(Duration::from_secs(60), "the caught-up report", || async {
        let list: Value = http.get(&url).send().await.ok()?.json().await.ok()?;
        let items = list.as_array()?;
        assert!(items.len() <= 1, "one report per period: {list}");
        items.first().filter(|r| r["status"] == "queued").cloned()
    })
    .await
}

async fn report_status(http: &reqwest::Client, base: &str, id: &str) -> String {
    let r: Value = http
        .get(format!("{base}/api/v1/reports/{id}"))
        .header("accept", "application/json")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    r["status"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn a_report_built_while_the_mail_server_is_down_is_sent_once_when_it_is_back() {
    if !require_aiosmtpd() {
        return;
    }
    let smtp_port = free_port();
    let app = spawn_app(&report_toml(smtp_port)).await;
    let report = the_report(&app.http, &app.base).await;
    assert_eq!(report["trigger"], "catchup", "{report}");
    let id = report["id"].as_str().unwrap().to_string();
    let retry = r#"sre_agent_notifications_total{channel="report",status="retry"}"#;
    eventually(Duration::from_secs(30), "a retried report", || async {
        (metric_value(&app.metrics().await, retry).unwrap_or(0.0) >= 1.0).then_some(())
    })
    .await;

    let sink = start_smtp_sink(smtp_port, &SinkOptions::default());
    let (_, eml) = eventually(Duration::from_secs(30), "the report email", || async {
        received_mail(&sink).into_iter().next()
    })
    .await;
    assert!(eml.contains("sre-agent weekly report"), "{eml}");
    assert!(eml.contains("multipart/alternative"), "{eml}");
    let message_id = eml
        .lines()
        .find_map(|l| l.strip_prefix("Message-ID: "))
        .unwrap_or_default();
    assert!(
        message_id.starts_with("<sre-agent.report.")
            && message_id.ends_with(&format!(".{id}@example.org>")),
        "{message_id}"
    );
    eventually(
        Duration::from_secs(10),
        "the report marked sent",
        || async { (report_status(&app.http, &app.base, &id).await == "sent").then_some(()) },
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(received_mail(&sink).len(), 1, "sent once");
    let m = app.metrics().await;
    let sent = r#"sre_agent_notifications_total{channel="report",status="sent"}"#;
    assert_eq!(metric_value(&m, sent), Some(1.0));
    assert!(metric_value(&m, "sre_agent_last_report_timestamp_seconds").unwrap() > 0.0);
    let built = r#"sre_agent_reports_total{status="sent",trigger="catchup"}"#;
    assert_eq!(metric_value(&m, built), Some(1.0));
}

/// An SMTP server that accepts everything up to the end of the message, then never
/// answers: the SMTP session of its client is still open when the test kills it.
async fn hanging_smtp(port: u16, got_data: Arc<AtomicBool>) -> tokio::task::JoinHandle<()> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    tokio::spawn(async move {
        let (sock, _) = listener.accept().await.unwrap();
        let (read, mut write) = sock.into_split();
        let mut lines = BufReader::new(read).lines();
        write.write_all(b"220 hanging ESMTP\r\n").await.unwrap();
        let mut in_data = false;
        while let Ok(Some(line)) = lines.next_line().await {
            if in_data {
                if line == "." {
                    got_data.store(true, Ordering::SeqCst);
                    std::future::pending::<()>().await;
                }
                continue;
            }
            let verb = line
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_ascii_uppercase();
            let answer: &[u8] = match verb.as_str() {
                "EHLO" => b"250-hanging\r\n250 8BITMIME\r\n",
                "DATA" => {
                    in_data = true;
                    b"354 go ahead\r\n"
                }
                "QUIT" => b"221 bye\r\n",
                _ => b"250 OK\r\n",
            };
            write.write_all(answer).await.unwrap();
        }
    })
}

#[tokio::test]
async fn a_crash_during_the_smtp_session_does_not_send_the_report_a_second_time() {
    if !require_aiosmtpd() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (port, smtp_port) = (free_port(), free_port());
    let file = dir.path().join("config.toml");
    std::fs::write(
        &file,
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\ndata_dir = \"data\"\n\n{}",
            report_toml(smtp_port)
        ),
    )
    .unwrap();
    let got_data = Arc::new(AtomicBool::new(false));
    let hanging = hanging_smtp(smtp_port, got_data.clone()).await;
    let mut daemon = Daemon::start(dir.path(), &file, &[]).await;
    let http = reqwest::Client::new();
    let report = the_report(&http, &daemon.base).await;
    let id = report["id"].as_str().unwrap().to_string();
    eventually(
        Duration::from_secs(30),
        "the message sent to the server",
        || async { got_data.load(Ordering::SeqCst).then_some(()) },
    )
    .await;
    // The server has the whole message; the process dies before it hears "250".
    daemon.signal("KILL");
    daemon.wait_exit(Duration::from_secs(10));
    hanging.abort();
    drop(daemon);

    let sink = start_smtp_sink(smtp_port, &SinkOptions::default());
    let daemon = Daemon::start(dir.path(), &file, &[]).await;
    eventually(
        Duration::from_secs(30),
        "the report marked unconfirmed",
        || async { (report_status(&http, &daemon.base, &id).await == "unconfirmed").then_some(()) },
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(received_mail(&sink).is_empty(), "not sent a second time");
    let list: Value = http
        .get(format!("{}/api/v1/reports", daemon.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        list.as_array().unwrap().len(),
        1,
        "no second report: {list}"
    );
    let m = http
        .get(format!("{}/metrics", daemon.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let unconfirmed = r#"sre_agent_notifications_total{channel="report",status="unconfirmed"}"#;
    assert_eq!(metric_value(&m, unconfirmed), Some(1.0));
    let built = r#"sre_agent_reports_total{status="unconfirmed",trigger="catchup"}"#;
    assert_eq!(metric_value(&m, built), Some(1.0));
    let log = daemon.log_text();
    assert!(
        log.contains(&format!(".{id}@example.org>")),
        "the Message-ID is logged: {log}"
    );
}

/// The period the catch-up at start reports on: "last" at the schedule's latest fire time.
fn catch_up_period(app: &TestApp) -> String {
    let expr = &app.state.config.report.schedule.0;
    let job = schedule::report_job(&app.state.reports, expr).unwrap();
    let fire = job.previous_before(Utc::now()).unwrap();
    app.state
        .reports
        .window(PeriodSpec::Last, fire)
        .period
        .to_string()
}

/// `POST /api/v1/reports {"send": true, "period": period}`: the stored report it answers.
pub(super) async fn api_send(app: &TestApp, period: &str) -> Value {
    let resp = app
        .http
        .post(app.url("/api/v1/reports"))
        .json(&json!({"send": true, "period": period}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    resp.json().await.unwrap()
}

/// Message-IDs of the mail the sink holds.
pub(super) fn message_ids(sink: &crate::support::external::Foreground) -> Vec<String> {
    received_mail(sink)
        .iter()
        .filter_map(|(_, eml)| {
            eml.lines()
                .find_map(|l| l.strip_prefix("Message-ID: "))
                .map(str::to_string)
        })
        .collect()
}

#[tokio::test]
async fn an_api_send_of_the_period_a_queued_catch_up_holds_during_an_smtp_outage_makes_no_second_email()
 {
    if !require_aiosmtpd() {
        return;
    }
    let smtp_port = free_port();
    let app = spawn_app(&report_toml(smtp_port)).await;
    let catch_up = the_report(&app.http, &app.base).await;
    let period = catch_up_period(&app);
    assert_eq!(catch_up["period"], period.as_str());

    let api = api_send(&app, &period).await;
    assert_eq!(
        api["status"], "generated",
        "not queued a second time: {api}"
    );
    let note = api["delivery_error"].as_str().unwrap_or_default();
    assert!(
        note.contains(&period) && note.contains("already"),
        "the answer says why: {note}"
    );

    let sink = start_smtp_sink(smtp_port, &SinkOptions::default());
    let id = catch_up["id"].as_str().unwrap().to_string();
    eventually(Duration::from_secs(30), "the catch-up sent", || async {
        (report_status(&app.http, &app.base, &id).await == "sent").then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let ids = message_ids(&sink);
    assert_eq!(ids.len(), 1, "one report email for {period}: {ids:?}");
    assert!(ids[0].ends_with(&format!(".{id}@example.org>")), "{ids:?}");
    app.stop().await;
}

#[tokio::test]
async fn the_catch_up_at_start_racing_an_api_send_of_its_period_sends_one_email_every_time() {
    if !require_aiosmtpd() {
        return;
    }
    const RUNS: usize = 6;
    let smtp_port = free_port();
    let sink = start_smtp_sink(smtp_port, &SinkOptions::default());
    for run in 0..RUNS {
        let app = spawn_app(&report_toml(smtp_port)).await;
        let period = catch_up_period(&app);
        // Sent at once, while the catch-up is being built, queued or sent.
        let api = api_send(&app, &period).await;
        let api_id = api["id"].as_str().unwrap().to_string();
        eventually(Duration::from_secs(60), "every report settled", || async {
            let reports = app.state.reports.store().list(10).unwrap();
            let settled = |s: ReportStatus| !matches!(s, ReportStatus::Queued);
            (reports.iter().all(|r| settled(r.status))
                && reports.iter().any(|r| r.status == ReportStatus::Sent)
                && reports.iter().any(|r| r.id == api_id))
            .then_some(())
        })
        .await;
        // The catch-up may still be waiting for its turn to build: give it time to fail.
        tokio::time::sleep(Duration::from_millis(2500)).await;
        let ids = message_ids(&sink);
        assert_eq!(
            ids.len(),
            run + 1,
            "run {run}: one report email for {period}: {ids:?}"
        );
        app.stop().await;
    }
}
