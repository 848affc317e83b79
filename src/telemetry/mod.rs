//! Self-instrumentation: the one metric registry (`metrics`) and tracing setup (`logging`).

pub mod logging;
mod metrics;

pub use metrics::*;
