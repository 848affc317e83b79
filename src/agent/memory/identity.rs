//! An alert's identity for incident memory: its `alertname` plus the key labels
//! ([`KEY_LABELS`]) that every firing alert of the investigation shares, and the words of
//! its name and summary for text similarity. Read from the investigation's typed alert
//! data ([`crate::agent::AlertContext`]), else from its group key's labels.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::agent::{AlertSample, GroupKey, Investigation, Trigger};

/// The labels that tell one alert from another besides `alertname`. Others (`replica`,
/// `pod_template_hash`, a fingerprint) change between firings of one incident.
pub const KEY_LABELS: [&str; 6] = ["instance", "job", "namespace", "pod", "service", "severity"];

/// The most words kept for text similarity.
const MAX_WORDS: usize = 40;

/// Which alert an investigation was about.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertIdentity {
    pub alertname: String,
    /// The key labels (without `alertname`) shared by every firing alert.
    pub labels: BTreeMap<String, String>,
}

impl AlertIdentity {
    /// The identity of an alert investigation; `None` for asks and schedules, or when the
    /// alert has no name.
    pub fn of(inv: &Investigation) -> Option<Self> {
        if inv.trigger != Trigger::Alert {
            return None;
        }
        let alert = inv.alert()?;
        Self::from_alerts(&alert.alerts)
            .or_else(|| alert.group_key().map(Self::from_group_key))
            .filter(|id| !id.alertname.is_empty())
    }

    /// From the first alert's name and the key labels every alert shares.
    fn from_alerts(alerts: &[AlertSample]) -> Option<Self> {
        let first = alerts.first()?;
        let alertname = first.labels.get("alertname")?.clone();
        let labels = KEY_LABELS
            .iter()
            .filter_map(|k| {
                let v = first.labels.get(*k)?;
                alerts
                    .iter()
                    .all(|a| a.labels.get(*k) == Some(v))
                    .then(|| (k.to_string(), v.clone()))
            })
            .collect();
        Some(Self { alertname, labels })
    }

    /// From the group's key: its `alertname` and key labels.
    fn from_group_key(key: &GroupKey) -> Self {
        let mut id = Self::default();
        for (name, value) in key.labels() {
            if name == "alertname" {
                id.alertname = value.clone();
            } else if KEY_LABELS.contains(&name.as_str()) {
                id.labels.insert(name.clone(), value.clone());
            }
        }
        id
    }

    /// The stable key of this identity (JSON, so no label value can forge a separator).
    pub fn key(&self) -> String {
        serde_json::to_string(&(&self.alertname, &self.labels)).unwrap_or_default()
    }

    /// "DiskFull (instance=nas, severity=warning)".
    pub fn display(&self) -> String {
        if self.labels.is_empty() {
            return self.alertname.clone();
        }
        let labels: Vec<String> = self
            .labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!("{} ({})", self.alertname, labels.join(", "))
    }

    /// Same alertname and the labels do not contradict each other in a way that makes them
    /// different things: at least one key label value in common, or no key labels at all on
    /// one side.
    pub fn overlaps(&self, other: &Self) -> bool {
        self.alertname == other.alertname
            && (self.labels.is_empty()
                || other.labels.is_empty()
                || self
                    .labels
                    .iter()
                    .any(|(k, v)| k != "severity" && other.labels.get(k) == Some(v)))
    }
}

/// The words of an alert investigation for text similarity: its alert names (camel case
/// split), key label values (not `severity`) and summaries, else its title; lower case,
/// without numbers and short words.
pub fn words_of(inv: &Investigation) -> Vec<String> {
    let mut text = String::new();
    for a in inv.alert().map(|c| c.alerts.as_slice()).unwrap_or_default() {
        let values = KEY_LABELS
            .iter()
            .filter(|k| **k != "severity")
            .map(|k| a.labels.get(*k));
        for v in [a.labels.get("alertname"), a.annotations.get("summary")]
            .into_iter()
            .chain(values)
            .flatten()
        {
            text.push(' ');
            text.push_str(v);
        }
    }
    if text.is_empty() {
        text = inv.title.clone();
    }
    words(&text)
}

/// Distinct words of `text` (camel case split), at most [`MAX_WORDS`].
pub fn words(text: &str) -> Vec<String> {
    let mut spaced = String::with_capacity(text.len() + 8);
    let mut prev_lower = false;
    for c in text.chars() {
        if c.is_uppercase() && prev_lower {
            spaced.push(' ');
        }
        prev_lower = c.is_lowercase();
        spaced.push(c);
    }
    let set: BTreeSet<String> = spaced
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3 && !w.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_lowercase)
        .collect();
    set.into_iter().take(MAX_WORDS).collect()
}

/// |a ∩ b| / |a ∪ b|; 0 when both are empty.
pub fn jaccard(a: &[String], b: &[String]) -> f64 {
    let a: BTreeSet<&String> = a.iter().collect();
    let b: BTreeSet<&String> = b.iter().collect();
    let union = a.union(&b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(&b).count() as f64 / union as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{AlertContext, AlertScope, Context, GroupSummary, InvestigationRequest};

    fn alert_inv(alerts: Vec<AlertSample>, key: GroupKey) -> Investigation {
        let context = AlertContext {
            scope: AlertScope::Group(GroupSummary {
                key,
                received: 2,
                firing: 2,
            }),
            alerts,
        };
        Investigation::new(
            InvestigationRequest {
                trigger: Trigger::Alert,
                title: "DiskFull (instance=nas)".into(),
                prompt: "p".into(),
                context: Some(Context::Alert(context)),
                group_key: Some("{alertname=\"DiskFull\"}".into()),
            },
            "m",
        )
    }

    fn strings(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_identity_keeps_the_key_labels_every_firing_alert_shares() {
        let alerts = vec![
            AlertSample {
                labels: strings(&[
                    ("alertname", "DiskFull"),
                    ("instance", "nas"),
                    ("job", "node"),
                    ("replica", "1"),
                ]),
                annotations: strings(&[("summary", "Disk on nas is 95% full")]),
                ..AlertSample::default()
            },
            AlertSample {
                labels: strings(&[
                    ("alertname", "DiskFull"),
                    ("instance", "nas2"),
                    ("job", "node"),
                    ("replica", "2"),
                ]),
                ..AlertSample::default()
            },
        ];
        let key = GroupKey::Labels(vec![("alertname".into(), "DiskFull".into())]);
        let inv = alert_inv(alerts, key);
        let id = AlertIdentity::of(&inv).unwrap();
        assert_eq!(id.alertname, "DiskFull");
        assert_eq!(id.labels, BTreeMap::from([("job".into(), "node".into())]));
        assert_eq!(id.display(), "DiskFull (job=node)");
        assert_eq!(words_of(&inv), ["disk", "full", "nas", "nas2", "node"]);
    }

    #[test]
    fn without_alerts_the_group_key_gives_the_identity() {
        let key = GroupKey::Labels(
            [
                ("alertname", "Down"),
                ("instance", "a \"b\""),
                ("team", "x"),
            ]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into(),
        );
        let inv = alert_inv(Vec::new(), key);
        let id = AlertIdentity::of(&inv).unwrap();
        assert_eq!(id.alertname, "Down");
        assert_eq!(id.labels["instance"], "a \"b\"");
        assert!(!id.labels.contains_key("team"));
        let mut ask = inv.clone();
        ask.trigger = Trigger::Ask;
        assert_eq!(AlertIdentity::of(&ask), None);
    }

    #[test]
    fn overlapping_labels_and_word_overlap_make_alerts_similar() {
        let id = |name: &str, labels: &[(&str, &str)]| AlertIdentity {
            alertname: name.into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        let a = id("DiskFull", &[("instance", "nas"), ("job", "node")]);
        assert!(a.overlaps(&id("DiskFull", &[("instance", "nas2"), ("job", "node")])));
        assert!(a.overlaps(&id("DiskFull", &[])));
        assert!(!a.overlaps(&id("DiskFull", &[("instance", "web"), ("job", "web")])));
        assert!(!a.overlaps(&id("Other", &[("instance", "nas")])));
        assert_ne!(a.key(), id("DiskFull", &[("instance", "nas")]).key());
        let w1 = words("HighDiskUsage: disk on nas nearly full");
        let w2 = words("DiskUsageHigh disk on nas2 nearly full");
        assert!(jaccard(&w1, &w2) >= 0.5, "{w1:?} {w2:?}");
        assert!(jaccard(&w1, &words("NodeDown: host unreachable")) < 0.2);
        assert_eq!(jaccard(&[], &[]), 0.0);
        // Label names are not words: two short alerts on different hosts share nothing.
        assert_eq!(jaccard(&words("Down web1"), &words("Up web2")), 0.0);
    }
}
