//! How an alert group is laid out on disk, and the conversions between an `AlertGroup` and
//! its records: a small row per group (`alert_groups`: status, counts, the investigation
//! decision, the alert inbox entry of the last batch it absorbed, a small firing set, and
//! the sample of a group that has one), the samples of larger groups one record each
//! (`alert_samples`, `{group}\0{fingerprint}` keys), a larger
//! firing set in packed buckets (`alert_firing_packed`, see `firing.rs`) and an index of groups by last activity
//! (`alert_groups_seen`, `{last_seen in whole seconds, as zero-padded nanos}\0{group}` keys)
//! for newest-first listings and the retention sweep.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::alerts::{Alert, AlertSource, AlertStatus};

use super::group::SampleRank;
use super::{AlertGroup, Outcome};

/// One group's row: everything but its sample alerts.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct GroupRow {
    pub key: String,
    pub title: String,
    pub status: AlertStatus,
    pub source: AlertSource,
    pub first_seen: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
    pub received: u64,
    pub last_outcome: Outcome,
    pub firing_count: usize,
    pub investigation_id: Option<String>,
    pub pending_since: Option<DateTime<Utc>>,
    pub investigations: u32,
    /// The fingerprint of the group's last alert (its sample is `last_alert`).
    pub last_fingerprint: String,
    /// The alert inbox entry of the last batch absorbed (0: none, or decided in place).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub batch: u64,
    /// The firing set while the row holds it (`firing.rs`: a hash per fingerprint); absent
    /// once the set is kept in `alert_firing_packed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firing: Option<Vec<u64>>,
    /// The group's only sample (its last alert), while it has one: `alert_samples` then
    /// holds none of its samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<Alert>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The key of a group member (a sample or a firing fingerprint).
pub(super) fn member_key(group: &str, fingerprint: &str) -> String {
    format!("{group}\0{fingerprint}")
}

/// The fingerprint part of a member key.
pub(super) fn member_fingerprint(key: &[u8]) -> String {
    let at = key.iter().position(|b| *b == 0).map_or(0, |i| i + 1);
    String::from_utf8_lossy(&key[at..]).into_owned()
}

/// The time part of an index or log key: nanoseconds, zero-padded so keys sort by time.
pub(super) fn time_key(t: DateTime<Utc>) -> String {
    format!("{:020}", t.timestamp_nanos_opt().unwrap_or(0).max(0))
}

/// The last-activity index key of a group, by whole seconds: a group busy with many
/// alerts a second rewrites its index entry once a second, not once per alert.
pub(super) fn seen_key(last_seen: DateTime<Utc>, group: &str) -> String {
    let second = DateTime::from_timestamp(last_seen.timestamp(), 0).unwrap_or(last_seen);
    format!("{}\0{group}", time_key(second))
}

/// The group named by an index key.
pub(super) fn seen_group(key: &[u8]) -> String {
    member_fingerprint(key)
}

/// The row of `g` (everything but its samples).
pub(super) fn row_of(g: &AlertGroup) -> GroupRow {
    GroupRow {
        key: g.key.clone(),
        title: g.title.clone(),
        status: g.status,
        source: g.source,
        first_seen: g.first_seen,
        last_seen: g.last_seen,
        received: g.received,
        last_outcome: g.last_outcome,
        firing_count: g.firing_count,
        investigation_id: g.investigation_id.clone(),
        pending_since: g.pending_since,
        investigations: g.investigations,
        last_fingerprint: g.last_alert.fingerprint.clone(),
        batch: g.batch,
        firing: g.firing_inline.clone(),
        sample: g.sample_in_row.then(|| g.last_alert.clone()),
    }
}

/// The group of `row` with its samples (their ranks from `alerts`; a caller that read
/// only some samples sets `ranks` itself). A row that holds its sample is read with it
/// (`alerts` then only has it, or nothing).
pub(super) fn group_of(
    mut row: GroupRow,
    alerts: BTreeMap<String, Alert>,
    last_alert: Alert,
) -> AlertGroup {
    let sample_in_row = row.sample.take().is_some();
    let mut ranks: BTreeMap<String, SampleRank> = alerts
        .iter()
        .map(|(fp, a)| (fp.clone(), SampleRank::of(a)))
        .collect();
    if sample_in_row {
        ranks.insert(last_alert.fingerprint.clone(), SampleRank::of(&last_alert));
    }
    AlertGroup {
        key: row.key,
        title: row.title,
        status: row.status,
        source: row.source,
        first_seen: row.first_seen,
        last_seen: row.last_seen,
        received: row.received,
        last_alert,
        last_outcome: row.last_outcome,
        alerts,
        firing_count: row.firing_count,
        investigation_id: row.investigation_id,
        pending_since: row.pending_since,
        investigations: row.investigations,
        batch: row.batch,
        touched: BTreeSet::new(),
        ranks,
        firing_inline: row.firing,
        sample_in_row,
    }
}
