//! `sre-agent ask QUESTION [--json] [--follow-up ID]`: runs an investigation (through the
//! daemon when one runs, else in-process), prints progress to stderr and the finding to
//! stdout. With `--follow-up` it continues investigation ID (a new one linked to it).

use std::time::Duration;

use anyhow::bail;
use reqwest::Method;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::backend::Backend;
use super::daemon::DaemonError;
use crate::agent::{
    Investigation, InvestigationRequest, InvestigationStatus, SubmitError, follow_up_request,
};
use crate::api::{OverBudgetAnswer, Queued};
use crate::config::Config;

/// Runs the investigation and prints its finding. Returns false when it did not succeed.
pub async fn run(
    config: &Config,
    question: &str,
    json: bool,
    follow_up: Option<&str>,
) -> anyhow::Result<bool> {
    let question = question.trim();
    anyhow::ensure!(!question.is_empty(), "the question is empty");
    let backend = Backend::connect(config, Duration::from_secs(30)).await?;
    let token = CancellationToken::new();
    let tracker = TaskTracker::new();
    let id = match (&backend, follow_up) {
        (Backend::Local { dispatcher, .. }, None) => {
            let submitted = dispatcher.submit(InvestigationRequest::ask(question)).await;
            let inv = match submitted {
                Ok(inv) => inv,
                Err(SubmitError::OverBudget(e)) => bail!("not investigated: {e}"),
                Err(SubmitError::Store(e)) => return Err(e.into()),
            };
            dispatcher.start(token.clone(), &tracker)?;
            inv.id
        }
        (Backend::Local { dispatcher, .. }, Some(parent_id)) => {
            let Some(parent) = dispatcher.get(parent_id)? else {
                bail!("no investigation {parent_id}");
            };
            anyhow::ensure!(
                parent.status.is_final(),
                "investigation {parent_id} is still {}; ask a follow-up once it has ended",
                parent.status.as_str()
            );
            let events = dispatcher.events(parent_id)?;
            let req = follow_up_request(&parent, &events, question);
            let inv = dispatcher.submit_follow_up(parent_id, req).await?;
            dispatcher.start(token.clone(), &tracker)?;
            inv.id
        }
        (Backend::Remote(daemon), parent) => {
            let body = serde_json::json!({ "question": question });
            let path = match parent {
                None => "/api/v1/ask".to_string(),
                Some(id) => format!("/api/v1/investigations/{id}/followup"),
            };
            let asked = daemon
                .request::<Queued>(Method::POST, &path, Some(&body))
                .await;
            match asked {
                Ok(queued) => queued.id,
                Err(e) => bail_over_budget(e)?,
            }
        }
    };
    eprintln!("investigation {id} queued");
    let poll = match backend {
        Backend::Local { .. } => Duration::from_millis(10),
        Backend::Remote(_) => Duration::from_millis(100),
    };
    let mut shown = 0;
    let detail = loop {
        let Some(d) = backend.detail(&id).await? else {
            bail!("investigation {id} disappeared (deleted?)");
        };
        for e in d.events.iter().skip(shown) {
            eprintln!("{}", e.describe());
        }
        shown = d.events.len();
        if d.investigation.status.is_final() {
            break d;
        }
        tokio::time::sleep(poll).await;
    };
    token.cancel();
    tracker.close();
    tracker.wait().await;
    backend.flush().await?;
    let inv = &detail.investigation;
    if json {
        println!("{}", serde_json::to_string_pretty(&detail)?);
    } else {
        print_result(inv);
    }
    Ok(matches!(
        inv.status,
        InvestigationStatus::Finished
            | InvestigationStatus::Inconclusive
            | InvestigationStatus::LimitReached
    ) && inv.finding.is_some())
}

/// A 429 from the daemon names the used-up budget: say that alone, clearly.
fn bail_over_budget(e: DaemonError) -> anyhow::Result<String> {
    if let DaemonError::Status { status, body, .. } = &e
        && *status == reqwest::StatusCode::TOO_MANY_REQUESTS
        && let Ok(answer) = serde_json::from_str::<OverBudgetAnswer>(body)
    {
        bail!("not investigated: {}", answer.error);
    }
    Err(anyhow::Error::new(e).context("asking the daemon"))
}

fn print_result(inv: &Investigation) {
    if let Some(f) = &inv.finding {
        print!("{}", f.to_markdown());
    }
    eprintln!(
        "status: {} · {} steps · {} tokens · ${:.4}",
        inv.status.as_str(),
        inv.steps,
        inv.tokens.total(),
        inv.cost_usd
    );
    if let Some(e) = &inv.error {
        eprintln!("error: {e}");
    }
    for n in &inv.notes {
        eprintln!("note: {n}");
    }
}
