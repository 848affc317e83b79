//! The catalog of analyzers (those of every configured integration) and the sweep that
//! runs them all in parallel, each within its time limit: a slow, failing or panicking
//! analyzer is skipped with a note and never holds up the investigation.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;

use super::pbs_verify::PbsVerify;
use super::proxmox_replication::ProxmoxReplication;
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
        if let Some(client) = &upstreams.proxmox {
            analyzers.extend(proxmox::analyzers(client.clone()));
            analyzers.push(Arc::new(ProxmoxReplication(client.clone())));
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
mod tests {
    use async_trait::async_trait;
    use chrono::Utc;

    use super::*;
    use crate::analyze::{AnalyzeError, Entity, FactClass, Severity, Source};

    /// The daemon's sweep of `config`: its analyzers over the clients built from it.
    fn configured(config: &Config) -> Sweep {
        Sweep::new(config, &Upstreams::from_config(config).unwrap())
    }

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

    #[test]
    fn every_configured_integration_brings_its_analyzers_and_none_run_without_it() {
        crate::install_crypto_provider();
        assert!(configured(&Config::default()).is_empty());
        let url = || {
            Some(crate::config::HttpUrl(
                url::Url::parse("http://127.0.0.1:9").unwrap(),
            ))
        };
        let secret = || Some(crate::config::Secret::new("s"));
        let mut config = Config::default();
        config.kubernetes.enabled = true;
        config.kubernetes.in_cluster = true;
        config.proxmox.url = url();
        config.proxmox.token_id = Some("a@pve!b".into());
        config.proxmox.token_secret = secret();
        config.pbs.url = url();
        config.pbs.token_id = Some("a@pbs!b".into());
        config.pbs.token_secret = secret();
        config.truenas.url = url();
        config.truenas.api_key = secret();
        let names = configured(&config).names();
        assert_eq!(
            names,
            vec![
                "kube_pods",
                "kube_nodes",
                "kube_pod_capacity",
                "kube_rollouts",
                "kube_services",
                "kube_cronjobs",
                "kube_events",
                "proxmox_guests",
                "proxmox_storage",
                "proxmox_replication",
                "pbs_tasks",
                "pbs_datastores",
                "pbs_backups",
                "pbs_verify",
                "truenas_pools",
                "truenas_alerts",
                "truenas_disks",
            ]
        );
    }

    #[test]
    fn the_catalog_holds_the_analyzers_of_the_configured_integrations_only() {
        crate::install_crypto_provider();
        let mut config = Config::default();
        assert!(configured(&config).is_empty());
        config.loki.url = Some("http://loki:3100".parse().unwrap());
        assert_eq!(
            configured(&config).names(),
            [
                "log_error_bursts",
                "logs_at_start",
                "logs_mentioning",
                "logs_elsewhere",
                "access_status_bursts",
                "log_changes"
            ]
        );
        config.prometheus.url = Some("http://prometheus:9090".parse().unwrap());
        let names = configured(&config).names();
        for name in [
            "targets_down",
            "scrape_series",
            "ages",
            "process_counts",
            "probe_failures",
            "certificate_expiry",
            "btrfs_allocation",
            "major_faults",
            "log_error_bursts",
        ] {
            assert!(names.contains(&name), "{names:?}");
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
        .with_time_limit(Duration::from_secs(2));
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

    /// What a first round finds: a state of the alert's host that began ten hours ago and
    /// a critical one on another host two hours ago.
    struct States;

    #[async_trait]
    impl Analyzer for States {
        fn name(&self) -> &'static str {
            "states"
        }
        async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
            let fact = |kind: &str, name: &str, host: &str, sev, hours| {
                Fact::new(
                    FactClass::Context,
                    "states",
                    Entity::new(kind, name).on_host(Some(host.into())),
                    "bad",
                    sev,
                    Source::promql("x"),
                )
                .since(Some(scope.now - chrono::TimeDelta::hours(hours)))
            };
            Ok(vec![
                fact("host", "web1", "web1", Severity::Warning, 10),
                fact("unit", "slapd.service", "dirsrv", Severity::Critical, 2),
            ])
        }
    }

    /// Log lines around whatever start it is given, on the hosts its focus names.
    struct AroundStart;

    #[async_trait]
    impl Analyzer for AroundStart {
        fn name(&self) -> &'static str {
            "around"
        }
        fn reads_around_start(&self) -> bool {
            true
        }
        async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
            let focus = scope.focus.clone().expect("a focus");
            let ago = (scope.now - scope.started).num_hours();
            Ok(["web1", "dirsrv"]
                .into_iter()
                .filter(|h| focus.names_host(h))
                .map(|h| {
                    Fact::new(
                        FactClass::Logs,
                        "around",
                        Entity::new("logs", h).on_host(Some(h.into())),
                        "lines",
                        Severity::Warning,
                        Source::promql("x"),
                    )
                    .detail(format!("lines {ago} h ago"))
                })
                .collect())
        }
    }

    #[tokio::test]
    async fn logs_are_read_around_an_early_onset_and_around_a_critical_state_elsewhere() {
        let now = Utc::now();
        let started = now - chrono::TimeDelta::minutes(30);
        let labels = [("instance".to_string(), "web1:9100".to_string())].into();
        let scope = Scope::new(now, Some(started))
            .with_focus(crate::analyze::Focus::alert(&labels, Some(started)));
        let sweep = Sweep::of(vec![Arc::new(States), Arc::new(AroundStart)]);
        let report = sweep.run(scope).await;
        assert_eq!(report.ran, 2);
        let around: Vec<&str> = report
            .facts
            .iter()
            .filter(|f| f.analyzer == "around")
            .filter_map(|f| f.detail.as_deref())
            .collect();
        // Around the alert's start, and again around the web1 state's onset.
        assert_eq!(around, ["lines 0 h ago", "lines 10 h ago"]);
        let slapd = report
            .facts
            .iter()
            .find(|f| f.entity.name == "slapd.service")
            .unwrap();
        assert_eq!(
            slapd.detail.as_deref(),
            Some("dirsrv logged as it began: lines 2 h ago")
        );
    }
}
