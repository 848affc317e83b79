//! `sre-agent report`: generate a report in this process, or through the running daemon's
//! API when it holds the store lock.

use std::sync::Arc;

use anyhow::Context;
use sre_agent::config::Config;
use sre_agent::report::model::{Report, ReportTrigger};
use sre_agent::report::period::PeriodSpec;
use sre_agent::report::{ReportRequest, Reporter, render};
use sre_agent::store::{Store, StoreError};
use sre_agent::telemetry::Metrics;

pub async fn run(config: Config, send: bool, format: String, period: String) -> anyhow::Result<()> {
    let spec: PeriodSpec = period.parse()?;
    let report = match Store::open(&config.server.data_dir) {
        Ok(store) => {
            let metrics = Arc::new(Metrics::new(&config.llm.model));
            let dispatcher = sre_agent::agent::Dispatcher::new(&config, &store, metrics.clone())?;
            let reporter =
                Reporter::new(Arc::new(config), &store, metrics)?.with_dispatcher(dispatcher);
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
        Err(StoreError::Locked(_)) => via_api(&config, send, &period).await?,
        Err(e) => return Err(e.into()),
    };
    match format.as_str() {
        "json" => println!("{}", serde_json::to_string_pretty(&report)?),
        "html" => println!("{}", render::to_html(&report)),
        _ => print!("{}", render::to_markdown(&report)),
    }
    if send {
        match &report.delivery_error {
            Some(e) => eprintln!("report {} {}: {e}", report.id, report.status.as_str()),
            None => eprintln!("report {} {}", report.id, report.status.as_str()),
        }
    }
    Ok(())
}

async fn via_api(config: &Config, send: bool, period: &str) -> anyhow::Result<Report> {
    let mut addr = config.listen_addr();
    if addr.ip().is_unspecified() {
        addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    let url = format!("http://{addr}/api/v1/reports");
    eprintln!("the store is held by a running sre-agent; asking it at {url}");
    let client = reqwest::Client::builder()
        .timeout(config.report.collector_timeout.get() * 2 + config.llm.timeout.get())
        .build()?;
    let mut req = client
        .post(&url)
        .json(&serde_json::json!({ "send": send, "period": period }));
    if let Some(t) = &config.server.api_token {
        req = req.bearer_auth(t.expose());
    }
    let resp = req
        .send()
        .await
        .with_context(|| format!("{url} is unreachable"))?;
    let status = resp.status();
    let body = resp.text().await?;
    anyhow::ensure!(status.is_success(), "{url} answered {status}: {body}");
    serde_json::from_str(&body).with_context(|| format!("{url} sent an unexpected report"))
}
