//! A restart of a host's containers read from cAdvisor's series as a standalone cAdvisor
//! labels them (`id` the cgroup, `name` the container's name, `image`; Docker's
//! `/system.slice/docker-<id>.scope` and Podman's `/machine.slice/libpod-<id>.scope`;
//! cgroup-hierarchy series without a `name`), with the times written for each case.

use super::*;
use crate::analyze::prom::labels;

/// 2026-11-28 14:00:00 UTC.
const T0: f64 = 1_764_338_400.0;

fn sample(name: &str, id: &str, value: f64) -> Sample {
    let mut l = labels(&[
        ("instance", "docker-1:8080"),
        ("job", "cadvisor"),
        ("id", id),
        ("image", "ghcr.io/acme/app:2.4"),
    ]);
    if !name.is_empty() {
        l.insert("name".into(), name.into());
    }
    Sample {
        metric: l,
        value,
        ts: T0,
    }
}

fn docker(hash: &str) -> String {
    format!("/system.slice/docker-{hash}.scope")
}

fn seen(v: &[(&str, &str, f64)]) -> HashMap<String, Seen> {
    by_name(
        &v.iter()
            .map(|(n, id, t)| sample(n, id, *t))
            .collect::<Vec<_>>(),
    )
}

#[test]
fn by_name_keeps_named_containers_only_and_the_latest_of_a_name() {
    let mut k8s = sample("k8s_app_web-0", "/kubepods/burstable/pod1/ab", 5.0);
    k8s.metric.insert("container".into(), "app".into());
    let got = by_name(&[
        sample("", "/system.slice/docker.service", 1.0),
        sample("", "/", 1.0),
        sample("web", &docker("aa"), 10.0),
        sample("web", &docker("bb"), 20.0),
        sample("db", "/machine.slice/libpod-cc.scope", f64::NAN),
        k8s,
    ]);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        got["web"],
        Seen {
            id: docker("bb"),
            at: 20.0
        }
    );
}

#[test]
fn the_restart_is_the_largest_cluster_of_starts_and_one_start_is_none() {
    let starts = [T0 - 86400.0 * 30.0, T0, T0 + 12.0, T0 + 40.0, T0 + 2000.0];
    assert_eq!(
        restart_moment(&starts, T0 - 3600.0, T0 + 3000.0),
        Some((T0, 3))
    );
    // The month-old start is outside the window; alone, a later start is no restart.
    assert_eq!(
        restart_moment(&[T0, T0 + 2000.0], T0 - 10.0, T0 + 3000.0),
        None
    );
    // Starts after `to` (too recent to tell what is missing) are not read.
    assert_eq!(
        restart_moment(&starts, T0 - 3600.0, T0 + 20.0),
        Some((T0, 2))
    );
    assert_eq!(restart_moment(&[f64::NAN, f64::INFINITY], 0.0, T0), None);
}

#[test]
fn a_container_that_ran_until_the_others_went_down_and_never_since_did_not_come_back() {
    // Three containers with `restart: always`, restarted in place at 14:00 (ids kept);
    // `wiki` (restart policy `no`) was last seen with them at 13:58:50; `old-job` exited
    // an hour earlier and is not part of it.
    let now = seen(&[
        ("web", &docker("a1"), T0),
        ("api", &docker("b2"), T0 + 8.0),
        ("worker", &docker("c3"), T0 + 35.0),
    ]);
    let before = seen(&[
        ("web", &docker("a1"), T0 - 75.0),
        ("api", &docker("b2"), T0 - 70.0),
        ("worker", &docker("c3"), T0 - 72.0),
        ("wiki", &docker("d4"), T0 - 70.0),
        ("old-job", &docker("e5"), T0 - 3000.0),
    ]);
    let last: HashMap<String, f64> = [
        ("web", T0 + 3000.0),
        ("api", T0 + 3000.0),
        ("worker", T0 + 3000.0),
    ]
    .into_iter()
    .map(|(n, t)| (n.to_string(), t))
    .collect();
    let v = judge(T0, &now, &before, &last).unwrap();
    assert_eq!(
        v,
        Verdict {
            at: T0,
            down: T0 - 70.0,
            within: 35.0,
            back: vec!["web".into(), "api".into(), "worker".into()],
            kept_ids: 3,
            missing: vec![("wiki".into(), T0 - 70.0)],
        }
    );
    assert_eq!(
        detail(&v, Some(T0 - 95.0)),
        "3 containers came back at 14:00:00 UTC within 35 s (web, api, worker); 1 did not: \
         wiki (last seen 13:58:50 UTC, 70 s before); the host booted at 13:58:25 UTC; a \
         container whose restart policy is `no` (or one stopped by hand just before) stays \
         down"
    );
    assert!(detail(&v, None).contains("its container runtime restarted them"));

    // `wiki` seen after the restart came back (and went down later): not this fact.
    let mut later = last.clone();
    later.insert("wiki".into(), T0 + 600.0);
    assert_eq!(judge(T0, &now, &before, &later), None);
}

#[test]
fn a_container_that_kept_running_through_it_or_nothing_missing_is_no_fact() {
    let before = seen(&[
        ("web", &docker("a1"), T0 - 60.0),
        ("api", &docker("b2"), T0 - 60.0),
        ("cron", &docker("f6"), T0 - 60.0),
        ("wiki", &docker("d4"), T0 - 60.0),
    ]);
    // `cron` started days ago and still runs: the runtime did not restart.
    let now = seen(&[
        ("web", &docker("a1"), T0),
        ("api", &docker("b2"), T0 + 5.0),
        ("cron", &docker("f6"), T0 - 5.0 * 86400.0),
    ]);
    assert_eq!(judge(T0, &now, &before, &HashMap::new()), None);
    // Everything came back.
    let all = seen(&[
        ("web", &docker("a1"), T0),
        ("api", &docker("b2"), T0 + 5.0),
        ("cron", &docker("f6"), T0 + 9.0),
        ("wiki", &docker("d4"), T0 + 9.0),
    ]);
    assert_eq!(judge(T0, &all, &before, &HashMap::new()), None);
}

#[test]
fn a_redeploy_recreates_containers_with_new_ids() {
    // Podman containers recreated by a deploy: new ids, so `kept_ids` is 0 and the
    // analyzer needs a boot before it calls it a restart.
    let before = seen(&[
        ("web", "/machine.slice/libpod-0a.scope", T0 - 30.0),
        ("api", "/machine.slice/libpod-0b.scope", T0 - 30.0),
        ("legacy", "/machine.slice/libpod-0c.scope", T0 - 30.0),
    ]);
    let now = seen(&[
        ("web", "/machine.slice/libpod-1a.scope", T0),
        ("api", "/machine.slice/libpod-1b.scope", T0 + 3.0),
    ]);
    let v = judge(T0, &now, &before, &HashMap::new()).unwrap();
    assert_eq!(v.kept_ids, 0);
    assert_eq!(v.missing, vec![("legacy".into(), T0 - 30.0)]);
}

#[test]
fn many_missing_containers_are_named_up_to_a_bound() {
    let names: Vec<String> = (0..9).map(|i| format!("c{i}")).collect();
    assert_eq!(named(&names), "c0, c1, c2, c3, c4, c5 and 3 more");
    assert_eq!(clock(f64::NAN), "?");
}
