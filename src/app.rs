//! `App::build(config)` wires the parts together (store, metrics, HTTP listener, background
//! tasks); `run_until_stopped(token)` serves until the token is cancelled, then drains
//! in-flight work up to `server.shutdown_timeout` and flushes the store.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::agent::Dispatcher;
use crate::alerts::Intake;
use crate::config::Config;
use crate::integrations::health::{ComponentHealth, HealthChecker};
use crate::store::Store;
use crate::telemetry::Metrics;

/// What every handler and background task shares. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub config: Arc<Config>,
    pub store: Store,
    pub metrics: Arc<Metrics>,
    pub health: ComponentHealth,
    /// Background work spawned by handlers; drained on shutdown.
    pub tasks: TaskTracker,
    /// Queues and runs investigations.
    pub dispatcher: Dispatcher,
    /// Webhook alert intake: storage, grouping, dedupe, budgets.
    pub intake: Intake,
    /// Weekly reports: generation, storage, delivery.
    pub reports: crate::report::Reporter,
}

/// A built application, listening but not yet serving.
pub struct App {
    listener: TcpListener,
    state: AppState,
}

impl App {
    /// Opens the store, registers metrics and binds the listener.
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        let config = Arc::new(config);
        let store = Store::open(&config.server.data_dir)?;
        let metrics = Arc::new(Metrics::new(&config.llm.model));
        let dispatcher = Dispatcher::new(&config, &store, metrics.clone())?;
        let intake = Intake::new(
            &config.alerts,
            crate::alerts::store::AlertStore::open(&store)?,
            Arc::new(dispatcher.clone()),
            metrics.clone(),
        )?;
        let listener = TcpListener::bind(config.listen_addr())
            .await
            .with_context(|| {
                format!("cannot listen on {} (server.listen)", config.server.listen)
            })?;
        let reports = crate::report::Reporter::new(config.clone(), &store, metrics.clone())?
            .with_dispatcher(dispatcher.clone());
        let state = AppState {
            config,
            store,
            metrics,
            reports,
            health: Arc::new(RwLock::new(BTreeMap::new())),
            tasks: TaskTracker::new(),
            dispatcher,
            intake,
        };
        log_startup(&state.config, listener.local_addr()?);
        Ok(Self { listener, state })
    }

    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("bound listener has an address")
    }

    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serves until `token` is cancelled, then shuts down gracefully.
    pub async fn run_until_stopped(self, token: CancellationToken) -> anyhow::Result<()> {
        let Self { listener, state } = self;
        let background = TaskTracker::new();

        let checker =
            HealthChecker::new(&state.config, state.metrics.clone(), state.health.clone())?;
        background.spawn(checker.run(token.clone()));
        let notifier = crate::notify::Notifier::new(
            state.config.clone(),
            &state.store,
            state.metrics.clone(),
        )?;
        if let Some(notifier) = notifier.clone() {
            let events = state.dispatcher.subscribe();
            background.spawn(notifier.run(state.dispatcher.clone(), events, token.clone()));
        }
        background.spawn(sweep_old_data(state.clone(), notifier, token.clone()));
        state
            .dispatcher
            .start(token.clone(), &background)
            .context("resuming queued investigations")?;
        state
            .intake
            .recover()
            .await
            .context("re-submitting alert investigations decided before a restart")?;
        let mut scheduler = crate::schedule::Scheduler::start(background.clone()).await?;
        crate::schedule::add_reports(
            &mut scheduler,
            state.reports.clone(),
            &state.config.report.schedule.0,
        )
        .await;
        crate::schedule::add_investigations(&mut scheduler, &state).await;

        let router = crate::http::router(state.clone());
        let serve_token = token.clone();
        let server = tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(async move { serve_token.cancelled().await })
                .await
        });

        token.cancelled().await;
        tracing::info!("shutting down: no new requests; draining in-flight work");
        scheduler.shutdown().await;
        let grace = state.config.server.shutdown_timeout.get();
        background.close();
        state.tasks.close();
        let drained = tokio::time::timeout(grace, async {
            let _ = server.await;
            background.wait().await;
            state.tasks.wait().await;
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                ?grace,
                "shutdown timeout reached; abandoning unfinished work (it resumes at next start)"
            );
        }
        state
            .store
            .flush()
            .await
            .context("flushing the store at shutdown")?;
        tracing::info!("stopped");
        Ok(())
    }
}

/// How often data older than `store.retention_days` is removed.
const SWEEP_EVERY: Duration = Duration::from_secs(3600);

/// Removes what is older than `store.retention_days` (0 keeps everything): final
/// investigations with their timelines, received alerts and quiet alert groups, stored
/// reports (but the newest), and the outbox's record of what was notified.
async fn sweep_old_data(
    state: AppState,
    notifier: Option<crate::notify::Notifier>,
    token: CancellationToken,
) {
    let days = state.config.store.retention_days;
    if days == 0 {
        return;
    }
    loop {
        let cutoff = chrono::Utc::now() - chrono::Duration::days(i64::from(days));
        let swept = (|| -> Result<[usize; 5], crate::store::StoreError> {
            let investigations = state.dispatcher.sweep(cutoff)?;
            let (alerts, groups) = state.intake.store().sweep(cutoff)?;
            let reports = state.reports.store().sweep(cutoff)?;
            let notified = notifier.as_ref().map_or(Ok(0), |n| n.sweep(cutoff))?;
            Ok([investigations, alerts, groups, reports, notified])
        })();
        match swept {
            Ok([0, 0, 0, 0, 0]) => {}
            Ok([investigations, alerts, groups, reports, notified]) => tracing::info!(
                investigations,
                alerts,
                groups,
                reports,
                notified,
                %cutoff,
                "removed data older than store.retention_days"
            ),
            Err(e) => tracing::warn!(error = %e, "retention sweep failed"),
        }
        tokio::select! {
            _ = token.cancelled() => return,
            _ = tokio::time::sleep(SWEEP_EVERY) => {}
        }
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
    if !addr.ip().is_loopback() && config.server.api_token.is_none() {
        tracing::warn!(listen = %addr, "listening beyond loopback with no server.api_token: the API is open");
    }
}
