//! sre-agent: a single daemon that investigates alerts with an LLM and read-only tools,
//! emails a weekly reliability report, and measures itself with Prometheus metrics.
//!
//! Start with `ARCHITECTURE.md` at the repository root: the two flows, the layers (imports
//! point one way: `cli` → `http` → `api` → `app` → domain → `llm`/`tools` → `integrations`
//! → foundations; `tests/support/check_layers.py` checks it), each part's job, the
//! invariants, and which files to touch to add a tool, an integration, a key or an endpoint.
//!
//! Map of the crate, top to bottom:
//! - [`cli`]: the commands of the binary; [`http`]: the router and its auth layers;
//!   [`mcp`]: sre-agent as an MCP server (its handler, served by `http` and `cli`).
//! - [`api`]: the JSON bodies shared by the HTTP API and the CLI.
//! - [`app`]: every component built in one place; the shared [`AppState`]; retention; the
//!   daemon from start to stop ([`App`]) and its accept loop.
//! - [`schedule`], [`report`], [`notify`], [`alerts`], [`agent`]: the domain (cron jobs, the
//!   weekly report, notifications, alert intake, investigations), each with its own store.
//! - [`eval`]: `sre-agent eval`: scenarios, worlds on a real Prometheus and fakes, scoring.
//! - [`llm`]: the OpenAI-compatible client; [`tools`]: the read-only tools and their catalog.
//! - [`integrations`]: typed clients for the user's upstreams and the health checker.
//! - [`config`], [`store`] (generic sled trees), [`telemetry`], [`text`]: foundations.

pub mod agent;
pub mod alerts;
pub mod analyze;
pub mod api;
pub mod app;
pub mod cli;
pub mod config;
pub mod eval;
pub mod http;
pub mod integrations;
pub mod llm;
pub mod mcp;
pub mod notify;
pub mod report;
pub mod schedule;
pub mod store;
pub mod telemetry;
pub mod text;
pub mod tools;

pub use app::{App, AppState};

/// Installs the ring crypto provider for rustls once (reqwest, kube and lettre need one).
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
