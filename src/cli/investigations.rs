//! `sre-agent investigations list|show`: stored investigations, from the daemon when one
//! runs, else from the store.

use std::time::Duration;

use anyhow::{Context, bail};
use reqwest::Method;

use super::backend::Backend;
use crate::agent::{Event, InvestigationStatus};
use crate::api::InvestigationPage;
use crate::config::Config;

/// `sre-agent investigations list [--status S] [--limit N]`, newest first.
pub async fn list(config: &Config, status: Option<&str>, limit: usize) -> anyhow::Result<()> {
    let parsed =
        match status {
            None => None,
            Some(s) => Some(InvestigationStatus::parse(s).with_context(|| {
                format!("unknown status {s:?} ({})", InvestigationStatus::names())
            })?),
        };
    let backend = Backend::connect(config, Duration::from_secs(30)).await?;
    let page: InvestigationPage = match &backend {
        Backend::Local { dispatcher, .. } => dispatcher.list(parsed, limit, None)?,
        Backend::Remote(daemon) => {
            let mut path = format!("/api/v1/investigations?limit={limit}");
            if let Some(s) = parsed {
                path.push_str(&format!("&status={}", s.as_str()));
            }
            daemon.request(Method::GET, &path, None).await?
        }
    };
    if page.items.is_empty() {
        eprintln!("no investigations");
    }
    for i in &page.items {
        println!(
            "{}  {:<13} {:<8} {}  {}",
            i.id,
            i.status.as_str(),
            i.trigger.as_str(),
            i.created_at.format("%Y-%m-%d %H:%M:%S"),
            i.title
        );
    }
    Ok(())
}

/// `sre-agent investigations show ID [--json]`: the record, finding and timeline.
pub async fn show(config: &Config, id: &str, json: bool) -> anyhow::Result<()> {
    let backend = Backend::connect(config, Duration::from_secs(30)).await?;
    let Some(d) = backend.detail(id).await? else {
        bail!("no investigation {id}");
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&d)?);
        return Ok(());
    }
    let inv = &d.investigation;
    println!("# {}\n", inv.title);
    println!(
        "id: {} · status: {} · trigger: {} · created: {}\n",
        inv.id,
        inv.status.as_str(),
        inv.trigger.as_str(),
        inv.created_at.to_rfc3339()
    );
    if let Some(f) = &inv.finding {
        println!("{}", f.to_markdown());
    }
    if let Some(e) = &inv.error {
        println!("**Error:** {e}\n");
    }
    println!("## Timeline\n");
    for e in &d.events {
        println!("- {}", timeline_line(e));
    }
    Ok(())
}

fn timeline_line(e: &Event) -> String {
    format!("{} {}", e.at.format("%H:%M:%S%.3f"), e.describe())
}
