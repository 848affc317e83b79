//! `sre-agent serve`: runs the daemon until SIGTERM or SIGINT, then drains and stops.

use tokio_util::sync::CancellationToken;

use crate::app::App;
use crate::config::Config;
use crate::telemetry;

/// Builds the application (every setting checked before the port is bound) and serves.
pub async fn run(config: Config) -> anyhow::Result<()> {
    telemetry::logging::init(&config.log);
    crate::app::heap::trim_in_background();
    let app = App::build(config).await?;
    let token = CancellationToken::new();
    tokio::spawn(stop_on_signal(token.clone()));
    app.run_until_stopped(crate::http::router, token).await?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{SCHEMA_VERSION, write_schema};

    #[tokio::test]
    async fn serve_refuses_a_store_of_another_schema_naming_the_data_dir_and_both_versions() {
        for (found, advice) in [("2", "upgrade sre-agent"), ("0.9-dev", "no migration")] {
            let dir = tempfile::tempdir().unwrap();
            let data = dir.path().join("data");
            write_schema(&data, found);
            let mut config = Config::default();
            config.server.data_dir = data.clone();
            config.server.listen = "127.0.0.1:0".into();
            let refused = tokio::time::timeout(std::time::Duration::from_secs(30), run(config))
                .await
                .expect("serve stops at once instead of serving")
                .expect_err("a store of another schema is refused");
            let message = format!("{refused:#}");
            for part in [
                data.display().to_string(),
                format!("store schema {found}"),
                format!("reads schema {SCHEMA_VERSION} only"),
                advice.to_string(),
            ] {
                assert!(message.contains(&part), "{part:?} missing from {message}");
            }
        }
    }
}
