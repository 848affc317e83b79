//! Alerts: one `Alert` model parsed from Grafana and Alertmanager payloads; grouping,
//! dedupe, cooldown, storm coalescing (`storm.rs`) and the daily budget. Never calls the LLM.

pub mod cap;
pub mod grouping;
pub mod intake;
mod investigator;
pub mod model;
pub mod store;
pub mod storm;

pub use intake::{Accepted, Intake, IntakeSummary, Investigator, NewInvestigation, Settle};
pub use model::{Alert, AlertSource, AlertStatus, WebhookBatch, label_fingerprint, parse_webhook};
