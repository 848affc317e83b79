//! Label matchers in Prometheus syntax: `name="value"`, `name!="value"`, `name=~"re"`,
//! `name!~"re"` (regex anchored like Prometheus'). A config value type: `alerts.ignore`
//! is validated with it at load, and alert intake matches with it.

use std::collections::BTreeMap;

/// One label matcher.
#[derive(Clone, Debug)]
pub struct LabelMatcher {
    pub name: String,
    op: MatchOp,
    value: String,
}

#[derive(Clone, Debug)]
enum MatchOp {
    Eq,
    Ne,
    Re(regex_lite::Regex),
    NotRe(regex_lite::Regex),
}

impl LabelMatcher {
    /// Parses `name="value"` (also `!=`, `=~`, `!~`).
    pub fn parse(s: &str) -> Result<Self, String> {
        let bad = || format!("invalid label matcher `{s}` (expected e.g. severity=\"info\")");
        let s = s.trim();
        let name_end = s
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .ok_or_else(bad)?;
        let (name, rest) = s.split_at(name_end);
        if name.is_empty() {
            return Err(bad());
        }
        let (op, rest) = ["=~", "!~", "!=", "="]
            .iter()
            .find_map(|op| rest.trim_start().strip_prefix(op).map(|r| (*op, r)))
            .ok_or_else(bad)?;
        let value = rest.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .ok_or_else(bad)?
            .to_string();
        let re = |v: &str| {
            regex_lite::Regex::new(&format!("^(?:{v})$"))
                .map_err(|e| format!("invalid regex in matcher `{s}`: {e}"))
        };
        let op = match op {
            "=" => MatchOp::Eq,
            "!=" => MatchOp::Ne,
            "=~" => MatchOp::Re(re(&value)?),
            _ => MatchOp::NotRe(re(&value)?),
        };
        Ok(Self {
            name: name.to_string(),
            op,
            value,
        })
    }

    /// Whether the labels match (a missing label is the empty string, as in Prometheus).
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let v = labels.get(&self.name).map(String::as_str).unwrap_or("");
        match &self.op {
            MatchOp::Eq => v == self.value,
            MatchOp::Ne => v != self.value,
            MatchOp::Re(r) => r.is_match(v),
            MatchOp::NotRe(r) => !r.is_match(v),
        }
    }
}

/// A label set from `(name, value)` pairs (for tests of matchers, grouping and analyzers).
#[cfg(test)]
pub(crate) fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matchers_follow_prometheus_semantics() {
        let l = labels(&[("severity", "info"), ("job", "node")]);
        assert!(
            LabelMatcher::parse(r#"severity="info""#)
                .unwrap()
                .matches(&l)
        );
        assert!(
            !LabelMatcher::parse(r#"severity!="info""#)
                .unwrap()
                .matches(&l)
        );
        assert!(LabelMatcher::parse(r#"job=~"no.*""#).unwrap().matches(&l));
        assert!(!LabelMatcher::parse(r#"job=~"no""#).unwrap().matches(&l));
        assert!(LabelMatcher::parse(r#"team="""#).unwrap().matches(&l));
        assert!(LabelMatcher::parse("severity='info'").unwrap().matches(&l));
    }

    #[test]
    fn malformed_matchers_are_rejected_with_the_text() {
        for bad in ["severity", "=\"x\"", "severity=info", r#"job=~"(""#] {
            let err = LabelMatcher::parse(bad).unwrap_err();
            assert!(err.contains(bad), "{err}");
        }
    }
}
