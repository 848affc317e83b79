//! The catalog of analyzers (those of every configured integration) and the sweep that
//! runs them all in parallel, each within its time limit: a slow, failing or panicking
//! analyzer is skipped with a note and never holds up the investigation.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;

use super::pbs_verify::PbsVerify;
use super::proxmox_balloon::ProxmoxBalloon;
use super::proxmox_replication::ProxmoxReplication;
use super::proxmox_unprotected::ProxmoxUnprotected;
use super::truenas_tasks::TruenasTasks;
use super::{Analyzer, Fact, Resolver, Scope, kube, logs, pbs, prom, proxmox, truenas};
use crate::config::Config;
use crate::integrations::Upstreams;

/// How long one analyzer may take before it is skipped.
pub const ANALYZER_TIME_LIMIT: Duration = Duration::from_secs(5);
/// Most facts one analyzer contributes (its most severe).
const MAX_FACTS_PER_ANALYZER: usize = 12;

/// The analyzers of the configured integrations.
#[derive(Clone, Default)]
pub struct Sweep {
    analyzers: Vec<Arc<dyn Analyzer>>,
    /// Finds the hosts of the services the trigger names, before the analyzers run.
    resolver: Resolver,
    time_limit: Option<Duration>,
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
    /// What the trigger is about, with the hosts of the services it names added (the
    /// ranking's focus).
    pub focus: Option<Arc<super::Focus>>,
}

impl Sweep {
    /// The analyzers of every integration `upstreams` has a client for, reading through
    /// those shared clients.
    pub fn new(config: &Config, upstreams: &Upstreams) -> Self {
        let mut analyzers: Vec<Arc<dyn Analyzer>> = Vec::new();
        if let Some(client) = &upstreams.prometheus {
            analyzers.extend(prom::analyzers(client.clone()));
        }
        if let Some(client) = &upstreams.loki {
            analyzers.extend(logs::analyzers(client.clone()));
        }
        if let Some(client) = &upstreams.kubernetes {
            analyzers.extend(kube::analyzers(client.clone()));
        }
        if upstreams.kubernetes.is_some() || upstreams.prometheus.is_some() {
            analyzers.push(Arc::new(kube::GitopsSync::new(
                upstreams.kubernetes.clone(),
                upstreams.prometheus.clone(),
            )));
        }
        if let Some(client) = &upstreams.proxmox {
            analyzers.extend(proxmox::analyzers(client.clone()));
            analyzers.push(Arc::new(ProxmoxReplication(client.clone())));
            analyzers.push(Arc::new(ProxmoxUnprotected(client.clone())));
            analyzers.push(Arc::new(ProxmoxBalloon(client.clone())));
        }
        if let Some(client) = &upstreams.pbs {
            analyzers.extend(pbs::analyzers(
                client.clone(),
                config.pbs.backup_interval.get(),
            ));
            analyzers.push(Arc::new(PbsVerify(client.clone())));
        }
        if let Some(client) = &upstreams.truenas {
            analyzers.extend(truenas::analyzers(client.clone()));
            analyzers.push(Arc::new(TruenasTasks(client.clone())));
        }
        let mut sweep = Self::of(analyzers);
        sweep.resolver = Resolver {
            prometheus: upstreams.prometheus.clone(),
            loki: upstreams.loki.clone(),
        };
        sweep
    }

    /// A sweep of exactly `analyzers` (tests, and integrations built elsewhere).
    pub fn of(analyzers: Vec<Arc<dyn Analyzer>>) -> Self {
        Self {
            analyzers,
            resolver: Resolver::default(),
            time_limit: None,
        }
    }

    /// Sets how the hosts of the services a trigger names are found (`new` reads the
    /// configured Prometheus and Loki).
    pub fn with_resolver(mut self, resolver: Resolver) -> Self {
        self.resolver = resolver;
        self
    }

    /// Sets the time each analyzer may take (default [`ANALYZER_TIME_LIMIT`]).
    pub fn with_time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = Some(limit);
        self
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.analyzers.iter().map(|a| a.name()).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.analyzers.is_empty()
    }

    /// Runs every analyzer in parallel over `scope`; then, when a state the trigger is
    /// about began well before the trigger (an alert fires when a threshold is crossed,
    /// hours after the cause), those that read around the start read around that onset.
    pub async fn run(&self, scope: Scope) -> SweepReport {
        let start = Instant::now();
        let scope = self.resolver.resolve(scope).await;
        let focus = scope.focus.clone();
        let mut report = self.run_all(&scope, |_| true).await;
        if let Some(onset) = onset(&report.facts, &scope) {
            let mut earlier = Scope::new(scope.now, Some(onset));
            earlier.focus = scope.focus.clone();
            let again = self.run_all(&earlier, |a| a.reads_around_start()).await;
            report.facts.extend(again.facts);
            report.notes.extend(again.notes);
        }
        self.logged_as_it_began(&mut report.facts, &scope).await;
        self.joined_logs(&mut report, &scope).await;
        logs::join_coinciding(&mut report.facts, scope.focus.as_deref());
        report.facts = logs::merge_same(std::mem::take(&mut report.facts));
        report.facts = super::one_entity::join_same_entity(std::mem::take(&mut report.facts));
        report.elapsed = start.elapsed();
        report.focus = focus;
        report
    }

    /// A critical state on a host the trigger does not name (a unit failed on the
    /// directory server a login question never mentions) says what that host logged as it
    /// began: the bad-looking lines the analyzers that read around a start find there,
    /// added to the fact, so the cause travels with the state it explains.
    async fn logged_as_it_began(&self, facts: &mut [Fact], scope: &Scope) {
        let Some(focus) = scope.focus.as_ref() else {
            return;
        };
        let mut picked: Vec<usize> = (0..facts.len())
            .filter(|i| {
                let f = &facts[*i];
                f.severity == super::Severity::Critical
                    && f.since.is_some()
                    && f.entity.host.is_some()
                    && !focus.is_about(&f.entity)
            })
            .collect();
        picked.sort_by_key(|i| std::cmp::Reverse(facts[*i].since));
        let mut hosts = std::collections::BTreeSet::new();
        picked.retain(|i| hosts.insert(facts[*i].entity.host.clone()));
        picked.truncate(MAX_LOGGED_HOSTS);
        let reads = picked.iter().map(|i| {
            let (host, since) = (facts[*i].entity.host.clone(), facts[*i].since);
            let labels = [("host".to_string(), host.clone().unwrap_or_default())].into();
            let mut around = Scope::new(scope.now, since);
            around.focus = Some(Arc::new(super::Focus::alert(&labels, since)));
            async move {
                let found = self.run_all(&around, |a| a.reads_around_start()).await;
                let said: Vec<String> = found
                    .facts
                    .into_iter()
                    .filter(|f| f.entity.host == host)
                    .filter_map(|f| f.detail)
                    .collect();
                said.join(" | ")
            }
        });
        let said = futures::future::join_all(reads).await;
        for (i, text) in picked.into_iter().zip(said) {
            if text.is_empty() {
                continue;
            }
            let f = &mut facts[i];
            let host = f.entity.host.clone().unwrap_or_default();
            let detail = f.detail.take().map_or(String::new(), |d| format!("{d}; "));
            f.detail = Some(format!("{detail}{host} logged as it began: {text}"));
        }
    }

    /// Log lines joined to the facts found ([`logs::join_logs`]: a failure's service's own
    /// lines, what the other end of a failing connection logged), within an analyzer's
    /// time limit.
    async fn joined_logs(&self, report: &mut SweepReport, scope: &Scope) {
        let Some(loki) = &self.resolver.loki else {
            return;
        };
        let limit = self.time_limit.unwrap_or(ANALYZER_TIME_LIMIT);
        let prometheus = self.resolver.prometheus.as_deref();
        let joined = logs::join_logs(loki, prometheus, &mut report.facts, scope);
        match tokio::time::timeout(limit, joined).await {
            Ok(peers) => report.facts.extend(peers),
            Err(_) => report.notes.push(format!(
                "log joins: skipped (no answer within {} s)",
                limit.as_secs_f64()
            )),
        }
    }

    /// Runs the analyzers `which` picks in parallel over `scope`.
    async fn run_all(&self, scope: &Scope, which: impl Fn(&dyn Analyzer) -> bool) -> SweepReport {
        let limit = self.time_limit.unwrap_or(ANALYZER_TIME_LIMIT);
        let picked = self.analyzers.iter().filter(|a| which(a.as_ref()));
        let runs = picked.map(|a| {
            let a = a.clone();
            let scope = scope.clone();
            async move {
                let run = AssertUnwindSafe(a.run(&scope)).catch_unwind();
                let outcome = match tokio::time::timeout(limit, run).await {
                    Ok(Ok(Ok(facts))) => Ok(facts),
                    Ok(Ok(Err(e))) => Err(e.to_string()),
                    Ok(Err(_)) => Err("the analyzer panicked".to_string()),
                    Err(_) => Err(format!("no answer within {} s", limit.as_secs_f64())),
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
        report
    }
}

/// Most hosts of critical states elsewhere whose logs are read as those states began.
const MAX_LOGGED_HOSTS: usize = 2;

/// How long before the trigger's start a state must have begun for its onset to be read
/// around too (what is nearer is read around the start already).
pub const ONSET_LEAD: chrono::TimeDelta = chrono::TimeDelta::minutes(45);

/// The earliest start of a state that `facts` say the trigger is about (its entity matches
/// the focus, a warning or worse), when it began more than [`ONSET_LEAD`] before the
/// trigger's start.
fn onset(facts: &[Fact], scope: &Scope) -> Option<chrono::DateTime<chrono::Utc>> {
    let focus = scope.focus.as_ref()?;
    let before = scope.started.checked_sub_signed(ONSET_LEAD)?;
    facts
        .iter()
        .filter(|f| f.severity >= super::Severity::Warning && focus.is_about(&f.entity))
        .filter_map(|f| f.since)
        .filter(|s| *s < before)
        .min()
}

#[cfg(test)]
mod tests;
