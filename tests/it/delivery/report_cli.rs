//! `sre-agent report --send` without a daemon claims its period in the store's ledger as
//! the daemon's outbox does: a second run for the period sends nothing, and neither do the
//! daemon's catch-up at its start nor an API send of the period.

use std::time::Duration;

use chrono::Utc;
use sre_agent::report::model::ReportStatus;
use sre_agent::report::period::{PeriodSpec, ReportWindow};
use sre_agent::schedule::CronJob;

use super::report::{api_send, message_ids, report_toml};
use crate::support::mail::{SinkOptions, require_aiosmtpd, start_smtp_sink};
use crate::support::{eventually, free_port, spawn_app_with, test_config};

#[tokio::test]
async fn a_report_the_cli_sent_without_a_daemon_is_the_one_email_of_its_period() {
    if !require_aiosmtpd() {
        return;
    }
    let smtp_port = free_port();
    let sink = start_smtp_sink(smtp_port, &SinkOptions::default());
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(dir.path(), &report_toml(smtp_port));
    // The period the daemon's catch-up reports on when it starts.
    let tz = config.report.timezone.0;
    let fire = CronJob::parse("weekly report", &config.report.schedule.0, tz)
        .unwrap()
        .previous_before(Utc::now())
        .unwrap();
    let period = ReportWindow::resolve(PeriodSpec::Last, fire, config.report.lookback.get(), tz)
        .period
        .to_string();

    for _ in 0..2 {
        sre_agent::cli::report::run(config.clone(), true, "json", &period)
            .await
            .unwrap();
    }
    eventually(Duration::from_secs(10), "the CLI's email", || async {
        (!message_ids(&sink).is_empty()).then_some(())
    })
    .await;

    let app = spawn_app_with(config, dir).await;
    let api = api_send(&app, &period).await;
    assert_eq!(api["status"], "generated", "{api}");
    let note = api["delivery_error"].as_str().unwrap_or_default();
    assert!(note.contains(&period) && note.contains("already"), "{note}");
    // Time for a catch-up (there should be none) to be built and sent.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let ids = message_ids(&sink);
    assert_eq!(ids.len(), 1, "one report email for {period}: {ids:?}");
    let reports = app.state.reports.store().list(10).unwrap();
    let sent: Vec<_> = reports
        .iter()
        .filter(|r| r.status == ReportStatus::Sent)
        .collect();
    assert_eq!(sent.len(), 1, "{reports:?}");
    assert_eq!(
        reports.len(),
        3,
        "two CLI runs and the API send, no catch-up"
    );
    assert!(ids[0].ends_with(&format!(".{}@example.org>", sent[0].id)));
    app.stop().await;
}
