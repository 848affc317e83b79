//! Shared by the intake benches (`#[path]`-included: each bench is its own crate).

use std::time::Duration;

/// Waits until every webhook batch the daemon at `base` answered is decided
/// (`sre_agent_alert_backlog` back at 0), so rates count alerts decided, not only answered.
pub async fn decided(http: &reqwest::Client, base: &str) -> reqwest::Result<()> {
    loop {
        let metrics = http
            .get(format!("{base}/metrics"))
            .send()
            .await?
            .text()
            .await?;
        if metrics.lines().any(|l| l == "sre_agent_alert_backlog 0") {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
