//! Just enough PromQL reading to explain an empty answer: the vector selectors of a query
//! (metric name and label matchers), found by a small lexer that skips strings, ranges,
//! numbers, function names and grouping label lists. Not a parser: a query Prometheus
//! rejects never gets here, and a selector missed only means a hint less.

use std::fmt;

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

/// Words that are not metric names when they stand alone (operators, and aggregations,
/// which may be followed by `by (…)` before their parenthesis).
const KEYWORDS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
    "inf",
    "nan",
    "atan2",
    "sum",
    "avg",
    "min",
    "max",
    "count",
    "group",
    "stddev",
    "stdvar",
    "topk",
    "bottomk",
    "quantile",
    "count_values",
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

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b':'
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b':'
}

struct Lexer<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Lexer<'a> {
    fn skip_ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    /// A quoted string starting at the current quote; returns it unescaped.
    fn string(&mut self) -> String {
        let quote = self.s[self.i];
        self.i += 1;
        let mut out = Vec::new();
        while let Some(c) = self.peek() {
            self.i += 1;
            if c == quote {
                break;
            }
            if c == b'\\' && quote != b'`' {
                if let Some(next) = self.peek() {
                    self.i += 1;
                    out.push(match next {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        other => other,
                    });
                }
                continue;
            }
            out.push(c);
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    fn ident(&mut self) -> &'a str {
        let start = self.i;
        while self.peek().is_some_and(is_ident) {
            self.i += 1;
        }
        std::str::from_utf8(&self.s[start..self.i]).unwrap_or("")
    }

    /// Skips to just after the `close` matching the opener at the current position.
    fn skip_until(&mut self, close: u8) {
        while let Some(c) = self.peek() {
            if c == b'"' || c == b'\'' || c == b'`' {
                self.string();
                continue;
            }
            self.i += 1;
            if c == close {
                return;
            }
        }
    }

    /// The matchers between `{` (current) and `}`.
    fn matchers(&mut self) -> Vec<Matcher> {
        self.i += 1;
        let mut out = Vec::new();
        loop {
            self.skip_ws();
            match self.peek() {
                None => return out,
                Some(b'}') => {
                    self.i += 1;
                    return out;
                }
                Some(b',') => self.i += 1,
                Some(c) if is_ident_start(c) => {
                    let label = self.ident().to_string();
                    self.skip_ws();
                    let op = match (self.peek(), self.s.get(self.i + 1).copied()) {
                        (Some(b'='), Some(b'~')) => MatchOp::Re,
                        (Some(b'!'), Some(b'=')) => MatchOp::Ne,
                        (Some(b'!'), Some(b'~')) => MatchOp::NotRe,
                        (Some(b'='), _) => MatchOp::Eq,
                        _ => {
                            self.skip_until(b'}');
                            return out;
                        }
                    };
                    self.i += if op == MatchOp::Eq { 1 } else { 2 };
                    self.skip_ws();
                    if !matches!(self.peek(), Some(b'"' | b'\'' | b'`')) {
                        self.skip_until(b'}');
                        return out;
                    }
                    let value = self.string();
                    out.push(Matcher { label, op, value });
                }
                Some(b'"' | b'\'' | b'`') => {
                    // Prometheus 3 allows a quoted metric name alone in braces.
                    let name = self.string();
                    out.push(Matcher {
                        label: "__name__".into(),
                        op: MatchOp::Eq,
                        value: name,
                    });
                }
                Some(_) => {
                    self.skip_until(b'}');
                    return out;
                }
            }
        }
    }
}

/// The vector selectors of `query`, in order of appearance, without duplicates.
pub fn selectors(query: &str) -> Vec<Selector> {
    let mut lx = Lexer {
        s: query.as_bytes(),
        i: 0,
    };
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
    while let Some(c) = lx.peek() {
        match c {
            b'"' | b'\'' | b'`' => {
                lx.string();
            }
            b'#' => {
                while lx.peek().is_some_and(|c| c != b'\n') {
                    lx.i += 1;
                }
            }
            b'[' => lx.skip_until(b']'),
            b'{' => {
                let matchers = lx.matchers();
                push(Selector {
                    name: None,
                    matchers,
                });
            }
            c if c.is_ascii_digit() || c == b'.' => {
                while lx
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'.')
                {
                    lx.i += 1;
                }
            }
            c if is_ident_start(c) => {
                let word = lx.ident();
                lx.skip_ws();
                let lower = word.to_ascii_lowercase();
                if LABEL_LISTS.contains(&lower.as_str()) {
                    if lx.peek() == Some(b'(') {
                        lx.skip_until(b')');
                    }
                } else if lx.peek() == Some(b'(') || KEYWORDS.contains(&lower.as_str()) {
                    // A function or aggregation name, or an operator word (the duration
                    // after `offset` starts with a digit and is skipped as a number).
                } else {
                    let matchers = if lx.peek() == Some(b'{') {
                        lx.matchers()
                    } else {
                        Vec::new()
                    };
                    push(Selector {
                        name: Some(word.to_string()),
                        matchers,
                    });
                }
            }
            _ => lx.i += 1,
        }
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
