//! Typed async clients for the user's upstreams. Each takes its base URL, timeout and
//! credentials in its constructor; every failure names the service, the URL (without
//! credentials) and what happened. Clients know nothing about the LLM. [`Upstreams`] holds
//! the client of each configured upstream, built once and shared.

pub mod alertmanager;
pub mod grafana;
pub mod health;
pub mod kubernetes;
pub mod loki;
pub mod pbs;
pub mod prometheus;
pub mod proxmox;
pub mod proxmox_backup;
pub mod query_result;
pub mod truenas;
pub mod truenas_tasks;
mod upstream;
mod upstreams;

pub use alertmanager::AlertmanagerClient;
pub use grafana::GrafanaClient;
pub use loki::LokiClient;
pub use prometheus::PrometheusClient;
pub use upstream::{
    Auth, MAX_BODY_BYTES, Upstream, UpstreamError, UpstreamOptions, read_capped, redact_url,
};
#[cfg(test)]
pub(crate) use upstreams::every_integration_configured;
pub use upstreams::{SetupError, Upstreams};
