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
        "a{x=\"and \"} / b"
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

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use super::real_rules::REAL_RULES;
use crate::tools::promql::selectors;

#[test]
fn non_ascii_text_anywhere_in_a_rule_expression_does_not_panic() {
    for expr in [
        "up é",
        "up{job=\"x\"} é > 1",
        "é 1",
        "up == 0 # Überwachung",
        "# Überwachung\nup == 0",
        "sum(rate(x{a=\"日本\"}[5m])) > 1 and 日本",
        "x > 1 ünless y",
    ] {
        let value = value_expr(expr);
        assert!(!value.contains('#'), "{expr:?} → {value:?}");
        metric_names(expr);
    }
    assert_eq!(value_expr("up == 0 # Überwachung"), "up");
    assert_eq!(value_expr("# Überwachung\nup == 0"), "up");
    let url = "http://prometheus:9090/graph?g0.expr=up%20%C3%A9&g0.tab=1";
    let expr = expr_from_generator_url(url).unwrap();
    assert_eq!(expr, "up é");
    value_expr(&expr);
}

#[test]
fn a_huge_rule_expression_is_read_in_linear_time() {
    // 350 kB at depth 0: every position is a candidate for `and`/`or`/`unless`.
    let expr = format!("{} < 1", vec!["a"; 87_500].join(" + "));
    let start = Instant::now();
    let value = value_expr(&expr);
    metric_names(&expr);
    assert!(value.ends_with("+ a"));
    // Generous for a debug build; the quadratic loop took minutes here.
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    let nested = format!("{}up{} > 1", "(".repeat(50_000), ")".repeat(50_000));
    let start = Instant::now();
    assert_eq!(value_expr(&nested), "up");
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn published_rules_give_their_value_side_metric_names_and_direction() {
    assert!(REAL_RULES.len() >= 15);
    for rule in REAL_RULES {
        assert_eq!(value_expr(rule.expr), rule.value, "{}", rule.name);
        assert_eq!(metric_names(rule.expr), rule.metrics, "{}", rule.name);
        assert_eq!(fires_below(rule.expr), rule.below, "{}", rule.name);
    }
}

/// Whether `tool` is installed; without it the test is skipped, unless
/// `SRE_TEST_REQUIRE_EXTERNAL=1` (CI) makes that a failure.
fn require_tool(tool: &str) -> bool {
    let found = Command::new(tool).arg("--version").output().is_ok();
    if !found {
        assert!(
            std::env::var("SRE_TEST_REQUIRE_EXTERNAL").as_deref() != Ok("1"),
            "{tool} is required (SRE_TEST_REQUIRE_EXTERNAL=1); run tests/support/install_deps.sh"
        );
        eprintln!("SKIPPED: {tool} not installed (run tests/support/install_deps.sh)");
    }
    found
}

/// `promtool check rules` on one recording rule per query: the text of every rejected one.
fn promtool_rejects(queries: &[String]) -> String {
    let mut yaml = String::from("groups:\n  - name: planned\n    rules:\n");
    for (i, q) in queries.iter().enumerate() {
        // A JSON string is a valid YAML double-quoted scalar.
        let expr = serde_json::to_string(q).unwrap();
        yaml.push_str(&format!("      - record: q{i}\n        expr: {expr}\n"));
    }
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(yaml.as_bytes()).unwrap();
    let out = Command::new("promtool")
        .args(["check", "rules"])
        .arg(file.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    if out.status.success() {
        String::new()
    } else {
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }
}

#[test]
fn every_query_planned_from_a_published_rule_is_valid_promql_for_promtool() {
    if !require_tool("promtool") {
        return;
    }
    let labels: BTreeMap<String, String> = [
        ("instance", "pve1:9100"),
        ("mountpoint", "/var/lib/\"vz\" \\ ünï"),
        ("device", "line\nbreak\r\ttab"),
        ("job", "node"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let selector = identity_selector(&labels);
    let mut queries = Vec::new();
    for rule in REAL_RULES {
        let expr = without_comments(rule.expr);
        let value = value_expr(rule.expr);
        queries.push(value.clone());
        queries.push(format!("count({expr})"));
        queries.push(format!("topk(10, {value})"));
        queries.extend(
            metric_names(rule.expr)
                .iter()
                .map(|m| format!("{m}{selector}")),
        );
    }
    let rejected = promtool_rejects(&queries);
    assert!(rejected.is_empty(), "{rejected}\nqueries: {queries:#?}");
}

/// `cases` cases, or `PROPTEST_CASES` when set (for a longer run).
fn config(cases: u32) -> Config {
    let base = Config::default();
    Config {
        cases: if std::env::var_os("PROPTEST_CASES").is_some() {
            base.cases
        } else {
            cases
        },
        failure_persistence: None,
        ..base
    }
}

/// Arbitrary text biased towards what the helpers look at: PromQL punctuation, keywords,
/// comments and multi-byte characters next to them.
fn promql_like() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        any::<String>(),
        Just("(".to_string()),
        Just(")".to_string()),
        Just("{a=\"é\\\"\"}".to_string()),
        Just(" and ".to_string()),
        Just(" OR ".to_string()),
        Just(" unless ".to_string()),
        Just(" < 1".to_string()),
        Just(">= bool 2e3".to_string()),
        Just("# Überwachung\n".to_string()),
        Just("'".to_string()),
        Just("`".to_string()),
        Just("é".to_string()),
        Just("日本".to_string()),
        Just("up".to_string()),
        Just("[5m]".to_string()),
    ];
    proptest::collection::vec(piece, 0..24).prop_map(|v| v.concat())
}

#[test]
fn the_expression_helpers_never_panic_and_keep_to_their_input_on_arbitrary_utf8() {
    TestRunner::new(config(2000))
        .run(&promql_like(), |s| {
            let clean = without_comments(&s);
            let value = value_expr(&s);
            prop_assert!(clean.contains(&value), "{s:?} → {value:?}");
            fires_below(&s);
            for name in metric_names(&s) {
                prop_assert!(s.contains(&name), "{s:?} → {name:?}");
                prop_assert!(!name.starts_with(|c: char| c.is_ascii_digit()));
                prop_assert!(
                    name.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_:".contains(c))
                );
            }
            expr_from_generator_url(&s);
            let url = format!(
                "http://prometheus:9090/graph?g0.expr={}&g0.tab=1",
                url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>()
            );
            let trimmed = s.trim();
            prop_assert_eq!(
                expr_from_generator_url(&url),
                (!trimmed.is_empty()).then(|| trimmed.to_string())
            );
            Ok(())
        })
        .unwrap();
}

#[test]
fn escaped_label_values_and_identity_selectors_read_back_unchanged() {
    let labels = proptest::collection::btree_map(
        prop_oneof![
            proptest::sample::select(IDENTITY_LABELS).prop_map(str::to_string),
            any::<String>()
        ],
        any::<String>(),
        0..6,
    );
    TestRunner::new(config(1000))
        .run(&labels, |labels| {
            let selector = identity_selector(&labels);
            let expected: Vec<(String, String)> = IDENTITY_LABELS
                .iter()
                .filter_map(|k| labels.get(*k).map(|v| (k.to_string(), v.clone())))
                .collect();
            if expected.is_empty() {
                prop_assert_eq!(selector, "");
                return Ok(());
            }
            prop_assert!(!selector.contains('\n'));
            let read = selectors(&format!("x{selector}"));
            prop_assert_eq!(read.len(), 1);
            let got: Vec<(String, String)> = read[0]
                .matchers
                .iter()
                .map(|m| (m.label.clone(), m.value.clone()))
                .collect();
            prop_assert_eq!(got, expected);
            Ok(())
        })
        .unwrap();
}
