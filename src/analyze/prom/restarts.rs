//! Processes (re)started in the window, from `process_start_time_seconds`, which every
//! Prometheus client library exports for the process it runs in: the latest start is the
//! series' value (so when is exact), and how many times it changed in the window is how
//! often the process restarted. A series that begins in the window is a process started
//! for the first time (a new instance, a replaced pod).

use async_trait::async_trait;

use super::history::time_of;
use super::{Prom, by_identity, host, identity, labels_map, pick, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source,
};

/// Restarts in one window from which a process is worth a look (it keeps failing).
const WARN_RESTARTS: f64 = 3.0;

pub struct ProcessRestarts(pub Prom);

#[async_trait]
impl Analyzer for ProcessRestarts {
    fn name(&self) -> &'static str {
        "process_restarts"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let start = scope.window_start.timestamp();
        let started = format!("process_start_time_seconds > {start}");
        let restarts = format!(
            "changes(process_start_time_seconds{}) > 0",
            scope.promql_range()
        );
        let (started, restarts) = tokio::join!(self.0.vector(&started), self.0.vector(&restarts));
        let restarts = by_identity(restarts?);
        let mut facts = Vec::new();
        for s in started? {
            let Some(when) = time_of(s.value) else {
                continue;
            };
            if when > scope.now {
                continue;
            }
            let count = restarts.get(&identity(&s.metric)).copied().unwrap_or(0.0);
            let name = s
                .metric
                .get("job")
                .or(s.metric.get("instance"))
                .cloned()
                .unwrap_or_else(|| "?".into());
            let sel = selector(pick(&s.metric, &["job", "instance"]));
            let mut fact = Fact::new(
                FactClass::Change,
                self.name(),
                Entity::new("service", name)
                    .on_host(host(&s.metric))
                    .with_labels(labels_map(&s.metric)),
                if count > 0.0 {
                    "restarts"
                } else {
                    "started in the window"
                },
                if count >= WARN_RESTARTS {
                    Severity::Warning
                } else {
                    Severity::Info
                },
                Source::promql(&format!("process_start_time_seconds{sel}")),
            )
            .since(Some(when));
            if count > 0.0 {
                fact = fact.value(Quantity::count(count));
            }
            facts.push(fact);
        }
        facts.sort_by_key(|f| std::cmp::Reverse(f.since));
        Ok(facts)
    }
}
