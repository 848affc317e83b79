//! Self-instrumentation: the one metric registry (`metrics`) and tracing setup (`logging`).

mod labels;
pub mod logging;
mod metrics;

pub(crate) use labels::labelled;
pub use metrics::*;
