//! The key of an alert group (or of a storm of groups): the grouping labels an alert
//! carries, in the configured order, or the fingerprint of an alert carrying none of them.
//! It carries its labels, so nothing reads them back from text; its one string form
//! (`{alertname="X", instance="y"}`, values quoted as Rust string literals so no value can
//! forge a separator) names the group in the alert store and the API, and is written here
//! only.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// The key of an alert group or storm.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum GroupKey {
    /// The grouping labels the alert carries, as `[name, value]` in the configured order.
    Labels(Vec<(String, String)>),
    /// The fingerprint of an alert carrying none of the grouping labels (a group of its
    /// own).
    Fingerprint(String),
}

impl GroupKey {
    /// The key of an alert with `labels` and `fingerprint` grouped by `group_by`: the
    /// grouping labels present, in `group_by` order, else the fingerprint.
    pub fn of(group_by: &[String], labels: &BTreeMap<String, String>, fingerprint: &str) -> Self {
        Self::of_labels(group_by, labels)
            .unwrap_or_else(|| Self::Fingerprint(fingerprint.to_string()))
    }

    /// The `names` present in `labels`, in `names` order; `None` when none is present.
    pub fn of_labels(names: &[String], labels: &BTreeMap<String, String>) -> Option<Self> {
        let present: Vec<(String, String)> = names
            .iter()
            .filter_map(|n| labels.get(n).map(|v| (n.clone(), v.clone())))
            .collect();
        (!present.is_empty()).then_some(Self::Labels(present))
    }

    /// The grouping labels (none for a fingerprint's key).
    pub fn labels(&self) -> &[(String, String)] {
        match self {
            Self::Labels(l) => l,
            Self::Fingerprint(_) => &[],
        }
    }

    /// The value of the grouping label `name`, if the key has it.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels()
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// `{alertname="X", instance="y"}`, or `{fingerprint="ab12"}`.
impl fmt::Display for GroupKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        match self {
            Self::Labels(labels) => {
                for (i, (name, value)) in labels.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{name}={value:?}")?;
                }
            }
            Self::Fingerprint(fp) => write!(f, "fingerprint={fp:?}")?,
        }
        f.write_str("}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_key_keeps_the_grouping_labels_in_order_and_writes_them_quoted() {
        let group_by = ["alertname", "instance", "job"].map(String::from);
        let l = labels(&[("job", "node"), ("alertname", "Down"), ("pod", "p")]);
        let key = GroupKey::of(&group_by, &l, "fp");
        assert_eq!(
            key.labels(),
            [
                ("alertname".to_string(), "Down".to_string()),
                ("job".to_string(), "node".to_string())
            ]
        );
        assert_eq!(key.label("job"), Some("node"));
        assert_eq!(key.label("pod"), None);
        assert_eq!(key.to_string(), r#"{alertname="Down", job="node"}"#);
        let quoted = GroupKey::of(&group_by, &labels(&[("instance", "a \"b\", c=\"d")]), "");
        assert_eq!(quoted.to_string(), r#"{instance="a \"b\", c=\"d"}"#);
        assert_eq!(quoted.label("instance"), Some("a \"b\", c=\"d"));
    }

    #[test]
    fn an_alert_without_grouping_labels_is_keyed_by_its_fingerprint() {
        let key = GroupKey::of(&["alertname".to_string()], &labels(&[("x", "y")]), "ab12");
        assert_eq!(key, GroupKey::Fingerprint("ab12".into()));
        assert!(key.labels().is_empty());
        assert_eq!(key.to_string(), r#"{fingerprint="ab12"}"#);
        assert_eq!(GroupKey::of_labels(&[], &labels(&[("x", "y")])), None);
    }
}
