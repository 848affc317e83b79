//! Ranking by labels, hosts, names in a question, time and severity.
use chrono::TimeDelta;

use super::*;
use crate::analyze::{Entity, Source};

fn fact(kind: &str, name: &str, host: &str, labels: &[(&str, &str)], sev: Severity) -> Fact {
    let labels = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Fact::new(
        FactClass::Exhaustion,
        "t",
        Entity::new(kind, name)
            .on_host(Some(host.to_string()))
            .with_labels(labels),
        "used",
        sev,
        Source::promql("x"),
    )
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn the_alerts_own_entity_outranks_a_worse_problem_elsewhere() {
    let decoy = fact(
        "host",
        "db9",
        "db9",
        &[("instance", "db9:9100")],
        Severity::Critical,
    );
    let own = fact(
        "filesystem",
        "/srv",
        "cedar-07",
        &[("instance", "cedar-07:9100"), ("mountpoint", "/srv")],
        Severity::Warning,
    );
    let focus = Focus::alert(
        &labels(&[
            ("alertname", "X"),
            ("instance", "cedar-07:9100"),
            ("mountpoint", "/srv"),
        ]),
        None,
    );
    let r = rank(vec![decoy, own], &focus);
    assert_eq!(r[0].fact.entity.name, "/srv");
    assert!(r[0].about_trigger && !r[1].about_trigger);
}

#[test]
fn a_fact_whose_quoted_text_names_the_alerts_host_ranks_above_one_that_does_not() {
    let context = |service: &str, detail: &str| {
        let mut f = fact("service", service, "proxy3", &[], Severity::Info);
        f.class = FactClass::Context;
        f.detail(detail.to_string())
    };
    let quiet = context("sshd.service", "most frequent: Accepted publickey for ops");
    let proxy = context(
        "caddy.service",
        "most frequent: level=error msg=\"could not renew\" identifier=Cloud.Kestrel.lan",
    );
    let focus = Focus::alert(
        &labels(&[
            ("alertname", "CertExpiring"),
            ("instance", "https://cloud.kestrel.lan"),
        ]),
        None,
    );
    let r = rank(vec![quiet.clone(), proxy.clone()], &focus);
    assert_eq!(r[0].fact.entity.name, "caddy.service");
    assert!(
        !r[0].about_trigger,
        "it mentions the host; it is not about it"
    );
    // A short host name is not looked for in text.
    let short = Focus::alert(&labels(&[("instance", "db1:9100")]), None);
    let db = context("app", "connection to db1 refused");
    let r = rank(vec![db, quiet], &short);
    assert_eq!(r[0].score, r[1].score);
}

#[test]
fn names_in_a_question_match_entities_despite_case_separators_and_a_typo() {
    let guest = fact("guest", "homeassistant", "pve2", &[], Severity::Warning);
    let other = fact("guest", "jellyfin", "pve2", &[], Severity::Critical);
    for q in [
        "Why is Home Assistant down?",
        "why is home-assistant down",
        "is homeasistant ok?",
    ] {
        let r = rank(vec![other.clone(), guest.clone()], &Focus::question(q));
        assert_eq!(r[0].fact.entity.name, "homeassistant", "{q}");
    }
    let pod = fact("pod", "media/worker-5d8f", "k3s-1", &[], Severity::Info);
    let r = rank(
        vec![other.clone(), pod],
        &Focus::question("the worker pod restarts"),
    );
    assert_eq!(r[0].fact.entity.name, "media/worker-5d8f");
}

#[test]
fn without_entities_severity_and_closeness_in_time_decide() {
    let start = Utc::now();
    let mut near = fact("host", "a1", "a1", &[], Severity::Warning);
    near.since = Some(start + TimeDelta::minutes(2));
    let mut far = fact("host", "b1", "b1", &[], Severity::Warning);
    far.since = Some(start - TimeDelta::days(2));
    let info = fact("host", "c1", "c1", &[], Severity::Info);
    let focus = Focus::alert(&labels(&[("alertname", "Latency")]), Some(start));
    let r = rank(vec![info, far, near], &focus);
    let order: Vec<&str> = r.iter().map(|r| r.fact.entity.name.as_str()).collect();
    assert_eq!(order, vec!["a1", "b1", "c1"]);
}

#[test]
fn among_facts_no_name_singles_out_the_one_measuring_what_the_question_asks_leads() {
    let mut memory = fact("host", "gw7", "gw7", &[], Severity::Info);
    memory.class = FactClass::Context;
    memory.what = "least memory available of 4 hosts".into();
    let mut cpu = fact("host", "enc3", "enc3", &[], Severity::Info);
    cpu.class = FactClass::Context;
    cpu.what = "busiest CPU of 4 hosts".into();
    let r = rank(
        vec![memory.clone(), cpu.clone()],
        &Focus::question("Which machine is the busiest right now?"),
    );
    assert_eq!(r[0].fact.entity.name, "enc3");
    assert!(
        !r[0].about_trigger,
        "a word of what is measured names no entity"
    );
    let r = rank(
        vec![cpu, memory],
        &Focus::question("Who is short of memory?"),
    );
    assert_eq!(r[0].fact.entity.name, "gw7");
}

#[test]
fn a_question_naming_what_one_entity_is_of_in_its_labels_ranks_it_first() {
    let pool = fact(
        "pool",
        "tank2",
        "nas4",
        &[("pool", "tank2")],
        Severity::Critical,
    );
    let pool_alert = fact(
        "alert",
        "ZpoolStatus",
        "nas4",
        &[("level", "CRITICAL"), ("volume", "tank2")],
        Severity::Critical,
    );
    let task = fact(
        "alert",
        "ReplicationFailed",
        "nas4",
        &[("level", "CRITICAL"), ("name", "music-to-attic")],
        Severity::Critical,
    );
    let q = Focus::question("Did last night's copy of the music to the attic box work?");
    let r = rank(vec![pool.clone(), pool_alert.clone(), task.clone()], &q);
    assert_eq!(r[0].fact.entity.name, "ReplicationFailed");
    assert!(r[0].about_trigger && !r[1].about_trigger);
    // A value three entities share names none of them: the question's "critical" is
    // not a name.
    let smart = fact(
        "alert",
        "SMARTTestFailed",
        "nas4",
        &[("level", "CRITICAL"), ("disk", "sdc")],
        Severity::Critical,
    );
    let q = Focus::question("anything critical on the nas?");
    let r = rank(vec![pool, pool_alert, task, smart], &q);
    assert!(r.iter().all(|r| !r.about_trigger));
    assert_eq!(r[0].fact.entity.name, "tank2");
}

#[test]
fn one_typo_is_tolerated_only_in_long_names() {
    assert!(similar("homeassistant", "homeasistant"));
    assert!(!similar("pve1", "pve2"));
    assert!(!similar("node01", "node02"));
    assert!(!similar("nas01", "nas02x"));
    assert_eq!(edit_distance("kitten", "sitting"), 3);
    assert_eq!(edit_distance("ünï", "uni"), 2);
}

#[test]
fn of_two_equal_facts_a_state_that_began_in_the_window_leads_a_standing_one() {
    // A question names the host: a disk flat at 97 % for days and a tmpfs full since
    // minutes ago score alike; the one that began is the news.
    let flat = fact("filesystem", "/srv", "reel1", &[], Severity::Critical);
    let mut full = fact("filesystem", "/scratch", "reel1", &[], Severity::Critical);
    full.since = Some(Utc::now() - TimeDelta::minutes(40));
    let r = rank(
        vec![flat, full],
        &Focus::question("playback fails on reel1"),
    );
    assert_eq!(r[0].score, r[1].score);
    let order: Vec<&str> = r.iter().map(|r| r.fact.entity.name.as_str()).collect();
    assert_eq!(order, vec!["/scratch", "/srv"]);
}

#[test]
fn a_fact_quoting_the_alerts_instance_itself_ranks_above_one_naming_its_host() {
    let target = |detail: &str| {
        fact("target", "apphost:8000", "apphost", &[], Severity::Critical)
            .detail(detail.to_string())
    };
    let instance = target("with it, the head series of kestrel-mon:9090 rose 7-fold");
    let host = target("kestrel-mon scrapes it");
    let focus = Focus::alert(
        &labels(&[
            ("alertname", "PromRestarts"),
            ("instance", "kestrel-mon:9090"),
        ]),
        None,
    );
    let r = rank(vec![host, instance], &focus);
    assert_eq!(r[0].score, r[1].score + 3);
    assert!(
        r[0].fact
            .detail
            .as_deref()
            .unwrap()
            .contains("kestrel-mon:9090")
    );
    assert!(!r[0].about_trigger);
}

#[test]
fn a_state_that_began_when_a_question_says_outranks_a_worse_standing_one() {
    // "Since yesterday": any time yesterday is the start, not its midnight alone.
    let day: DateTime<Utc> = "2026-11-27T00:00:00Z".parse().unwrap();
    let standing = fact("filesystem", "/srv", "nas-x", &[], Severity::Warning);
    let began = fact("service", "dns", "gate-y", &[], Severity::Info)
        .since(Some(day + TimeDelta::hours(7)));
    let later = fact("service", "web", "gate-y", &[], Severity::Info)
        .since(Some(day + TimeDelta::hours(30)));
    let focus = Focus::question("my app says no connection since yesterday")
        .began(Some(day), Some((day, day + TimeDelta::hours(24))));
    let r = rank(vec![standing.clone(), later.clone(), began.clone()], &focus);
    assert_eq!(r[0].fact.entity.name, "dns");
    assert_eq!(r[0].near_start, Some(true));
    assert_eq!(r[2].fact.entity.name, "web");
    // Without the span only the stated midnight counts: the worse one leads.
    let focus = Focus::question("x").began(Some(day), None);
    let r = rank(vec![standing, later, began], &focus);
    assert_eq!(r[0].fact.entity.name, "/srv");
}

#[test]
fn a_fact_naming_the_alerts_pod_as_a_related_entity_ranks_as_about_that_pod() {
    let pod = |name: &str| {
        Entity::new("pod", format!("media/{name}"))
            .on_host(Some("w2".into()))
            .with_labels(labels(&[("namespace", "media"), ("pod", name)]))
    };
    let waiting = |name: &str| {
        Fact::new(
            FactClass::Kubernetes,
            "kube_pods",
            pod(name),
            "container not ready",
            Severity::Warning,
            Source::new("k8s_describe_pod", serde_json::json!({})),
        )
    };
    let focus = Focus::alert(
        &labels(&[
            ("alertname", "KubePodNotReady"),
            ("namespace", "media"),
            ("pod", "gamma-5f6d8c7b9-q7t2m"),
        ]),
        None,
    );
    let plain = rank(
        vec![waiting("beta-6c8d-x1"), waiting("alpha-7c9d-x2")],
        &focus,
    );
    assert_eq!(plain[0].score, plain[1].score);
    let named = waiting("alpha-7c9d-x2").related(pod("gamma-5f6d8c7b9-q7t2m"));
    let r = rank(vec![waiting("beta-6c8d-x1"), named], &focus);
    assert_eq!(r[0].fact.entity.name, "media/alpha-7c9d-x2");
    assert!(r[0].score > r[1].score, "{} {}", r[0].score, r[1].score);
}

#[test]
fn a_pod_of_the_alerts_workload_outranks_the_facts_that_restate_the_workload() {
    let alert = labels(&[
        ("alertname", "KubeDaemonSetRolloutStuck"),
        ("namespace", "telemetry"),
        ("daemonset", "log-shipper"),
        ("instance", "10.0.4.9:8080"),
        ("job", "kube-state-metrics"),
    ]);
    let focus = Focus::alert(&alert, None);
    // The series the rule reads, with every label of the alert.
    let restated = fact(
        "series",
        "kube_daemonset_status_number_ready",
        "10.0.4.9",
        &[
            ("instance", "10.0.4.9:8080"),
            ("job", "kube-state-metrics"),
            ("namespace", "telemetry"),
            ("daemonset", "log-shipper"),
        ],
        Severity::Warning,
    );
    let whole = fact(
        "daemonset",
        "telemetry/log-shipper",
        "",
        &[("namespace", "telemetry"), ("daemonset", "log-shipper")],
        Severity::Warning,
    );
    let part = fact(
        "pod",
        "telemetry/log-shipper-q8x2z",
        "wk-3",
        &[
            ("namespace", "telemetry"),
            ("pod", "log-shipper-q8x2z"),
            ("daemonset", "log-shipper"),
            ("workload", "log-shipper"),
        ],
        Severity::Warning,
    );
    let stranger = fact(
        "pod",
        "telemetry/metrics-relay-77kd2",
        "wk-1",
        &[
            ("namespace", "telemetry"),
            ("pod", "metrics-relay-77kd2"),
            ("daemonset", "metrics-relay"),
        ],
        Severity::Critical,
    );
    let ranked = rank(vec![restated, whole, stranger, part], &focus);
    assert_eq!(ranked[0].fact.entity.name, "telemetry/log-shipper-q8x2z");
    assert!(ranked[0].about_trigger);
    let stranger_at = ranked
        .iter()
        .position(|r| r.fact.entity.name == "telemetry/metrics-relay-77kd2")
        .unwrap();
    assert_eq!(stranger_at, 3, "another workload's pod is not lifted");
}

#[test]
fn a_replicaset_alert_lifts_its_deployments_pods_and_a_question_lifts_nothing() {
    let alert = labels(&[("namespace", "shop"), ("replicaset", "cart-6d9f8c7b5x")]);
    let pod = fact(
        "pod",
        "shop/cart-6d9f8c7b5x-p2m4k",
        "n2",
        &[("namespace", "shop"), ("deployment", "cart")],
        Severity::Info,
    );
    let whole = fact(
        "replicaset",
        "shop/cart-6d9f8c7b5x",
        "",
        &[("namespace", "shop"), ("replicaset", "cart-6d9f8c7b5x")],
        Severity::Critical,
    );
    let ranked = rank(
        vec![whole.clone(), pod.clone()],
        &Focus::alert(&alert, None),
    );
    assert_eq!(ranked[0].fact.entity.kind, "pod");
    let ranked = rank(
        vec![whole, pod],
        &Focus::question("why is cart in shop down?"),
    );
    assert_eq!(ranked[0].fact.entity.kind, "replicaset");
}

#[test]
fn another_container_on_the_alerts_exporter_is_not_the_alerts_container() {
    let alert = labels(&[
        ("alertname", "ContainerRestarting"),
        ("instance", "dockhost:8080"),
        ("job", "cadvisor"),
        ("name", "wiki"),
    ]);
    let target = [("instance", "dockhost:8080"), ("job", "cadvisor")];
    let sibling = fact(
        "container",
        "mailer",
        "dockhost",
        &[target[0], target[1], ("name", "mailer")],
        Severity::Critical,
    );
    let mut own_logs = fact("logs", "dockhost", "dockhost", &[], Severity::Warning);
    own_logs.class = FactClass::Logs;
    let own = fact(
        "container",
        "wiki",
        "dockhost",
        &[target[0], target[1], ("name", "wiki")],
        Severity::Info,
    );
    let ranked = rank(vec![sibling, own_logs, own], &Focus::alert(&alert, None));
    let order: Vec<&str> = ranked.iter().map(|r| r.fact.entity.name.as_str()).collect();
    assert_eq!(order, ["wiki", "dockhost", "mailer"]);
    assert!(!ranked[2].about_trigger);
}

#[test]
fn the_series_the_rule_reads_ranks_below_a_fact_that_says_more_about_the_same_host() {
    let alert = labels(&[("alertname", "HostHighLoad"), ("instance", "kiln:9100")]);
    let series = fact(
        "series",
        "node_load5",
        "kiln",
        &[("instance", "kiln:9100"), ("job", "node")],
        Severity::Warning,
    );
    let load = fact(
        "host",
        "kiln",
        "kiln",
        &[("instance", "kiln:9100")],
        Severity::Warning,
    );
    let plain = rank(
        vec![series.clone(), load.clone()],
        &Focus::alert(&alert, None),
    );
    assert_eq!(
        plain[0].fact.entity.kind, "series",
        "without the rule, by labels"
    );
    let focus = Focus::alert(&alert, None).measuring(["node_load5".to_string()]);
    let ranked = rank(vec![series, load], &focus);
    assert_eq!(ranked[0].fact.entity.kind, "host");
    assert!(ranked[1].about_trigger);
}
