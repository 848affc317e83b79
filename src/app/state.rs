//! `AppState`: what every HTTP handler and background task shares.

use std::sync::Arc;

use tokio_util::task::TaskTracker;

use crate::agent::Dispatcher;
use crate::alerts::Intake;
use crate::config::Config;
use crate::integrations::health::ComponentHealth;
use crate::notify::Notifier;
use crate::report::Reporter;
use crate::store::Store;
use crate::telemetry::Metrics;

/// The built components of the daemon. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub config: Arc<Config>,
    pub store: Store,
    pub metrics: Arc<Metrics>,
    /// Each upstream's last health check, written by the health checker (for /readyz).
    pub health: ComponentHealth,
    /// Every background task and every piece of work spawned by a handler; drained on
    /// shutdown.
    pub tasks: TaskTracker,
    /// Queues and runs investigations.
    pub dispatcher: Dispatcher,
    /// Webhook alert intake: storage, grouping, dedupe, budgets.
    pub intake: Intake,
    /// Weekly reports: generation, storage, delivery.
    pub reports: Reporter,
    /// Finding notifications (email, webhooks); `None` when no channel is configured.
    pub notifier: Option<Notifier>,
}
