//! Self-instrumentation: the one metric registry (`metrics`), tracing setup (`logging`),
//! and panic containment for background tasks, counted in a metric (`supervise`).

mod labels;
pub mod logging;
mod metrics;
pub mod supervise;

pub use labels::Labelled;
pub(crate) use labels::labelled;
pub use metrics::*;
