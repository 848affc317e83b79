//! `kube_state_endpoints` and `kube_state_cronjobs` on the real kube-state-metrics capture
//! (`kube_state.rs`) with an incident written over it in the families kube-state-metrics
//! 2.6+ serves (names and labels as its docs list them: docs/metrics/service/endpoint-metrics.md,
//! docs/metrics/workload/cronjob-metrics.md and job-metrics.md): the Endpoints of
//! `wiki/outline` lost both ready addresses 40 minutes ago (`kube_endpoint_address` series
//! gone, `kube_endpoint_info` left), `wiki/minio` kept its address; the CronJob
//! `ops/pg-basebackup` (`Forbid`, daily) has a Job active for 30 hours, `ops/s3-sync`
//! (hourly) one started 10 minutes ago.

use sre_agent::analyze::{Fact, Severity};

use super::kube_state::{capture_with, ksm};
use super::world::{World, lines};

#[tokio::test]
async fn endpoints_left_without_ready_addresses_and_a_cronjob_held_by_a_hung_job() {
    let now = chrono::Utc::now().timestamp() as f64;
    let ep = |name: &'static str| [("namespace", "wiki"), ("endpoint", name)];
    let mut incident = vec![
        ksm("kube_endpoint_info", &ep("outline"), |_| Some(1.0)),
        ksm("kube_endpoint_info", &ep("minio"), |_| Some(1.0)),
        ksm(
            "kube_endpoint_address",
            &[
                ("namespace", "wiki"),
                ("endpoint", "minio"),
                ("ip", "10.42.2.30"),
                ("ready", "true"),
            ],
            |_| Some(1.0),
        ),
    ];
    for ip in ["10.42.1.17", "10.42.3.9"] {
        incident.push(ksm(
            "kube_endpoint_address",
            &[
                ("namespace", "wiki"),
                ("endpoint", "outline"),
                ("ip", ip),
                ("ready", "true"),
            ],
            |ago| (ago > 2400).then_some(1.0),
        ));
    }
    let cj = |name: &'static str, schedule: &'static str| {
        [
            ("namespace", "ops"),
            ("cronjob", name),
            ("schedule", schedule),
            ("concurrency_policy", "Forbid"),
            ("timezone", "local"),
        ]
    };
    incident.extend([
        ksm(
            "kube_cronjob_info",
            &cj("pg-basebackup", "45 0 * * *"),
            |_| Some(1.0),
        ),
        ksm("kube_cronjob_info", &cj("s3-sync", "0 * * * *"), |_| {
            Some(1.0)
        }),
    ]);
    for (cronjob, job, started_ago) in [
        ("pg-basebackup", "pg-basebackup-29641845", 30.0 * 3600.0),
        ("s3-sync", "s3-sync-29643540", 600.0),
    ] {
        let j = [("namespace", "ops"), ("job_name", job)];
        incident.extend([
            ksm("kube_job_status_active", &j, |_| Some(1.0)),
            ksm("kube_job_status_start_time", &j, move |_| {
                Some(now - started_ago)
            }),
            ksm(
                "kube_job_owner",
                &[
                    ("namespace", "ops"),
                    ("job_name", job),
                    ("owner_kind", "CronJob"),
                    ("owner_name", cronjob),
                    ("owner_is_controller", "true"),
                ],
                |_| Some(1.0),
            ),
        ]);
    }
    let Some(world) = World::build(&capture_with(incident), 3 * 3600, 60).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(20 * 60)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    let of = |analyzer: &str| -> Vec<&Fact> {
        facts.iter().filter(|f| f.analyzer == analyzer).collect()
    };

    let endpoints = of("kube_state_endpoints");
    assert_eq!(endpoints.len(), 1, "{all}");
    let f = endpoints[0];
    assert_eq!(f.entity.name, "wiki/outline");
    assert_eq!(f.severity, Severity::Critical);
    let since = (now as i64 - f.since.expect("since").timestamp()) / 60;
    // Backfilled series end without a staleness marker (a scrape would write one), so a
    // vanished series is seen for up to 5 minutes more.
    assert!((34..=42).contains(&since), "{since} min: {all}");
    assert!(
        f.detail
            .as_deref()
            .unwrap()
            .starts_with("2 ready address(es) until"),
        "{all}"
    );

    let cronjobs = of("kube_state_cronjobs");
    assert_eq!(cronjobs.len(), 1, "{all}");
    let f = cronjobs[0];
    assert_eq!(f.entity.name, "ops/pg-basebackup");
    assert_eq!(f.severity, Severity::Critical);
    assert_eq!(f.what, "job pg-basebackup-29641845 still running after");
    assert!(
        f.detail
            .as_deref()
            .unwrap()
            .contains("Forbid: 1 run due since was skipped"),
        "{all}"
    );
}
