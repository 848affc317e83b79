//! Tracing setup: text or JSON lines on stderr, filtered by `log.level`.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

use crate::config::{LogConfig, LogFormat};

/// Installs the global subscriber once; later calls are no-ops (tests call it repeatedly).
pub fn init(log: &LogConfig) {
    let filter = EnvFilter::try_new(&log.level).unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colours only on a terminal: under systemd, Docker or a file they would be stored
        // as escape sequences in every line.
        .with_ansi(std::io::stderr().is_terminal());
    let _ = match log.format {
        LogFormat::Text => builder.with_target(false).try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}
