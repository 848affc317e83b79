//! Where `ask`, `investigations` and `report` get their data: the running daemon's API when
//! one answers at `server.listen` (it holds the store), else the store opened in-process.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use reqwest::{Method, StatusCode};

use super::daemon::{Daemon, DaemonError};
use crate::agent::Dispatcher;
use crate::api::InvestigationDetail;
use crate::config::Config;
use crate::integrations::Upstreams;
use crate::store::Store;
use crate::telemetry::Metrics;

/// The daemon, or this process with its own store and investigation workers.
pub enum Backend {
    Remote(Daemon),
    Local {
        dispatcher: Dispatcher,
        store: Store,
        /// The upstream clients the dispatcher reads through, for the report to share.
        upstreams: Upstreams,
    },
}

impl Backend {
    /// The daemon's API when its /healthz answers quickly (requests then time out after
    /// `timeout`), else the store in-process.
    pub async fn connect(config: &Config, timeout: Duration) -> anyhow::Result<Self> {
        if let Some(daemon) = Daemon::find(config, timeout).await {
            return Ok(Self::Remote(daemon));
        }
        let store = Store::open(&config.server.data_dir)?;
        let metrics = Arc::new(Metrics::new(&config.llm.model));
        let upstreams = Upstreams::from_config(config)?;
        let dispatcher = Dispatcher::new(config, &upstreams, &store, metrics)?;
        Ok(Self::Local {
            dispatcher,
            store,
            upstreams,
        })
    }

    /// One investigation with its timeline; `None` when there is no such id.
    pub async fn detail(&self, id: &str) -> anyhow::Result<Option<InvestigationDetail>> {
        match self {
            Self::Local { dispatcher, .. } => Ok(match dispatcher.get(id)? {
                None => None,
                Some(investigation) => Some(InvestigationDetail {
                    events: dispatcher.events(id)?,
                    investigation,
                }),
            }),
            Self::Remote(daemon) => {
                let path = format!("/api/v1/investigations/{id}");
                match daemon.request(Method::GET, &path, None).await {
                    Ok(d) => Ok(Some(d)),
                    Err(DaemonError::Status {
                        status: StatusCode::NOT_FOUND,
                        ..
                    }) => Ok(None),
                    Err(e) => Err(e).context("reading the investigation from the daemon"),
                }
            }
        }
    }

    /// Makes what this process wrote durable (nothing to do through the daemon).
    pub async fn flush(&self) -> anyhow::Result<()> {
        if let Self::Local { store, .. } = self {
            store.flush().await?;
        }
        Ok(())
    }
}
