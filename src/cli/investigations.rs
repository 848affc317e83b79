//! `sre-agent investigations list|show|feedback`: stored investigations, from the daemon
//! when one runs, else from the store.

use std::time::Duration;

use anyhow::{Context, bail};
use reqwest::{Method, StatusCode};

use super::backend::Backend;
use super::daemon::DaemonError;
use crate::agent::{Event, Feedback, FeedbackOutcome, InvestigationStatus};
use crate::api::{FeedbackRequest, FeedbackStored, InvestigationPage};
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
            i.trigger.label(),
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
        inv.trigger.label(),
        inv.created_at.to_rfc3339()
    );
    if let Some(f) = &inv.finding {
        println!("{}", f.to_markdown());
    }
    if let Some(fb) = &inv.feedback {
        let note = fb
            .note
            .as_deref()
            .map(|n| format!(": {n}"))
            .unwrap_or_default();
        println!(
            "**Feedback:** marked {} on {}{note}\n",
            fb.verdict.label(),
            fb.at.format("%Y-%m-%d %H:%M UTC")
        );
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

/// `sre-agent investigations feedback ID right|wrong [--note TEXT]`: a person's verdict on
/// the finding (replaces an earlier one).
pub async fn feedback(
    config: &Config,
    id: &str,
    verdict: &str,
    note: Option<&str>,
) -> anyhow::Result<()> {
    // Checked here too, so a bad verdict fails the same way with or without a daemon.
    let given = Feedback::given(Some(verdict), note).map_err(anyhow::Error::msg)?;
    let backend = Backend::connect(config, Duration::from_secs(30)).await?;
    let stored = match &backend {
        Backend::Local { dispatcher, .. } => match dispatcher.feedback(id, given.clone()).await? {
            FeedbackOutcome::Stored(_) => given,
            FeedbackOutcome::NotFound => bail!("no investigation {id}"),
            FeedbackOutcome::NotFinal(s) => bail!(
                "investigation {id} is {}; give feedback once it has ended",
                s.as_str()
            ),
        },
        Backend::Remote(daemon) => {
            let body = serde_json::to_value(FeedbackRequest {
                verdict: Some(given.verdict.label().to_string()),
                note: given.note.clone(),
            })?;
            let path = format!("/api/v1/investigations/{id}/feedback");
            match daemon
                .request::<FeedbackStored>(Method::POST, &path, Some(&body))
                .await
            {
                Ok(s) => s.feedback,
                Err(DaemonError::Status {
                    status: StatusCode::NOT_FOUND,
                    ..
                }) => bail!("no investigation {id}"),
                Err(e) => return Err(e).context("sending the feedback to the daemon"),
            }
        }
    };
    backend.flush().await?;
    println!("investigation {id} marked {}", stored.verdict.label());
    Ok(())
}

fn timeline_line(e: &Event) -> String {
    format!("{} {}", e.at.format("%H:%M:%S%.3f"), e.describe())
}
