//! sre-agent: a single daemon that investigates alerts with an LLM and read-only tools,
//! emails a weekly reliability report, and measures itself with Prometheus metrics.
//!
//! Map of the crate (one module per part of DESIGN.md):
//! - [`config`]: loading (defaults → TOML → `SRE_AGENT_*` env → `*_file` secrets) and
//!   validation with errors naming the key; secrets print as `***`.
//! - [`app`]: `App::build(config)` + `run_until_stopped(token)`; the shared `AppState`.
//! - [`http`]: the axum router (health, metrics, webhooks, JSON API), auth, `ApiError`.
//! - [`store`]: sled trees with typed values, schema version, crash-safe state.
//! - [`telemetry`]: the one metric registry and tracing setup.
//! - [`integrations`]: typed clients for the user's upstreams and the health checker.
//! - [`alerts`]: the alert model, grouping, dedupe and budgets.
//! - [`tools`]: the read-only tools the LLM may call and their registry.
//! - [`notify`]: email (`Mailer`) and webhook notifications from a durable outbox.
//! - [`llm`]: the OpenAI-compatible chat client (retries, lenient parsing, cost metrics).
//! - [`agent`]: investigations: dispatcher (durable queue + workers), the loop, findings, CLI.
//! - [`eval`]: `sre-agent eval`: scenarios, worlds on a real Prometheus and fakes, scoring.
//! - [`report`]: the weekly reliability report (collectors, summary, rendering, email).
//! - [`schedule`]: cron jobs: the weekly report with catch-up, and scheduled investigations.

pub mod agent;
pub mod alerts;
pub mod api;
pub mod app;
pub mod cli;
pub mod config;
pub mod eval;
pub mod http;
pub mod integrations;
pub mod llm;
pub mod notify;
pub mod report;
pub mod schedule;
pub mod store;
pub mod telemetry;
pub mod tools;

pub use app::AppState;
pub use http::App;

/// Installs the ring crypto provider for rustls once (reqwest, kube and lettre need one).
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
