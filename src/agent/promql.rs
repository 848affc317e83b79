//! Just enough PromQL for alert-first evidence: the expression of a Prometheus
//! `generatorURL`, the value side of an alerting expression (without its threshold, its
//! extra `and`/`unless`/`or` conditions, wrapping parentheses and `# comments`), whether it
//! fires below its threshold, the metric names it reads, and a selector for the alert's
//! identifying labels; what is code, string or comment, and the selectors, come from
//! `tools::promql`'s lexer. What it cannot read it leaves out; the agent
//! then gathers less.
//!
//! The expressions come from outside (rule files, Grafana, a webhook's `generatorURL`), so
//! every helper walks characters, cuts only at offsets of the ASCII characters it found, and
//! takes time linear in the expression's length.

use std::collections::BTreeMap;

pub use crate::analyze::prom::escape;
use crate::tools::promql::{Class, classify, selectors};

/// Labels that identify what an alert is about (rule-added labels like `severity` are not
/// on the series and would make a selector match nothing).
const IDENTITY_LABELS: &[&str] = &[
    "instance",
    "job",
    "mountpoint",
    "device",
    "namespace",
    "pod",
    "container",
    "node",
    "service",
    "vmid",
    "name",
];

/// Rounds of unwrapping parentheses and keeping the first operand, or dropping a threshold:
/// published rules need at most five (`((a > 1 and b) or c)`: two to reach `a > 1`, one to
/// drop `> 1`, one to find nothing left); the bound keeps a hostile nesting linear.
const MAX_ROUNDS: usize = 8;

/// The `g0.expr` of a Prometheus graph URL (an Alertmanager alert's `generatorURL`).
pub fn expr_from_generator_url(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    parsed
        .query_pairs()
        .find(|(k, _)| k == "g0.expr")
        .map(|(_, v)| v.trim().to_string())
        .filter(|e| !e.is_empty())
}

/// Calls `visit(offset, char, depth)` for every character of code outside string literals
/// and comments until it returns false; `depth` counts the `(`, `{` and `[` open around the
/// character (a bracket itself has the depth outside it). `prev` is the character before,
/// whatever it is part of.
fn scan(expr: &str, mut visit: impl FnMut(usize, char, i32, Option<char>) -> bool) {
    let mut depth = 0i32;
    let mut prev = None;
    for (i, c, class) in classify(expr) {
        if class == Class::Code {
            if matches!(c, ')' | '}' | ']') {
                depth -= 1;
            }
            if !visit(i, c, depth, prev) {
                return;
            }
            if matches!(c, '(' | '{' | '[') {
                depth += 1;
            }
        }
        prev = Some(c);
    }
}

/// `expr` without its `# comments` (a `#` inside a string literal stays).
pub fn without_comments(expr: &str) -> String {
    classify(expr)
        .filter(|(_, _, class)| *class != Class::Comment)
        .map(|(_, c, _)| c)
        .collect()
}

/// The part of an alerting expression that has a value: the first operand of a top-level
/// `and`/`unless`/`or`, without wrapping parentheses and without a comparison against a
/// constant (`(x / y * 100 < 10 and z == 0)` → `x / y * 100`; `3 <= x < 20` → `x`).
pub fn value_expr(expr: &str) -> String {
    value_side(&without_comments(expr)).0.to_string()
}

/// Whether the alert fires when its value falls below the threshold (`x < 10`, `5 > x`);
/// false when there is no threshold against a constant.
pub fn fires_below(expr: &str) -> bool {
    value_side(&without_comments(expr)).1.unwrap_or(false)
}

/// The value side of `expr` (without comments) and, when a threshold was dropped, whether
/// the alert fires below it.
fn value_side(expr: &str) -> (&str, Option<bool>) {
    let mut e = expr.trim();
    let mut below = None;
    for _ in 0..MAX_ROUNDS {
        let before = e.len();
        e = unwrap(first_operand(unwrap(e)));
        // Each step keeps a part of its input: an unchanged length means nothing changed,
        // so what is left is one comparison or a value.
        if e.len() == before {
            let Some((value, is_below)) = strip_threshold(e) else {
                break;
            };
            e = unwrap(value);
            below.get_or_insert(is_below);
        }
    }
    (e, below)
}

/// `expr` without the parentheses that wrap all of it (`((a) + (b))` → `(a) + (b)`).
fn unwrap(expr: &str) -> &str {
    let e = expr.trim();
    let is_open = |c: char| c == '(' || c.is_whitespace();
    let is_close = |c: char| c == ')' || c.is_whitespace();
    let lead = e.chars().take_while(|c| is_open(*c)).filter(|c| *c == '(');
    let trail = e
        .chars()
        .rev()
        .take_while(|c| is_close(*c))
        .filter(|c| *c == ')');
    let mut levels = lead.count().min(trail.count());
    if levels == 0 {
        return e;
    }
    // The fewest parentheses open anywhere between the leading and the trailing run is the
    // number of pairs that enclose everything.
    let start = e.len() - e.trim_start_matches(is_open).len();
    let end = e.trim_end_matches(is_close).len();
    let mut open = e[..start].matches('(').count() as i64;
    if start < end {
        scan(&e[start..end], |_, c, _, _| {
            match c {
                '(' => open += 1,
                ')' => open -= 1,
                _ => {}
            }
            levels = levels.min(open.max(0) as usize);
            levels > 0
        });
    }
    let mut inner = e;
    for _ in 0..levels {
        match inner.strip_prefix('(').and_then(|s| s.strip_suffix(')')) {
            Some(s) => inner = s.trim(),
            None => break,
        }
    }
    inner
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// Whether `rest` starts with the keyword `word` (any case) as a whole word.
fn starts_with_word(rest: &str, word: &str) -> bool {
    rest.get(..word.len())
        .is_some_and(|w| w.eq_ignore_ascii_case(word))
        && !rest[word.len()..].starts_with(is_word)
}

/// The first operand of a top-level `and`, `unless` or `or` (all of `expr` without one).
fn first_operand(expr: &str) -> &str {
    let mut end = expr.len();
    scan(expr, |i, c, depth, prev| {
        let boundary = prev.is_none_or(|p| !is_word(p));
        if depth == 0 && i > 0 && boundary && matches!(c, 'a' | 'A' | 'o' | 'O' | 'u' | 'U') {
            // `i` is the offset of an ASCII character found in `expr`: a char boundary.
            let rest = &expr[i..];
            if ["and", "or", "unless"]
                .iter()
                .any(|w| starts_with_word(rest, w))
            {
                end = i;
                return false;
            }
        }
        true
    });
    let first = expr[..end].trim();
    if first.is_empty() { expr } else { first }
}

/// The top-level comparisons of `expr`: offset of the operator, offset after it, and
/// whether it is `<` or `<=`.
fn comparisons(expr: &str) -> Vec<(usize, usize, Option<bool>)> {
    let bytes = expr.as_bytes();
    let mut out = Vec::new();
    let mut skip_to = 0;
    scan(expr, |i, c, depth, _| {
        if depth != 0 || i < skip_to {
            return true;
        }
        let next_is_eq = bytes.get(i + 1) == Some(&b'=');
        let found = match c {
            '=' | '!' if next_is_eq => Some((2, None)),
            '<' => Some((if next_is_eq { 2 } else { 1 }, Some(true))),
            '>' => Some((if next_is_eq { 2 } else { 1 }, Some(false))),
            _ => None,
        };
        if let Some((len, below)) = found {
            out.push((i, i + len, below));
            skip_to = i + len;
        }
        true
    });
    out
}

/// `x < 10` → `x` (also `>`, `>=`, `<=`, `==`, `!=`, with `bool`, against a constant
/// expression such as `14 * 86400`), and `10 > x` → `x`, with whether the alert fires below
/// the constant; `None` when `expr` compares with no constant.
fn strip_threshold(expr: &str) -> Option<(&str, bool)> {
    let found = comparisons(expr);
    // Offsets are those of ASCII operators found in `expr`: char boundaries.
    let &(start, end, below) = found.last()?;
    let value = expr[..start].trim();
    if is_constant(without_bool(&expr[end..])) && !value.is_empty() {
        return Some((value, below.unwrap_or(false)));
    }
    let &(start, end, below) = found.first()?;
    let value = without_bool(&expr[end..]);
    if is_constant(&expr[..start]) && !value.is_empty() {
        return Some((value, below == Some(false)));
    }
    None
}

/// `s` without a leading `bool` modifier, trimmed.
fn without_bool(s: &str) -> &str {
    let s = s.trim();
    if starts_with_word(s, "bool") {
        s[4..].trim()
    } else {
        s
    }
}

/// Whether `s` is a number or arithmetic on numbers (`0.1`, `-5`, `24*60*60`, `(1 - .2)`).
fn is_constant(s: &str) -> bool {
    let s = s.trim();
    s.contains(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| {
            c.is_ascii_digit()
                || c.is_whitespace()
                || matches!(
                    c,
                    '.' | 'e' | 'E' | '+' | '-' | '*' | '/' | '%' | '^' | '(' | ')'
                )
        })
}

/// The metric names an expression reads, in order of appearance, without duplicates
/// (the selectors found by the tools' PromQL lexer). Only classic names (`[a-zA-Z_:]…`):
/// the callers write `name{…}`, which a quoted Prometheus 3 name would break.
pub fn metric_names(expr: &str) -> Vec<String> {
    let classic = |n: &String| {
        n.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && n.chars().all(is_word)
    };
    let mut names: Vec<String> = Vec::new();
    for name in selectors(expr).into_iter().filter_map(|s| s.name) {
        if classic(&name) && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// `{instance="pve1:9100",mountpoint="/var/lib/vz"}` from the identifying labels present in
/// `labels`; empty when there are none.
/// The identity labels `labels` has, comma-separated (`instance,job`): a `by` clause that
/// keeps what the alert is about and sums the rest.
pub fn identity_by(labels: &BTreeMap<String, String>) -> String {
    IDENTITY_LABELS
        .iter()
        .filter(|k| labels.contains_key(**k))
        .copied()
        .collect::<Vec<_>>()
        .join(",")
}

pub fn identity_selector(labels: &BTreeMap<String, String>) -> String {
    let parts: Vec<String> = IDENTITY_LABELS
        .iter()
        .filter_map(|k| labels.get(*k).map(|v| format!("{k}=\"{}\"", escape(v))))
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", parts.join(","))
    }
}

#[cfg(test)]
mod real_rules;
#[cfg(test)]
mod tests;
