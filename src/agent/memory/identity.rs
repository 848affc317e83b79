//! An alert's identity for incident memory: its `alertname` plus the key labels
//! ([`KEY_LABELS`]) that every firing alert of the investigation shares, and the words of
//! its name and summary for text similarity. Read from the investigation's alert context
//! (the JSON the intake builds), else from its group key.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::{Investigation, Trigger};

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
        let from_context = inv
            .context
            .as_deref()
            .and_then(|c| serde_json::from_str::<Value>(c).ok())
            .and_then(|v| Self::from_alerts(&v));
        from_context
            .or_else(|| inv.group_key.as_deref().and_then(Self::from_group_key))
            .filter(|id| !id.alertname.is_empty())
    }

    /// From the intake's context JSON: `{"alerts": [{"labels": {…}}, …]}`.
    fn from_alerts(context: &Value) -> Option<Self> {
        let label_sets: Vec<&serde_json::Map<String, Value>> = context
            .get("alerts")?
            .as_array()?
            .iter()
            .filter_map(|a| a.get("labels")?.as_object())
            .collect();
        let first = label_sets.first()?;
        let text = |m: &serde_json::Map<String, Value>, k: &str| {
            m.get(k).and_then(Value::as_str).map(str::to_string)
        };
        let alertname = text(first, "alertname")?;
        let labels = KEY_LABELS
            .iter()
            .filter_map(|k| {
                let v = text(first, k)?;
                label_sets
                    .iter()
                    .all(|m| text(m, k).as_deref() == Some(v.as_str()))
                    .then(|| (k.to_string(), v))
            })
            .collect();
        Some(Self { alertname, labels })
    }

    /// From a group key `{alertname="X", instance="y"}` (values are Rust-debug quoted).
    fn from_group_key(key: &str) -> Option<Self> {
        let mut id = Self::default();
        let inner = key.trim().strip_prefix('{')?.strip_suffix('}')?;
        let mut rest = inner;
        while let Some(eq) = rest.find("=\"") {
            let name = rest[..eq].trim().trim_start_matches(',').trim();
            let (value, after) = quoted(&rest[eq + 1..])?;
            if name == "alertname" {
                id.alertname = value;
            } else if KEY_LABELS.contains(&name) {
                id.labels.insert(name.to_string(), value);
            }
            rest = after;
        }
        Some(id)
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
    let context = inv
        .context
        .as_deref()
        .and_then(|c| serde_json::from_str::<Value>(c).ok());
    for a in context
        .as_ref()
        .and_then(|c| c.get("alerts"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let values = KEY_LABELS
            .iter()
            .filter(|k| **k != "severity")
            .map(|k| &a["labels"][*k]);
        for v in [&a["labels"]["alertname"], &a["annotations"]["summary"]]
            .into_iter()
            .chain(values)
        {
            if let Some(s) = v.as_str() {
                text.push(' ');
                text.push_str(s);
            }
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

/// The Rust-debug quoted string at the start of `s` and what follows it.
fn quoted(s: &str) -> Option<(String, &str)> {
    let body = s.strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &body[i + 1..])),
            '\\' => match chars.next()?.1 {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                '0' => out.push('\0'),
                // \u{…}: kept as written; identity only needs to be stable.
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::InvestigationRequest;

    fn alert_inv(context: &str, group_key: &str) -> Investigation {
        Investigation::new(
            InvestigationRequest {
                trigger: Trigger::Alert,
                title: "DiskFull (instance=nas)".into(),
                prompt: "p".into(),
                context: Some(context.into()),
                group_key: Some(group_key.into()),
            },
            "m",
        )
    }

    #[test]
    fn the_identity_keeps_the_key_labels_every_firing_alert_shares() {
        let ctx = serde_json::json!({"alerts": [
            {"labels": {"alertname": "DiskFull", "instance": "nas", "job": "node", "replica": "1"},
             "annotations": {"summary": "Disk on nas is 95% full"}},
            {"labels": {"alertname": "DiskFull", "instance": "nas2", "job": "node", "replica": "2"}},
        ]});
        let inv = alert_inv(&ctx.to_string(), "{alertname=\"DiskFull\"}");
        let id = AlertIdentity::of(&inv).unwrap();
        assert_eq!(id.alertname, "DiskFull");
        assert_eq!(id.labels, BTreeMap::from([("job".into(), "node".into())]));
        assert_eq!(id.display(), "DiskFull (job=node)");
        assert_eq!(words_of(&inv), ["disk", "full", "nas", "nas2", "node"]);
    }

    #[test]
    fn without_alert_context_the_group_key_gives_the_identity() {
        let inv = alert_inv(
            "not json",
            r#"{alertname="Down", instance="a \"b\"", team="x"}"#,
        );
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
