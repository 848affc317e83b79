//! `sre-agent report`: generates a report now and prints it, in this process or, when a
//! daemon runs (and holds the store), through its API.

use std::sync::Arc;

use anyhow::Context;
use reqwest::Method;

use super::backend::Backend;
use crate::api::CreateReport;
use crate::config::Config;
use crate::report::model::{Report, ReportTrigger};
use crate::report::period::PeriodSpec;
use crate::report::{ReportRequest, Reporter, render};
use crate::telemetry::Metrics;

/// Generates the report of `period` ("last" or an ISO week), emails it when `send`, and
/// prints it as `format` (markdown, html or json).
pub async fn run(config: Config, send: bool, format: &str, period: &str) -> anyhow::Result<()> {
    let spec: PeriodSpec = period.parse()?;
    // Collectors run in parallel, then one narrative call.
    let timeout = (config.report.collector_timeout.get())
        .saturating_mul(2)
        .saturating_add(config.llm.timeout.get());
    let report: Report = match Backend::connect(&config, timeout).await? {
        Backend::Local {
            dispatcher,
            store,
            upstreams,
        } => {
            let metrics = Arc::new(Metrics::new(&config.llm.model));
            let reporter = Reporter::new(Arc::new(config), upstreams, &store, metrics)?
                .with_dispatcher(dispatcher);
            let req = ReportRequest {
                trigger: ReportTrigger::Cli,
                period: spec,
                now: chrono::Utc::now(),
                send,
            };
            let report = reporter.run(req).await?;
            store.flush().await?;
            report
        }
        Backend::Remote(daemon) => {
            eprintln!(
                "a running sre-agent holds the store; asking it at {}",
                daemon.url("/api/v1/reports")
            );
            let body = serde_json::to_value(CreateReport {
                send,
                period: Some(period.to_string()),
            })?;
            daemon
                .request(Method::POST, "/api/v1/reports", Some(&body))
                .await
                .context("generating the report through the daemon")?
        }
    };
    match format {
        "json" => println!("{}", serde_json::to_string_pretty(&report)?),
        "html" => println!("{}", render::to_html(&report)),
        _ => print!("{}", render::to_markdown(&report)),
    }
    if send {
        match &report.delivery_error {
            Some(e) => eprintln!("report {} {}: {e}", report.id, report.status.label()),
            None => eprintln!("report {} {}", report.id, report.status.label()),
        }
    }
    Ok(())
}
