//! Alerts: one `Alert` model parsed from Grafana and Alertmanager payloads; grouping,
//! dedupe, cooldown, storm protection and the daily budget. Never calls the LLM.

mod matcher;

pub use matcher::LabelMatcher;
