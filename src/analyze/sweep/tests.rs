//! The sweep's catalog and run: which analyzers each configured integration brings, a
//! failing, slow or panicking one skipped with a note, the reads around an onset.

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
            "gitops_sync",
            "proxmox_guests",
            "proxmox_storage",
            "proxmox_replication",
            "proxmox_unprotected",
            "proxmox_balloon",
            "pbs_tasks",
            "pbs_datastores",
            "pbs_backups",
            "pbs_verify",
            "truenas_pools",
            "truenas_alerts",
            "truenas_disks",
            "truenas_tasks",
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
            "admin_commands",
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
        "containers_not_back",
        "network_storm",
        "scheduled_reboots",
        "time_wait",
        "log_error_bursts",
        "gitops_sync",
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
