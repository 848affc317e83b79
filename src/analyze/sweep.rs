//! The catalog of analyzers (those of every configured integration) and the sweep that
//! runs them all in parallel, each within the time budget: a slow, failing or panicking
//! analyzer is skipped with a note and never holds up the investigation.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;

use super::{AnalyzeError, Analyzer, Fact, Scope, prom};
use crate::config::Config;
use crate::integrations::PrometheusClient;

/// How long one analyzer may take before it is skipped.
pub const ANALYZER_BUDGET: Duration = Duration::from_secs(5);
/// Most facts one analyzer contributes (its most severe).
const MAX_FACTS_PER_ANALYZER: usize = 12;

/// The analyzers of the configured integrations.
#[derive(Clone, Default)]
pub struct Sweep {
    analyzers: Vec<Arc<dyn Analyzer>>,
    budget: Option<Duration>,
}

/// What one sweep found.
#[derive(Clone, Debug, Default)]
pub struct SweepReport {
    pub facts: Vec<Fact>,
    /// Analyzers skipped, with why ("filesystem_space: Prometheus at … timed out").
    pub notes: Vec<String>,
    /// Analyzers that ran to the end.
    pub ran: usize,
    pub elapsed: Duration,
}

impl Sweep {
    /// The analyzers every configured integration allows.
    pub fn from_config(config: &Config) -> Result<Self, AnalyzeError> {
        let mut analyzers: Vec<Arc<dyn Analyzer>> = Vec::new();
        if config.prometheus.url.is_some() {
            let client = Arc::new(PrometheusClient::new(&config.prometheus)?);
            analyzers.extend(prom::analyzers(client));
        }
        Ok(Self {
            analyzers,
            budget: None,
        })
    }

    /// A sweep of exactly `analyzers` (tests, and integrations built elsewhere).
    pub fn of(analyzers: Vec<Arc<dyn Analyzer>>) -> Self {
        Self {
            analyzers,
            budget: None,
        }
    }

    /// Sets the time each analyzer may take (default [`ANALYZER_BUDGET`]).
    pub fn with_budget(mut self, budget: Duration) -> Self {
        self.budget = Some(budget);
        self
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.analyzers.iter().map(|a| a.name()).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.analyzers.is_empty()
    }

    /// Runs every analyzer in parallel over `scope`.
    pub async fn run(&self, scope: Scope) -> SweepReport {
        let start = Instant::now();
        let budget = self.budget.unwrap_or(ANALYZER_BUDGET);
        let runs = self.analyzers.iter().map(|a| {
            let a = a.clone();
            async move {
                let run = AssertUnwindSafe(a.run(&scope)).catch_unwind();
                let outcome = match tokio::time::timeout(budget, run).await {
                    Ok(Ok(Ok(facts))) => Ok(facts),
                    Ok(Ok(Err(e))) => Err(e.to_string()),
                    Ok(Err(_)) => Err("the analyzer panicked".to_string()),
                    Err(_) => Err(format!("no answer within {} s", budget.as_secs_f64())),
                };
                (a.name(), outcome)
            }
        });
        let mut report = SweepReport::default();
        for (name, outcome) in futures::future::join_all(runs).await {
            match outcome {
                Ok(mut facts) => {
                    report.ran += 1;
                    facts.sort_by_key(|f| std::cmp::Reverse(f.severity));
                    facts.truncate(MAX_FACTS_PER_ANALYZER);
                    report.facts.extend(facts);
                }
                Err(why) => report.notes.push(format!("{name}: skipped ({why})")),
            }
        }
        report.elapsed = start.elapsed();
        report
    }
}

#[cfg(test)]
mod tests {
    use async_trait::async_trait;
    use chrono::Utc;

    use super::*;
    use crate::analyze::{Entity, FactClass, Severity, Source};

    struct Fixed(&'static str, u32);

    #[async_trait]
    impl Analyzer for Fixed {
        fn name(&self) -> &'static str {
            self.0
        }
        async fn run(&self, _: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
            match self.1 {
                0 => Ok((0..20)
                    .map(|i| {
                        let sev = if i == 19 {
                            Severity::Critical
                        } else {
                            Severity::Info
                        };
                        Fact::new(
                            FactClass::Context,
                            self.0,
                            Entity::new("host", format!("h{i}")),
                            "seen",
                            sev,
                            Source::promql("up"),
                        )
                    })
                    .collect()),
                1 => Err(AnalyzeError::Other("unknown metric variant".into())),
                2 => {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    Ok(Vec::new())
                }
                _ => panic!("analyzer bug"),
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_failing_slow_or_panicking_analyzer_is_skipped_with_a_note_and_the_rest_report() {
        let sweep = Sweep::of(vec![
            Arc::new(Fixed("many", 0)),
            Arc::new(Fixed("broken", 1)),
            Arc::new(Fixed("slow", 2)),
            Arc::new(Fixed("buggy", 3)),
        ])
        .with_budget(Duration::from_secs(2));
        let report = sweep.run(Scope::new(Utc::now(), None)).await;
        assert_eq!(report.ran, 1);
        assert_eq!(report.facts.len(), MAX_FACTS_PER_ANALYZER);
        assert_eq!(
            report.facts[0].severity,
            Severity::Critical,
            "most severe kept"
        );
        assert_eq!(
            report.notes,
            vec![
                "broken: skipped (unknown metric variant)",
                "slow: skipped (no answer within 2 s)",
                "buggy: skipped (the analyzer panicked)",
            ]
        );
    }
}
