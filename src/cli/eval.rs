//! `sre-agent eval [--scenarios DIR] [--only NAME] [--repeat N] [--json] [--rename SEED]`:
//! each scenario (renamed from SEED when asked, `eval::rename`), for each run of
//! each scenario, builds its world (`eval::World`), starts the real daemon on it in this
//! process (fresh store, loopback port, the user's `[llm]` section and nothing else of
//! theirs), sends the trigger exactly as a user's Grafana, Alertmanager or `ask` would
//! (webhook → intake → investigation), waits for the stored finding and scores it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use chrono::Utc;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::api::{InvestigationDetail, InvestigationPage, Queued};
use crate::app::App;
use crate::config::Config;
use crate::eval::scenario::TriggerSpec;
use crate::eval::score::{finding_text, notes, tool_errors, tools_called};
use crate::eval::{RunOutcome, Scenario, ScenarioOutcome, SuiteOutcome, Verdict, World};

/// The scenarios shipped in the repository, relative to the working directory.
pub const DEFAULT_SCENARIOS: &str = "eval/scenarios";

/// What `sre-agent eval` was asked to do.
#[derive(Clone, Debug)]
pub struct EvalOptions {
    pub scenarios: Option<PathBuf>,
    /// Only these scenarios (by directory name); all when empty.
    pub only: Vec<String>,
    pub repeat: u32,
    pub json: bool,
    /// How long one run may take from trigger to finding.
    pub timeout: Duration,
    /// Rename every user-chosen name of each scenario from this seed (`eval::rename`).
    pub rename: Option<u64>,
}

/// `--scenarios`, else `eval/scenarios` here, else the one of the source tree this binary
/// was built from.
fn scenarios_dir(given: Option<&Path>) -> PathBuf {
    if let Some(d) = given {
        return d.to_path_buf();
    }
    let here = PathBuf::from(DEFAULT_SCENARIOS);
    if here.is_dir() {
        return here;
    }
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join(DEFAULT_SCENARIOS);
    if built.is_dir() { built } else { here }
}

/// Runs the suite and prints it; returns whether every run passed.
pub async fn run(config: &Config, opts: &EvalOptions) -> anyhow::Result<bool> {
    if config.llm.base_url.is_none() {
        bail!(
            "no LLM configured: set llm.base_url (and llm.model) in config.toml or SRE_AGENT_LLM__BASE_URL"
        );
    }
    // The daemon's logs under the table: warnings, or what `log.level` asks for when set
    // (`sre_agent::agent::health=debug` lists every ranked fact of the sweep).
    let mut log = config.log.clone();
    if log.level == crate::config::LogConfig::default().level {
        log.level = "warn".into();
    }
    crate::telemetry::logging::init(&log);
    let dir = scenarios_dir(opts.scenarios.as_deref());
    let mut scenarios = Scenario::load_all(&dir)
        .with_context(|| format!("loading scenarios from {}", dir.display()))?;
    if !opts.only.is_empty() {
        for name in &opts.only {
            if !scenarios.iter().any(|s| &s.name == name) {
                bail!("no scenario {name:?} in {}", dir.display());
            }
        }
        scenarios.retain(|s| opts.only.contains(&s.name));
    }
    if scenarios.is_empty() {
        bail!(
            "no scenarios (directories with a scenario.toml) in {}",
            dir.display()
        );
    }
    // Renamed copies live in this directory for the whole run.
    let renamed_dir = tempfile::tempdir().context("a directory for renamed scenarios")?;
    if let Some(seed) = opts.rename {
        let mut renamed = Vec::new();
        for s in &scenarios {
            let (r, renaming) = crate::eval::rename::rename_scenario(s, seed, renamed_dir.path())
                .with_context(|| format!("renaming {}", s.name))?;
            eprintln!(
                "{}: renamed {} names ({})",
                s.name,
                renaming.originals().len(),
                renaming
                    .pairs()
                    .iter()
                    .filter(|(a, _)| !a.contains('\\'))
                    .map(|(a, b)| format!("{a} → {b}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            renamed.push(r);
        }
        scenarios = renamed;
    }
    let repeat = opts.repeat.max(1);
    let mut outcomes = Vec::new();
    for (i, scenario) in scenarios.iter().enumerate() {
        let mut runs = Vec::new();
        for n in 0..repeat {
            let run = if repeat > 1 {
                format!(" run {}/{repeat}", n + 1)
            } else {
                String::new()
            };
            eprintln!("[{}/{}] {}{run}…", i + 1, scenarios.len(), scenario.name);
            let outcome = run_scenario(config, scenario, opts.timeout).await;
            eprintln!(
                "    {} in {:.1} s{}",
                if outcome.verdict.passed {
                    "PASS"
                } else {
                    "FAIL"
                },
                outcome.seconds,
                outcome
                    .verdict
                    .reasons
                    .first()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            );
            runs.push(outcome);
        }
        outcomes.push(ScenarioOutcome::new(&scenario.name, runs));
    }
    let suite = SuiteOutcome::new(&config.llm.model, outcomes);
    if opts.json {
        println!("{}", serde_json::to_string_pretty(&suite)?);
    } else {
        print!("{}", suite.to_text());
    }
    Ok(suite.all_passed())
}

/// One run of `scenario` against the LLM of `config`; a failure to build or reach the
/// world is a failed run with its reason.
pub async fn run_scenario(config: &Config, scenario: &Scenario, timeout: Duration) -> RunOutcome {
    match attempt(config, scenario, timeout).await {
        Ok(outcome) => outcome,
        Err(e) => RunOutcome {
            verdict: Verdict {
                passed: false,
                reasons: vec![format!("{e:#}")],
            },
            status: "error".into(),
            investigation_id: None,
            steps: 0,
            prompt_tokens: 0,
            completion_tokens: 0,
            seconds: 0.0,
            cost_usd: 0.0,
            tools_called: Vec::new(),
            tool_errors: Vec::new(),
            notes: Vec::new(),
            summary: String::new(),
        },
    }
}

async fn attempt(
    config: &Config,
    scenario: &Scenario,
    timeout: Duration,
) -> anyhow::Result<RunOutcome> {
    // Loaded again so times in scenario.toml are relative to this run.
    let scenario = &Scenario::load(&scenario.dir).unwrap_or_else(|_| scenario.clone());
    let now = Utc::now();
    let world = World::build(scenario, now)
        .await
        .context("building the world")?;
    let app = App::build(world.configure(config))
        .await
        .context("starting the daemon")?;
    let base = format!("http://{}", app.local_addr());
    let token = CancellationToken::new();
    let server = tokio::spawn(app.run_until_stopped(crate::http::router, token.clone()));
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?;
    let result = drive(&http, &base, scenario, now, timeout).await;
    token.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(10), server).await;
    drop(world);
    let (detail, seconds) = result?;
    let inv = &detail.investigation;
    Ok(RunOutcome {
        verdict: crate::eval::score(&scenario.spec.expect, inv, &detail.events),
        status: inv.status.as_str().to_string(),
        investigation_id: Some(inv.id.clone()),
        steps: inv.steps,
        prompt_tokens: inv.tokens.prompt,
        completion_tokens: inv.tokens.completion,
        seconds,
        cost_usd: inv.cost_usd,
        tools_called: tools_called(&detail.events),
        tool_errors: tool_errors(&detail.events),
        notes: notes(&detail.events),
        summary: finding_text(inv),
    })
}

/// Sends the trigger and waits for the investigation to end; returns it with the seconds
/// from trigger to stored finding.
async fn drive(
    http: &reqwest::Client,
    base: &str,
    scenario: &Scenario,
    now: chrono::DateTime<Utc>,
    timeout: Duration,
) -> anyhow::Result<(InvestigationDetail, f64)> {
    let sent_at = Utc::now();
    let started = Instant::now();
    let id = match &scenario.spec.trigger {
        TriggerSpec::Ask { question } => {
            let queued: Queued = post(
                http,
                &format!("{base}/api/v1/ask"),
                &json!({ "question": question }),
            )
            .await?;
            queued.id
        }
        TriggerSpec::Grafana { payload } | TriggerSpec::Alertmanager { payload } => {
            let source = match &scenario.spec.trigger {
                TriggerSpec::Grafana { .. } => "grafana",
                _ => "alertmanager",
            };
            let body: Value = serde_json::from_str(&scenario.read(payload, now)?)
                .with_context(|| format!("{} is not JSON", payload.display()))?;
            let _: Value = post(http, &format!("{base}/webhook/{source}"), &body).await?;
            first_investigation(http, base, started + Duration::from_secs(30)).await?
        }
    };
    let deadline = started + timeout;
    loop {
        let detail: InvestigationDetail =
            get(http, &format!("{base}/api/v1/investigations/{id}")).await?;
        let inv = &detail.investigation;
        if inv.status.is_final() {
            let seconds = inv
                .finished_at
                .and_then(|f| (f - sent_at).to_std().ok())
                .unwrap_or_else(|| started.elapsed())
                .as_secs_f64();
            return Ok((detail, seconds));
        }
        if Instant::now() > deadline {
            bail!(
                "investigation {id} still {} after {}",
                inv.status.as_str(),
                humantime::format_duration(timeout)
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The id of the first investigation the daemon creates.
async fn first_investigation(
    http: &reqwest::Client,
    base: &str,
    deadline: Instant,
) -> anyhow::Result<String> {
    loop {
        let page: InvestigationPage =
            get(http, &format!("{base}/api/v1/investigations?limit=1")).await?;
        if let Some(inv) = page.items.into_iter().next() {
            return Ok(inv.id);
        }
        if Instant::now() > deadline {
            bail!("the alert started no investigation within 30 s (ignored, deduped or resolved?)");
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn post<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    url: &str,
    body: &Value,
) -> anyhow::Result<T> {
    let resp = http
        .post(url)
        .json(body)
        .send()
        .await
        .with_context(|| format!("POST {url}"))?;
    decode(url, resp).await
}

async fn get<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    url: &str,
) -> anyhow::Result<T> {
    let resp = http
        .get(url)
        .send()
        .await
        .with_context(|| format!("GET {url}"))?;
    decode(url, resp).await
}

async fn decode<T: serde::de::DeserializeOwned>(
    url: &str,
    resp: reqwest::Response,
) -> anyhow::Result<T> {
    let status = resp.status();
    let text = resp.text().await.unwrap_or_default();
    if !status.is_success() {
        bail!("{url} answered {status}: {text}");
    }
    serde_json::from_str(&text).with_context(|| format!("{url} answered unreadable JSON"))
}
