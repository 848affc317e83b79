use std::collections::BTreeSet;

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
fn a_group_stored_with_its_firing_set_inline_is_migrated_and_still_resolves() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let now = Utc::now();
    let mut legacy = serde_json::to_value(AlertGroup::new(
        "g".into(),
        "t".into(),
        &alert("a", AlertStatus::Firing),
        now,
    ))
    .unwrap();
    legacy["firing"] = serde_json::json!(["a", "b"]);
    legacy["status"] = serde_json::json!("firing");
    legacy.as_object_mut().unwrap().remove("firing_count");
    let raw: Tree<serde_json::Value> = store.tree("alert_groups").unwrap();
    raw.insert("g", &legacy).unwrap();

    let alerts = AlertStore::open(&store).unwrap();
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
    let stored = raw.get("g").unwrap().unwrap();
    assert!(stored.get("firing").is_none(), "{stored}");
    assert_eq!(stored["firing_count"], 0);

    alerts.update_group("g", |_, _| None).unwrap();
    assert!(alerts.group("g").unwrap().is_none());
    assert_eq!(alerts.firing.count("g").unwrap(), 0);
    assert_eq!(alerts.samples.scan_prefix("g\0").count(), 0);
    assert!(alerts.seen.is_empty());
}

#[test]
fn a_schema_1_store_with_samples_inside_the_groups_is_migrated_on_first_start() {
    let dir = tempfile::tempdir().unwrap();
    let now = Utc::now();
    let mut records = Vec::new();
    for (n, key) in ["old", "new"].iter().enumerate() {
        let mut g = AlertGroup::new(
            key.to_string(),
            "t".into(),
            &alert("a", AlertStatus::Firing),
            now,
        );
        let at = now - chrono::Duration::minutes(10 - n as i64);
        for fp in ["a", "b", "c"] {
            g.absorb(&alert(fp, AlertStatus::Firing), at, &mut BTreeSet::new());
        }
        // Schema 1 rows: the samples, the last alert and the firing set inline.
        let mut row = serde_json::to_value(&g).unwrap();
        row["firing"] = serde_json::json!(["a", "b", "c"]);
        records.push(("alert_groups", key.to_string(), row));
    }
    let log = AlertRecord {
        batch: None,
        received_at: now,
        group_key: "new".into(),
        outcome: Outcome::Queued,
        alert: alert("c", AlertStatus::Firing),
    };
    let log = serde_json::to_value(&log).unwrap();
    records.push(("alerts", format!("{}-000000", time_key(now)), log));
    crate::store::write_schema_1(dir.path(), &records);

    let store = Store::open(dir.path()).unwrap();
    let alerts = AlertStore::open(&store).unwrap();
    let page = alerts.recent_groups(10, None, Samples::All).unwrap();
    let keys: Vec<&str> = page.groups.iter().map(|g| g.key.as_str()).collect();
    assert_eq!(keys, ["new", "old"], "newest activity first");
    let g = &page.groups[0];
    assert_eq!(g.alerts.len(), 3);
    assert_eq!(g.last_alert.fingerprint, "c");
    assert_eq!(g.firing_count, 3);
    let summary = alerts.recent_groups(1, None, Samples::Last).unwrap();
    let g = &summary.groups[0];
    assert!(g.alerts.is_empty(), "the last alert only");
    assert_eq!(g.last_alert.fingerprint, "c");
    assert_eq!(g.firing_count, 3);
    let row: serde_json::Value = store
        .tree::<serde_json::Value>("alert_groups")
        .unwrap()
        .get("new")
        .unwrap()
        .unwrap();
    assert!(
        row.get("alerts").is_none() && row.get("last_alert").is_none(),
        "{row}"
    );
    assert_eq!(
        alerts
            .alerts_between(now, now + chrono::Duration::seconds(1))
            .unwrap()
            .len(),
        1
    );
    assert_eq!(alerts.group("old").unwrap().unwrap().firing_count, 3);
    drop((alerts, store));

    // A second start finds it migrated and leaves it as it is.
    let store = Store::open(dir.path()).unwrap();
    let alerts = AlertStore::open(&store).unwrap();
    assert_eq!(
        alerts
            .recent_groups(10, None, Samples::Last)
            .unwrap()
            .groups
            .len(),
        2
    );
    assert_eq!(alerts.seen.len(), 2);
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
fn a_schema_2_alert_log_in_sled_moves_into_the_journal_once_even_after_a_stop_midway() {
    let dir = tempfile::tempdir().unwrap();
    let now = Utc::now();
    let record = |i: i64| AlertRecord {
        batch: None,
        received_at: now - chrono::Duration::hours(i),
        group_key: format!("g{i}"),
        outcome: Outcome::Queued,
        alert: alert(&format!("fp{i}"), AlertStatus::Firing),
    };
    {
        let store = Store::open(dir.path()).unwrap();
        let old = store.tree::<AlertRecord>("alerts").unwrap();
        for i in 0..5 {
            let r = record(i);
            old.insert(format!("{}-{i:06}", time_key(r.received_at)), &r)
                .unwrap();
        }
    }
    // A start stopped while writing the journal left its half-built directory.
    let half = dir.path().join("journal").join("alerts.migrating");
    std::fs::create_dir_all(&half).unwrap();
    std::fs::write(half.join("20261124T05-import-0.jsonl"), "garbage\n").unwrap();
    for _ in 0..2 {
        let store = Store::open(dir.path()).unwrap();
        let alerts = AlertStore::open(&store).unwrap();
        let got = alerts
            .alerts_between(
                now - chrono::Duration::days(1),
                now + chrono::Duration::hours(1),
            )
            .unwrap();
        let keys: Vec<&str> = got.iter().map(|r| r.group_key.as_str()).collect();
        assert_eq!(keys, ["g4", "g3", "g2", "g1", "g0"]);
        assert_eq!(store.tree::<AlertRecord>("alerts").unwrap().len(), 0);
        assert!(!half.exists());
    }
}

#[test]
fn an_index_of_milliseconds_is_rebuilt_by_seconds_once() {
    let dir = tempfile::tempdir().unwrap();
    let now = Utc::now();
    {
        let store = Store::open(dir.path()).unwrap();
        let alerts = AlertStore::open(&store).unwrap();
        absorb(&alerts, "g0", now, &[alert("a", AlertStatus::Firing)]);
        absorb(&alerts, "g1", now, &[alert("b", AlertStatus::Firing)]);
        // What layout 2 wrote: keys to the nanosecond.
        alerts
            .seen
            .insert(format!("{}\0g0", time_key(now)), &())
            .unwrap();
        store.set_marker(LAYOUT_MARKER, "2").unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    let alerts = AlertStore::open(&store).unwrap();
    assert_eq!(alerts.seen.len(), 2, "one entry per group");
    let page = alerts.recent_groups(10, None, Samples::Last).unwrap();
    assert_eq!(page.groups.len(), 2);
}

/// Fires `fps` in group "g", rewinds the store to an older firing layout with `rewind`
/// (which writes the old tree; the current one is then dropped and the marker set to
/// `layout`), reopens it and checks the sets came through: all counted, and the group
/// resolves only once the last of them does.
fn an_older_firing_layout_converts(
    layout: &str,
    old_tree: &'static str,
    fps: &[String],
    rewind: impl FnOnce(&Store),
) {
    let dir = tempfile::tempdir().unwrap();
    let now = Utc::now();
    {
        let store = Store::open(dir.path()).unwrap();
        let alerts = AlertStore::open(&store).unwrap();
        let firing: Vec<Alert> = fps
            .iter()
            .map(|fp| alert(fp, AlertStatus::Firing))
            .collect();
        absorb(&alerts, "g", now, &firing);
        rewind(&store);
        store.drop_tree("alert_firing_packed").unwrap();
        store.set_marker(LAYOUT_MARKER, layout).unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    let alerts = AlertStore::open(&store).unwrap();
    assert_eq!(
        alerts.group("g").unwrap().unwrap().firing_count,
        fps.len(),
        "layout {layout}"
    );
    assert_eq!(
        store.tree::<()>(old_tree).unwrap().len(),
        0,
        "layout {layout}'s tree is dropped"
    );
    assert_eq!(store.marker(LAYOUT_MARKER).unwrap().as_deref(), Some("6"));
    let resolved: Vec<Alert> = fps[1..]
        .iter()
        .map(|fp| alert(fp, AlertStatus::Resolved))
        .collect();
    absorb(&alerts, "g", now, &resolved);
    let g = alerts.group("g").unwrap().unwrap();
    assert_eq!((g.firing_count, g.status), (1, AlertStatus::Firing));
    absorb(&alerts, "g", now, &[alert(&fps[0], AlertStatus::Resolved)]);
    assert_eq!(
        alerts.group("g").unwrap().unwrap().status,
        AlertStatus::Resolved
    );
    drop(alerts);
    let alerts = AlertStore::open(&store).unwrap();
    assert_eq!(
        alerts.group("g").unwrap().unwrap().firing_count,
        0,
        "converted once"
    );
}

/// Layouts 4 and 5 bucketed by FNV-1a modulo 64, as two hex digits.
fn old_bucket(fp: &str) -> String {
    rows::member_key("g", &format!("{:02x}", firing::hash(fp) % 64))
}

#[test]
fn layout_3_firing_keys_move_into_buckets_once_and_the_old_tree_is_dropped() {
    let fps: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
    an_older_firing_layout_converts("3", OLD_FIRING, &fps, |store| {
        let old: Tree<()> = store.tree(OLD_FIRING).unwrap();
        for fp in &fps {
            old.insert(rows::member_key("g", fp), &()).unwrap();
        }
    });
}

#[test]
fn layout_4_buckets_of_fingerprints_become_packed_hashes_once() {
    let fps: Vec<String> = (0..300).map(|i| format!("{i:016x}")).collect();
    an_older_firing_layout_converts("4", JSON_FIRING, &fps, |store| {
        let json: Tree<Vec<String>> = store.tree(JSON_FIRING).unwrap();
        let mut buckets = std::collections::BTreeMap::<String, Vec<String>>::new();
        for fp in &fps {
            buckets.entry(old_bucket(fp)).or_default().push(fp.clone());
        }
        for (key, mut list) in buckets {
            list.sort();
            json.insert(key, &list).unwrap();
        }
    });
}

#[test]
fn layout_5_buckets_of_8_byte_hashes_become_packed_hashes_once() {
    let fps: Vec<String> = (0..2_000).map(|i| format!("{i:016x}")).collect();
    an_older_firing_layout_converts("5", HASHED_FIRING, &fps, |store| {
        let hashed: Tree<Vec<u64>, firing::Hashes> = store.tree_with(HASHED_FIRING).unwrap();
        let mut buckets = std::collections::BTreeMap::<String, Vec<u64>>::new();
        for fp in &fps {
            buckets
                .entry(old_bucket(fp))
                .or_default()
                .push(firing::hash(fp));
        }
        for (key, mut set) in buckets {
            set.sort_unstable();
            hashed.insert(key, &set).unwrap();
        }
    });
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
        cache.bytes <= 4 << 20,
        "{} bytes in {} groups",
        cache.bytes,
        cache.groups.len()
    );
    let counted: usize = cache.groups.values().map(cache::cached_bytes).sum();
    assert_eq!(cache.bytes, counted, "the running count matches the groups");
    assert!(cache.groups.len() < 300, "groups left for the bound");
}
