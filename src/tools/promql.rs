//! Just enough PromQL reading to explain an empty answer: the vector selectors of a query
//! (metric name and label matchers), read from the tokens of the tools' one PromQL lexer
//! ([`lex`]), skipping function names and grouping label lists. Not a parser: a query Prometheus
//! rejects never gets here, and a selector missed only means a hint less.

pub mod lex;

use std::fmt;

use lex::{AGGREGATIONS, Tok, lex};
pub use lex::{Class, classify};

/// How a label matcher compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchOp {
    Eq,
    Ne,
    Re,
    NotRe,
}

impl MatchOp {
    fn as_str(self) -> &'static str {
        match self {
            Self::Eq => "=",
            Self::Ne => "!=",
            Self::Re => "=~",
            Self::NotRe => "!~",
        }
    }
}

/// `label op "value"` inside a selector's braces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Matcher {
    pub label: String,
    pub op: MatchOp,
    /// The value unescaped.
    pub value: String,
}

impl Matcher {
    /// Whether `candidate` satisfies this matcher (regexes are anchored, as in PromQL).
    pub fn accepts(&self, candidate: &str) -> bool {
        let re = || regex_lite::Regex::new(&format!("^(?:{})$", self.value)).ok();
        match self.op {
            MatchOp::Eq => candidate == self.value,
            MatchOp::Ne => candidate != self.value,
            MatchOp::Re => re().is_some_and(|r| r.is_match(candidate)),
            MatchOp::NotRe => re().is_none_or(|r| !r.is_match(candidate)),
        }
    }
}

impl fmt::Display for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.value.replace('\\', "\\\\").replace('"', "\\\"");
        write!(f, "{}{}\"{v}\"", self.label, self.op.as_str())
    }
}

/// A vector selector: `name{matchers}`, either part possibly absent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selector {
    pub name: Option<String>,
    pub matchers: Vec<Matcher>,
}

impl Selector {
    /// The selector of the metric name alone (`{__name__="x"}`), when there is a name.
    pub fn name_only(&self) -> Option<String> {
        self.name.as_ref().map(|n| format!("{{__name__=\"{n}\"}}"))
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(n) = &self.name {
            f.write_str(n)?;
        }
        if !self.matchers.is_empty() || self.name.is_none() {
            let m: Vec<String> = self.matchers.iter().map(Matcher::to_string).collect();
            write!(f, "{{{}}}", m.join(","))?;
        }
        Ok(())
    }
}

/// Words that are not metric names when they stand alone (operators, and aggregations
/// ([`AGGREGATIONS`]), which may be followed by `by (…)` before their parenthesis).
const KEYWORDS: &[&str] = &[
    "bool", "and", "or", "unless", "offset", "inf", "nan", "atan2",
];

/// Keywords followed by a parenthesised list of label names.
const LABEL_LISTS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];

/// The vector selectors of `query`, in order of appearance, without duplicates (what an
/// unfinished query has read so far).
pub fn selectors(query: &str) -> Vec<Selector> {
    let toks = lex(query).toks;
    let mut out: Vec<Selector> = Vec::new();
    let mut push = |mut sel: Selector| {
        if let Some(pos) = sel
            .matchers
            .iter()
            .position(|m| m.label == "__name__" && m.op == MatchOp::Eq)
        {
            let m = sel.matchers.remove(pos);
            sel.name.get_or_insert(m.value);
        }
        if (sel.name.is_some() || !sel.matchers.is_empty()) && !out.contains(&sel) {
            out.push(sel);
        }
    };
    let mut i = 0;
    while let Some(tok) = toks.get(i) {
        match tok {
            Tok::Braces(matchers) => push(Selector {
                name: None,
                matchers: matchers.clone(),
            }),
            Tok::Ident(word) => {
                let lower = word.to_ascii_lowercase();
                let next = toks.get(i + 1);
                if LABEL_LISTS.contains(&lower.as_str()) {
                    if next == Some(&Tok::LParen) {
                        while toks.get(i).is_some_and(|t| *t != Tok::RParen) {
                            i += 1;
                        }
                    }
                } else if next == Some(&Tok::LParen)
                    || KEYWORDS.contains(&lower.as_str())
                    || AGGREGATIONS.contains(&lower.as_str())
                {
                    // A function or aggregation name, or an operator word (the duration
                    // after `offset` is a token of its own).
                } else {
                    let matchers = match next {
                        Some(Tok::Braces(m)) => {
                            i += 1;
                            m.clone()
                        }
                        _ => Vec::new(),
                    };
                    push(Selector {
                        name: Some(word.clone()),
                        matchers,
                    });
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(q: &str) -> Vec<String> {
        selectors(q).iter().map(Selector::to_string).collect()
    }

    #[test]
    fn selectors_are_found_behind_functions_aggregations_and_arithmetic() {
        assert_eq!(shown("up"), ["up"]);
        assert_eq!(
            shown(
                r#"100 * (1 - node_filesystem_avail_bytes{instance="pve1",mountpoint="/var/lib/vz"} / node_filesystem_size_bytes{instance="pve1"})"#
            ),
            [
                r#"node_filesystem_avail_bytes{instance="pve1",mountpoint="/var/lib/vz"}"#,
                r#"node_filesystem_size_bytes{instance="pve1"}"#
            ]
        );
        assert_eq!(
            shown(
                r#"sum by (instance, mode) (rate(node_cpu_seconds_total{mode!="idle"}[5m] offset 1h)) > bool 0.5"#
            ),
            [r#"node_cpu_seconds_total{mode!="idle"}"#]
        );
        assert_eq!(
            shown(
                r#"histogram_quantile(0.9, sum(rate(http_seconds_bucket{job=~"api|web"}[5m])) without (pod))"#
            ),
            [r#"http_seconds_bucket{job=~"api|web"}"#]
        );
        assert_eq!(
            shown(
                r#"label_replace(up{job="x"}, "host", "$1", "instance", "(.*):.*") * on(instance) group_left(nodename) node_uname_info"#
            ),
            [r#"up{job="x"}"#, "node_uname_info"]
        );
        assert_eq!(
            shown(r#"{__name__="up", job="node"} or {job='a\'b'}"#),
            [r#"up{job="node"}"#, r#"{job="a'b"}"#]
        );
        assert_eq!(shown("sum(up) + up"), ["up"]);
        assert_eq!(shown("vector(1) + 2e3"), Vec::<String>::new());
    }

    #[test]
    fn matchers_accept_values_like_prometheus_does() {
        let sel = &selectors(r#"x{a="pve1", b=~"pve.*", c!~"tmp.*"}"#)[0];
        assert!(sel.matchers[0].accepts("pve1"));
        assert!(!sel.matchers[0].accepts("pve1:9100"));
        assert!(sel.matchers[1].accepts("pve1:9100"));
        assert!(!sel.matchers[1].accepts("nas"));
        assert!(sel.matchers[2].accepts("ext4"));
        assert!(!sel.matchers[2].accepts("tmpfs"));
    }
}
