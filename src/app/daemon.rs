//! `App`: the daemon from start to stop. `App::build(config)` builds every component
//! ([`Components`]) and binds the listener; `run_until_stopped(router, token)` starts the
//! background work, serves the router `http` builds on the components' state
//! (`http::router`, passed in, as `http` sits above `app`) until the token is cancelled,
//! then drains in-flight work up to `server.shutdown_timeout` and flushes the store.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::listener::{ConnectionLimits, OnAccept, serve_with};
use super::{AppError, AppState, Components};
use crate::config::Config;

/// Why the daemon could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    App(#[from] AppError),
    #[error("cannot keep a generated API token in {path} (server.data_dir): {source}")]
    ApiToken {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot listen on {addr} (server.listen): {source}")]
    Listen {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("reading the listening address: {0}")]
    Serve(#[source] std::io::Error),
    #[error("flushing the store at shutdown: {0}")]
    Flush(#[source] crate::store::StoreError),
}

/// A built application, listening but not yet serving.
pub struct App {
    listener: TcpListener,
    components: Components,
}

impl App {
    /// Builds every component, then binds `server.listen`. Beyond loopback the API always
    /// needs a token: without `server.api_token` one is generated in the data directory.
    pub async fn build(mut config: Config) -> Result<Self, ServeError> {
        let generated =
            super::api_token::ensure(&mut config).map_err(|source| ServeError::ApiToken {
                path: super::api_token::path(&config).display().to_string(),
                source,
            })?;
        if let Some(path) = generated {
            tracing::warn!(
                path = %path.display(),
                "listening beyond loopback with no server.api_token: the API needs the token kept in this file (Authorization: Bearer …); the CLI on this host reads it"
            );
        }
        let components = Components::build(config).await?;
        let config = &components.state.config;
        let listener = TcpListener::bind(config.listen_addr())
            .await
            .map_err(|source| ServeError::Listen {
                addr: config.server.listen.clone(),
                source,
            })?;
        log_startup(config, listener.local_addr().map_err(ServeError::Serve)?);
        Ok(Self {
            listener,
            components,
        })
    }

    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("bound listener has an address")
    }

    pub fn state(&self) -> &AppState {
        &self.components.state
    }

    /// Serves `router` (given the started components' state) until `token` is cancelled,
    /// then shuts down gracefully.
    pub async fn run_until_stopped(
        self,
        router: impl FnOnce(AppState) -> Router,
        token: CancellationToken,
    ) -> Result<(), ServeError> {
        self.run_with(router, token, Arc::new(|_| {})).await
    }

    /// [`Self::run_until_stopped`], with a hook on each accepted connection (for tests).
    pub(crate) async fn run_with(
        self,
        router: impl FnOnce(AppState) -> Router,
        token: CancellationToken,
        on_accept: OnAccept,
    ) -> Result<(), ServeError> {
        let Self {
            listener,
            components,
        } = self;
        let running = components.start(&token).await?;
        let router = router(running.state.clone());
        let server_config = &running.state.config.server;
        let limits = ConnectionLimits {
            max_connections: server_config.max_connections,
            header_timeout: server_config.header_timeout.get(),
        };
        let metrics = running.state.metrics.clone();
        let server = tokio::spawn(serve_with(
            listener,
            router,
            limits,
            metrics,
            token.clone(),
            on_accept,
        ));
        token.cancelled().await;
        tracing::info!("shutting down: no new requests; draining in-flight work");
        running
            .stop(async {
                let _ = server.await;
            })
            .await
            .map_err(ServeError::Flush)?;
        tracing::info!("stopped");
        Ok(())
    }
}

fn log_startup(config: &Config, addr: SocketAddr) {
    let ignored = crate::config::ignored_env_vars();
    if !ignored.is_empty() {
        tracing::warn!(
            ?ignored,
            "SRE_AGENT_* environment variables that name no config section are ignored"
        );
    }
    let enabled = config.enabled_integrations();
    let disabled: Vec<_> = Config::INTEGRATIONS
        .iter()
        .filter(|i| !enabled.contains(i))
        .collect();
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        listen = %addr,
        data_dir = %config.server.data_dir.display(),
        ?enabled,
        ?disabled,
        "sre-agent started; integrations are off until configured"
    );
    let w = &config.webhook;
    let webhook_auth = w.token.is_some() || w.basic_user.is_some() || w.hmac_secret.is_some();
    if !addr.ip().is_loopback() && !webhook_auth {
        tracing::warn!(
            listen = %addr,
            "listening beyond loopback with no webhook auth: set webhook.token, basic_user/basic_password or hmac_secret"
        );
    }
}
