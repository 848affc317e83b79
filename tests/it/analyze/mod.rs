//! The health sweep's analyzers against a real Prometheus holding backfilled series: the
//! series of real exporters (several hosts, thousands of series) with an incident written
//! into a few of them. `world` is the harness every analyzer test uses.

mod filesystem;
pub mod world;
