//! Storm coalescing: when `alerts.storm_threshold` groups of one alert (the same
//! `alerts.storm_by` labels, `alertname` by default) start an episode within
//! `alerts.storm_window`, they become one storm with one investigation; later groups
//! attach to it (outcome `storm`). The storm resolves when its member groups resolved, and
//! its investigation has its own cooldown, like a group's.
//!
//! This file holds the storm record and the pure rules; `storm/store.rs` keeps storms and
//! their members durably; the intake applies the rules (`intake/decisions/storm_views.rs`).

mod hostlist;
pub mod store;

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::AlertStatus;
use super::grouping::{GroupKey, InvState};
use super::store::GroupState;

pub use hostlist::compact_values;
pub use store::{Member, StormStore};

/// Members tracked per storm; groups past it are counted, not stored.
pub const MEMBER_CAP: u32 = 10_000;
/// Re-investigations per storm episode: a second investigation of the storm when many
/// groups joined after its investigation started.
pub const MAX_REINVESTIGATIONS: u32 = 1;
/// Investigation ids remembered per storm.
const MAX_IDS: usize = 10;

/// Where a storm is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StormStatus {
    /// Counting groups that start within the window; not a storm (yet).
    Watching,
    Firing,
    Resolved,
}

/// A group that started an episode within the window, before the storm formed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub group: String,
    pub at: DateTime<Utc>,
}

/// One storm (or a watch for one) per storm key.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Storm {
    pub key: String,
    /// The alert, e.g. "DiskFillingUp" (with the other `storm_by` labels).
    pub title: String,
    pub status: StormStatus,
    pub first_seen: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub resolved_at: Option<DateTime<Utc>>,
    /// Groups that started within the window while watching (at most the threshold).
    pub recent: Vec<Candidate>,
    /// Member groups stored (at most `MEMBER_CAP`), and how many of them are firing.
    pub members: u32,
    pub firing_members: u32,
    /// Groups that joined past `MEMBER_CAP`.
    pub untracked: u64,
    /// Alerts attached to the storm.
    pub alerts: u64,
    /// The current episode's investigation (a re-investigation replaces it).
    pub investigation_id: Option<String>,
    /// Set when an investigation (or a re-investigation) was decided but not yet submitted.
    pub pending_since: Option<DateTime<Utc>>,
    /// The pending investigation re-investigates the storm the current one investigated.
    #[serde(default)]
    pub pending_reinvestigation: bool,
    /// Members the current investigation names.
    pub named: u32,
    /// Re-investigations of this episode.
    pub reinvestigations: u32,
    /// Storm episodes so far.
    pub episodes: u32,
    /// The latest investigations of this storm, oldest first (at most `MAX_IDS`).
    pub investigations: Vec<String>,
    /// Groups that started before the storm formed: their own investigations, still
    /// queued when the storm's is submitted, are cancelled.
    pub early: Vec<String>,
    /// The alert inbox entry of the last batch written into it (0: none, or decided in
    /// place): a batch decided again after a crash does not attach its alerts twice.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub batch: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Storm {
    pub fn new(key: String, title: String, now: DateTime<Utc>) -> Self {
        Self {
            key,
            title,
            status: StormStatus::Watching,
            first_seen: now,
            last_seen: now,
            started_at: None,
            resolved_at: None,
            recent: Vec::new(),
            members: 0,
            firing_members: 0,
            untracked: 0,
            alerts: 0,
            investigation_id: None,
            pending_since: None,
            pending_reinvestigation: false,
            named: 0,
            reinvestigations: 0,
            episodes: 0,
            investigations: Vec::new(),
            early: Vec::new(),
            batch: 0,
        }
    }

    /// Notes that `group` started an episode at `now`; true when that makes a storm
    /// (`threshold` groups within `window`). Only while watching or resolved.
    pub fn note_candidate(
        &mut self,
        group: &str,
        now: DateTime<Utc>,
        window: Duration,
        threshold: u32,
    ) -> bool {
        let window = chrono::TimeDelta::from_std(window).unwrap_or(chrono::TimeDelta::MAX);
        self.recent
            .retain(|c| c.group != group && now.signed_duration_since(c.at) < window);
        self.recent.push(Candidate {
            group: group.to_string(),
            at: now,
        });
        // Only the newest `threshold` matter.
        let excess = self.recent.len().saturating_sub(threshold as usize);
        self.recent.drain(..excess);
        threshold >= 2 && self.recent.len() >= threshold as usize
    }

    /// Turns the watch into a firing storm; returns the groups to make members.
    pub fn form(&mut self, now: DateTime<Utc>) -> Vec<String> {
        let early: Vec<String> = self.recent.drain(..).map(|c| c.group).collect();
        self.status = StormStatus::Firing;
        self.started_at = Some(now);
        self.resolved_at = None;
        self.episodes += 1;
        self.reinvestigations = 0;
        self.named = 0;
        self.early = early.clone();
        early
    }

    /// Other groups started within the window while watching (a new investigation of one
    /// of them is held, in case a storm is forming).
    pub fn others_starting(&self, group: &str) -> bool {
        self.status != StormStatus::Firing && self.recent.iter().any(|c| c.group != group)
    }

    /// Counts a new member (`false` past `MEMBER_CAP`: counted, not stored).
    pub fn add_member(&mut self) -> bool {
        if self.members < MEMBER_CAP {
            self.members += 1;
            true
        } else {
            self.untracked += 1;
            false
        }
    }

    /// A member's firing state changed (or it joined firing).
    pub fn member_firing(&mut self, firing: bool) {
        if firing {
            self.firing_members += 1;
        } else {
            self.firing_members = self.firing_members.saturating_sub(1);
        }
    }

    /// Resolves a firing storm whose members all resolved; true when it did.
    pub fn settle(&mut self, now: DateTime<Utc>) -> bool {
        match self.status {
            StormStatus::Firing if self.members > 0 && self.firing_members == 0 => {
                self.status = StormStatus::Resolved;
                self.resolved_at = Some(now);
                true
            }
            StormStatus::Resolved if self.firing_members > 0 => {
                self.status = StormStatus::Firing;
                self.resolved_at = None;
                false
            }
            _ => false,
        }
    }

    /// A member firing again soon after the storm resolved reopens it (within `cooldown`
    /// of the resolution); later, its groups start over.
    pub fn reopens_for_member(&self, now: DateTime<Utc>, cooldown: Duration) -> bool {
        self.status == StormStatus::Resolved
            && self
                .resolved_at
                .and_then(|t| (now - t).to_std().ok())
                .is_none_or(|since| since < cooldown)
    }

    /// The storm's investigation fields as a group's, for `grouping::decide_firing`
    /// (a pending re-investigation dedupes like a pending investigation).
    pub fn decision_state(&self) -> GroupState {
        GroupState {
            status: match self.status {
                StormStatus::Firing => AlertStatus::Firing,
                _ => AlertStatus::Resolved,
            },
            pending_since: self.pending_since,
            batch: 0,
            investigation_id: match self.pending_since {
                Some(_) => None,
                None => self.investigation_id.clone(),
            },
        }
    }

    /// A re-investigation is due when at least `threshold` groups joined after the current
    /// investigation started, at most `MAX_REINVESTIGATIONS` per episode.
    pub fn wants_reinvestigation(&self, inv: &InvState, threshold: u32) -> bool {
        self.status == StormStatus::Firing
            && self.pending_since.is_none()
            && self.reinvestigations < MAX_REINVESTIGATIONS
            && matches!(inv, InvState::Running | InvState::Done { .. })
            && self.members >= self.named.saturating_add(threshold.max(1))
    }

    /// Records a submitted investigation; `reinvestigation` counts against the episode's bound.
    pub fn submitted(&mut self, id: String, named: u32, reinvestigation: bool) {
        self.investigation_id = Some(id.clone());
        self.pending_since = None;
        self.pending_reinvestigation = false;
        self.named = named;
        if reinvestigation {
            self.reinvestigations += 1;
        } else {
            self.reinvestigations = 0;
        }
        self.early.clear();
        self.investigations.push(id);
        let excess = self.investigations.len().saturating_sub(MAX_IDS);
        self.investigations.drain(..excess);
    }

    /// Quiet since before `cutoff`, not firing, nothing waiting to be submitted.
    pub fn is_stale(&self, cutoff: DateTime<Utc>) -> bool {
        self.last_seen < cutoff
            && self.status != StormStatus::Firing
            && self.pending_since.is_none()
    }
}

/// The store's name of the storm of an alert: the [`GroupKey`] of its `storm_by` labels
/// present (`{alertname="X"}`); None when none is present.
pub fn storm_key(storm_by: &[String], labels: &BTreeMap<String, String>) -> Option<String> {
    GroupKey::of_labels(storm_by, labels).map(|k| k.to_string())
}

/// "DiskFillingUp" (or "DiskFillingUp (job=node)" with more `storm_by` labels).
pub fn storm_title(storm_by: &[String], labels: &BTreeMap<String, String>) -> String {
    super::grouping::group_title(storm_by, labels)
}

/// A member's own labels: the group key's labels that are not storm labels
/// (`instance="host1:9100"`).
pub fn member_labels(
    group_by: &[String],
    storm_by: &[String],
    labels: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    group_by
        .iter()
        .filter(|k| !storm_by.contains(k))
        .filter_map(|k| labels.get(k).map(|v| (k.clone(), v.clone())))
        .collect()
}

/// A member's labels as one line: `instance=host1:9100, job=node`.
pub fn member_line(labels: &BTreeMap<String, String>) -> String {
    labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use chrono::TimeDelta;

    use super::*;
    use crate::config::matcher::labels;

    const MIN: Duration = Duration::from_secs(60);

    #[test]
    fn the_threshold_th_group_within_the_window_forms_the_storm() {
        let now = Utc::now();
        let mut s = Storm::new("k".into(), "Disk".into(), now);
        for i in 0..4 {
            assert!(!s.note_candidate(&format!("g{i}"), now, 2 * MIN, 5));
        }
        // The same group again does not count twice.
        assert!(!s.note_candidate("g3", now, 2 * MIN, 5));
        assert!(s.others_starting("g9"));
        assert!(s.note_candidate("g4", now, 2 * MIN, 5));
        let early = s.form(now);
        assert_eq!(early.len(), 5);
        assert_eq!((s.status, s.episodes), (StormStatus::Firing, 1));
        assert!(s.recent.is_empty());
    }

    #[test]
    fn groups_spread_wider_than_the_window_never_form_a_storm() {
        let t0 = Utc::now();
        let mut s = Storm::new("k".into(), "Disk".into(), t0);
        for i in 0..20 {
            let at = t0 + TimeDelta::seconds(40 * i);
            assert!(!s.note_candidate(&format!("g{i}"), at, 2 * MIN, 5), "{i}");
        }
        assert!(s.recent.len() <= 5);
        // Coalescing off: a threshold of 0 never forms one.
        assert!(!Storm::new("k".into(), "t".into(), t0).note_candidate("g", t0, MIN, 0));
    }

    #[test]
    fn a_storm_resolves_when_its_members_resolve_and_reopens_within_the_cooldown() {
        let now = Utc::now();
        let mut s = Storm::new("k".into(), "Disk".into(), now);
        s.form(now);
        for _ in 0..3 {
            assert!(s.add_member());
            s.member_firing(true);
        }
        s.member_firing(false);
        s.member_firing(false);
        assert!(!s.settle(now));
        s.member_firing(false);
        assert!(s.settle(now));
        assert_eq!(s.status, StormStatus::Resolved);
        assert!(s.reopens_for_member(now + TimeDelta::minutes(10), 60 * MIN));
        assert!(!s.reopens_for_member(now + TimeDelta::hours(2), 60 * MIN));
        s.member_firing(true);
        assert!(!s.settle(now));
        assert_eq!(s.status, StormStatus::Firing);
    }

    #[test]
    fn a_reinvestigation_needs_growth_a_started_investigation_and_stays_bounded() {
        let now = Utc::now();
        let mut s = Storm::new("k".into(), "Disk".into(), now);
        s.form(now);
        s.members = 5;
        s.submitted("inv-1".into(), 5, false);
        s.members = 9;
        assert!(!s.wants_reinvestigation(&InvState::Running, 5));
        s.members = 10;
        assert!(!s.wants_reinvestigation(&InvState::Queued, 5));
        assert!(s.wants_reinvestigation(&InvState::Running, 5));
        s.submitted("inv-2".into(), 10, true);
        s.members = 500;
        assert!(!s.wants_reinvestigation(&InvState::Running, 5));
        assert_eq!(s.investigations, vec!["inv-1", "inv-2"]);
    }

    #[test]
    fn the_storm_key_uses_the_storm_labels_and_members_keep_the_rest() {
        let storm_by = vec!["alertname".to_string()];
        let group_by: Vec<String> = ["alertname", "instance", "job"].map(String::from).into();
        let l = labels(&[("alertname", "Disk"), ("instance", "h1"), ("job", "node")]);
        assert_eq!(storm_key(&storm_by, &l).unwrap(), r#"{alertname="Disk"}"#);
        assert_eq!(storm_key(&storm_by, &labels(&[("job", "x")])), None);
        let m = member_labels(&group_by, &storm_by, &l);
        assert_eq!(member_line(&m), "instance=h1, job=node");
    }
}
