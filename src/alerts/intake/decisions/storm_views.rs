//! The decision's storm part (rules in `alerts/storm.rs`): during a batch, each firing alert
//! of a group that starts an episode is noted for its storm key; the threshold-th group
//! within the window forms the storm, and every alert of a storm's groups is attached to
//! it (outcome `storm`). After the batch's groups are written, each storm touched is
//! written once: new members, members whose group resolved or fired again, its resolution,
//! and whether it needs an investigation (or a bounded re-investigation). The records are
//! written holding the storms' writer lock (`storms.rs`), which the batch's decisions hold.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Utc};

use super::{Decisions, Touched};
use crate::alerts::grouping::{self, InvState};
use crate::alerts::intake::submissions::Action;
use crate::alerts::store::Outcome;
use crate::alerts::storm::{self, Member, Storm, StormStatus, StormStore};
use crate::alerts::{Alert, AlertStatus};
use crate::store::StoreError;

/// A storm touched by a batch: its record as decided so far, the groups that joined it,
/// and the member records read for the batch's groups (None: not a member).
pub(super) struct StormView {
    storm: Storm,
    dirty: bool,
    joined: Vec<(String, Option<BTreeMap<String, String>>)>,
    known: HashMap<String, Option<Member>>,
    /// An alert of the batch attached to the storm.
    attached: bool,
}

impl StormView {
    pub(super) fn attached(&self) -> bool {
        self.attached
    }

    fn is_member(&mut self, store: &StormStore, group: &str) -> Result<bool, StoreError> {
        if let Some(m) = self.known.get(group) {
            return Ok(m.is_some() || self.joined.iter().any(|(g, _)| g == group));
        }
        let m = store.member(&self.storm.key, group)?;
        let member = m.is_some();
        self.known.insert(group.to_string(), m);
        Ok(member)
    }

    /// Adds `group` to the storm unless it is a member already; `labels` (its member
    /// labels, or None to read them when the storm is written) is called only then.
    fn join(&mut self, group: &str, labels: impl FnOnce() -> Option<BTreeMap<String, String>>) {
        let already = matches!(self.known.get(group), Some(Some(_)))
            || self.joined.iter().any(|(g, _)| g == group);
        if !already {
            self.joined.push((group.to_string(), labels()));
        }
    }
}

/// The batch's storms by key.
pub(super) type StormViews = HashMap<String, StormView>;

impl Decisions {
    /// The outcome of a firing (or resolved) `alert` of group `t` once storms are
    /// considered: `storm` when its storm fires (or this makes one), else `base`.
    pub(super) fn storm_outcome(
        &self,
        views: &mut StormViews,
        t: &mut Touched,
        alert: &Alert,
        base: Outcome,
        now: DateTime<Utc>,
    ) -> Result<Outcome, StoreError> {
        let cfg = &self.config;
        if cfg.storm_threshold == 0 || base == Outcome::Ignored {
            return Ok(base);
        }
        let Some(key) = storm::storm_key(&cfg.storm_by, &alert.labels) else {
            return Ok(base);
        };
        // A group belongs to one storm: the one of its first alert.
        if t.storm.get_or_insert_with(|| key.clone()) != &key {
            return Ok(base);
        }
        if !views.contains_key(&key) {
            let storm = match self.storms.store().get(&key)? {
                Some(s) => s,
                None => Storm::new(
                    key.clone(),
                    storm::storm_title(&cfg.storm_by, &alert.labels),
                    now,
                ),
            };
            views.insert(
                key.clone(),
                StormView {
                    storm,
                    dirty: false,
                    joined: Vec::new(),
                    known: HashMap::new(),
                    attached: false,
                },
            );
        }
        let view = views.get_mut(&key).expect("inserted above");
        let member = view.is_member(self.storms.store(), &t.key)?;
        if alert.status == AlertStatus::Resolved {
            return Ok(base);
        }
        let storm = &mut view.storm;
        match storm.status {
            StormStatus::Firing => {}
            StormStatus::Resolved
                if member && storm.reopens_for_member(now, cfg.cooldown.get()) =>
            {
                storm.status = StormStatus::Firing;
                storm.resolved_at = None;
            }
            _ => {
                if !matches!(base, Outcome::Queued | Outcome::Budget) {
                    return Ok(base);
                }
                view.dirty = true;
                storm.last_seen = now;
                let window = cfg.storm_window.get();
                if !storm.note_candidate(&t.key, now, window, cfg.storm_threshold) {
                    return Ok(base);
                }
                tracing::info!(storm = %storm.key, "alert storm formed");
                for group in storm.form(now) {
                    view.join(&group, || None);
                }
            }
        }
        view.join(&t.key, || {
            Some(storm::member_labels(
                &cfg.group_by,
                &cfg.storm_by,
                &alert.labels,
            ))
        });
        view.dirty = true;
        view.attached = true;
        view.storm.alerts += 1;
        view.storm.last_seen = now;
        Ok(Outcome::Storm)
    }

    /// For an alert of group `t` that holds inbox entry `seq` already (decided before a
    /// crash, its group written and its storm maybe not): passes it through its storm
    /// again, unless the storm was written with that batch too. Its outcome is decided on
    /// the group as it is now.
    pub(super) fn storm_again(
        &self,
        views: &mut StormViews,
        t: &mut Touched,
        alert: &Alert,
        seq: u64,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let cfg = &self.config;
        let Some(key) = storm::storm_key(&cfg.storm_by, &alert.labels) else {
            return Ok(());
        };
        if cfg.storm_threshold == 0 {
            return Ok(());
        }
        let written = match views.get(&key) {
            Some(v) => v.storm.batch >= seq,
            None => self
                .storms
                .store()
                .get(&key)?
                .is_some_and(|s| s.batch >= seq),
        };
        if !written {
            let base = self.decide(t, alert, now);
            self.storm_outcome(views, t, alert, base, now)?;
        }
        Ok(())
    }

    /// Writes the batch's storms once each (after its groups, whose new `statuses` it
    /// reads); returns the submissions and resolution notes to follow.
    pub(super) fn write_storms(
        &self,
        views: StormViews,
        statuses: &HashMap<String, AlertStatus>,
        now: DateTime<Utc>,
        seq: Option<u64>,
    ) -> Result<Vec<Action>, StoreError> {
        let cfg = &self.config;
        let mut actions = Vec::new();
        for (key, mut view) in views {
            let mut seen: HashSet<String> = HashSet::new();
            let status_of = |group: &str| -> Result<bool, StoreError> {
                Ok(match statuses.get(group) {
                    Some(s) => *s == AlertStatus::Firing,
                    None => self
                        .store
                        .group_state(group)?
                        .is_some_and(|g| g.status == AlertStatus::Firing),
                })
            };
            for (group, labels) in std::mem::take(&mut view.joined) {
                seen.insert(group.clone());
                let firing = status_of(&group)?;
                // A group of an earlier episode, not read in this batch, is a member already.
                if !view.known.contains_key(&group)
                    && let Some(m) = self.storms.store().member(&key, &group)?
                {
                    if m.firing != firing {
                        self.storms
                            .store()
                            .put_member(&key, &group, &Member { firing, ..m })?;
                        view.storm.member_firing(firing);
                    }
                    continue;
                }
                if !view.storm.add_member() {
                    continue;
                }
                let labels = match labels {
                    Some(l) => l,
                    None => self.store.group(&group)?.map_or_else(BTreeMap::new, |g| {
                        storm::member_labels(&cfg.group_by, &cfg.storm_by, &g.last_alert.labels)
                    }),
                };
                let member = Member {
                    labels,
                    firing,
                    joined_at: now,
                };
                self.storms.store().put_member(&key, &group, &member)?;
                if firing {
                    view.storm.member_firing(true);
                }
                view.dirty = true;
            }
            for (group, known) in &view.known {
                let (Some(m), Some(status)) = (known, statuses.get(group)) else {
                    continue;
                };
                let firing = *status == AlertStatus::Firing;
                if m.firing != firing && !seen.contains(group) {
                    let m = Member {
                        firing,
                        ..m.clone()
                    };
                    self.storms.store().put_member(&key, group, &m)?;
                    view.storm.member_firing(firing);
                    view.dirty = true;
                }
            }
            actions.extend(self.settle_storm(&mut view, now)?);
            if view.dirty {
                if let Some(seq) = seq {
                    view.storm.batch = seq;
                }
                self.storms.store().put(&view.storm)?;
            }
        }
        Ok(actions)
    }

    /// Resolves a storm whose groups resolved, or decides its investigation (a new one,
    /// or one re-investigation when many groups joined after it started).
    fn settle_storm(
        &self,
        view: &mut StormView,
        now: DateTime<Utc>,
    ) -> Result<Option<Action>, StoreError> {
        let cfg = &self.config;
        let s = &mut view.storm;
        let was = s.status;
        if s.settle(now) {
            view.dirty = true;
            tracing::info!(storm = %s.key, "alert storm resolved");
            return Ok(match (&s.investigation_id, s.pending_since) {
                (Some(id), None) => Some(Action::ResolveStorm {
                    key: s.key.clone(),
                    id: id.clone(),
                }),
                _ => None,
            });
        }
        view.dirty |= was != s.status;
        if s.status != StormStatus::Firing || s.pending_since.is_some() {
            return Ok(None);
        }
        let inv = match &s.investigation_id {
            Some(id) => self.investigator.state(id)?,
            None => InvState::Missing,
        };
        let budget = || self.investigator.budget();
        let decision = grouping::decide_firing(
            Some(&s.decision_state()),
            &inv,
            false,
            now,
            cfg.cooldown.get(),
            budget,
        );
        // The groups that started before the storm formed may hold the day's last claims;
        // they are coalesced into the storm, which takes one of them over.
        let decision = match decision {
            Outcome::Budget if self.early_claims(&s.early)? => Outcome::Queued,
            d => d,
        };
        let reinvestigation = decision != Outcome::Queued
            && s.wants_reinvestigation(&inv, cfg.storm_threshold)
            && budget().exceeded().is_none();
        if decision != Outcome::Queued && !reinvestigation {
            return Ok(None);
        }
        s.pending_since = Some(now);
        s.pending_reinvestigation = reinvestigation;
        view.dirty = true;
        self.investigator.hold();
        Ok(Some(Action::SubmitStorm(s.key.clone())))
    }

    /// True when one of `groups` holds an investigation claim not yet submitted.
    fn early_claims(&self, groups: &[String]) -> Result<bool, StoreError> {
        for g in groups {
            if self
                .store
                .group_state(g)?
                .is_some_and(|g| g.pending_since.is_some() && g.investigation_id.is_none())
            {
                return Ok(true);
            }
        }
        Ok(false)
    }
}
