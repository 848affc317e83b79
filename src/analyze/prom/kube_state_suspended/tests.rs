use super::*;
use crate::analyze::Severity;
use crate::analyze::prom::captures::captured;
use crate::analyze::prom::labels;

/// kube-state-metrics' own output for a CronJob running and a suspended one (README).
const CAPTURE: &str =
    include_str!("../../../../tests/fixtures/exporters/kube_state_metrics_cronjobs.prom");
/// The suspended CronJob's last success in the capture: 2018-03-11 10:04:56 UTC.
const LAST: f64 = 1_520_762_696.0;

fn found(text: &str) -> Vec<Suspended> {
    let m = captured(
        text,
        &[("instance", "ksm:8080"), ("job", "kube-state-metrics")],
        0.0,
    );
    let get = |n: &str| m.get(n).cloned().unwrap_or_default();
    join(
        &get("kube_cronjob_spec_suspend"),
        &get(SUCCESS),
        &get(SCHEDULED),
        &get(CREATED),
        &get("kube_cronjob_info"),
    )
}

#[test]
fn kube_state_metrics_suspended_cronjob_is_found_and_its_missed_runs_counted() {
    let s = found(CAPTURE);
    assert_eq!(s.len(), 1, "the suspended one only: {s:?}");
    assert_eq!(
        (s[0].namespace.as_str(), s[0].name.as_str()),
        ("ns1", "SuspendedCronJob1")
    );
    assert_eq!(s[0].schedule.as_deref(), Some("0 */3 * * *"));
    assert_eq!(s[0].last_success, Some(LAST));
    // Four days after its last success, every three hours: 32 runs missed.
    let f = fact(&s[0], LAST + 4.0 * 86400.0).expect("a fact");
    assert_eq!(f.severity, Severity::Critical);
    assert_eq!(f.figures["runs_missed"].value, 32.0);
    let d = f.detail.unwrap_or_default();
    assert!(
        d.starts_with(
            "CronJob ns1/SuspendedCronJob1 is suspended (spec.suspend: true); no successful \
             run since 2018-03-11 10:04 UTC (4.0 days, 32 scheduled runs missed)"
        ),
        "{d}"
    );
    assert!(
        f.source.arguments["query"]
            .as_str()
            .unwrap_or_default()
            .starts_with("time() - kube_cronjob_status_last_successful_time{namespace=\"ns1\"")
    );
    // Two hours after it: no run missed yet.
    assert!(fact(&s[0], LAST + 7200.0).is_none());
}

#[test]
fn running_cronjobs_and_other_captures_have_nothing_suspended() {
    let pods = include_str!("../../../../tests/fixtures/exporters/kube_state_metrics.prom");
    assert!(found(pods).is_empty());
    // A suspend flag of 0, or without its object's labels, is not a suspended CronJob.
    let flag = |v: f64, l: &[(&str, &str)]| Sample {
        metric: labels(l),
        value: v,
        ts: 0.0,
    };
    let suspend = [
        flag(0.0, &[("namespace", "a"), ("cronjob", "b")]),
        flag(1.0, &[("namespace", "a")]),
    ];
    assert!(join(&suspend, &[], &[], &[], &[]).is_empty());
}
