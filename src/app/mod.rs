//! The daemon's components, wired in one place. [`Components::build`] builds every one of
//! them from the configuration (store, metrics with every known series, the upstream
//! clients they share,
//! dispatcher, intake, reporter, notifier, health checker, scheduler), so a bad setting
//! fails before anything starts;
//! [`Components::start`] starts their background work on the one task tracker, and
//! [`Running::stop`] drains it. [`App`] (`daemon.rs`) runs them from start to stop behind
//! the HTTP listener (`listener.rs`, with its per-connection deadlines in `watch.rs`).

pub mod api_token;
mod daemon;
pub mod heap;
mod listener;
mod metrics;
mod retention;
mod state;
mod watch;

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use daemon::{App, ServeError};
pub use metrics::daemon_metrics;
pub use state::AppState;

use crate::agent::Dispatcher;
use crate::alerts::Intake;
use crate::alerts::store::AlertStore;
use crate::alerts::storm::StormStore;
use crate::config::Config;
use crate::integrations::Upstreams;
use crate::integrations::health::HealthChecker;
use crate::notify::{Notifier, ReportLedger};
use crate::report::Reporter;
use crate::schedule::Scheduler;
use crate::store::inbox::Inbox;
use crate::store::{Store, StoreError};
use crate::telemetry::Task;
use crate::telemetry::supervise::restarting;

/// A component that could not be built or started.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{what}: {source}")]
    Component {
        what: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl AppError {
    fn component<E: Into<Box<dyn std::error::Error + Send + Sync>>>(
        what: &'static str,
    ) -> impl FnOnce(E) -> Self {
        move |e| Self::Component {
            what,
            source: e.into(),
        }
    }
}

/// How `store.cache_mib` is shared: a quarter for decoded alert groups (each saves a
/// decode of JSON on every webhook of its group), the rest for sled's pages.
struct CacheShares {
    pages: u64,
    groups: usize,
}

impl CacheShares {
    fn of(bytes: u64) -> Self {
        let groups = bytes / 4;
        Self {
            pages: bytes - groups,
            groups: usize::try_from(groups).unwrap_or(usize::MAX),
        }
    }
}

/// Every component, built and not yet running.
pub struct Components {
    pub state: AppState,
    checker: HealthChecker,
    scheduler: Scheduler,
}

impl Components {
    /// Opens the store and builds every component of `config`.
    pub async fn build(config: Config) -> Result<Self, AppError> {
        let config = Arc::new(config);
        let caches = CacheShares::of(config.store.cache_bytes());
        let store = Store::open_with_cache(&config.server.data_dir, caches.pages)?;
        let metrics = Arc::new(daemon_metrics(&config.llm.model));
        let tasks = TaskTracker::new();
        // One client per upstream, shared by the tools, the evidence, the health sweep, the
        // report, the health checker and the annotations.
        let upstreams = Upstreams::from_config(&config)
            .map_err(AppError::component("building the upstream clients"))?;
        let dispatcher = Dispatcher::new(&config, &upstreams, &store, metrics.clone())
            .map_err(AppError::component("building the investigation dispatcher"))?;
        // One alert store (its write-through cache is shared): intake writes groups, the
        // notifier and the report read them.
        let alerts = AlertStore::open_bounded(&store, caches.groups, &metrics)?;
        let inbox = Inbox::open(store.path(), "alerts")?;
        let intake = Intake::new(
            &config.alerts,
            alerts.clone(),
            StormStore::open(&store)?,
            Arc::new(dispatcher.clone()),
            metrics.clone(),
            Some(inbox),
        )
        .map_err(AppError::component("building the alert intake"))?;
        let reports = Reporter::new(config.clone(), upstreams.clone(), &store, metrics.clone())?
            .with_dispatcher(dispatcher.clone())
            .with_alert_store(alerts.clone());
        let ledger: Arc<dyn ReportLedger> = Arc::new(reports.store().clone());
        let notifier = Notifier::new(
            config.clone(),
            &upstreams,
            &store,
            alerts,
            Some(ledger),
            metrics.clone(),
        )
        .map_err(AppError::component("building the notifier"))?;
        // Reports go out through the notifier's outbox (retries, at most once per period).
        let reports = reports.with_outbox(notifier.clone());
        let health = Arc::new(RwLock::new(BTreeMap::new()));
        for server in dispatcher.tools().mcp_servers() {
            server.report_to(health.clone());
        }
        let checker = HealthChecker::new(&config, &upstreams, metrics.clone(), health.clone())
            .map_err(AppError::component("building the health checker"))?;
        let scheduler = Scheduler::start(tasks.clone(), metrics.clone())
            .await
            .map_err(AppError::component("starting the job scheduler"))?;
        let state = AppState {
            config,
            store,
            metrics,
            health,
            tasks,
            dispatcher,
            intake,
            reports,
            notifier,
        };
        Ok(Self {
            state,
            checker,
            scheduler,
        })
    }

    /// Starts the background work: health checks, notifications, retention, the
    /// investigation workers (resuming queued ones), the alert processor (after deciding
    /// the batches a restart left in its inbox), alert decisions left pending by a
    /// restart, and the cron jobs. Returns the scheduler, to stop at shutdown.
    pub async fn start(self, token: &CancellationToken) -> Result<Running, AppError> {
        let Self {
            state,
            checker,
            mut scheduler,
        } = self;
        let tasks = &state.tasks;
        let metrics = state.metrics.clone();
        // Each pass of these loops is contained inside them (a tick, a drain, a send); what
        // panics outside a pass restarts the loop (`telemetry::supervise`).
        tasks.spawn({
            let checker = Arc::new(checker);
            restarting(Task::HealthChecker, metrics.clone(), token.clone(), {
                let token = token.clone();
                move || checker.clone().run(token.clone())
            })
        });
        if let Some(notifier) = state.notifier.clone() {
            let dispatcher = state.dispatcher.clone();
            let token2 = token.clone();
            tasks.spawn(restarting(
                Task::Notifier,
                metrics.clone(),
                token.clone(),
                move || notifier.clone().run(dispatcher.finished(), token2.clone()),
            ));
        }
        tasks.spawn({
            let (state, token2) = (state.clone(), token.clone());
            restarting(Task::Retention, metrics.clone(), token.clone(), move || {
                retention::run(state.clone(), token2.clone())
            })
        });
        state
            .dispatcher
            .start(token.clone(), tasks)
            .map_err(AppError::component("resuming queued investigations"))?;
        state
            .intake
            .start(tasks, token.clone())
            .await
            .map_err(AppError::component(
                "deciding alert batches accepted before a restart",
            ))?;
        state.intake.recover().await.map_err(AppError::component(
            "re-submitting alert investigations decided before a restart",
        ))?;
        crate::schedule::add_reports(
            &mut scheduler,
            state.reports.clone(),
            &state.config.report.schedule.0,
        )
        .await;
        crate::schedule::add_investigations(
            &mut scheduler,
            &state.dispatcher,
            &state.config.schedules,
        )
        .await;
        Ok(Running { state, scheduler })
    }
}

/// The components with their background work running.
pub struct Running {
    pub state: AppState,
    scheduler: Scheduler,
}

impl Running {
    /// Stops the cron jobs, waits up to `server.shutdown_timeout` for in-flight work (what
    /// is abandoned resumes at the next start) and flushes the store.
    pub async fn stop(self, drain: impl Future<Output = ()>) -> Result<(), StoreError> {
        let Self { state, scheduler } = self;
        scheduler.shutdown().await;
        let grace: Duration = state.config.server.shutdown_timeout.get();
        state.tasks.close();
        state.intake.stop_holding();
        let drained = tokio::time::timeout(grace, async {
            drain.await;
            state.tasks.wait().await;
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                ?grace,
                "shutdown timeout reached; abandoning unfinished work (it resumes at next start)"
            );
        }
        state.store.flush().await
    }
}
