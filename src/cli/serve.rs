//! `sre-agent serve`: runs the daemon until SIGTERM or SIGINT, then drains and stops.

use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::http::App;
use crate::telemetry;

/// Builds the application (every setting checked before the port is bound) and serves.
pub async fn run(config: Config) -> anyhow::Result<()> {
    telemetry::logging::init(&config.log);
    crate::app::heap::trim_in_background();
    let app = App::build(config).await?;
    let token = CancellationToken::new();
    tokio::spawn(stop_on_signal(token.clone()));
    app.run_until_stopped(token).await?;
    Ok(())
}

async fn stop_on_signal(token: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers; stop with SIGKILL");
        return;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM received"),
        _ = int.recv() => tracing::info!("SIGINT received"),
    }
    token.cancel();
}
