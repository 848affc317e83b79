use super::*;

fn alert(fingerprint: &str, status: AlertStatus) -> Alert {
    let json = serde_json::json!({
        "source": "alertmanager", "fingerprint": fingerprint, "status": status,
        "name": "X", "labels": {"alertname": "X"}, "annotations": {"summary": "s"}
    });
    serde_json::from_value(json).unwrap()
}

/// Folds `alerts` into the group `key` at `at`.
fn absorb(store: &AlertStore, key: &str, at: DateTime<Utc>, alerts: &[Alert]) {
    store
        .update_group(key, |g, firing| {
            let mut g =
                g.unwrap_or_else(|| AlertGroup::new(key.into(), "t".into(), &alerts[0], at));
            for a in alerts {
                g.absorb(a, at, firing);
            }
            Some(g)
        })
        .unwrap();
}

#[test]
fn a_group_resolves_with_its_last_firing_alert_and_is_removed_with_everything_it_holds() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let now = Utc::now();
    let alerts = AlertStore::open(&store).unwrap();
    absorb(
        &alerts,
        "g",
        now,
        &[
            alert("a", AlertStatus::Firing),
            alert("b", AlertStatus::Firing),
        ],
    );
    assert_eq!(alerts.group("g").unwrap().unwrap().firing_count, 2);
    let resolve = |fp: &str| {
        alerts
            .update_group("g", |g, firing| {
                let mut g = g.unwrap();
                g.absorb(&alert(fp, AlertStatus::Resolved), now, firing);
                Some(g)
            })
            .unwrap()
            .unwrap()
            .status
    };
    assert_eq!(resolve("a"), AlertStatus::Firing);
    assert_eq!(
        resolve("a"),
        AlertStatus::Firing,
        "resolving twice counts once"
    );
    assert_eq!(resolve("b"), AlertStatus::Resolved);
    let raw: Tree<serde_json::Value> = store.tree("alert_groups").unwrap();
    assert_eq!(raw.get("g").unwrap().unwrap()["firing_count"], 0);

    alerts.update_group("g", |_, _| None).unwrap();
    assert!(alerts.group("g").unwrap().is_none());
    assert_eq!(alerts.firing.count("g").unwrap(), 0);
    assert_eq!(alerts.samples.scan_prefix("g\0").count(), 0);
    assert!(alerts.seen.is_empty());
}

#[test]
fn only_the_latest_samples_are_stored_and_a_cold_read_sees_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let alerts = AlertStore::open(&store).unwrap();
    let now = Utc::now();
    for i in 0..GROUP_SAMPLE + 5 {
        absorb(
            &alerts,
            "g",
            now,
            &[alert(&format!("fp{i:02}"), AlertStatus::Resolved)],
        );
    }
    assert_eq!(alerts.samples.len(), GROUP_SAMPLE);
    let cold = AlertStore::open(&store).unwrap();
    let g = cold.group("g").unwrap().unwrap();
    assert_eq!(g.alerts.len(), GROUP_SAMPLE);
    assert_eq!(
        g.last_alert.fingerprint,
        format!("fp{:02}", GROUP_SAMPLE + 4)
    );
    assert_eq!(g.received, (GROUP_SAMPLE + 5) as u64);
    // The cold store caches the group without its samples (their ranks only) and still
    // drops the right one: a resolved sample, the first of the ties.
    absorb(&cold, "g", now, &[alert("new", AlertStatus::Firing)]);
    assert_eq!(cold.samples.len(), GROUP_SAMPLE);
    let g = cold.group("g").unwrap().unwrap();
    assert!(g.alerts.contains_key("new"));
    assert!(
        !g.alerts.contains_key("fp05"),
        "the lowest-ranked sample went"
    );
    assert!(g.alerts.contains_key("fp06"));
    assert_eq!(g.ranks.len(), GROUP_SAMPLE);
}

#[test]
fn groups_are_listed_newest_first_one_page_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let alerts = AlertStore::open(&store).unwrap();
    let now = Utc::now();
    for i in 0..5 {
        let at = now - chrono::Duration::minutes(10 - i);
        absorb(
            &alerts,
            &format!("g{i}"),
            at,
            &[alert("a", AlertStatus::Firing)],
        );
    }
    // g1 becomes the newest.
    absorb(&alerts, "g1", now, &[alert("b", AlertStatus::Firing)]);
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = alerts
            .recent_groups(2, cursor.as_deref(), Samples::Last)
            .unwrap();
        assert!(page.groups.len() <= 2);
        seen.extend(page.groups.into_iter().map(|g| g.key));
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, ["g1", "g4", "g3", "g2", "g0"]);
    assert_eq!(alerts.seen.len(), 5, "one index entry per group");
}

#[test]
fn the_sweep_removes_old_alerts_and_quiet_groups_with_their_samples() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let alerts = AlertStore::open(&store).unwrap();
    let now = Utc::now();
    let old = now - chrono::Duration::days(40);
    absorb(&alerts, "quiet", old, &[alert("a", AlertStatus::Firing)]);
    absorb(&alerts, "pending", old, &[alert("a", AlertStatus::Firing)]);
    alerts
        .update_group("pending", |g, _| {
            g.map(|mut g| {
                g.pending_since = Some(old);
                g
            })
        })
        .unwrap();
    absorb(&alerts, "busy", now, &[alert("a", AlertStatus::Firing)]);
    for (at, key) in [(old, "quiet"), (old, "quiet"), (now, "busy")] {
        alerts
            .log_alert(&AlertRecord {
                batch: None,
                received_at: at,
                group_key: key.into(),
                outcome: Outcome::Deduped,
                alert: alert("a", AlertStatus::Firing),
            })
            .unwrap();
    }
    let swept = alerts.sweep(now - chrono::Duration::days(30)).unwrap();
    assert_eq!(swept, (2, 1));
    assert_eq!(alerts.alert_count(), 1);
    assert!(alerts.group("quiet").unwrap().is_none());
    assert!(
        alerts.group("pending").unwrap().is_some(),
        "waiting to be submitted"
    );
    assert_eq!(alerts.samples.scan_prefix("quiet\0").count(), 0);
    assert_eq!(alerts.firing.count("quiet").unwrap(), 0);
    assert_eq!(alerts.seen.len(), 2);
    assert_eq!(
        alerts.sweep(now - chrono::Duration::days(30)).unwrap(),
        (0, 0)
    );
}

#[test]
fn the_group_cache_stays_within_its_byte_bound_whatever_the_alerts_hold() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let alerts = AlertStore::open(&store).unwrap();
    let now = Utc::now();
    // Alerts as large as the intake lets through: 64 labels of 1,024 characters.
    let mut big = alert("fp", AlertStatus::Firing);
    for i in 0..crate::alerts::cap::LABELS_MAX - 1 {
        big.labels.insert(
            format!("l{i:02}"),
            "x".repeat(crate::alerts::cap::LABEL_VALUE_CHARS),
        );
    }
    for g in 0..300 {
        absorb(&alerts, &format!("g{g}"), now, std::slice::from_ref(&big));
        alerts.group_state(&format!("g{}", g / 2)).unwrap();
    }
    let cache = alerts.lock_cache();
    assert!(
        cache.bytes() <= DEFAULT_CACHE_BYTES,
        "{} bytes in {} groups",
        cache.bytes(),
        cache.len()
    );
    assert_eq!(
        cache.bytes(),
        cache.recount(),
        "the running count matches the groups"
    );
    assert!(cache.len() < 300, "groups left for the bound");
}

/// The store in `dir` as a restarted daemon opens it (nothing cached).
fn reopen(dir: &std::path::Path) -> AlertStore {
    AlertStore::open(&Store::open(dir).unwrap()).unwrap()
}

/// Folds one alert of `fingerprint` with `status` into the group `g`; its status after.
fn fold(alerts: &AlertStore, fingerprint: &str, status: AlertStatus) -> AlertStatus {
    absorb(alerts, "g", Utc::now(), &[alert(fingerprint, status)]);
    alerts.group_state("g").unwrap().unwrap().status
}

#[tokio::test]
async fn a_small_firing_set_is_kept_in_the_group_row_and_reads_the_same_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let alerts = reopen(dir.path());
    for fp in ["a", "b", "c"] {
        assert_eq!(fold(&alerts, fp, AlertStatus::Firing), AlertStatus::Firing);
    }
    assert_eq!(
        fold(&alerts, "never", AlertStatus::Resolved),
        AlertStatus::Firing
    );
    assert!(
        alerts.firing.tree.is_empty(),
        "no firing-tree key for a small set"
    );
    alerts.flush().await.unwrap();
    drop(alerts);

    let alerts = reopen(dir.path());
    let g = alerts.group("g").unwrap().unwrap();
    assert_eq!((g.status, g.firing_count), (AlertStatus::Firing, 3));
    assert_eq!(
        fold(&alerts, "a", AlertStatus::Resolved),
        AlertStatus::Firing
    );
    assert_eq!(
        fold(&alerts, "a", AlertStatus::Resolved),
        AlertStatus::Firing
    );
    assert_eq!(
        fold(&alerts, "b", AlertStatus::Resolved),
        AlertStatus::Firing
    );
    assert_eq!(
        fold(&alerts, "c", AlertStatus::Resolved),
        AlertStatus::Resolved
    );
    assert_eq!(alerts.group("g").unwrap().unwrap().firing_count, 0);
}

#[tokio::test]
async fn a_firing_set_past_the_row_cap_moves_to_the_buckets_and_counts_the_same_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let alerts = reopen(dir.path());
    let n = firing::INLINE_CAP + 4;
    for i in 0..n {
        fold(&alerts, &format!("fp{i}"), AlertStatus::Firing);
    }
    assert_eq!(alerts.firing.count("g").unwrap(), n, "all in the buckets");
    let raw: Tree<serde_json::Value> = alerts.store.tree("alert_groups").unwrap();
    assert!(raw.get("g").unwrap().unwrap().get("firing").is_none());
    alerts.flush().await.unwrap();
    drop((alerts, raw));

    let alerts = reopen(dir.path());
    let g = alerts.group("g").unwrap().unwrap();
    assert_eq!((g.status, g.firing_count), (AlertStatus::Firing, n));
    for i in 0..n - 1 {
        let status = fold(&alerts, &format!("fp{i}"), AlertStatus::Resolved);
        assert_eq!(status, AlertStatus::Firing, "fp{i}");
    }
    assert_eq!(alerts.firing.count("g").unwrap(), 1, "still in the buckets");
    let last = format!("fp{}", n - 1);
    assert_eq!(
        fold(&alerts, &last, AlertStatus::Resolved),
        AlertStatus::Resolved
    );
}

#[tokio::test]
async fn buckets_a_move_cut_short_left_behind_are_neither_counted_nor_kept() {
    let dir = tempfile::tempdir().unwrap();
    let alerts = reopen(dir.path());
    fold(&alerts, "a", AlertStatus::Firing);
    fold(&alerts, "b", AlertStatus::Firing);
    // What a move to the buckets leaves when a crash stops it before the row is written.
    let mut left = alerts.firing.of("g", None);
    assert!(left.insert("a") && left.insert("ghost"));
    alerts.flush().await.unwrap();
    drop(alerts);

    let alerts = reopen(dir.path());
    assert_eq!(alerts.group("g").unwrap().unwrap().firing_count, 2);
    for i in 0..firing::INLINE_CAP {
        fold(&alerts, &format!("fp{i}"), AlertStatus::Firing);
    }
    let moved = 2 + firing::INLINE_CAP;
    assert_eq!(alerts.firing.count("g").unwrap(), moved);
    assert_eq!(alerts.group("g").unwrap().unwrap().firing_count, moved);
    // "ghost" never fired: resolving it changes nothing.
    fold(&alerts, "ghost", AlertStatus::Resolved);
    assert_eq!(alerts.group("g").unwrap().unwrap().firing_count, moved);
}

/// An alert of `fingerprint` whose summary says `summary`.
fn alert_saying(fingerprint: &str, summary: &str) -> Alert {
    let mut a = alert(fingerprint, AlertStatus::Firing);
    a.annotations.insert("summary".into(), summary.into());
    a
}

#[tokio::test]
async fn a_group_of_one_alert_keeps_it_in_its_row_and_reads_the_same_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let alerts = reopen(dir.path());
    absorb(&alerts, "g", Utc::now(), &[alert_saying("a", "first")]);
    absorb(&alerts, "g", Utc::now(), &[alert_saying("a", "again")]);
    assert!(
        alerts.samples.is_empty(),
        "no sample key for a group of one"
    );
    alerts.flush().await.unwrap();
    drop(alerts);

    let alerts = reopen(dir.path());
    let g = alerts.group("g").unwrap().unwrap();
    assert_eq!(g.alerts.keys().collect::<Vec<_>>(), ["a"]);
    assert_eq!(g.alerts["a"].annotations["summary"], "again");
    assert_eq!(g.last_alert.annotations["summary"], "again");
    assert_eq!(g.received, 2);
    for samples in [Samples::All, Samples::Last] {
        let page = alerts.recent_groups(10, None, samples).unwrap();
        assert_eq!(page.groups[0].last_alert.annotations["summary"], "again");
    }
    let all = alerts.recent_groups(10, None, Samples::All).unwrap();
    assert_eq!(all.groups[0].alerts.len(), 1);
}

#[tokio::test]
async fn a_group_that_gains_a_second_alert_after_a_restart_keeps_both_samples() {
    let dir = tempfile::tempdir().unwrap();
    let alerts = reopen(dir.path());
    absorb(&alerts, "g", Utc::now(), &[alert_saying("a", "from a")]);
    alerts.flush().await.unwrap();
    drop(alerts);

    let alerts = reopen(dir.path());
    absorb(&alerts, "g", Utc::now(), &[alert_saying("b", "from b")]);
    assert_eq!(alerts.samples.len(), 2, "both samples out of the row");
    let raw: Tree<serde_json::Value> = alerts.store.tree("alert_groups").unwrap();
    assert!(raw.get("g").unwrap().unwrap().get("sample").is_none());
    alerts.flush().await.unwrap();
    drop((alerts, raw));

    let alerts = reopen(dir.path());
    let g = alerts.group("g").unwrap().unwrap();
    let said: Vec<&str> = g
        .alerts
        .values()
        .map(|a| &*a.annotations["summary"])
        .collect();
    assert_eq!(said, ["from a", "from b"]);
    assert_eq!(g.last_alert.fingerprint, "b");
}

#[test]
fn a_group_of_one_sample_stored_outside_its_row_moves_it_into_the_row_at_its_next_alert() {
    let dir = tempfile::tempdir().unwrap();
    let alerts = reopen(dir.path());
    absorb(&alerts, "g", Utc::now(), &[alert_saying("a", "first")]);
    // The group as a store that kept every sample in `alert_samples` wrote it.
    let raw: Tree<serde_json::Value> = alerts.store.tree("alert_groups").unwrap();
    let mut row = raw.get("g").unwrap().unwrap();
    let sample: Alert = serde_json::from_value(row["sample"].take()).unwrap();
    row.as_object_mut().unwrap().remove("sample");
    raw.insert("g", &row).unwrap();
    alerts.samples.insert("g\0a", &sample).unwrap();
    let cold = AlertStore::open(&alerts.store).unwrap();
    assert_eq!(cold.group("g").unwrap().unwrap().alerts.len(), 1);

    absorb(&cold, "g", Utc::now(), &[alert_saying("a", "second")]);
    assert!(cold.samples.is_empty());
    let g = cold.group("g").unwrap().unwrap();
    assert_eq!(g.alerts["a"].annotations["summary"], "second");
}
