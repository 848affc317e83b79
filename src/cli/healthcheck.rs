//! `sre-agent healthcheck`: exits 0 when the running daemon's `/healthz` answers (for
//! container health checks).

use std::time::Duration;

use super::daemon::Daemon;
use crate::config::Config;

/// Checks `url` (default: the daemon of `config`) within `timeout`.
pub async fn run(config: &Config, url: Option<&str>, timeout: Duration) -> anyhow::Result<()> {
    let daemon = Daemon::new(config, url, timeout)?;
    daemon.healthz(timeout).await?;
    println!("ok: {}", daemon.url("/healthz"));
    Ok(())
}
