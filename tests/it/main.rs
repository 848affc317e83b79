//! Integration tests: one crate, so it links once. `support` starts the real app on
//! 127.0.0.1:0 with a temp sled dir, the real binary, and real or fake upstreams.

// A panic is how a test or a bench reports a failure.
#![allow(clippy::unwrap_used)]

mod support;

mod agent;
mod alerts_api;
mod analyze;
mod appliances;
mod config_keys;
mod console;
mod dashboard;
mod delivery;
mod docs;
mod eval;
mod foundation;
mod http_tools;
mod intake_bounds;
mod integration_config;
mod kubernetes;
mod mcp;
mod memory;
mod notify;
mod real_model;
mod registries;
mod report;
mod report_api;
mod report_backups;
mod report_screenshot;
mod report_sources;
mod retention;
mod storm;
mod tools;
mod trust;
mod webhook_cancel;
mod webhooks;
mod webhooks_e2e;
