//! Just enough PromQL for alert-first evidence: the expression of a Prometheus
//! `generatorURL`, the value side of an alerting expression (without its threshold), the
//! metric names it reads (via `tools::promql`'s lexer), and a selector for the alert's
//! identifying labels. What it cannot read it leaves out; the agent then gathers less.

use std::collections::BTreeMap;

use crate::tools::promql::selectors;

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

/// The `g0.expr` of a Prometheus graph URL (an Alertmanager alert's `generatorURL`).
pub fn expr_from_generator_url(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    parsed
        .query_pairs()
        .find(|(k, _)| k == "g0.expr")
        .map(|(_, v)| v.trim().to_string())
        .filter(|e| !e.is_empty())
}

/// The part of an alerting expression that has a value: the first operand of a top-level
/// `and`/`unless`/`or`, without a trailing comparison against a number
/// (`x / y * 100 < 10` → `x / y * 100`).
pub fn value_expr(expr: &str) -> String {
    let mut depth = 0i32;
    let bytes = expr.as_bytes();
    let mut end = expr.len();
    let mut i = 0;
    let mut quote = None;
    while i < bytes.len() {
        let c = bytes[i] as char;
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'' | '`') => quote = Some(c),
            (None, '(' | '{' | '[') => depth += 1,
            (None, ')' | '}' | ']') => depth -= 1,
            (None, _) if depth == 0 => {
                let rest = &expr[i..];
                let word_start = i == 0 || !is_word(bytes[i - 1] as char);
                if word_start
                    && ["and ", "unless ", "or "]
                        .iter()
                        .any(|w| rest.to_ascii_lowercase().starts_with(w))
                {
                    end = i;
                    break;
                }
            }
            _ => {}
        }
        i += 1;
    }
    let first = expr[..end].trim();
    strip_threshold(first).to_string()
}

/// `x < 10` → `x` (also `>`, `>=`, `<=`, `==`, `!=`, with `bool`, and a constant
/// expression such as `14 * 86400`); anything else unchanged.
fn strip_threshold(expr: &str) -> &str {
    let trimmed = expr.trim_end();
    let constant = |c: char| {
        c.is_ascii_digit()
            || c.is_whitespace()
            || matches!(c, '.' | 'e' | 'E' | '+' | '-' | '*' | '/' | '(' | ')')
    };
    let number_start = trimmed.rfind(|c: char| !constant(c)).map_or(0, |i| i + 1);
    let tail = trimmed[number_start..].trim();
    if tail.is_empty() || !tail.chars().any(|c| c.is_ascii_digit()) {
        return expr;
    }
    let mut head = trimmed[..number_start].trim_end();
    if let Some(h) = head.strip_suffix("bool") {
        head = h.trim_end();
    }
    for op in [">=", "<=", "==", "!=", ">", "<"] {
        if let Some(h) = head.strip_suffix(op) {
            return h.trim_end();
        }
    }
    expr
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// The metric names an expression reads, in order of appearance, without duplicates
/// (the selectors found by the tools' PromQL lexer).
pub fn metric_names(expr: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for name in selectors(expr).into_iter().filter_map(|s| s.name) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// `{instance="pve1:9100",mountpoint="/var/lib/vz"}` from the identifying labels present in
/// `labels`; empty when there are none.
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

/// A label value as a PromQL string literal body.
pub fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_expression_of_a_prometheus_generator_url_is_read() {
        let url = "http://prometheus:9090/graph?g0.expr=node_filesystem_avail_bytes%7Bmountpoint%3D%22%2Fvar%2Flib%2Fvz%22%7D+%2F+node_filesystem_size_bytes+%3C+0.1&g0.tab=1";
        assert_eq!(
            expr_from_generator_url(url).unwrap(),
            "node_filesystem_avail_bytes{mountpoint=\"/var/lib/vz\"} / node_filesystem_size_bytes < 0.1"
        );
        assert_eq!(
            expr_from_generator_url("http://grafana/alerting/grafana/abc/view"),
            None
        );
    }

    #[test]
    fn the_value_side_drops_the_threshold_and_extra_conditions() {
        assert_eq!(
            value_expr("node_filesystem_avail_bytes / node_filesystem_size_bytes * 100 < 10"),
            "node_filesystem_avail_bytes / node_filesystem_size_bytes * 100"
        );
        assert_eq!(
            value_expr("(a{x=\"and \"} / b) < 0.1 and predict_linear(a[6h], 86400) < 0"),
            "(a{x=\"and \"} / b)"
        );
        assert_eq!(value_expr("up == 0"), "up");
        assert_eq!(
            value_expr("probe_ssl_earliest_cert_expiry - time() < 14 * 86400"),
            "probe_ssl_earliest_cert_expiry - time()"
        );
        assert_eq!(value_expr("rate(x[5m]) > bool 1e3"), "rate(x[5m])");
        assert_eq!(value_expr("absent(up{job=\"x\"})"), "absent(up{job=\"x\"})");
    }

    #[test]
    fn metric_names_skip_functions_labels_keywords_and_strings() {
        let e = "sum by (instance) (rate(node_cpu_seconds_total{mode!=\"idle\", job=\"node\"}[5m])) / on(instance) group_left count(node_cpu_seconds_total) > 0.9 and up offset 5m";
        assert_eq!(metric_names(e), vec!["node_cpu_seconds_total", "up"]);
        assert_eq!(
            metric_names("predict_linear(node_filesystem_avail_bytes[6h], 4*3600) < 0"),
            vec!["node_filesystem_avail_bytes"]
        );
    }

    #[test]
    fn the_selector_keeps_identifying_labels_only_and_escapes_values() {
        let labels: BTreeMap<String, String> = [
            ("alertname", "DiskFillingUp"),
            ("severity", "warning"),
            ("instance", "pve1:9100"),
            ("mountpoint", "/var/lib/\"vz\""),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(
            identity_selector(&labels),
            "{instance=\"pve1:9100\",mountpoint=\"/var/lib/\\\"vz\\\"\"}"
        );
        assert_eq!(identity_selector(&BTreeMap::new()), "");
    }
}
