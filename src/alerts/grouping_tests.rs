use chrono::TimeDelta;

use super::*;
use crate::alerts::store::AlertGroup;
use crate::alerts::{Alert, AlertSource, AlertStatus};

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn group_by() -> Vec<String> {
    ["alertname", "instance", "job"].map(String::from).to_vec()
}

fn alert() -> Alert {
    Alert {
        source: AlertSource::Alertmanager,
        fingerprint: "fp".into(),
        status: AlertStatus::Firing,
        name: "X".into(),
        labels: labels(&[("alertname", "X")]),
        annotations: BTreeMap::new(),
        starts_at: None,
        ends_at: None,
        generator_url: None,
        dashboard_url: None,
        panel_url: None,
        silence_url: None,
        value: None,
    }
}

fn budget(used: u32) -> impl FnOnce() -> Budget {
    move || Budget {
        used,
        cost_usd: 0.0,
        max_per_day: 5,
        cost_limit_usd: 1.0,
    }
}

const HOUR: Duration = Duration::from_secs(3600);

#[test]
fn the_group_key_uses_present_group_by_labels_in_order() {
    let l = labels(&[("job", "node"), ("alertname", "Down"), ("pod", "p")]);
    assert_eq!(
        group_key(&group_by(), &l, "fp"),
        r#"{alertname="Down", job="node"}"#
    );
    assert_eq!(
        group_key(&group_by(), &labels(&[]), "ab12"),
        r#"{fingerprint="ab12"}"#
    );
    assert_eq!(group_title(&group_by(), &l), "Down (job=node)");
}

#[test]
fn a_new_group_within_budget_is_queued() {
    let now = Utc::now();
    assert_eq!(
        decide_firing(None, &InvState::Missing, false, now, HOUR, budget(0)),
        Outcome::Queued
    );
}

#[test]
fn ignore_matchers_win_over_everything() {
    let now = Utc::now();
    assert_eq!(
        decide_firing(None, &InvState::Missing, true, now, HOUR, budget(0)),
        Outcome::Ignored
    );
}

#[test]
fn a_queued_running_or_pending_investigation_dedupes() {
    let now = Utc::now();
    for inv in [InvState::Queued, InvState::Running] {
        assert_eq!(
            decide_firing(None, &inv, false, now, HOUR, budget(0)),
            Outcome::Deduped
        );
    }
    let mut g = AlertGroup::new("k".into(), "t".into(), &alert(), now);
    g.pending_since = Some(now);
    assert_eq!(
        decide_firing(
            Some(&(&g).into()),
            &InvState::Missing,
            false,
            now,
            HOUR,
            budget(0)
        ),
        Outcome::Deduped
    );
}

#[test]
fn a_finished_investigation_blocks_only_during_the_cooldown() {
    let now = Utc::now();
    let recent = InvState::Done {
        status: "finished".into(),
        finished_at: now - TimeDelta::minutes(10),
    };
    assert_eq!(
        decide_firing(None, &recent, false, now, HOUR, budget(0)),
        Outcome::Cooldown
    );
    let old = InvState::Done {
        status: "failed".into(),
        finished_at: now - TimeDelta::hours(2),
    };
    assert_eq!(
        decide_firing(None, &old, false, now, HOUR, budget(0)),
        Outcome::Queued
    );
    assert_eq!(
        decide_firing(None, &InvState::Cancelled, false, now, HOUR, budget(0)),
        Outcome::Queued
    );
}

#[test]
fn the_daily_count_or_cost_limit_stops_new_investigations() {
    let now = Utc::now();
    assert_eq!(
        decide_firing(None, &InvState::Missing, false, now, HOUR, budget(5)),
        Outcome::Budget
    );
    let costly = || Budget {
        used: 0,
        cost_usd: 1.5,
        max_per_day: 5,
        cost_limit_usd: 1.0,
    };
    assert_eq!(
        decide_firing(None, &InvState::Missing, false, now, HOUR, costly),
        Outcome::Budget
    );
}

#[test]
fn a_group_resolves_when_all_its_firing_alerts_resolved() {
    let now = Utc::now();
    let a = alert();
    let mut b = alert();
    b.fingerprint = "fp2".into();
    let mut firing = std::collections::BTreeSet::<String>::new();
    let mut g = AlertGroup::new("k".into(), "t".into(), &a, now);
    g.absorb(&a, now, &mut firing);
    g.absorb(&b, now, &mut firing);
    let mut a_res = a.clone();
    a_res.status = AlertStatus::Resolved;
    g.absorb(&a_res, now, &mut firing);
    assert_eq!(g.status, AlertStatus::Firing);
    let mut b_res = b.clone();
    b_res.status = AlertStatus::Resolved;
    g.absorb(&b_res, now, &mut firing);
    assert_eq!(g.status, AlertStatus::Resolved);
    assert_eq!(g.received, 4);
}

#[test]
fn the_alert_sample_is_capped() {
    let now = Utc::now();
    let mut firing = std::collections::BTreeSet::<String>::new();
    let mut g = AlertGroup::new("k".into(), "t".into(), &alert(), now);
    for i in 0..100 {
        let mut a = alert();
        a.fingerprint = format!("fp{i}");
        g.absorb(&a, now, &mut firing);
    }
    assert_eq!(g.alerts.len(), crate::alerts::store::GROUP_SAMPLE);
    assert_eq!((g.firing_count, firing.len()), (100, 100));
}
