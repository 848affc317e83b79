//! `sre-agent ask` and `sre-agent investigations list|show`: when a daemon answers at
//! `server.listen` they use its API (polling until the investigation is final); otherwise
//! they open the store and run in-process. Progress goes to stderr, results to stdout.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::{Dispatcher, Event, Investigation, InvestigationRequest, InvestigationStatus, Trigger};
use crate::config::Config;
use crate::http::investigations::InvestigationDetail;
use crate::store::Store;
use crate::agent::store::Page;
use crate::telemetry::Metrics;

/// Where the commands get their data from.
enum Backend {
    Remote {
        base: String,
        http: reqwest::Client,
        token: Option<String>,
    },
    Local {
        dispatcher: Dispatcher,
        store: Store,
    },
}

impl Backend {
    /// The daemon's API when its /healthz answers quickly, else the store in-process.
    async fn connect(config: &Config) -> anyhow::Result<Self> {
        let mut addr = config.listen_addr();
        if addr.ip().is_unspecified() {
            addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
        }
        // A plain TCP connect first: when nothing listens, no HTTP client is built at all.
        let listening = tokio::time::timeout(
            Duration::from_millis(300),
            tokio::net::TcpStream::connect(addr),
        )
        .await
        .is_ok_and(|r| r.is_ok());
        if listening {
            let base = format!("http://{addr}");
            let http = reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()?;
            let probe = http
                .get(format!("{base}/healthz"))
                .timeout(Duration::from_millis(500))
                .send()
                .await;
            if probe.is_ok_and(|r| r.status().is_success()) {
                let token = config
                    .server
                    .api_token
                    .as_ref()
                    .map(|t| t.expose().to_string());
                return Ok(Self::Remote { base, http, token });
            }
        }
        let store = Store::open(&config.server.data_dir)?;
        let metrics = Arc::new(Metrics::new(&config.llm.model));
        let dispatcher = Dispatcher::new(config, &store, metrics)?;
        Ok(Self::Local { dispatcher, store })
    }

    async fn remote<T: serde::de::DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> anyhow::Result<T> {
        let Self::Remote { base, http, token } = self else {
            bail!("not connected to a daemon");
        };
        let url = format!("{base}{path}");
        let mut req = http.request(method, &url);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req
            .send()
            .await
            .with_context(|| format!("{url} is unreachable"))?;
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
        if !status.is_success() {
            bail!("{url} answered {status}: {text}");
        }
        serde_json::from_str(&text).with_context(|| format!("{url} sent unreadable JSON"))
    }

    async fn detail(&self, id: &str) -> anyhow::Result<Option<InvestigationDetail>> {
        match self {
            Self::Local { dispatcher, .. } => Ok(match dispatcher.get(id)? {
                None => None,
                Some(investigation) => Some(InvestigationDetail {
                    events: dispatcher.events(id)?,
                    investigation,
                }),
            }),
            Self::Remote { .. } => {
                let path = format!("/api/v1/investigations/{id}");
                match self.remote(reqwest::Method::GET, &path, None).await {
                    Ok(d) => Ok(Some(d)),
                    Err(e) if e.to_string().contains("404") => Ok(None),
                    Err(e) => Err(e),
                }
            }
        }
    }
}

/// `sre-agent ask QUESTION [--json]`: runs an investigation and prints its finding.
/// Returns false when the investigation did not succeed.
pub async fn ask(config: &Config, question: &str, json: bool) -> anyhow::Result<bool> {
    let question = question.trim();
    anyhow::ensure!(!question.is_empty(), "the question is empty");
    let backend = Backend::connect(config).await?;
    let token = CancellationToken::new();
    let tracker = TaskTracker::new();
    let id = match &backend {
        Backend::Local { dispatcher, .. } => {
            let inv = dispatcher
                .submit(InvestigationRequest {
                    trigger: Trigger::Ask,
                    title: question.chars().take(80).collect(),
                    prompt: question.to_string(),
                    context: None,
                    group_key: None,
                })
                .await?;
            dispatcher.start(token.clone(), &tracker)?;
            inv.id
        }
        Backend::Remote { .. } => {
            let body = serde_json::json!({ "question": question });
            let v: serde_json::Value = backend
                .remote(reqwest::Method::POST, "/api/v1/ask", Some(body))
                .await?;
            v["id"]
                .as_str()
                .context("the daemon answered no id")?
                .to_string()
        }
    };
    eprintln!("investigation {id} queued");
    let poll = match backend {
        Backend::Local { .. } => Duration::from_millis(10),
        Backend::Remote { .. } => Duration::from_millis(100),
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
    if let Backend::Local { store, .. } = &backend {
        store.flush().await?;
    }
    let inv = &detail.investigation;
    if json {
        println!("{}", serde_json::to_string_pretty(&detail)?);
    } else {
        print_result(inv);
    }
    Ok(matches!(
        inv.status,
        InvestigationStatus::Finished | InvestigationStatus::LimitReached
    ) && inv.finding.is_some())
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

/// `sre-agent investigations list [--status S]`.
pub async fn list(config: &Config, status: Option<&str>, limit: usize) -> anyhow::Result<()> {
    let parsed = match status {
        None => None,
        Some(s) => Some(InvestigationStatus::parse(s).with_context(|| {
            format!(
                "unknown status {s:?} (queued, running, finished, failed, limit_reached, cancelled)"
            )
        })?),
    };
    let backend = Backend::connect(config).await?;
    let page: Page = match &backend {
        Backend::Local { dispatcher, .. } => dispatcher.list(parsed, limit, None)?,
        Backend::Remote { .. } => {
            let mut path = format!("/api/v1/investigations?limit={limit}");
            if let Some(s) = parsed {
                path.push_str(&format!("&status={}", s.as_str()));
            }
            let v: serde_json::Value = backend.remote(reqwest::Method::GET, &path, None).await?;
            Page {
                items: serde_json::from_value(v["items"].clone())?,
                next_cursor: None,
            }
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

/// `sre-agent investigations show ID`: the record, finding and timeline.
pub async fn show(config: &Config, id: &str, json: bool) -> anyhow::Result<()> {
    let backend = Backend::connect(config).await?;
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
