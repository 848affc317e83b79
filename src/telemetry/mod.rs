//! Self-instrumentation: the one metric registry (`metrics`), tracing setup (`logging`),
//! and panic containment for background tasks, counted in a metric (`supervise`).

pub mod logging;
mod metrics;
pub mod supervise;

pub use metrics::*;
