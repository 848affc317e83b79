//! Pure grouping and decision logic: the group key from `alerts.group_by`, the group title,
//! and whether a firing alert gets a new investigation (queued) or not (deduped, cooldown,
//! budget, ignored).

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::alerts::store::{GroupState, Outcome};

/// The state of a group's current investigation, as the dispatcher reports it.
#[derive(Clone, Debug, PartialEq)]
pub enum InvState {
    Queued,
    Running,
    /// Finished, inconclusive, failed or limit_reached: blocks new ones during the cooldown.
    Done {
        status: String,
        finished_at: DateTime<Utc>,
    },
    Cancelled,
    /// Unknown id (deleted): blocks nothing.
    Missing,
}

impl InvState {
    pub fn as_str(&self) -> &str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Done { status, .. } => status,
            Self::Cancelled => "cancelled",
            Self::Missing => "missing",
        }
    }
}

/// Today's daily budgets (count and cost, with what running work reserved), from the
/// dispatcher's spend ledger.
pub use crate::agent::Budget;
/// The key of a group, with its labels.
pub use crate::agent::GroupKey;

/// The store's name of the group of an alert: its [`GroupKey`] from the `group_by` labels
/// present, in `group_by` order (`{alertname="X", instance="y"}`); alerts carrying none of
/// them group by their fingerprint.
pub fn group_key(
    group_by: &[String],
    labels: &BTreeMap<String, String>,
    fingerprint: &str,
) -> String {
    GroupKey::of(group_by, labels, fingerprint).to_string()
}

/// "HighErrorRate (job=checkout, instance=web1)": the alertname plus the other key labels.
pub fn group_title(group_by: &[String], labels: &BTreeMap<String, String>) -> String {
    let name = labels
        .get("alertname")
        .filter(|n| !n.is_empty())
        .map(String::as_str)
        .unwrap_or("Alert");
    let rest: Vec<String> = group_by
        .iter()
        .filter(|k| k.as_str() != "alertname")
        .filter_map(|k| labels.get(k).map(|v| format!("{k}={v}")))
        .collect();
    if rest.is_empty() {
        name.to_string()
    } else {
        format!("{name} ({})", rest.join(", "))
    }
}

/// What to do with a firing alert of `group` (its state before this alert).
/// `budget` is only asked when everything else allows a new investigation.
pub fn decide_firing(
    group: Option<&GroupState>,
    inv: &InvState,
    ignored: bool,
    now: DateTime<Utc>,
    cooldown: Duration,
    budget: impl FnOnce() -> Budget,
) -> Outcome {
    if ignored {
        return Outcome::Ignored;
    }
    if group.is_some_and(|g| g.pending_since.is_some() && g.investigation_id.is_none()) {
        return Outcome::Deduped;
    }
    match inv {
        InvState::Queued | InvState::Running => return Outcome::Deduped,
        InvState::Done { finished_at, .. } => {
            let since = (now - *finished_at).to_std().unwrap_or(Duration::ZERO);
            if since < cooldown {
                return Outcome::Cooldown;
            }
        }
        InvState::Cancelled | InvState::Missing => {}
    }
    if budget().exhausted() {
        Outcome::Budget
    } else {
        Outcome::Queued
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeDelta;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    use super::*;
    use crate::alerts::store::AlertGroup;
    use crate::alerts::{Alert, AlertSource, AlertStatus};
    use crate::config::matcher::labels;

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
            investigations: used,
            spent_usd: 0.0,
            reserved_usd: 0.0,
            max_per_day: 5,
            cost_limit_usd: 1.0,
            reserve_usd: 0.1,
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
            investigations: 0,
            spent_usd: 1.5,
            reserved_usd: 0.0,
            max_per_day: 5,
            cost_limit_usd: 1.0,
            reserve_usd: 0.1,
        };
        assert_eq!(
            decide_firing(None, &InvState::Missing, false, now, HOUR, costly),
            Outcome::Budget
        );
        // Nothing spent yet, but running work reserved what is left.
        let reserved = || Budget {
            investigations: 1,
            spent_usd: 0.0,
            reserved_usd: 0.95,
            max_per_day: 5,
            cost_limit_usd: 1.0,
            reserve_usd: 0.1,
        };
        assert_eq!(
            decide_firing(None, &InvState::Missing, false, now, HOUR, reserved),
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

    #[test]
    fn keys_and_titles_of_arbitrary_utf8_labels_name_every_key_label() {
        let labels = proptest::collection::btree_map(
            prop_oneof![
                proptest::sample::select(vec!["alertname", "instance", "job"])
                    .prop_map(str::to_string),
                any::<String>()
            ],
            any::<String>(),
            0..6,
        );
        let config = Config {
            cases: 1000,
            failure_persistence: None,
            ..Config::default()
        };
        let group_by: Vec<String> = ["alertname", "instance", "job"].map(String::from).into();
        TestRunner::new(config)
            .run(&(labels, any::<String>()), |(labels, fingerprint)| {
                let key = group_key(&group_by, &labels, &fingerprint);
                let title = group_title(&group_by, &labels);
                for name in &group_by {
                    if let Some(v) = labels.get(name) {
                        prop_assert!(key.contains(&format!("{name}={v:?}")), "{key}");
                    }
                }
                if !group_by.iter().any(|k| labels.contains_key(k)) {
                    prop_assert_eq!(key, format!("{{fingerprint={fingerprint:?}}}"));
                }
                prop_assert!(!title.is_empty());
                Ok(())
            })
            .unwrap();
    }
}
